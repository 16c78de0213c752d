"""zrb's history summarizer (zrb 2.65.5), driven as zrb's own agent runner drives it.

What is called
--------------
Before a run, zrb's runner (``zrb.llm.agent.run.runner._prepare_history``) awaits every history
processor of the agent as ``processor(history, reserved_tokens)``; zrb's chat task installs
exactly one, ``zrb.llm.summarizer.create_summarizer_history_processor()``. :meth:`ZrbSplit.step`
awaits that processor: it first summarizes "fat" tool results one by one
(``summarize_messages``), then, when the history is over the token threshold (or over the
message window), splits it with ``split_history`` and replaces the older part by one
"Automated Context Restoration" user message (``summarize_history``: chunked summarization,
``strip_orphaned_returns`` and ``ensure_alternating_roles`` on the kept part). The processor is
async; ``step`` runs it on one event loop per adapter (``loop.run_until_complete``), created
once. The leading system messages are held aside as the agent's system prompt, which zrb
sends as instructions, not history: ``reserved_tokens`` is their count by zrb's counter, as
the runner computes it, and :meth:`items` puts them back in front.
What the runner does after the processors (a second ``ensure_alternating_roles``, a
force-prune to the last message when still over ``LLM_MAX_TOKEN_PER_REQUEST``, and
``fit_context_window``) is not part of ``step``; the last of these is :func:`create_non_llm`.
``step`` must not be called from inside a running event loop. zrb writes its progress lines
("History limits exceeded ...", "Compressing chunk ...") to the stderr it captured at import;
``step`` points file descriptor 2 at the null device meanwhile, so they cost what they cost in
production but do not bury the benchmark's own progress.

What is injected
----------------
No monkeypatching. zrb's processor takes its two summarizer agents as parameters
(``conversational_agent``, ``message_agent``); they are built with zrb's own factories
(``create_conversational_summarizer_agent`` / ``create_message_summarizer_agent``, so they
carry zrb's summarizer prompts) with ``model=`` a pydantic-ai ``FunctionModel`` that returns
:func:`fake_summary`. zrb hands its summarizer text, not messages, so the fake recovers ``n``:

* the message summarizer is always given one tool result: ``n = 1``;
* the conversational summarizer is given one chunk of messages rendered by zrb's
  ``message_to_text`` and joined by newlines: ``n`` is the number of messages the chunk
  consists of, found by matching the chunk against the rendered messages of the history
  being processed (a tool result may already carry zrb's "SUMMARY OF TOOL RESULT" text);
  this lookup runs inside the timed call, but only when zrb summarizes;
* zrb's consolidation prompts (several chunk summaries merged into one) get the sum of the
  ``n`` of the summaries they merge; a piece of one oversized message gets ``n = 1``.

``chunks_unmatched`` counts chunks the lookup could not place (they get the number of lines
that look like the start of a rendered message); it stays 0 on the bundled transcripts.

One global setting is changed: ``CFG.LLM_JOURNAL_ENABLED = False`` (the environment variable
``ZRB_LLM_JOURNAL_ENABLED=off``), since ``summarize_history`` otherwise appends the user's
journal index from the home directory to every summary.

Budget mapping
--------------
* ``conversational_token_threshold`` (``ZRB_LLM_CONVERSATIONAL_SUMMARIZATION_TOKEN_THRESHOLD``)
  = ``budget.trigger``: summarize once the history's tokens exceed it.
* ``summary_window`` (``ZRB_LLM_HISTORY_SUMMARIZATION_WINDOW``, messages, default 100) =
  ``2**31 - 1``, i.e. off. zrb also summarizes once the history has more messages than the
  window, whatever its tokens, so any finite window would compact histories under the
  trigger; and a window of at least the history length makes ``split_history`` aim at
  keeping everything and then back off to the token caps. The kept tail is therefore zrb's
  own rule: the longest tail starting at a user turn within 0.7 x ``trigger`` tokens (then
  any safe split within 0.7 x, then within 0.8 x, then a best-effort split).
  ``budget.keep`` has no zrb knob and is unused.
* ``message_token_threshold`` (``ZRB_LLM_MESSAGE_SUMMARIZATION_TOKEN_THRESHOLD``) is left at
  zrb's default, half the conversational threshold: ``budget.trigger // 2``.
* Token counting: a default ``LLMLimiter()``, as a user gets it: ``ENABLE_TIKTOKEN`` is off by
  default, so tokens are ``len(text) // 4`` over zrb's flattening of the parts (contents and
  tool-call arguments; names and ids are not counted).
* ``budget.window`` is unused by ``step``. For :func:`create_non_llm` the limiter's
  ``max_token_per_request`` (``ZRB_LLM_MAX_TOKEN_PER_REQUEST``) is set so that 90 % of it,
  the part ``fit_context_window`` fills, equals ``budget.trigger``.

Non-LLM path
------------
When summarization fails, zrb's processor leaves the history as it was (apart from fat tool
results, which it truncates to the message threshold with a "TRUNCATED TOOL RESULT" prefix);
the shortening without an LLM is done by the runner: ``LLMLimiter.fit_context_window``, which
drops whole turns from the front (up to the next user prompt) until the history fits in
90 % of ``max_token_per_request`` (and returns ``[]`` when no later turn start exists), plus a
cruder force-prune to the last message only when the history is over 100 % of it.
:func:`create_non_llm` steps with ``fit_context_window(history, "", 0)``: the history as it
stands (the latest user message included) and no separate new message.

Conversion
----------
OpenAI chat dicts become pydantic-ai messages: leading system messages and the first user
message share the first ``ModelRequest`` (``SystemPromptPart`` then ``UserPromptPart``);
every other user or system message opens a new ``ModelRequest``; consecutive tool messages
share one ``ModelRequest`` of ``ToolReturnPart``; an assistant message is a ``ModelResponse``
(``TextPart`` when it has content, then one ``ToolCallPart`` per call with the arguments as the
JSON string they came as). A tool message's ``tool_name`` is the name of the latest earlier
call with its id, or ``"unknown"`` when there is none (``unknown_tool_names`` counts them).
Back, every part becomes its own message except that one ``ModelResponse`` is one assistant
message (texts joined by a blank line, as pydantic-ai's OpenAI mapping does); nothing is
repaired: a tool result whose call is gone still comes out as a ``tool`` message.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from zrb.config.config import CFG
from zrb.llm.agent.summarizer import (
    create_conversational_summarizer_agent,
    create_message_summarizer_agent,
)
from zrb.llm.config.limiter import LLMLimiter
from zrb.llm.summarizer import create_summarizer_history_processor
from zrb.llm.summarizer.message_converter import (
    message_to_text,
    model_request_to_text,
    model_response_to_text,
)
from zrb.llm.summarizer.message_processor import SUMMARY_PREFIX

from benchmarks.compare.inputs import leading_system
from benchmarks.compare.systems import Budget, Items, System, fake_summary

if TYPE_CHECKING:
    from collections.abc import Iterator

NO_WINDOW = 2**31 - 1
"""``summary_window``: more messages than any history has, so only tokens trigger."""

UNKNOWN_TOOL = "unknown"
"""``tool_name`` of a tool message whose call is not found before it."""

_SUMMARY_RE = re.compile(r"Summary of (\d+) earlier messages\.")
_LAST_INTENT = "\n\nIMPORTANT: The last part of this history contains the user's latest request."
_MESSAGE_STARTS = ("User: ", "System: ", "Tool Result (", "AI: ", "AI Tool Call [", "[")


# --- conversion -----------------------------------------------------------------------------


def to_native(items: Items) -> tuple[list[ModelMessage], int]:
    """``items`` as pydantic-ai messages, and how many tool messages got ``"unknown"``."""
    out: list[ModelMessage] = []
    names: dict[str, str] = {}
    unknown = 0
    parts: list[Any] | None = None  # the open ModelRequest's parts

    def open_request() -> list[Any]:
        new: list[Any] = []
        out.append(ModelRequest(parts=new))
        return new

    for item in items:
        role = item.get("role")
        content: Any = item.get("content")
        if role == "system" or role == "user":
            part: Any = (
                SystemPromptPart(content=content)
                if role == "system"
                else UserPromptPart(content=content)
            )
            if parts is None or not all(isinstance(p, SystemPromptPart) for p in parts):
                parts = open_request()
            parts.append(part)
        elif role == "tool":
            call_id = item.get("tool_call_id", "")
            name = names.get(call_id)
            if name is None:
                name, unknown = UNKNOWN_TOOL, unknown + 1
            if parts is None or not parts or not all(isinstance(p, ToolReturnPart) for p in parts):
                parts = open_request()
            parts.append(ToolReturnPart(tool_name=name, content=content, tool_call_id=call_id))
        elif role == "assistant":
            parts = None
            response: list[Any] = []
            if content is not None:
                response.append(TextPart(content=content))
            for call in item.get("tool_calls") or ():
                function = call["function"]
                names[call["id"]] = function["name"]
                response.append(
                    ToolCallPart(
                        tool_name=function["name"],
                        args=function["arguments"],
                        tool_call_id=call["id"],
                    )
                )
            out.append(ModelResponse(parts=response))
        else:
            raise ValueError(f"unsupported role {role!r}")
    return out, unknown


def to_items(history: list[ModelMessage]) -> Items:
    """pydantic-ai messages back as OpenAI chat dicts, one per request part and one per
    response, with nothing repaired."""
    out: Items = []
    for message in history:
        if isinstance(message, ModelResponse):
            texts: list[str] = []
            calls: list[dict[str, Any]] = []
            for part in message.parts:
                if isinstance(part, TextPart):
                    texts.append(part.content)
                elif isinstance(part, ToolCallPart):
                    args = part.args
                    calls.append(
                        {
                            "id": part.tool_call_id,
                            "type": "function",
                            "function": {
                                "name": part.tool_name,
                                "arguments": args if isinstance(args, str) else json.dumps(args),
                            },
                        }
                    )
                else:
                    raise TypeError(f"unexpected response part {type(part).__name__}")
            item: dict[str, Any] = {
                "role": "assistant",
                "content": "\n\n".join(texts) if texts else None,
            }
            if calls:
                item["tool_calls"] = calls
            out.append(item)
            continue
        for request_part in message.parts:
            if isinstance(request_part, SystemPromptPart):
                out.append({"role": "system", "content": request_part.content})
            elif isinstance(request_part, UserPromptPart):
                out.append({"role": "user", "content": request_part.content})
            elif isinstance(request_part, ToolReturnPart):
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": request_part.tool_call_id,
                        "content": request_part.content,
                    }
                )
            elif isinstance(request_part, RetryPromptPart) and request_part.tool_name is not None:
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": request_part.tool_call_id,
                        "content": request_part.model_response(),
                    }
                )
            elif isinstance(request_part, RetryPromptPart):
                out.append({"role": "user", "content": request_part.model_response()})
            else:
                raise TypeError(f"unexpected request part {type(request_part).__name__}")
    return out


# --- the fake summarizer --------------------------------------------------------------------


def _prompt_text(messages: list[ModelMessage]) -> str:
    """The text zrb sent its summarizer agent (the last user prompt of the request)."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _part_candidates(message: Any) -> list[tuple[str, ...]]:
    """How zrb's ``message_to_text`` renders each part of ``message``: per part, the text as it
    came and, for a tool result, as zrb's fat-result summarizer rewrites it."""
    if isinstance(message, ModelRequest):
        out: list[tuple[str, ...]] = []
        for part in message.parts:
            text = model_request_to_text(ModelRequest(parts=[part]))
            if isinstance(part, ToolReturnPart):
                fat = f"Tool Result ({part.tool_name}): {SUMMARY_PREFIX}\n{fake_summary(1)}"
                out.append((text, fat))
            else:
                out.append((text,))
        return out or [("[Empty ModelRequest]",)]
    if isinstance(message, ModelResponse):
        return [(model_response_to_text(ModelResponse(parts=[p])),) for p in message.parts] or [
            ("[Empty ModelResponse]",)
        ]
    return [(message_to_text(message),)]


