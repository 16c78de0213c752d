"""The LLM summarizer: completion calls, checked, with a way out of every failure.

The order of things when a call does not give a good summary:

1. A transport failure (:class:`~synopsis.errors.TransportError`, a timeout, a dropped
   connection) is retried after ``backoff * 2**attempt`` seconds, ``max_retries`` times.
2. An answer that is not a summary at all is logged with its first 200 characters and not
   retried: the same prompt would likely fail the same way. That is an answer that reads
   neither as the schema's JSON nor as the rendered summary's numbered sections (prose, JSON
   of another shape or cut short), one with no word in it, a refusal, an echo of the
   instructions (:func:`~.answers.not_a_summary`), and one not shorter than what it replaces.
3. Any other answer is the model's summary, and it is used. What it leaves out of what the
   rule summary of the same messages keeps (the first request, the constraints people
   stated, the openings of their requests, paths and identifiers) is added to it, verbatim,
   within the summary's budget, and shown in a section of its own (:mod:`.gaps`); a
   :class:`~synopsis.events.SummaryFilledIn` event lists what was added. A model is never
   asked again for what it left out: that would cost a second call, and adding it costs none.
4. Whatever still failed moves on to the next model of ``models``, then to the ``fallback``
   summarizer (rule-based by default), or raises :class:`SummarizerError` when
   ``abort_on_failure`` is set.

Input over ``max_input_tokens`` is cut into consecutive chunks that fit, each summarized on its
own (a chunk whose answer is no summary at all by the rules instead, unless every chunk's is);
the partial summaries are then consolidated into one (joined as they are when the model
answers a merge with no summary), in rounds when even they do not fit together, at most
``max_depth`` levels deep, after which what is left is truncated deterministically. With
``oversize="trim"`` the oldest messages are left out instead, the first request always kept.
A single message larger than the cap is clipped, head and tail kept.

Nothing to summarize (no messages) asks no model: the ``fallback`` gives the record.

An update of a previous record is asked for as an update, section by section. What the answer
still drops of the previous record's requests, constraints and files is put back before the
answer is judged, unless the new part replaced it (:func:`~synopsis.summarizers.llm.answers.
carry_forward`): facts a model forgot are not lost, and a correction it applied is not undone.

In cache-aligned mode the request is the conversation itself, unchanged, with the summary
instruction as one final user turn, so that a provider's prompt cache for that prefix is hit.

The steps form one plan (:mod:`.effects`) that ``summarize`` and ``asummarize`` both carry
out. What each request holds is built in :mod:`.contexts`; asking it of every model in turn,
and judging the answers, is :mod:`.attempts`. Both read a frozen :class:`~.policy.Policy`
that the summarizer builds from its options for each plan, not the summarizer itself.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from synopsis.errors import ConfigurationError
from synopsis.events import SummarizerFellBack, SummaryFilledIn, notify
from synopsis.messages import Message, Role, TextPart
from synopsis.models import context_window
from synopsis.overflows import Overflow
from synopsis.summarizers._options import history, utc_now, whole_number
from synopsis.summarizers.llm import contexts, effects
from synopsis.summarizers.llm.answers import SUMMARY_SCHEMA, SummaryContent, parse_summary
from synopsis.summarizers.llm.attempts import (
    Context,
    Failure,
    Job,
    Plan,
    ask_models,
    merge,
    total,
)
from synopsis.summarizers.llm.chunking import clip_text, group, trim
from synopsis.summarizers.llm.completion import (
    Completion,
    SummarizerError,
    TransportError,
)
from synopsis.summarizers.llm.contexts import MIN_TRANSCRIPT
from synopsis.summarizers.llm.policy import Policy
from synopsis.summarizers.llm.prompts import (
    SYSTEM_PROMPT,
    partial_json,
    quote_transcript,
    transcript_blocks,
)
from synopsis.summarizers.protocols import AsyncSummarizer, Summarizer
from synopsis.summarizers.records import Covers, SummaryRecord
from synopsis.summarizers.rules.summarizer import RuleBasedSummarizer
from synopsis.tokens import counter_for_model

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

__all__ = [
    "SUMMARY_SCHEMA",
    "LLMSummarizer",
    "Oversize",
    "SummaryContent",
    "parse_summary",
]

logger = logging.getLogger("synopsis.summarizers")

Oversize: TypeAlias = Literal["chunk", "trim"]


_INPUT_HINT: Final = (
    "max_input_tokens= on the LLMSummarizer; a server's first refusal as too long also teaches it"
)
_OVERFLOW_MARGIN: Final = 0.9
"""Of the room a server's window leaves, the share a request is cut to when the server said it
was too long: its tokenizer and ours do not count alike."""


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

    ``system_prompt`` replaces the default prompt
    (:data:`~synopsis.summarizers.llm.prompts.SYSTEM_PROMPT`); ``sleep`` replaces
    :func:`time.sleep` (and :func:`asyncio.sleep` in :meth:`asummarize`; an awaitable it returns
    is awaited there).
    ``result_chars`` clips each tool call's arguments and result in the prompt.
    ``max_summary_tokens`` is the completion's ``max_tokens`` (lowered by a call's own) and
    the most tokens the rendered record may take: a longer answer is cut to fit, least
    important content first, and marked ``truncated``.

    ``quality_guard`` (on by default) holds each summary to what the rule summary of the same
    messages keeps, at the same budget (the ``fallback``'s extractors when it is rule-based):
    what the model left out of it is added (see the steps above). Off, the model's summary is
    used as it is.

    ``max_input_tokens`` caps one request's prompt, for every model or per model (a mapping of
    model to cap); by default each model's cap is its window less ``max_summary_tokens``, and
    requests are made to fit the smallest. A server that says a request is over its context
    window (a local model's window is rarely known) has the summary asked again once, in parts
    that fit the window it named. Over it, ``oversize="chunk"`` summarizes in chunks and
    consolidates them (``max_depth`` levels at most), ``"trim"`` leaves the oldest messages out.

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
        self.temperature = temperature
        self.cache_aligned = cache_aligned
        self.tools: tuple[Mapping[str, Any], ...] = tuple(tools)
        counting = model_for_counting or self.models[0]
        self.counter = counter_for_model(counting)
        self.clock = clock or utc_now
        rules = self.fallback if isinstance(self.fallback, RuleBasedSummarizer) else None
        self._reference = RuleBasedSummarizer(
            extractors=rules.extractors if rules else None,
            user_message_chars=rules.user_message_chars if rules else 2000,
            max_summary_tokens=self.max_summary_tokens,
            model_for_counting=counting,
        )
        """The rules whose summary says what a model's summary must keep."""

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
            else max(context_window(m, hint=_INPUT_HINT) - self.max_summary_tokens, 1)
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
        return self._policy().measure(record)

    def _policy(self) -> Policy:
        """What the helpers read, with the input cap in use now."""
        return Policy(
            models=self.models,
            system_prompt=self.system_prompt,
            temperature=self.temperature,
            tools=self.tools,
            max_retries=self.max_retries,
            backoff=self.backoff,
            input_cap=self._input_cap_now(),
            reference=self._reference if self.quality_guard else None,
            counter=self.counter,
            clock=self.clock,
        )

    # -- the whole summary ----------------------------------------------------------------

    def _plan(self, job: Job) -> Plan:
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

    def _asked(self, context: Context) -> int:
        """Tokens of the request ``context`` made, as our counter counts them."""
        count = self.counter.count_text
        if context.conversation:  # cache-aligned: the conversation, its tools, the instruction
            sent = sum(map(self.counter.count_message, context.conversation))
            sent += sum(count(json.dumps(t, default=str)) for t in self.tools)
        else:
            sent = count(self.system_prompt)
        return sent + sum(count(turn["content"]) for turn in context.prompt)

    def _fitting(self, job: Job, result: SummaryRecord | Failure) -> tuple[int, int] | None:
        """The input cap and answer size that fit the window an overflow error named, when
        its figures hold together with the request that drew it (see
        :meth:`synopsis.overflows.Overflow.consistent`) and the cap is below the one in use;
        else None."""
        if not isinstance(result, Failure) or result.context is None:
            return None
        cause = result.cause
        if not isinstance(cause, TransportError) or cause.context_window is None:
            return None
        window, asked = cause.context_window, self._asked(result.context)
        said = Overflow(window, cause.prompt_tokens, cause.answer_tokens)
        if not said.consistent(asked):
            return None
        # A small window keeps half for the answer, which some servers count in the window
        # and others cut short; cut short, a JSON answer cannot be read.
        answer = min(job.limit, window // 2)
        ratio = 1.0
        if cause.prompt_tokens:  # the server's tokens per one of ours
            ratio = max(cause.prompt_tokens / max(asked, 1), 1.0)
        cap = int((window - answer) / ratio * _OVERFLOW_MARGIN)
        return (cap, answer) if MIN_TRANSCRIPT <= cap < self._input_cap_now() else None

    def _plan_once(self, job: Job) -> Plan:
        policy = self._policy()
        if self.cache_aligned:
            aligned = contexts.aligned(policy, job)
            if aligned is not None:
                result = yield from ask_models(policy, job, aligned)
                if not isinstance(result, Failure) or not result.answered:
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
        room = contexts.room(policy, job, job.previous)
        if sum(sizes) <= room or self.oversize == "trim":
            kept = trim(blocks, sizes, room, count, keep=_first_request(job.messages))
            context = contexts.quoted(
                policy, job, 0, len(blocks), quote_transcript(kept), whole=True
            )
            return (yield from ask_models(policy, job, context))
        room = contexts.room(policy, job, None)
        partials: list[SummaryRecord] = []
        runs = group(sizes, room)
        stood_in = 0
        for run in runs:
            chunk = [
                clip_text(b, room, count) if len(run) == 1 else b
                for b in blocks[run.start : run.stop]
            ]
            context = contexts.quoted(
                policy, job, run.start, run.stop, quote_transcript(chunk), whole=False
            )
            result = yield from ask_models(policy, job, context)
            if isinstance(result, Failure):
                stood_in += 1
                if not result.answered or stood_in == len(runs):
                    return result
                result = self._stand_in(job, run, result)
            partials.append(result)
        logger.info("summarizer: %d chunks summarized; consolidating", len(partials))
        return (yield from self._consolidate(policy, job, partials, level=1))

    def _stand_in(self, job: Job, run: range, failure: Failure) -> SummaryRecord:
        """The rules' summary of a chunk the model answered with no summary: one poor answer
        among many (a small model's, in a small window) does not cost the model's summary of
        the whole, which is still checked and filled in."""
        logger.warning(
            "summarizer: the answer for messages %d to %d was no summary (%s); "
            "the rules summarize that part",
            run.start + 1,
            run.stop,
            failure.reason,
        )
        part = job.messages[run.start : run.stop]
        record = self._reference.summarize(part, max_tokens=job.limit)
        return record.model_copy(update={"covers": Covers.of(part, run.start)})

    def _consolidate(
        self, policy: Policy, job: Job, partials: Sequence[SummaryRecord], level: int
    ) -> Plan:
        """One summary from ``partials``: merged in groups that fit, level by level, until
        they fit one request or ``max_depth`` is reached and the rest is truncated."""
        count = self.counter.count_text
        texts = [partial_json(p) for p in partials]
        sizes = [count(t) for t in texts]
        room = contexts.room(policy, job, job.previous)
        runs = group(sizes, contexts.room(policy, job, None))
        if sum(sizes) > room and level < self.max_depth and len(runs) < len(partials):
            merged: list[SummaryRecord] = []
            for run in runs:
                if len(run) == 1:
                    merged.append(partials[run.start])
                    continue
                text = "\n".join(texts[run.start : run.stop])
                group_of = partials[run.start : run.stop]
                context = contexts.merged(policy, job, group_of, text, final=False)
                result = yield from merge(policy, job, context, group_of)
                if isinstance(result, Failure):
                    return result
                merged.append(result)
            return (yield from self._consolidate(policy, job, merged, level + 1))
        text = clip_text("\n".join(texts), room, count)
        if len(text) < sum(map(len, texts)) + len(texts) - 1:
            logger.warning(
                "summarizer: partial summaries still over the input cap at depth %d; truncated",
                level,
            )
        final = contexts.merged(policy, job, partials, text, final=True)
        return (yield from merge(policy, job, final, partials))

    # -- the drivers ----------------------------------------------------------------------

    def _job(
        self,
        messages: Sequence[Message],
        previous: SummaryRecord | None,
        instructions: str | None,
        max_tokens: int | None,
    ) -> Job:
        limit = self.max_summary_tokens
        if self._learned:
            limit = min(limit, self._learned[1])
        if max_tokens is not None:
            limit = min(limit, whole_number("max_tokens", max_tokens, 1))
        return Job(history(messages), previous, instructions, limit)

    def _finish(self, job: Job, result: SummaryRecord | Failure) -> SummaryRecord | None:
        if isinstance(result, SummaryRecord):
            if job.filled is not None:
                notify(
                    SummaryFilledIn(
                        model=result.model,
                        added=tuple(map(str, job.filled.added)),
                        left_out=tuple(map(str, job.filled.left_out)),
                    )
                )
            return result.model_copy(update={"usage": total(job.spent)})
        if self.abort_on_failure:
            raise SummarizerError(f"every model failed; last: {result.reason}") from result.cause
        logger.warning("summarizer: every model failed (last: %s); falling back", result.reason)
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
