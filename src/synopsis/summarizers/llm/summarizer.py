"""The LLM summarizer: completion calls, checked, with a way out of every failure.

The order of things when a call does not give a good summary (DESIGN "Summarize"; seed 001):

1. A transport failure (:class:`~synopsis.errors.TransportError`, a timeout, a dropped
   connection) is retried after ``backoff * 2**attempt`` seconds, ``max_retries`` times.
2. Bad output (not JSON, not the schema, empty, or not shorter than its input) is logged with
   its first 200 characters and not retried: the same prompt would likely fail the same way.
   An answer in seed 002's numbered sections instead of JSON is read as such, not discarded.
3. A summary that drops anchors (the first request, the constraints people stated, paths and
   identifiers the input repeats, pending items) is asked for once more, naming what is
   missing.
4. Whatever still failed moves on to the next model of ``models``, then to the ``fallback``
   summarizer (rule-based by default), or raises :class:`SummarizerError` when
   ``abort_on_failure`` is set.

Input over ``max_input_tokens`` (seed 000's chunked summarization) is cut into consecutive
chunks that fit, each summarized on its own; the partial summaries are then consolidated into
one, in rounds when even they do not fit together, at most ``max_depth`` levels deep, after
which what is left is truncated deterministically. With ``oversize="trim"`` the oldest messages
are left out instead (seeds 001 and 004), the first request always kept. A single message
larger than the cap is clipped, head and tail kept.

Nothing to summarize (no messages) asks no model: the ``fallback`` gives the record.

An update of a previous record is asked for as an update, section by section. What the answer
still drops of the previous record's requests, constraints and files is put back before the
answer is judged, unless the new part replaced it (:func:`~synopsis.summarizers.llm.answers.
carry_forward`): facts a model forgot are not lost, and a correction it applied is not undone.

In cache-aligned mode the request is the conversation itself, unchanged, with the summary
instruction as one final user turn, so that a provider's prompt cache for that prefix is hit.

The steps form one plan (:mod:`~synopsis.summarizers.llm.effects`) that ``summarize`` and
``asummarize`` both carry out.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from pydantic import ValidationError

from synopsis.errors import ConfigurationError, brief
from synopsis.messages import Message, Role, TextPart
from synopsis.models import context_window
from synopsis.summarizers._options import history, utc_now, whole_number
from synopsis.summarizers.llm import effects
from synopsis.summarizers.llm.answers import (
    SUMMARY_SCHEMA,
    SummaryContent,
    Update,
    carry_forward,
    missing_anchors,
    parse_sectioned,
    parse_summary,
    required_anchors,
)
from synopsis.summarizers.llm.chunking import clip_text, group, trim
from synopsis.summarizers.llm.completion import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionResponse,
    SummarizerError,
    TransportError,
    Usage,
    is_retryable,
)
from synopsis.summarizers.llm.effects import Call, Effect, Outcome, Sleep
from synopsis.summarizers.llm.prompts import (
    SYSTEM_PROMPT,
    UPDATE_INSTRUCTIONS,
    build_consolidation_prompt,
    build_prompt,
    cache_aligned_prompt,
    missing_anchors_prompt,
    partial_json,
    quote_transcript,
    transcript_blocks,
)
from synopsis.summarizers.protocols import AsyncSummarizer, Summarizer
from synopsis.summarizers.records import Covers, SummaryRecord
from synopsis.summarizers.render import render
from synopsis.summarizers.rules.drafts import fit_record
from synopsis.summarizers.rules.summarizer import RuleBasedSummarizer
from synopsis.tokens import counter_for_model

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Sequence
    from datetime import datetime

__all__ = [
    "SUMMARY_SCHEMA",
    "LLMSummarizer",
    "Oversize",
    "SummaryContent",
    "parse_summary",
    "required_anchors",
]

logger = logging.getLogger("synopsis.summarizers")

Oversize: TypeAlias = Literal["chunk", "trim"]

_LOGGED_CHARS: Final = 200
_FRAME_TOKENS: Final = 200
"""Tokens of a request's framing: the meta line, the headings, the closing request."""
_MIN_TRANSCRIPT: Final = 256
"""The least transcript a request carries, however much else the input cap must hold."""


_OVERFLOW_MARGIN: Final = 0.9
"""Of the room a server's window leaves, the share a request is cut to when the server said it
was too long: its tokenizer and ours do not count alike."""


