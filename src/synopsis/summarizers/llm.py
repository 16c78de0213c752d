"""The LLM summarizer: one completion call, checked, with a way out of every failure.

The order of things when a call does not give a good summary (DESIGN "Summarize"; seed 001):

1. A transport failure (:class:`~synopsis.summarizers.completion.TransportError`, a timeout, a
   dropped connection) is retried after ``backoff * 2**attempt`` seconds, ``max_retries`` times.
2. Bad output (not JSON, not the schema, empty, or not shorter than its input) is logged with
   its first 200 characters and not retried: the same prompt would likely fail the same way.
3. A summary that drops anchors (the first request, paths and identifiers the input repeats,
   pending items) is asked for once more, naming what is missing.
4. Whatever still failed moves on to the next model of ``models``, then to the ``fallback``
   summarizer (rule-based by default), or raises :class:`SummarizerError` when
   ``abort_on_failure`` is set.

``summarize`` and ``asummarize`` run the same steps (one generator yields the calls and the
sleeps; a sync and an async driver carry them out), so they cannot drift apart.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Final, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from synopsis.errors import ConfigurationError, ConversationError
from synopsis.messages import Message, content_hash, message_id, message_text
from synopsis.summarizers._options import utc_now, whole_number
from synopsis.summarizers.completion import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionResponse,
    SummarizerError,
    TransportError,
    Usage,
    is_retryable,
)
from synopsis.summarizers.digest import digest
from synopsis.summarizers.extractors import DEFAULT_EXTRACTORS
from synopsis.summarizers.prompts import SYSTEM_PROMPT, build_prompt, missing_anchors_prompt
from synopsis.summarizers.protocols import AsyncSummarizer, Summarizer
from synopsis.summarizers.records import (
    MAX_FACET_ITEMS,
    MAX_KEY_POINTS,
    MAX_SECTION_ITEMS,
    Coverage,
    Facets,
    Sections,
    SummaryRecord,
)
from synopsis.summarizers.render import render
from synopsis.summarizers.rules import RuleBasedSummarizer
from synopsis.summarizers.scanning import dedupe, scan_text
from synopsis.tokens import counter_for_model

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["LLMSummarizer", "SummaryContent", "parse_summary", "required_anchors"]

logger = logging.getLogger("synopsis.summarizers")

_LOGGED_CHARS: Final = 200
_PREFIX_WORDS: Final = 6
_USER_CHARS: Final = 2000


def _clip(value: object, cap: int) -> object:
    return value[:cap] if isinstance(value, list) else value


class SummaryContent(BaseModel):
    """What the LLM fills: the content fields of a :class:`SummaryRecord`. Lists longer than
    their cap are cut to it (an LLM that lists 31 key points still gave a summary)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    narrative: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
    key_points: Annotated[tuple[str, ...], Field(max_length=MAX_KEY_POINTS)] = ()
    sections: Sections = Field(default_factory=Sections)
    facets: Facets = Field(default_factory=Facets)

    @model_validator(mode="before")
    @classmethod
    def _apply_caps(cls, data: Any) -> Any:  # noqa: ANN401 - raw JSON of any shape
        if not isinstance(data, dict):
            return data
        data = dict(data)
        data["key_points"] = _clip(data.get("key_points", []), MAX_KEY_POINTS)
        for key, cap in (("sections", MAX_SECTION_ITEMS), ("facets", MAX_FACET_ITEMS)):
            group = data.get(key)
            if isinstance(group, dict):
                group = {k: _clip(v, cap) for k, v in group.items()}
                entities = group.get("entities")
                if isinstance(entities, dict):
                    group["entities"] = {k: _clip(v, cap) for k, v in entities.items()}
                data[key] = group
        return data


SUMMARY_SCHEMA: Final = SummaryContent.model_json_schema()


def parse_summary(text: str) -> SummaryContent:
    """The content in an LLM's answer: strict JSON (a surrounding Markdown fence is tolerated).

    Raises :class:`ValueError` (a :class:`json.JSONDecodeError` or a pydantic
    :class:`~pydantic.ValidationError`) when the text does not parse or does not validate.
    """
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) > 6:
        body = body[3:-3].removeprefix("json").strip()
    return SummaryContent.model_validate(json.loads(body))


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _prefix(text: str) -> str:
    return " ".join(text.split()[:_PREFIX_WORDS])


