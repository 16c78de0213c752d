"""The options of :class:`synopsis.config.Settings`: each field, its default, its description
(ending, in brackets, with the system the option was taken from, see docs/lineage.md, or
synopsis itself) and the checks that need no other option.

Values may come as text (the environment) or TOML values, so every field accepts the text
form: numbers as text, ``"none"`` (or nothing) to unset an optional one, and names as one
comma-separated text.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from synopsis.config.text import normalize_keep, normalize_trigger
from synopsis.formats import FormatName  # noqa: TC001 - pydantic reads it at runtime
from synopsis.validation.profiles import PROFILES

__all__ = ["SettingsFields"]

_UNSET = ("", "none", "null")


def _no_bool(value: object, info: ValidationInfo) -> object:
    # pydantic would read True as 1; a switch where a number belongs is a mistake.
    if isinstance(value, bool):
        raise ValueError(f"{info.field_name} must be a number, got {value!r}")
    return value


def _optional(value: object, info: ValidationInfo) -> object:
    # TOML has no null and the environment only text: "none" (or nothing) unsets.
    if isinstance(value, str) and value.strip().lower() in _UNSET:
        return None
    return _no_bool(value, info)


def _optional_text(value: object) -> object:
    return None if isinstance(value, str) and not value.strip() else value


def _names(value: object) -> object:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return tuple(value) if isinstance(value, list) else value


def _no_empty_name(value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
    if any(not name.strip() for name in value):
        raise ValueError(f"{info.field_name} must not hold an empty name, got {list(value)!r}")
    return value


Whole = Annotated[int, BeforeValidator(_no_bool)]
Number = Annotated[float, BeforeValidator(_no_bool)]
OptionalWhole = Annotated[int | None, BeforeValidator(_optional)]
OptionalNumber = Annotated[float | None, BeforeValidator(_optional)]
OptionalText = Annotated[str | None, BeforeValidator(_optional_text)]
Names = Annotated[tuple[str, ...], BeforeValidator(_names), AfterValidator(_no_empty_name)]

STRATEGIES = ("clear", "summarize")


def _strategy(value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
    unknown = [step for step in value if step not in STRATEGIES]
    if unknown or not value or len(set(value)) != len(value):
        raise ValueError(
            f"{info.field_name} must be 'clear', 'summarize' or both in the order they run "
            f"('clear,summarize'), got {','.join(value)!r}"
        )
    return value


Strategy = Annotated[tuple[str, ...], BeforeValidator(_names), AfterValidator(_strategy)]


class SettingsFields(BaseModel):
    """The options, their defaults and their checks one by one; see
    :class:`synopsis.config.Settings`."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # -- the model and its window --
    model: OptionalText = Field(
        None,
        description="The conversation's model: it sizes the window and picks the token "
        "counter. A model the bundled table does not know gets a 200,000-token window and an "
        "UnknownModelWarning (give context_window); none at all is counted and sized as "
        "gpt-4o (128,000 tokens) (chat-app plan; adk-deepagents resolves the window from it).",
    )
    context_window: OptionalWhole = Field(
        None, gt=0, description="Window in tokens, over the model table (adk-deepagents)."
    )
    reserve_output_tokens: OptionalWhole = Field(
        None,
        ge=0,
        description="Tokens left free for the answer; unset: the model's max output, at most "
        "20% of the window (coding-agent plan: a summary must never cause the overflow it "
        "prevents).",
    )
    # -- when: the trigger and the governor --
    trigger: float | str = Field(
        0.8,
        description="When to compact: a share of the window, 'fraction:F', 'tokens:N' or "
        "'messages:N', combined with | (or) and & (and) (chat-app plan: 0.8; mcpagent: a "
        "fixed token count, either one; adk-deepagents: the kind:value form).",
    )
    enabled: bool = Field(
        True, description="Master switch; off, only a forced compaction runs (chat-app plan)."
    )
    reset_ratio: Number = Field(
        0.7,
        gt=0,
        lt=1,
        description="Hysteresis: a compaction aims below this share of the window, and the "
        "trigger re-arms under it. Unset, it is 7/8 of a trigger fraction below 0.8 (0.6 "
        "gives 0.525), so any trigger fraction is taken; set, it must be below the trigger's "
        "fraction (chat-app plan).",
    )
    target_ratio: Number = Field(
        0.5,
        gt=0,
        lt=1,
        description="Where a compaction lands: the share of the window the compacted history "
        "fills (protected head, summary, carried requests, verbatim tail) under the default "
        "trigger; it keeps the proportion target_ratio / reset_ratio of the line the passes "
        "aim under, so a lower trigger lowers it. Unset with reset_ratio unset, it is 5/8 of a "
        "trigger fraction below 0.8 (0.6 gives 0.375) (synopsis; chosen by the "
        "retention-versus-cost benchmark).",
    )
    min_messages: Whole = Field(
        12, ge=0, description="Shorter histories are left alone (chat-app plan)."
    )
    cooldown_messages: Whole = Field(
        4,
        ge=0,
        description="New messages needed after a compaction before the next (chat-app plan).",
    )
    emergency_ratio: Number = Field(
        1.0,
        gt=0,
        le=10,
        description="At this share of the window the cooldown gives way (chat-app plan).",
    )
    max_passes: Whole = Field(
        3,
        ge=1,
        description="Summarizing passes per compaction before the tail shrinks (chat-app plan, "
        "which capped the depth of the summary chain).",
    )
    min_tail_messages: Whole = Field(
        2, ge=0, description="The kept tail never shrinks below this (chat-app plan)."
    )
    max_per_turn: Whole = Field(
        5, ge=1, description="Most compactions while one user turn runs (synopsis)."
    )
    breaker_failures: Whole = Field(
        3,
        ge=1,
        description="Summarizer failures in a row after which the summarizer is not asked "
        "again until a forced compaction; a history over the window is then compacted by the "
        "rules (synopsis; the chat-app plan falls back to the original messages).",
    )
    refill_compactions: Whole = Field(
        3,
        ge=1,
        description="Compactions in a row, each within refill_requests of the last, after "
        "which the session's compactions land lower (synopsis, after a coding agent's thrash "
        "breaker).",
    )
    refill_requests: Whole = Field(
        3,
        ge=1,
        description="Requests within which a compaction counts as refilling the room the "
        "last one left (synopsis, after a coding agent's thrash breaker).",
    )
    on_unreachable: Literal["raise", "return"] = Field(
        "raise",
        description="A history no compaction brings within the window: raise "
        "BudgetUnreachableError, or return it unchanged with the code 'budget-unreachable' "
        "and the reason (synopsis).",
    )
    min_savings: Number = Field(
        0.3,
        gt=0,
        le=1,
        description="Skip a plan freeing less than this share of the trigger's tokens "
        "(synopsis; zrb's check counted messages).",
    )
    refresh_after_messages: OptionalWhole = Field(
        None, ge=1, description="Also compact every this many new messages (synopsis)."
    )
    # -- where: keep and protect --
    keep: int | str = Field(
        "auto",
        description="Recent history kept verbatim: 'auto' (what target_ratio leaves after "
        "the protected head and the summary), 'messages:N' (or N), 'tokens:N' or "
        "'fraction:F' of the window (adk-deepagents: the kind:value form; chat-app plan: 6 "
        "messages).",
    )
    protect_system: bool = Field(
        True, description="Never summarize system and developer messages (zrb, mcpagent)."
    )
    protect_first_user: bool = Field(
        True, description="Keep the first message a person wrote, the task (chat-app plan)."
    )
    pinned: Names = Field(
        (),
        description="Messages never summarized, by id or content hash; a comma-separated "
        "list in the environment (synopsis).",
    )
    user_turns_tokens: OptionalWhole = Field(
        None,
        ge=0,
        description="Also keep the newest user turns up to this many tokens (mcpagent).",
    )
    # -- the clearing tier --
    strategy: Strategy = Field(
        ("summarize",),
        description="How a pressure is answered, in order: 'clear' replaces old tool outputs "
        "by a placeholder naming the tool, its call, its status and the recall id; "
        "'summarize' summarizes; 'clear,summarize' summarizes only when clearing cannot reach "
        "the target (synopsis, after Anthropic's clear_tool_uses, LangChain's ClearToolUsesEdit "
        "and Gemini CLI's output masking).",
    )
    clear_keep_uses: Whole = Field(
        3,
        ge=0,
        description="The newest tool uses whose outputs are never cleared (synopsis, as "
        "Anthropic's keep: 3).",
    )
    clear_keep_tokens: Whole = Field(
        0,
        ge=0,
        description="Also keep the newest tool outputs up to this many tokens; 0 switches it "
        "off (synopsis, as Gemini CLI's 50,000).",
    )
    clear_at_least: OptionalWhole = Field(
        None,
        ge=0,
        description="Clear only when at least this many tokens can be; unset: a twentieth of "
        "the window (synopsis, as Anthropic's clear_at_least; Gemini CLI: 30,000).",
    )
    clear_exclude_tools: Names = Field(
        (),
        description="Tools whose outputs are never cleared (synopsis, as Anthropic's "
        "exclude_tools).",
    )
    clear_tool_inputs: bool = Field(
        False,
        description="Cut a cleared use's long call arguments too (a large file write) "
        "(synopsis, as Anthropic's clear_tool_inputs).",
    )
    # -- cheap reductions --
    truncate_args: bool = Field(
        True,
        description="Cut long arguments of old file-writing tool calls (adk-deepagents).",
    )
    truncate_tools: Names = Field(
        ("write_file", "edit_file"), description="Tools whose arguments are cut (adk-deepagents)."
    )
    truncate_trigger: Number = Field(
        0.7, gt=0, le=1, description="Share of the window where cutting starts (adk-deepagents)."
    )
    truncate_keep_messages: Whole = Field(
        20, ge=0, description="Recent messages whose arguments stay whole (adk-deepagents)."
    )
    truncate_max_length: Whole = Field(
        2000,
        ge=0,
        description="Arguments longer than this many characters are cut (adk-deepagents).",
    )
    truncate_prefix: Whole = Field(
        20, ge=0, description="Characters kept before the marker (adk-deepagents)."
    )
    dedupe_results: bool = Field(
        True, description="An old tool result identical to an earlier one is referenced (synopsis)."
    )
    dedupe_min_chars: Whole = Field(
        200, ge=0, description="Shorter results are never deduplicated (synopsis)."
    )
    dedupe_keep_messages: Whole = Field(
        20, ge=0, description="Recent messages whose results stay whole (synopsis)."
    )
    message_threshold: OptionalNumber = Field(
        0.5,
        gt=0,
        le=1,
        description="A part above this share of the trigger's tokens is summarized on its own; "
        "'none' switches it off (zrb, 50%).",
    )
    # -- the summarizer --
    summarizer: Literal["rules", "openai", "openai-responses", "anthropic"] = Field(
        "rules",
        description="Who summarizes: offline rules or an LLM (coding-agent plan: rules by "
        "default).",
    )
    summarizer_models: Names = Field(
        (),
        description="Models to try in order; empty: the conversation's model (chat-app plan).",
    )
    base_url: OptionalText = Field(
        None, description="API base URL for an OpenAI- or Anthropic-compatible server (synopsis)."
    )
    api_key_env: OptionalText = Field(
        None,
        description="Name of the environment variable holding the API key; unset: the SDK's "
        "default (synopsis).",
    )
    summary_ratio: Number = Field(
        0.5,
        gt=0,
        le=1,
        description="Share of the room a compaction's target leaves (after the protected "
        "head) that the summary may take, between min_summary_tokens and the summarizer's "
        "ceiling; the verbatim tail gets the rest (synopsis; chosen by the replayed-retention "
        "benchmark).",
    )
    min_summary_tokens: Whole = Field(
        256, ge=64, description="A summary's budget never goes below this (synopsis)."
    )
    max_summary_tokens: Whole = Field(
        4000,
        ge=1,
        description="Ceiling of an LLM summary's budget, which otherwise scales with the "
        "window (the chat-app plan set 2,000 for every window).",
    )
    rules_max_summary_tokens: Whole = Field(
        8000,
        ge=100,
        description="Ceiling of a rule-based summary's budget, which otherwise scales with "
        "the window; its frame alone takes about 70 (the coding-agent plan set 500 for every "
        "window).",
    )
    max_input_tokens: OptionalWhole = Field(
        None,
        ge=1,
        description="Most tokens sent to the summarizer at once; unset: its window "
        "(adk-deepagents).",
    )
    oversize: Literal["chunk", "trim"] = Field(
        "chunk",
        description="Input over max_input_tokens: summarized in chunks, or trimmed from the "
        "oldest side (zrb chunks; the chat-app plan trims).",
    )
    cache_aligned: bool = Field(
        False,
        description="Ask for the summary after the unchanged history, so the provider's "
        "prompt cache is reused (synopsis).",
    )
    strict_messages: bool = Field(
        False,
        description="Send the summarizer server no null content and no two text messages of "
        "one role in a row from the first request, as strict servers need; unset, that is "
        "learned from the first refusal (synopsis).",
    )
    abort_on_failure: bool = Field(
        False,
        description="Raise when every model fails instead of falling back to the rules "
        "(chat-app plan).",
    )
    max_retries: Whole = Field(
        2, ge=0, description="Retries of a transport failure, with backoff (chat-app plan)."
    )
    timeout: Number = Field(
        60.0, gt=0, description="Seconds one summarizer request may take (chat-app plan)."
    )
    summarizer_timeout: OptionalNumber = Field(
        None,
        gt=0,
        description="Seconds a whole summarizer call may take, retries included, before the "
        "rules take over; unset: 45 for an LLM summarizer, so that a server that never answers "
        "holds a compaction up for less than a minute (raise it for a slow local model or a "
        "long history summarized in chunks), and no limit for the rules or a summarizer of "
        "your own (synopsis; the chat-app plan fails safe).",
    )
    # -- the summary message --
    summary_role: Literal["auto", "user", "system", "merge"] = Field(
        "auto",
        description="Voice of the summary turn; auto: what the provider accepts (mcpagent: "
        "user; chat-app plan: system).",
    )
    summary_style: Literal["sections", "snapshot"] = Field(
        "sections",
        description="Numbered sections (mcpagent) or one <state_snapshot> block (zrb).",
    )
    preserved_thinking: bool = Field(
        False,
        description="The model keeps thinking across turns and checks the prefix before each "
        "block, so after a compaction every thinking block is dropped, not only those of "
        "earlier turns (synopsis; Claude preserved thinking, see docs/message-rules.md).",
    )
    # -- where replaced messages go, and the conversation --
    store: OptionalText = Field(
        None,
        description="Where replaced messages go: unset (nowhere), 'memory', 'sqlite' (the "
        "default file), a SQLite file path, or a postgresql:// URL that several processes "
        "share (adk-deepagents offloads history).",
    )
    session_id: OptionalText = Field(
        None, description="The conversation's id in the store (adk-deepagents)."
    )
    format: FormatName | None = Field(
        None, description="Wire format of the history; unset: detected (synopsis)."
    )
    provider: OptionalText = Field(
        None,
        description="Provider rules the output is validated for; unset: from the format "
        "(zrb repairs role alternation).",
    )

    @field_validator("trigger", mode="before")
    @classmethod
    def _trigger(cls, value: object) -> float | str:
        return normalize_trigger(value)

    @field_validator("keep", mode="before")
    @classmethod
    def _keep(cls, value: object) -> int | str:
        return normalize_keep(value)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not (
            value.isascii() and value.replace("_", "a").isalnum() and not value[0].isdigit()
        ):
            # Never echoed: it may be the key itself, put in the wrong place.
            raise ValueError(
                "api_key_env must be the name of an environment variable (letters, digits "
                "and _), such as OPENAI_API_KEY, not the key"
            )
        return value

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {value!r}")
        return value

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str | None) -> str | None:
        if value is not None and value not in PROFILES:
            known = ", ".join(repr(p) for p in PROFILES)
            raise ValueError(f"provider must be one of {known}, got {value!r}")
        return value