class _ChunkCounter:
    """Counts the messages behind one chunk of text zrb hands its summarizer."""

    def __init__(self) -> None:
        self.history: list[Any] = []
        self.cursor = 0
        self.unmatched = 0
        self._cache: dict[int, list[tuple[str, ...]]] = {}

    def reset(self, history: list[Any]) -> None:
        self.history, self.cursor, self._cache = history, 0, {}

    def _candidates(self, index: int) -> list[tuple[str, ...]]:
        found = self._cache.get(index)
        if found is None:
            found = self._cache[index] = _part_candidates(self.history[index])
        return found

    def _message_end(self, text: str, pos: int, index: int) -> int | None:
        parts = self._candidates(index)
        for k, options in enumerate(parts):
            for option in options:
                end = pos + len(option)
                if text.startswith(option, pos) and (end == len(text) or text[end] == "\n"):
                    pos = end
                    break
            else:
                return None
            if k < len(parts) - 1:
                if pos >= len(text):
                    return None
                pos += 1
        return pos

    def _consume(self, text: str, start: int) -> int | None:
        pos, index = 0, start
        while index < len(self.history):
            end = self._message_end(text, pos, index)
            if end is None:
                return None
            index += 1
            if end == len(text):
                return index - start
            pos = end + 1
        return None

    def count(self, text: str) -> int:
        if _LAST_INTENT in text:
            text = text[: text.index(_LAST_INTENT)]
        order = [self.cursor, *range(len(self.history))]
        for start in order:
            if start >= len(self.history):
                continue
            if not any(text.startswith(o) for o in self._candidates(start)[0]):
                continue
            n = self._consume(text, start)
            if n:
                self.cursor = start + n
                return n
        self.unmatched += 1
        return max(1, sum(line.startswith(_MESSAGE_STARTS) for line in text.split("\n")))


