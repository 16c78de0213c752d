"""Options resolved once into the parts a compaction runs with (:class:`Setup`).

Options come as :class:`~synopsis.config.Settings` (keywords, a TOML file, ``SYNOPSIS_*``
variables) plus objects only code can give: a ``Trigger`` or ``Keep`` value, a summarizer, a
token counter, a store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from synopsis.errors import ConfigurationError
from synopsis.formats import PROFILE_OF_FORMAT
from synopsis.models import assumed_window, context_window, lookup, max_output_tokens
from synopsis.planning import Clearing, decide
from synopsis.stores import AsyncStore, Store, open_store
from synopsis.summarizers import (
    AsyncSummarizer,
    LLMSummarizer,
    RuleBasedSummarizer,
    Summarizer,
    anthropic_completion,
    openai_chat_completion,
    openai_responses_completion,
)
from synopsis.tokens import TokenCounter, counter_for_model
from synopsis.validation import get_profile

if TYPE_CHECKING:
    from synopsis.compaction.rebuild import SummaryRole
    from synopsis.config import Settings
    from synopsis.formats import FormatName
    from synopsis.planning import (
        Decision,
        GovernorConfig,
        GovernorState,
        Keep,
        Measure,
        Protect,
        Reductions,
        Trigger,
    )
    from synopsis.summarizers.render import Style
    from synopsis.validation import Profile

__all__ = ["Setup", "build_setup"]

_RESERVE_SHARE = 5
"""The default reserve for the answer is at most a fifth of the window: what the default
trigger (80%) leaves, so a history under the trigger always leaves room to answer."""
_DEFAULT_RESERVE = 4096
LLM_SUMMARIZER_TIMEOUT = 45.0
"""Seconds an LLM summarizer's whole call may take when ``summarizer_timeout`` is unset."""
_DIGEST_TOKENS = 500
_DIGEST_SHARE = 10
"""Tokens kept free for the answer when the model's output limit is unknown."""


@dataclass(frozen=True, slots=True)
class Setup:
    counter: TokenCounter
    window: int
    reserve: int
    trigger: Trigger
    governor: GovernorConfig
    keep: Keep
    protect: Protect
    reductions: Reductions
    provider: str | None
    summary_role: SummaryRole
    summary_style: Style
    summarizer: Summarizer | AsyncSummarizer
    summarizer_name: str
    rules: RuleBasedSummarizer
    store: Store | AsyncStore | None
    digester: RuleBasedSummarizer
    default_session: str | None
    summarizer_timeout: float | None
    preserved_thinking: bool = False
    target_ratio: float = 0.5
    summary_ratio: float = 0.5
    min_summary_tokens: int = 256
    max_summary_tokens: int = 8000
    """The ceiling of the chosen summarizer's budget."""
    on_unreachable: Literal["raise", "return"] = "raise"
    strategy: tuple[str, ...] = ("summarize",)
    clearing: Clearing = field(default_factory=Clearing)
    window_assumed: str = ""
    """Empty when the window was given or the model table knows the model; else the window
    synopsis assumed and how to give the real one (said on each compaction's event)."""

    @property
    def limit(self) -> int:
        """The most tokens a request may take: the window less the reserve for the answer."""
        return self.window - self.reserve

    @property
    def has_store(self) -> bool:
        return self.store is not None

    @property
    def keeps_originals(self) -> bool:
        return self.store is not None

    def profile_for(self, format: FormatName) -> Profile:
        return get_profile(self.provider or PROFILE_OF_FORMAT[format])

    def decide(
        self, before: Measure, state: GovernorState, turn: str | None, *, force: bool = False
    ) -> Decision:
        """The governor's decision on a history of ``before``, with this setup's trigger,
        configuration and the reserve for the answer (see :func:`synopsis.planning.decide`)."""
        return decide(
            before,
            state=state,
            config=self.governor,
            trigger=self.trigger,
            turn=turn,
            force=force,
            reserve=self.reserve,
        )


_KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
}
"""Where each SDK looks for its credentials when given none."""

_NO_KEY = "not-needed"
"""What is sent as the key to a server of the caller's own (``base_url``) when none is set: a
local server asks for none, and the SDKs refuse to start without one."""


def _sdk_key(kind: str, settings: Settings) -> str | None:
    """None when the SDK will find its key in the environment; a placeholder for a server of
    the caller's own; else a one-line error, rather than the SDK's traceback at construction
    (OpenAI) or a failure on every request (Anthropic)."""
    names = _KEY_VARIABLES[kind]
    if any(os.environ.get(name) for name in names):
        return None
    if settings.base_url:
        return _NO_KEY
    provider = "anthropic" if kind == "anthropic" else "openai"
    raise ConfigurationError(
        f"no API key for {provider}: set {' or '.join(names)}, name another variable with "
        "api_key_env, or give base_url for a server that needs none"
    )


def _with_key(options: dict[str, Any], key: str | None) -> None:
    if key:
        options["api_key"] = key