def required_anchors(
    messages: Sequence[Message], previous: SummaryRecord | None = None, *, limit: int = 10
) -> list[str]:
    """What a summary of ``messages`` must keep verbatim: the start of the first request (the
    previous summary's, when updating one), up to ``limit`` paths and identifiers that occur at
    least twice (most frequent first), and the start of each pending item."""
    found = digest(messages, DEFAULT_EXTRACTORS, _USER_CHARS)
    anchors: list[str] = []
    first = (
        previous.sections.primary_request[0]
        if previous and previous.sections.primary_request
        else found.first_request
    )
    if first:
        anchors.append(_prefix(first))
    text = "\n".join(message_text(m) for m in messages)
    names = scan_text(text)
    counts = {name: text.count(name) for name in (*names.files, *names.symbols)}
    repeated = [name for name, count in counts.items() if count >= 2]
    repeated.sort(key=lambda name: -counts[name])
    anchors += repeated[:limit]
    anchors += [_prefix(item) for item in found.pending]
    return dedupe(anchors)


def _missing(content: SummaryContent, anchors: Sequence[str]) -> list[str]:
    strings: list[str] = []

    def collect(value: object) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list | tuple):
            for item in value:
                collect(item)

    collect(content.model_dump())
    haystack = _normal("\n".join(strings))
    return [anchor for anchor in anchors if _normal(anchor) not in haystack]


@dataclass(frozen=True, slots=True)
class _Call:
    request: CompletionRequest


@dataclass(frozen=True, slots=True)
class _Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class _Failure:
    reason: str
    cause: BaseException | None = None


@dataclass(frozen=True, slots=True)
class _Context:
    prompt: list[ChatMessage]
    anchors: list[str]
    base: dict[str, Any]
    input_tokens: int
    max_tokens: int


_Effect: TypeAlias = _Call | _Sleep
_Outcome: TypeAlias = CompletionResponse | Exception | None
_Plan: TypeAlias = Generator[_Effect, _Outcome, "SummaryRecord | _Failure"]


async def _awaited(value: Awaitable[CompletionResponse]) -> CompletionResponse:
    return await value