def _summarized_count(text: str) -> int:
    """How many messages the fake summaries quoted in ``text`` stand for (at least 1)."""
    return max(1, sum(int(n) for n in _SUMMARY_RE.findall(text)))


# --- the adapter ----------------------------------------------------------------------------


def _request_limit(trigger: int) -> int:
    """The smallest ``max_token_per_request`` whose 90 % (``fit_context_window``) is
    ``trigger``."""
    limit = max(1, -(-trigger * 10 // 9))
    while int(limit * 0.90) < trigger:
        limit += 1
    return limit


@contextmanager
def _quiet() -> Iterator[None]:
    """zrb's progress lines go to the stderr it captured at import; the benchmark's own
    progress would drown in them, so file descriptor 2 points at the null device meanwhile
    (two system calls, inside the timed call: microseconds against zrb's milliseconds)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


@dataclass
class ZrbHistory:
    """A history as zrb holds it: the leading system messages are the agent's system prompt
    (zrb sends it as instructions and reserves its tokens), the rest pydantic-ai messages."""

    messages: list[ModelMessage]
    system: Items


class _ZrbHistory:
    """What both zrb systems share: the conversions and zrb's default token counter."""

    name = "zrb"

    def __init__(self, label: str) -> None:
        CFG.LLM_JOURNAL_ENABLED = False
        self.label = label
        self.limiter = LLMLimiter()
        self.unknown_tool_names = 0
        """Tool messages converted so far whose call was not found (named ``"unknown"``)."""

    def native(self, items: Items) -> ZrbHistory:
        lead = leading_system(items)
        history, unknown = to_native(items[lead:])
        self.unknown_tool_names += unknown
        return ZrbHistory(history, [dict(m) for m in items[:lead]])

    def reserved(self, history: ZrbHistory) -> int:
        """What zrb's runner reserves for the system prompt: its tokens by zrb's counter."""
        text = "\n\n".join(str(m.get("content") or "") for m in history.system)
        return self.limiter.count_tokens(text) if text else 0

    def items(self, history: ZrbHistory) -> Items:
        return [*history.system, *to_items(history.messages)]


class ZrbSplit(_ZrbHistory):
    """zrb's summarizer history processor, its summarizer agents on a fake model."""

    def __init__(self) -> None:
        super().__init__(f"zrb {version('zrb')} history splitting")
        self._counter = _ChunkCounter()
        self._conversational = create_conversational_summarizer_agent(
            model=FunctionModel(self._conversational_fake, model_name="fake-summary")
        )
        self._message = create_message_summarizer_agent(
            model=FunctionModel(self._message_fake, model_name="fake-summary")
        )
        self._processors: dict[Budget, Any] = {}
        self._loop = asyncio.new_event_loop()

    @property
    def chunks_unmatched(self) -> int:
        """Conversation chunks whose message count had to be estimated."""
        return self._counter.unmatched

    def _conversational_fake(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        text = _prompt_text(messages)
        if text.startswith(("Consolidate ", "Summarize this part of a document:")):
            n = _summarized_count(text)
        else:
            n = self._counter.count(text)
        return ModelResponse(parts=[TextPart(content=fake_summary(n))])

    def _message_fake(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(content=fake_summary(1))])

    def _processor(self, budget: Budget) -> Any:
        processor = self._processors.get(budget)
        if processor is None:
            processor = self._processors[budget] = create_summarizer_history_processor(
                conversational_agent=self._conversational,
                message_agent=self._message,
                limiter=self.limiter,
                conversational_token_threshold=budget.trigger,
                message_token_threshold=budget.trigger // 2,
                summary_window=NO_WINDOW,
            )
        return processor

    def step(self, history: ZrbHistory, budget: Budget) -> ZrbHistory | None:
        processor = self._processor(budget)
        self._counter.reset(history.messages)
        with _quiet():
            out = self._loop.run_until_complete(processor(history.messages, self.reserved(history)))
        self._counter.reset([])
        if len(out) == len(history.messages) and all(
            a is b for a, b in zip(out, history.messages, strict=True)
        ):
            return None
        return ZrbHistory(list(out), history.system)


class ZrbTrim(_ZrbHistory):
    """zrb's trimming without an LLM: ``LLMLimiter.fit_context_window``."""

    def __init__(self) -> None:
        super().__init__(f"zrb {version('zrb')} fit_context_window")

    def step(self, history: ZrbHistory, budget: Budget) -> ZrbHistory | None:
        self.limiter.max_token_per_request = _request_limit(budget.trigger)
        out = self.limiter.fit_context_window(history.messages, "", self.reserved(history))
        if len(out) == len(history.messages):
            return None
        return ZrbHistory(list(out), history.system)


def create() -> System:
    """zrb's summarizer history processor, summarizing with :func:`fake_summary`."""
    return ZrbSplit()


def create_non_llm() -> System:
    """zrb's trimming without an LLM (``LLMLimiter.fit_context_window``)."""
    return ZrbTrim()