def _summarizer(settings: Settings, model: str | None) -> LLMSummarizer | None:
    kind = settings.summarizer
    if kind == "rules":
        return None
    models = list(settings.summarizer_models) or ([model] if model else [])
    if not models:
        raise ConfigurationError(
            f"summarizer={kind!r} needs a model: set summarizer_models or model "
            "(--summarizer-model or --model on the command line)"
        )
    api_key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
    if settings.api_key_env and api_key is None:
        raise ConfigurationError(
            f"api_key_env names {settings.api_key_env!r}, which is not set in the environment"
        )
    client_options: dict[str, Any] = {"max_retries": 0, "timeout": settings.timeout}
    if settings.base_url:
        client_options["base_url"] = settings.base_url
    if kind == "anthropic":
        try:
            import anthropic  # noqa: PLC0415
        except ImportError as error:
            raise ConfigurationError(
                'summarizer="anthropic" needs: pip install "synopsis[anthropic]"'
            ) from error
        _with_key(client_options, api_key or _sdk_key(kind, settings))
        completion = anthropic_completion(
            anthropic.Anthropic(**client_options), strict=settings.strict_messages
        )
    else:
        try:
            import openai  # noqa: PLC0415
        except ImportError as error:
            raise ConfigurationError(
                f'summarizer="{kind}" needs: pip install "synopsis[openai]"'
            ) from error
        _with_key(client_options, api_key or _sdk_key(kind, settings))
        client = openai.OpenAI(**client_options)
        completion = (
            openai_responses_completion(client, strict=settings.strict_messages)
            if kind == "openai-responses"
            else openai_chat_completion(client, strict=settings.strict_messages)
        )
    return LLMSummarizer(
        completion,
        models=models,
        max_summary_tokens=settings.max_summary_tokens,
        max_input_tokens=settings.max_input_tokens,
        oversize=settings.oversize,
        cache_aligned=settings.cache_aligned,
        abort_on_failure=settings.abort_on_failure,
        max_retries=settings.max_retries,
        model_for_counting=model,
    )


def build_setup(
    settings: Settings,
    *,
    trigger: Trigger | None = None,
    keep: Keep | None = None,
    summarizer: object = None,
    counter: TokenCounter | None = None,
    store: object = None,
) -> Setup:
    """The parts for ``settings``; the objects given here win over the settings' own."""
    model = settings.model
    window = (
        context_window(model or "", override=settings.context_window)
        if (model or settings.context_window)
        else context_window("gpt-4o")
    )
    if settings.reserve_output_tokens is not None:
        reserve = settings.reserve_output_tokens
    else:
        answer = (max_output_tokens(model) if model else None) or _DEFAULT_RESERVE
        reserve = min(answer, window // _RESERVE_SHARE)
    if reserve >= window:
        raise ConfigurationError(
            f"reserve_output_tokens ({reserve}) must be below the window ({window})"
        )
    if counter is not None and not isinstance(counter, TokenCounter):
        raise ConfigurationError(f"counter must be a TokenCounter, got {counter!r}")
    if summarizer is not None and not isinstance(summarizer, Summarizer | AsyncSummarizer):
        raise ConfigurationError(
            f"summarizer must have a summarize() or asummarize() method, got {summarizer!r}"
        )
    rules = RuleBasedSummarizer(
        max_summary_tokens=settings.rules_max_summary_tokens, model_for_counting=model
    )
    # One oversized message shrunk in place stays a short digest: a tenth of the window, at least
    # 500 tokens (the fixed budget the coding-agent plan gave every summary). The conversation's
    # budget is for the summary of many messages, not one; but a person's long request digested to
    # 500 tokens at 8k and more loses the rules it states.
    digester = RuleBasedSummarizer(
        max_summary_tokens=min(
            max(_DIGEST_TOKENS, window // _DIGEST_SHARE), settings.rules_max_summary_tokens
        ),
        model_for_counting=model,
    )
    chosen: Summarizer | AsyncSummarizer = (
        summarizer
        if isinstance(summarizer, Summarizer | AsyncSummarizer)
        else _summarizer(settings, model) or rules
    )
    timeout = settings.summarizer_timeout
    if timeout is None and isinstance(chosen, LLMSummarizer):
        # A call that waits on a server gets a limit by default; one that runs here needs no
        # thread to watch it (the thread costs a compaction its processor cache).
        timeout = LLM_SUMMARIZER_TIMEOUT
    ceiling = (
        settings.rules_max_summary_tokens
        if isinstance(chosen, RuleBasedSummarizer)
        else settings.max_summary_tokens
    )
    session = settings.session_id
    resolved_store = open_store(store if store is not None else settings.store)
    return Setup(
        counter=counter or counter_for_model(model),
        window=window,
        reserve=reserve,
        trigger=trigger or settings.trigger_policy(),
        governor=settings.governor(),
        keep=keep or settings.keep_policy(),
        protect=settings.protect(),
        reductions=settings.reductions(),
        strategy=settings.strategy,
        clearing=settings.clearing(),
        provider=settings.provider,
        summary_role=settings.summary_role,
        summary_style=settings.summary_style,
        summarizer=chosen,
        summarizer_name=str(
            getattr(chosen, "models", [getattr(chosen, "model", type(chosen).__name__)])[0]
        ),
        rules=rules,
        store=resolved_store,
        digester=digester,
        default_session=session,
        summarizer_timeout=timeout,
        preserved_thinking=settings.preserved_thinking,
        target_ratio=settings.target_ratio,
        summary_ratio=settings.summary_ratio,
        min_summary_tokens=settings.min_summary_tokens,
        max_summary_tokens=ceiling,
        on_unreachable=settings.on_unreachable,
        window_assumed=(
            assumed_window(model)
            if model and settings.context_window is None and lookup(model) is None
            else ""
        ),
    )
