"""adk-deepagents: the ``before_model_callback`` that runs ``maybe_summarize`` before each request.

What is called
    ``step`` builds the callback ``create_deep_agent(summarization=...)`` installs
    (``adk_deepagents.callbacks.before_model.make_before_model_callback`` with a
    ``SummarizationConfig`` and the default ``StateBackend`` factory ``create_deep_agent``
    passes for history offloading), wraps the history in a google-adk ``LlmRequest`` (system
    prompt as ``config.system_instruction``, conversation as ``contents``) and awaits the
    callback on it, with no ADK runner. ADK builds that request for every model call whether or
    not adk-deepagents is in use, so ``step`` builds it with ``model_construct``, unvalidated,
    to keep ADK's own request validation out of the timing. The callback appends its tool docs
    to the system instruction (thrown away here), then ``maybe_summarize`` counts tokens, calls
    ``partition_messages`` (keep the last N contents, summarize the rest), offloads the
    summarized part to the backend, and replaces ``llm_request.contents`` with ``[summary
    Content] + kept``. The callback context is a stand-in whose ``state`` is a plain dict, the
    session state; the callback and ``maybe_summarize`` only read and write ``state``. Every
    history from :meth:`native` starts a fresh session state, which the histories ``step``
    returns carry on. The callback is async: ``step`` runs it to completion on one event loop
    per adapter, created once and reused, so ``step`` must not be called from inside a running
    event loop.

What was injected
    adk-deepagents takes no summarizer object, only a model string that it hands to
    ``LiteLlm``. So the one module-level function ``maybe_summarize`` awaits,
    ``adk_deepagents.summarization.generate_llm_summary(messages, model, max_input_tokens)``, is
    swapped for a coroutine that returns ``fake_summary(len(messages))``. The swap happens
    around each ``step`` and is undone afterwards. ``n`` counts ``types.Content`` entries, and
    a run of tool results merged into one Content counts as one. Nothing else is patched,
    with one exception. ``adk_deepagents.summarization`` imports
    ``google.adk.models.lite_llm``, which raises ImportError unless litellm is installed, and
    adk-deepagents 0.3.0 does not depend on litellm. So when litellm is absent, the adapter
    registers a stand-in module with an unbuildable ``LiteLlm`` before importing
    summarization (see :func:`_import_summarization`). Without litellm, an agent built with
    ``summarization=`` raises that ImportError in its before-model callback on every request.

Not modelled
    In ADK, the callback rewrites only that one request's ``contents``. The session events stay
    whole, so a real agent rebuilds the full history for its next request and summarizes it
    again, once per model call past the trigger. ``step`` returns the rewritten contents as
    the new history, as the benchmark's loop expects. The offload goes through
    ``StateBackend.write``. That writes into ``state["files"]`` only when the key already
    exists; a fresh session has none until a file tool runs, so the offloaded text is
    formatted and then dropped, while the summary still points to
    ``/conversation_history/session_history.md``.

Budget mapping (its own counter, ``count_messages_tokens``: ``max(1, len(s) // 4)`` for each
text, function-call name and ``str(args)``, function-response name and ``str(response)``; the
system instruction is not counted)
    * ``context_window`` = ``budget.window`` (``SummarizationConfig.context_window``).
    * ``trigger`` = ``("fraction", budget.trigger / budget.window)``, rounded up to the next
      float if needed, so that ``int(window * fraction)`` is exactly ``budget.trigger``. The
      callback only honours the ``"fraction"`` kind (``("tokens", n)`` silently becomes 0.85).
      ``maybe_summarize`` summarizes when the tokens are **>=** the threshold.
    * ``keep`` = ``("messages", N)``: the callback only honours the ``"messages"`` kind
      (anything else silently becomes 6). The adapter works N out from ``budget.keep`` on every
      call with the library's own token walk, the one ``truncate_tool_args`` uses for its
      ``("fraction", ...)`` keep: walk back from the newest Content while the kept tokens stay
      within ``budget.keep``. N is then raised to at least 1, since nobody configures zero
      kept messages. N counts Contents: a run of tool results is one.
    * ``use_llm_summary=True`` (:func:`create`) or ``False`` (:func:`create_non_llm`);
      ``truncate_args=None`` (the default); ``history_path_prefix`` and ``model`` at their
      defaults.

Non-LLM path (:func:`create_non_llm`)
    With ``use_llm_summary=False``, ``maybe_summarize`` makes no model call and uses its inline
    fallback: the summary is ``format_messages_for_summary(to_summarize)`` (``[role]: text``,
    ``[Tool Call: name(args)]``, tool results cut to 1000 + 500 characters), cut to
    ``int(0.15 * window) * 4`` characters. The same fallback runs when the LLM call raises.
    ``TruncateArgsConfig`` also shortens history without an LLM, but only for arguments of
    tools named exactly ``write_file`` / ``edit_file``. None of the bundled transcripts' tools
    has either name, so it is left off.

Conversions
    OpenAI chat dicts become ``types.Content``: user text becomes ``Content(role="user",
    [Part(text)])``. An assistant message becomes ``Content(role="model")`` with a text part
    (when content is not None) and then one ``FunctionCall(id, name, args=json.loads(arguments))``
    per call. A run of consecutive ``tool`` messages becomes one ``Content(role="user")`` with
    one ``FunctionResponse(id, name, response={"result": content})`` per message. That is ADK's
    wrapping of a non-dict tool result and how ADK merges parallel results. A tool result's
    name is its call's name, or "unknown". Leading system messages are kept aside and put
    back in front. A later system message becomes ``Content(role="system")`` (ADK has nowhere
    else to put one). Arguments strings that ``json.dumps(json.loads(s))`` does not reproduce
    (compact separators, key order, non-ASCII, number spellings) are kept in a side table
    keyed by (call id, canonical args). :meth:`items` restores the original string when a call
    with that id and those arguments survives. Arguments that are not a JSON object become
    ``args={}``, with the original string in the side table. A function_response other than
    ``{"result": str}`` comes back as ``json.dumps(response)``. The way back repairs nothing: every
    function_response comes out as a ``tool`` message, whether or not its call survived.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import math
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any

from adk_deepagents.backends import StateBackend
from adk_deepagents.callbacks.before_model import make_before_model_callback
from adk_deepagents.types import SummarizationConfig
from google.adk.models import LlmRequest
from google.genai import types

from benchmarks.compare.inputs import leading_system
from benchmarks.compare.systems import Budget, Items, System, fake_summary

if TYPE_CHECKING:
    from collections.abc import Iterator

_VERSION = version("adk-deepagents")


def _import_summarization() -> ModuleType:
    """``adk_deepagents.summarization``, importable even without litellm.

    The module imports ``google.adk.models.lite_llm``, which raises ImportError unless litellm
    (``google-adk[extensions]``) is installed; adk-deepagents 0.3.0 does not depend on it. The
    only user of ``LiteLlm`` is ``generate_llm_summary``, which the adapter replaces, so when
    litellm is missing a stand-in module whose ``LiteLlm`` cannot be built is registered first.
    """
    try:
        return importlib.import_module("adk_deepagents.summarization")
    except ImportError:
        if importlib.util.find_spec("litellm") is not None:
            raise
    stub = ModuleType("google.adk.models.lite_llm")

    class LiteLlm:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise ImportError("LiteLLM support requires: pip install google-adk[extensions]")

    stub.LiteLlm = LiteLlm  # type: ignore[attr-defined]
    sys.modules[stub.__name__] = stub
    return importlib.import_module("adk_deepagents.summarization")


_summarization = _import_summarization()


@dataclass
class AdkHistory:
    """A history as adk-deepagents sees it, plus what the adapter keeps beside it."""

    contents: list[types.Content]
    """``llm_request.contents``: the conversation without the system prompt."""
    system: Items = field(default_factory=list)
    """The leading system messages (ADK's agent instruction), restored first by ``items``."""
    state: dict[str, Any] = field(default_factory=dict)
    """The session state ``maybe_summarize`` reads and writes (a fresh session per ``native``)."""
    raw_arguments: dict[tuple[str, str], str] = field(default_factory=dict)
    """(call id, canonical args JSON) -> the original arguments string, when ``json.dumps``
    would not reproduce it."""


def _canonical(args: Any) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def _state_backend(state: dict[str, Any]) -> StateBackend:
    """What ``create_deep_agent`` passes as ``backend_factory`` when no backend is given."""
    return StateBackend(state)


async def _fake_generate_llm_summary(
    messages: list[types.Content],
    model: str = "",
    max_input_tokens: int = 4000,
) -> str | None:
    del model, max_input_tokens
    return fake_summary(len(messages))


@contextmanager
def _fake_summarizer() -> Iterator[None]:
    original = _summarization.generate_llm_summary
    _summarization.generate_llm_summary = _fake_generate_llm_summary
    try:
        yield
    finally:
        _summarization.generate_llm_summary = original


def _trigger_fraction(trigger: int, window: int) -> float:
    """A fraction with ``int(window * fraction) == trigger`` (the threshold maybe_summarize
    computes)."""
    fraction = trigger / window
    while int(window * fraction) < trigger:
        fraction = math.nextafter(fraction, math.inf)
    return fraction


def _keep_messages(contents: list[types.Content], keep_tokens: int) -> int:
    """How many trailing Contents fit in ``keep_tokens`` by the library's own counter (the walk
    ``truncate_tool_args`` does for a token-sized keep), at least 1."""
    kept_tokens = 0
    count = 0
    for content in reversed(contents):
        tokens = _summarization.count_content_tokens(content)
        if kept_tokens + tokens > keep_tokens:
            break
        kept_tokens += tokens
        count += 1
    return max(1, count)


class AdkDeepagents:
    """adk-deepagents' before-model summarization, driven one request at a time."""

    name = "adk-deepagents"
    persists = False
    """The callback rewrites the outgoing request only; the session keeps every event, so a
    real agent summarizes again before each request past the trigger (the replay does too)."""

    def __init__(self, *, use_llm_summary: bool = True) -> None:
        self.use_llm_summary = use_llm_summary
        part = "maybe_summarize" if use_llm_summary else "maybe_summarize, inline fallback"
        self.label = f"adk-deepagents {_VERSION} partition + {part}"
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- conversions (not timed) -------------------------------------------------------------

    def native(self, items: Items) -> AdkHistory:
        """OpenAI chat messages as ADK ``Content``s; leading system messages kept aside."""
        lead = leading_system(items)
        history = AdkHistory(contents=[], system=[dict(m) for m in items[:lead]])
        contents = history.contents
        names: dict[str, str] = {}
        tool_run: types.Content | None = None  # the Content collecting a run of tool results
        for message in items[lead:]:
            role = message.get("role")
            content = message.get("content")
            if content is not None and not isinstance(content, str):
                raise TypeError(f"only string content is converted, got {type(content)!r}")
            if role == "tool":
                call_id = message.get("tool_call_id")
                part = types.Part(
                    function_response=types.FunctionResponse(
                        id=call_id,
                        name=names.get(call_id or "", "unknown"),
                        response={"result": content},
                    )
                )
                if tool_run is None:
                    tool_run = types.Content(role="user", parts=[part])
                    contents.append(tool_run)
                else:
                    assert tool_run.parts is not None
                    tool_run.parts.append(part)
                continue
            tool_run = None
            if role == "assistant":
                parts = [] if content is None else [types.Part(text=content)]
                for call in message.get("tool_calls") or ():
                    function = call["function"]
                    raw = function.get("arguments", "")
                    try:
                        args = json.loads(raw)
                    except (TypeError, ValueError):
                        args = None
                    if not isinstance(args, dict):
                        args = {}
                    if json.dumps(args) != raw:
                        history.raw_arguments[(call["id"], _canonical(args))] = raw
                    names[call["id"]] = function["name"]
                    parts.append(
                        types.Part(
                            function_call=types.FunctionCall(
                                id=call["id"], name=function["name"], args=args
                            )
                        )
                    )
                contents.append(types.Content(role="model", parts=parts))
            elif role in ("user", "system"):
                contents.append(types.Content(role=role, parts=[types.Part(text=content)]))
            else:
                raise ValueError(f"unknown role {role!r}")
        return history

    def items(self, history: AdkHistory) -> Items:
        """Back to OpenAI chat messages, without repairing anything."""
        out: Items = [dict(m) for m in history.system]
        for content in history.contents:
            parts = content.parts or []
            if content.role == "model":
                texts = [p.text for p in parts if p.text is not None]
                message: dict[str, Any] = {
                    "role": "assistant",
                    "content": "".join(texts) if texts else None,
                }
                calls = [p.function_call for p in parts if p.function_call is not None]
                if calls:
                    message["tool_calls"] = [self._call(history, fc) for fc in calls]
                out.append(message)
                continue
            role = "system" if content.role == "system" else "user"
            pending: list[str] = []
            for part in parts:
                if part.function_response is not None:
                    if pending:
                        out.append({"role": role, "content": "".join(pending)})
                        pending = []
                    out.append(self._result(part.function_response))
                elif part.text is not None:
                    pending.append(part.text)
            if pending or not parts:
                out.append({"role": role, "content": "".join(pending)})
        return out

    @staticmethod
    def _call(history: AdkHistory, fc: types.FunctionCall) -> dict[str, Any]:
        args = fc.args if fc.args is not None else {}
        raw = history.raw_arguments.get((fc.id or "", _canonical(args)))
        return {
            "id": fc.id,
            "type": "function",
            "function": {
                "name": fc.name,
                "arguments": raw if raw is not None else json.dumps(args),
            },
        }

    @staticmethod
    def _result(fr: types.FunctionResponse) -> dict[str, Any]:
        response = fr.response
        if isinstance(response, dict) and set(response) == {"result"}:
            result = response["result"]
            text = result if isinstance(result, str) else json.dumps(result)
        else:
            text = json.dumps(response)
        return {"role": "tool", "tool_call_id": fr.id, "content": text}

    # -- the timed call ------------------------------------------------------------------------

    def step(self, history: AdkHistory, budget: Budget) -> AdkHistory | None:
        """Run adk-deepagents' before-model callback on the history; ``None`` if it left the
        request's contents alone."""
        window = max(1, budget.window, budget.trigger)
        config = SummarizationConfig(
            trigger=("fraction", _trigger_fraction(budget.trigger, window)),
            keep=("messages", _keep_messages(history.contents, budget.keep)),
            use_llm_summary=self.use_llm_summary,
            context_window=window,
        )
        callback = make_before_model_callback(
            summarization_config=config, backend_factory=_state_backend
        )
        system = "\n\n".join(str(m.get("content") or "") for m in history.system)
        # ADK builds this request for every model call whether or not adk-deepagents is used;
        # build it unvalidated (the Contents already are) so that only the callback is timed.
        request = LlmRequest.model_construct(
            contents=list(history.contents),
            config=types.GenerateContentConfig(system_instruction=system or None),
        )
        before = request.contents
        context = SimpleNamespace(state=history.state)
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        with _fake_summarizer():
            self._loop.run_until_complete(callback(context, request))
        after = request.contents
        if after is before or (
            len(after) == len(history.contents)
            and all(a is b for a, b in zip(after, history.contents, strict=True))
        ):
            return None
        return AdkHistory(
            contents=after,
            system=history.system,
            state=history.state,
            raw_arguments=history.raw_arguments,
        )


def create() -> System:
    """adk-deepagents with its LLM summary (replaced by :func:`fake_summary`)."""
    return AdkDeepagents(use_llm_summary=True)


def create_non_llm() -> System:
    """adk-deepagents with ``use_llm_summary=False``: the inline text fallback, no model call."""
    return AdkDeepagents(use_llm_summary=False)