class LLMSummarizer:
    """Summarizes with a model through ``completion`` (see
    :mod:`~synopsis.summarizers.completion`), trying ``models`` in order of preference.

    ``system_prompt`` replaces seed 001's prompt; ``sleep`` replaces :func:`time.sleep` (and
    :func:`asyncio.sleep` in :meth:`asummarize`; an awaitable it returns is awaited there).
    ``result_chars`` clips each tool call's arguments and result in the prompt.
    ``max_summary_tokens`` is the completion's ``max_tokens`` (lowered by a call's own).
    """

    def __init__(
        self,
        completion: Completion,
        *,
        models: Sequence[str],
        system_prompt: str | None = None,
        fallback: Summarizer | None = None,
        abort_on_failure: bool = False,
        max_retries: int = 2,
        backoff: float = 0.25,
        sleep: Callable[[float], object] | None = None,
        max_summary_tokens: int = 2000,
        result_chars: int = 2000,
        quality_guard: bool = True,
        anchor_limit: int = 10,
        temperature: float = 0.0,
        model_for_counting: str | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if not callable(completion):
            raise ConfigurationError(f"completion must be callable, got {completion!r}")
        if isinstance(models, str) or not models or not all(isinstance(m, str) for m in models):
            raise ConfigurationError(f"models must be a non-empty list of names, got {models!r}")
        self.completion = completion
        self.models: tuple[str, ...] = tuple(models)
        self.system_prompt = system_prompt or SYSTEM_PROMPT
        self.fallback: Summarizer = fallback or RuleBasedSummarizer()
        self.abort_on_failure = abort_on_failure
        self.max_retries = whole_number("max_retries", max_retries, 0)
        self.backoff = backoff
        self.sleep = sleep
        self.max_summary_tokens = whole_number("max_summary_tokens", max_summary_tokens, 1)
        self.result_chars = whole_number("result_chars", result_chars, 1)
        self.quality_guard = quality_guard
        self.anchor_limit = whole_number("anchor_limit", anchor_limit, 0)
        self.temperature = temperature
        self.counter = counter_for_model(model_for_counting or self.models[0])
        self.clock = clock or utc_now

    def __repr__(self) -> str:
        return f"LLMSummarizer(models={list(self.models)!r}, max_retries={self.max_retries})"

    # -- the steps, shared by both drivers -------------------------------------------------

    def _context(
        self,
        messages: Sequence[Message],
        previous: SummaryRecord | None,
        instructions: str | None,
        max_tokens: int | None,
    ) -> _Context:
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise ConversationError("a history must be a sequence of messages", rule="history.type")
        for index, message in enumerate(messages):
            if not isinstance(message, Message):
                raise ConversationError(
                    f"expected a Message, got {type(message).__name__}",
                    index=index,
                    rule="history.type",
                )
        limit = self.max_summary_tokens
        if max_tokens is not None:
            limit = min(limit, whole_number("max_tokens", max_tokens, 1))
        tokens_in = sum(self.counter.count_message(m) for m in messages)
        input_tokens = tokens_in + (self.counter.count_text(render(previous)) if previous else 0)
        base: dict[str, Any] = {
            "created_at": self.clock(),
            "depth": previous.depth + 1 if previous else 0,
            "parent_id": previous.id if previous else None,
            "covers": tuple(
                Coverage(id=message_id(m, i), sha256=content_hash(m))
                for i, m in enumerate(messages)
            ),
            "tokens_in": tokens_in,
        }
        prompt = build_prompt(
            messages,
            previous=previous,
            instructions=instructions,
            total_tokens=tokens_in,
            result_chars=self.result_chars,
        )
        anchors = (
            required_anchors(messages, previous, limit=self.anchor_limit)
            if self.quality_guard
            else []
        )
        return _Context(prompt, anchors, base, input_tokens, limit)

    def _ask(
        self, model: str, context: _Context, turns: list[ChatMessage]
    ) -> Generator[_Effect, _Outcome, CompletionResponse | Exception]:
        request = CompletionRequest(
            model=model,
            system=self.system_prompt,
            messages=turns,
            temperature=self.temperature,
            max_tokens=context.max_tokens,
            json_schema=SUMMARY_SCHEMA,
        )
        attempt = 0
        while True:
            outcome = yield _Call(request)
            if isinstance(outcome, CompletionResponse):
                return outcome
            if not isinstance(outcome, Exception):
                outcome = TransportError(
                    f"completion returned {type(outcome).__name__}, not a CompletionResponse",
                    retryable=False,
                )
            logger.warning(
                "summarizer %s: transport error (attempt %d): %r", model, attempt + 1, outcome
            )
            if attempt >= self.max_retries or not is_retryable(outcome):
                return outcome
            yield _Sleep(self.backoff * 2**attempt)
            attempt += 1

    def _accept(
        self, model: str, response: CompletionResponse, context: _Context, usage: Usage
    ) -> tuple[SummaryRecord, SummaryContent] | _Failure:
        try:
            content = parse_summary(response.text)
        except (ValueError, ValidationError) as error:
            return self._bad(model, "invalid JSON summary", response.text, error)
        record = SummaryRecord(
            **context.base,
            narrative=content.narrative,
            key_points=content.key_points,
            sections=content.sections,
            facets=content.facets,
            model=response.model or model,
            usage=usage,
        )
        tokens_out = self.counter.count_text(render(record))
        if tokens_out >= context.input_tokens:
            return self._bad(
                model,
                f"summary not shorter than its input "
                f"({tokens_out} >= {context.input_tokens} tokens)",
                response.text,
            )
        return record.model_copy(update={"tokens_out": tokens_out}), content

    @staticmethod
    def _bad(model: str, reason: str, text: str, error: Exception | None = None) -> _Failure:
        logger.warning("summarizer %s: bad output (%s): %r", model, reason, text[:_LOGGED_CHARS])
        return _Failure(f"{model}: {reason}", error)

    def _try_model(self, model: str, context: _Context) -> _Plan:
        outcome = yield from self._ask(model, context, context.prompt)
        if isinstance(outcome, Exception):
            return _Failure(f"{model}: transport error {outcome!r}", outcome)
        accepted = self._accept(model, outcome, context, outcome.usage)
        if isinstance(accepted, _Failure):
            return accepted
        record, content = accepted
        missing = _missing(content, context.anchors)
        if not missing:
            return record
        logger.info("summarizer %s: summary misses %s; asking again", model, missing)
        turns = [*context.prompt, *missing_anchors_prompt(outcome.text, missing)]
        again = yield from self._ask(model, context, turns)
        if isinstance(again, Exception):
            return _Failure(f"{model}: transport error {again!r}", again)
        usage = Usage(
            **{
                field: getattr(outcome.usage, field) + getattr(again.usage, field)
                for field in Usage.model_fields
            }
        )
        accepted = self._accept(model, again, context, usage)
        if isinstance(accepted, _Failure):
            return accepted
        record, content = accepted
        missing = _missing(content, context.anchors)
        if missing:
            logger.warning("summarizer %s: summary still misses %s", model, missing)
            return _Failure(f"{model}: summary misses {missing}")
        return record

    def _plan(self, context: _Context) -> _Plan:
        failure = _Failure("no model tried")
        for model in self.models:
            result = yield from self._try_model(model, context)
            if isinstance(result, SummaryRecord):
                return result
            failure = result
        return failure

    def _give_up(self, failure: _Failure) -> None:
        if self.abort_on_failure:
            raise SummarizerError(f"every model failed; last: {failure.reason}") from failure.cause
        logger.warning("summarizer: every model failed (last: %s); falling back", failure.reason)

    # -- the drivers ----------------------------------------------------------------------

    def _call(self, request: CompletionRequest) -> _Outcome:
        try:
            value = self.completion(request)
        except Exception as error:  # every failure of a completion is classified
            return error
        if not inspect.isawaitable(value):
            return value
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            if inspect.iscoroutine(value):
                value.close()
            raise ConfigurationError(
                "an async completion cannot run inside a running event loop; use asummarize"
            )
        try:
            return asyncio.run(_awaited(value))
        except Exception as error:
            return error

    async def _acall(self, request: CompletionRequest) -> _Outcome:
        try:
            value = self.completion(request)
            if inspect.isawaitable(value):
                value = await value
        except Exception as error:
            return error
        return value

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        plan = self._plan(self._context(messages, previous, instructions, max_tokens))
        outcome: _Outcome = None
        try:
            while True:
                effect = plan.send(outcome)
                if isinstance(effect, _Sleep):
                    (time.sleep if self.sleep is None else self.sleep)(effect.seconds)
                    outcome = None
                else:
                    outcome = self._call(effect.request)
        except StopIteration as stop:
            result: SummaryRecord | _Failure = stop.value
        if isinstance(result, SummaryRecord):
            return result
        self._give_up(result)
        return self.fallback.summarize(
            messages, previous=previous, instructions=instructions, max_tokens=max_tokens
        )

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        """The same steps as :meth:`summarize`, awaiting an async completion and sleep."""
        plan = self._plan(self._context(messages, previous, instructions, max_tokens))
        outcome: _Outcome = None
        try:
            while True:
                effect = plan.send(outcome)
                if isinstance(effect, _Sleep):
                    slept = (asyncio.sleep if self.sleep is None else self.sleep)(effect.seconds)
                    if inspect.isawaitable(slept):
                        await slept
                    outcome = None
                else:
                    outcome = await self._acall(effect.request)
        except StopIteration as stop:
            result: SummaryRecord | _Failure = stop.value
        if isinstance(result, SummaryRecord):
            return result
        self._give_up(result)
        if isinstance(self.fallback, AsyncSummarizer):
            return await self.fallback.asummarize(
                messages, previous=previous, instructions=instructions, max_tokens=max_tokens
            )
        return self.fallback.summarize(
            messages, previous=previous, instructions=instructions, max_tokens=max_tokens
        )