@dataclass(frozen=True, slots=True)
class _Failure:
    reason: str
    cause: BaseException | None = None
    context: _Context | None = None
    """The request that failed in transport (to size a smaller one after an overflow)."""
    answered: bool = False
    """The model answered, and the answer could not be used."""


@dataclass(frozen=True, slots=True)
class _Context:
    """One request to make (with every model in turn) and how to judge its answer."""

    prompt: list[ChatMessage]
    anchors: list[str]
    base: dict[str, Any]
    input_tokens: int | None
    """The answer must render shorter than the messages it replaces (and the summary it
    revises), counted here; ``None`` for a partial summary (of a chunk,
    or of some partials), which may be longer than a small part: only the whole is judged."""
    max_tokens: int
    conversation: tuple[Message, ...] = ()
    update: Update | None = None
    """The previous record the answer updates, and what the new part said: see
    :func:`~synopsis.summarizers.llm.answers.carry_forward`."""


@dataclass(slots=True)
class _Job:
    """One ``summarize`` call: its arguments, and the usage of every accepted request."""

    messages: Sequence[Message]
    previous: SummaryRecord | None
    instructions: str | None
    limit: int
    spent: list[Usage] = field(default_factory=list)


_Plan: TypeAlias = "Generator[Effect, Outcome, SummaryRecord | _Failure]"


def _total(usages: Sequence[Usage]) -> Usage:
    return Usage(**{name: sum(getattr(u, name) for u in usages) for name in Usage.model_fields})


def _update(previous: SummaryRecord | None, messages: Sequence[Message]) -> Update | None:
    return Update.of(previous, messages) if previous is not None else None


def _first_request(messages: Sequence[Message]) -> int | None:
    for index, message in enumerate(messages):
        if message.role is Role.USER and any(
            isinstance(p, TextPart) and p.text.strip() for p in message.parts
        ):
            return index
    return None


class LLMSummarizer:
    """Summarizes with a model through ``completion`` (see
    :mod:`~synopsis.summarizers.llm.completion`), trying ``models`` in order of preference.

    ``system_prompt`` replaces seed 001's prompt; ``sleep`` replaces :func:`time.sleep` (and
    :func:`asyncio.sleep` in :meth:`asummarize`; an awaitable it returns is awaited there).
    ``result_chars`` clips each tool call's arguments and result in the prompt.
    ``max_summary_tokens`` is the completion's ``max_tokens`` (lowered by a call's own) and
    the most tokens the rendered record may take: a longer answer is cut to fit, least
    important content first, and marked ``truncated``.

    ``max_input_tokens`` caps one request's prompt (seed 001 uses 8,000, seed 004 4,000),
    for every model or per model (a mapping of model to cap); by default each model's cap is
    its window less ``max_summary_tokens``, and requests are made to fit the smallest. A
    server that says a request is over its context window (a local model's window is rarely
    known) has the summary asked again once, in parts that fit the window it named. Over it,
    ``oversize="chunk"`` summarizes in chunks and consolidates them (``max_depth`` levels at
    most), ``"trim"`` leaves the oldest messages out.

    ``cache_aligned=True`` is for a summarizer that is the conversation's own model: pass the
    whole prefix to summarize, its system message first, and the agent's ``tools`` here; the
    completion sends them unchanged with the instruction as a final user turn (the bundled
    clients do). A prefix over the input cap is summarized the usual way instead.
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
        max_input_tokens: int | Mapping[str, int] | None = None,
        oversize: Oversize = "chunk",
        max_depth: int = 5,
        result_chars: int = 2000,
        quality_guard: bool = True,
        anchor_limit: int = 10,
        temperature: float = 0.0,
        cache_aligned: bool = False,
        tools: Sequence[Mapping[str, Any]] = (),
        model_for_counting: str | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if not callable(completion):
            raise ConfigurationError(f"completion must be callable, got {completion!r}")
        if isinstance(models, str) or not models or not all(isinstance(m, str) for m in models):
            raise ConfigurationError(f"models must be a non-empty list of names, got {models!r}")
        if oversize not in ("chunk", "trim"):
            raise ConfigurationError(f"oversize must be 'chunk' or 'trim', got {oversize!r}")
        self.completion = completion
        self.models: tuple[str, ...] = tuple(models)
        self.system_prompt = system_prompt or SYSTEM_PROMPT
        self.fallback: Summarizer = fallback or RuleBasedSummarizer()
        self.abort_on_failure = abort_on_failure
        self.max_retries = whole_number("max_retries", max_retries, 0)
        self.backoff = backoff
        self.sleep = sleep
        self.max_summary_tokens = whole_number("max_summary_tokens", max_summary_tokens, 1)
        self.max_input_tokens = self._input_cap(max_input_tokens)
        self._learned: tuple[int, int] | None = None
        """The input cap and answer size a server's window was found to need."""
        self._learned_lock = threading.Lock()
        self.oversize: Oversize = oversize
        self.max_depth = whole_number("max_depth", max_depth, 1)
        self.result_chars = whole_number("result_chars", result_chars, 1)
        self.quality_guard = quality_guard
        self.anchor_limit = whole_number("anchor_limit", anchor_limit, 0)
        self.temperature = temperature
        self.cache_aligned = cache_aligned
        self.tools: tuple[Mapping[str, Any], ...] = tuple(tools)
        self.counter = counter_for_model(model_for_counting or self.models[0])
        self.clock = clock or utc_now

    def _input_cap(self, given: int | Mapping[str, int] | None) -> int:
        """The smallest cap of the models: the one given for it, else its window less the
        summary (every request is made to fit the model least able to take it)."""
        if given is not None and not isinstance(given, Mapping):
            return whole_number("max_input_tokens", given, 1)
        named = dict(given or {})
        unknown = sorted(set(named) - set(self.models))
        if unknown:
            raise ConfigurationError(
                f"max_input_tokens names models that are not in models: {unknown}"
            )
        caps = [
            whole_number(f"max_input_tokens[{m!r}]", named[m], 1)
            if m in named
            else max(context_window(m) - self.max_summary_tokens, 1)
            for m in self.models
        ]
        return min(caps)

    def __repr__(self) -> str:
        return (
            f"LLMSummarizer(models={list(self.models)!r}, max_retries={self.max_retries}, "
            f"max_input_tokens={self.max_input_tokens}, oversize={self.oversize!r}, "
            f"cache_aligned={self.cache_aligned})"
        )

    def measure(self, record: SummaryRecord) -> int:
        """Tokens of the longer of the record's two renderings."""
        return max(
            self.counter.count_text(render(record, style=style))
            for style in ("sections", "snapshot")
        )

    # -- what to ask ----------------------------------------------------------------------

    def _base(
        self, messages: Sequence[Message], previous: SummaryRecord | None, offset: int = 0
    ) -> dict[str, Any]:
        return {
            "created_at": self.clock(),
            "depth": previous.depth + 1 if previous else 0,
            "parent_id": previous.id if previous else None,
            "covers": Covers.of(messages, offset),
            "covered_total": previous.messages_covered + len(messages) if previous else None,
            "tokens_in": sum(self.counter.count_message(m) for m in messages),
        }

    def _anchors(self, messages: Sequence[Message], previous: SummaryRecord | None) -> list[str]:
        if not self.quality_guard:
            return []
        return required_anchors(messages, previous, limit=self.anchor_limit)

    def _room(self, job: _Job, previous: SummaryRecord | None) -> int:
        """Tokens left for the transcript (or the partial summaries) in one request."""
        count = self.counter.count_text
        used = count(self.system_prompt) + _FRAME_TOKENS
        used += count(partial_json(previous)) + count(UPDATE_INSTRUCTIONS) if previous else 0
        used += count(job.instructions) if job.instructions else 0
        return max(self._input_cap_now() - used, _MIN_TRANSCRIPT)

    def _aligned(self, job: _Job) -> _Context | None:
        prompt = cache_aligned_prompt(previous=job.previous, instructions=job.instructions)
        base = self._base(job.messages, job.previous)
        tools = sum(self.counter.count_text(json.dumps(t, default=str)) for t in self.tools)
        size = base["tokens_in"] + tools + self.counter.count_text(prompt[0]["content"])
        if size > self._input_cap_now():
            logger.info(
                "summarizer: the conversation (%d tokens) is over the input cap (%d); "
                "summarizing it without cache alignment",
                size,
                self._input_cap_now(),
            )
            return None
        previous = self.counter.count_text(render(job.previous)) if job.previous else 0
        return _Context(
            prompt,
            self._anchors(job.messages, job.previous),
            base,
            base["tokens_in"] + previous,
            job.limit,
            tuple(job.messages),
            _update(job.previous, job.messages),
        )

    def _quoted(
        self, job: _Job, start: int, stop: int, transcript: str, *, whole: bool
    ) -> _Context:
        """The request over ``job.messages[start:stop]`` given as ``transcript``: the whole
        summary (with the previous one to revise), or one chunk's partial summary."""
        messages = job.messages[start:stop]
        previous = job.previous if whole else None
        base = self._base(messages, previous, start)
        prompt = build_prompt(
            messages,
            previous=previous,
            instructions=job.instructions,
            total_tokens=base["tokens_in"],
            transcript=transcript,
        )
        size = base["tokens_in"] + (self.counter.count_text(render(previous)) if previous else 0)
        return _Context(
            prompt,
            self._anchors(messages, previous),
            base,
            size if whole else None,
            job.limit,
            update=_update(previous, messages),
        )

    # -- one request, every model ---------------------------------------------------------

    def _ask(
        self, model: str, context: _Context, turns: list[ChatMessage]
    ) -> Generator[Effect, Outcome, CompletionResponse | Exception]:
        aligned = bool(context.conversation)
        request = CompletionRequest(
            model=model,
            system="" if aligned else self.system_prompt,
            messages=turns,
            temperature=self.temperature,
            max_tokens=context.max_tokens,
            json_schema=None if aligned else SUMMARY_SCHEMA,
            conversation=context.conversation,
            tools=self.tools if aligned else (),
        )
        attempt = 0
        while True:
            outcome = yield Call(request)
            if isinstance(outcome, CompletionResponse):
                return outcome
            if not isinstance(outcome, Exception):
                outcome = TransportError(
                    f"completion returned {type(outcome).__name__}, not a CompletionResponse",
                    retryable=False,
                )
            logger.warning(
                "summarizer %s: transport error (attempt %d): %s",
                model,
                attempt + 1,
                brief(repr(outcome)),
            )
            if attempt >= self.max_retries or not is_retryable(outcome):
                return outcome
            yield Sleep(self.backoff * 2**attempt)
            attempt += 1

    def _accept(
        self, model: str, response: CompletionResponse, context: _Context, usage: Usage
    ) -> tuple[SummaryRecord, SummaryContent] | _Failure:
        if not isinstance(response.text, str):
            # A completion that ignores its type gave no answer a summary can be read from.
            reason = f"answer text is {type(response.text).__name__}, not a string"
            return self._bad(model, reason, repr(response.text))
        try:
            content = parse_summary(response.text)
        except (ValueError, ValidationError) as error:
            sectioned = parse_sectioned(response.text)
            if sectioned is None:
                return self._bad(model, "invalid JSON summary", response.text, error)
            logger.info("summarizer %s: answer in sections, not JSON; its sections are kept", model)
            content = sectioned
        if context.update is not None:
            content = carry_forward(content, context.update)
        record = SummaryRecord(
            **context.base,
            narrative=content.narrative,
            key_points=content.key_points,
            sections=content.sections,
            facets=content.facets,
            model=response.model or model,
            usage=usage,
        )
        record = fit_record(record, self.measure, context.max_tokens)
        tokens_out = self.counter.count_text(render(record))
        if context.input_tokens is not None and tokens_out >= context.input_tokens:
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
        return _Failure(f"{model}: {reason}", error, answered=True)

    def _try_model(self, model: str, context: _Context) -> _Plan:
        outcome = yield from self._ask(model, context, context.prompt)
        if isinstance(outcome, Exception):
            return _Failure(f"{model}: transport error {brief(repr(outcome))}", outcome, context)
        accepted = self._accept(model, outcome, context, outcome.usage)
        if isinstance(accepted, _Failure):
            return accepted
        record, content = accepted
        missing = missing_anchors(content, context.anchors)
        if not missing:
            return record
        logger.info("summarizer %s: summary misses %s; asking again", model, missing)
        turns = [*context.prompt, *missing_anchors_prompt(outcome.text, missing)]
        again = yield from self._ask(model, context, turns)
        if isinstance(again, Exception):
            return _Failure(f"{model}: transport error {brief(repr(again))}", again)
        accepted = self._accept(model, again, context, _total([outcome.usage, again.usage]))
        if isinstance(accepted, _Failure):
            return accepted
        record, content = accepted
        missing = missing_anchors(content, context.anchors)
        if missing:
            logger.warning("summarizer %s: summary still misses %s", model, missing)
            return _Failure(f"{model}: summary misses {missing}", answered=True)
        return record

    def _request(self, job: _Job, context: _Context) -> _Plan:
        failure = _Failure("no model tried")
        for model in self.models:
            result = yield from self._try_model(model, context)
            if isinstance(result, SummaryRecord):
                job.spent.append(result.usage)
                return result
            failure = result
        return failure

    # -- the whole summary ----------------------------------------------------------------

    def _plan(self, job: _Job) -> _Plan:
        """The summary; asked again in smaller parts once when the server said the request
        was over its context window (a local model's window is rarely in the table)."""
        result = yield from self._plan_once(job)
        smaller = self._fitting(job, result)
        if smaller is None:
            return result
        cap, answer = smaller
        logger.warning(
            "summarizer: the server's context window is smaller than assumed; "
            "asking again with at most %d tokens of input and %d of answer per request",
            cap,
            answer,
        )
        with self._learned_lock:  # another call may have learned a smaller one meanwhile
            self._learned = (
                (min(cap, self._learned[0]), min(answer, self._learned[1]))
                if self._learned
                else (cap, answer)
            )
        job.limit = min(job.limit, answer)
        return (yield from self._plan_once(job))

    @property
    def input_cap(self) -> int:
        """The cap in use: ``max_input_tokens``, or the smaller one a server's window was
        found to need (see :meth:`summarize`)."""
        return self._input_cap_now()

    def _input_cap_now(self) -> int:
        """``max_input_tokens``, or the smaller cap a server's window was found to need."""
        learned = self._learned
        return min(self.max_input_tokens, learned[0]) if learned else self.max_input_tokens

    def _asked(self, context: _Context) -> int:
        """Tokens of the request ``context`` made, as our counter counts them."""
        count = self.counter.count_text
        if context.conversation:  # cache-aligned: the conversation, its tools, the instruction
            sent = sum(map(self.counter.count_message, context.conversation))
            sent += sum(count(json.dumps(t, default=str)) for t in self.tools)
        else:
            sent = count(self.system_prompt)
        return sent + sum(count(turn["content"]) for turn in context.prompt)

    def _fitting(self, job: _Job, result: SummaryRecord | _Failure) -> tuple[int, int] | None:
        """The input cap and answer size that fit the window an overflow error named, when
        the cap is below the one in use; else None."""
        if not isinstance(result, _Failure) or result.context is None:
            return None
        cause = result.cause
        if not isinstance(cause, TransportError) or cause.context_window is None:
            return None
        window = cause.context_window
        # A small window keeps half for the answer, which some servers count in the window
        # and others cut short; cut short, a JSON answer cannot be read.
        answer = min(job.limit, window // 2)
        ratio = 1.0
        if cause.prompt_tokens:  # the server's tokens per one of ours
            ratio = max(cause.prompt_tokens / max(self._asked(result.context), 1), 1.0)
        cap = int((window - answer) / ratio * _OVERFLOW_MARGIN)
        return (cap, answer) if _MIN_TRANSCRIPT <= cap < self._input_cap_now() else None

    def _plan_once(self, job: _Job) -> _Plan:
        if self.cache_aligned:
            aligned = self._aligned(job)
            if aligned is not None:
                result = yield from self._request(job, aligned)
                if not isinstance(result, _Failure) or not result.answered:
                    return result
                # An aligned request asks for no structured output (it would change the
                # prefix); a model that then answered in prose is asked the usual way.
                logger.info(
                    "summarizer: the cache-aligned answer could not be read (%s); "
                    "asking for the summary the usual way",
                    result.reason,
                )
        count = self.counter.count_text
        blocks = transcript_blocks(job.messages, result_chars=self.result_chars)
        sizes = [count(block) for block in blocks]
        room = self._room(job, job.previous)
        if sum(sizes) <= room or self.oversize == "trim":
            kept = trim(blocks, sizes, room, count, keep=_first_request(job.messages))
            context = self._quoted(job, 0, len(blocks), quote_transcript(kept), whole=True)
            return (yield from self._request(job, context))
        room = self._room(job, None)
        partials: list[SummaryRecord] = []
        for run in group(sizes, room):
            chunk = [
                clip_text(b, room, count) if len(run) == 1 else b
                for b in blocks[run.start : run.stop]
            ]
            context = self._quoted(job, run.start, run.stop, quote_transcript(chunk), whole=False)
            result = yield from self._request(job, context)
            if isinstance(result, _Failure):
                return result
            partials.append(result)
        logger.info("summarizer: %d chunks summarized; consolidating", len(partials))
        return (yield from self._consolidate(job, partials, level=1))

    def _merge_context(
        self, job: _Job, partials: Sequence[SummaryRecord], text: str, *, final: bool
    ) -> _Context:
        previous = job.previous if final else None
        if final:
            base = self._base(job.messages, previous)
            anchors = self._anchors(job.messages, previous)
        else:
            base = {
                "created_at": self.clock(),
                "covers": Covers.join(p.covers for p in partials),
                "tokens_in": sum(p.tokens_in for p in partials),
            }
            anchors = []
        prompt = build_consolidation_prompt(
            text,
            count=len(partials),
            messages=len(base["covers"]),
            previous=previous,
            instructions=job.instructions,
            total_tokens=base["tokens_in"],
        )
        size = base["tokens_in"] + (self.counter.count_text(render(previous)) if previous else 0)
        update = _update(previous, job.messages)
        return _Context(prompt, anchors, base, size if final else None, job.limit, update=update)

    def _consolidate(self, job: _Job, partials: Sequence[SummaryRecord], level: int) -> _Plan:
        """One summary from ``partials``: merged in groups that fit, level by level, until
        they fit one request or ``max_depth`` is reached and the rest is truncated."""
        count = self.counter.count_text
        texts = [partial_json(p) for p in partials]
        sizes = [count(t) for t in texts]
        room = self._room(job, job.previous)
        runs = group(sizes, self._room(job, None))
        if sum(sizes) > room and level < self.max_depth and len(runs) < len(partials):
            merged: list[SummaryRecord] = []
            for run in runs:
                if len(run) == 1:
                    merged.append(partials[run.start])
                    continue
                text = "\n".join(texts[run.start : run.stop])
                context = self._merge_context(
                    job, partials[run.start : run.stop], text, final=False
                )
                result = yield from self._request(job, context)
                if isinstance(result, _Failure):
                    return result
                merged.append(result)
            return (yield from self._consolidate(job, merged, level + 1))
        text = clip_text("\n".join(texts), room, count)
        if len(text) < sum(map(len, texts)) + len(texts) - 1:
            logger.warning(
                "summarizer: partial summaries still over the input cap at depth %d; truncated",
                level,
            )
        return (yield from self._request(job, self._merge_context(job, partials, text, final=True)))

    # -- the drivers ----------------------------------------------------------------------

    def _job(
        self,
        messages: Sequence[Message],
        previous: SummaryRecord | None,
        instructions: str | None,
        max_tokens: int | None,
    ) -> _Job:
        limit = self.max_summary_tokens
        if self._learned:
            limit = min(limit, self._learned[1])
        if max_tokens is not None:
            limit = min(limit, whole_number("max_tokens", max_tokens, 1))
        return _Job(history(messages), previous, instructions, limit)

    def _finish(self, job: _Job, result: SummaryRecord | _Failure) -> SummaryRecord | None:
        if isinstance(result, SummaryRecord):
            return result.model_copy(update={"usage": _total(job.spent)})
        if self.abort_on_failure:
            raise SummarizerError(f"every model failed; last: {result.reason}") from result.cause
        logger.warning("summarizer: every model failed (last: %s); falling back", result.reason)
        from synopsis.events import SummarizerFellBack, notify  # noqa: PLC0415 - import cycle

        fallback = getattr(self.fallback, "model", type(self.fallback).__name__)
        notify(
            SummarizerFellBack(
                model=", ".join(self.models), reason=result.reason, fallback=str(fallback)
            )
        )
        return None

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        job = self._job(messages, previous, instructions, max_tokens)
        if job.messages:
            record = self._finish(job, effects.run(self._plan(job), self.completion, self.sleep))
            if record is not None:
                return record
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
        job = self._job(messages, previous, instructions, max_tokens)
        if job.messages:
            plan = self._plan(job)
            record = self._finish(job, await effects.arun(plan, self.completion, self.sleep))
            if record is not None:
                return record
        if isinstance(self.fallback, AsyncSummarizer):
            return await self.fallback.asummarize(
                messages, previous=previous, instructions=instructions, max_tokens=max_tokens
            )
        return self.fallback.summarize(
            messages, previous=previous, instructions=instructions, max_tokens=max_tokens
        )
