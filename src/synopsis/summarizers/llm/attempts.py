"""One request tried on every model in turn: asked with retries, the answer read and judged.

An answer is used when it reads as a summary (JSON, or numbered sections), is one at all (not
empty, a refusal or an echo of the instructions: :func:`~.answers.not_a_summary`), and renders
shorter than what it replaces. What it leaves out of the facts the rule summary keeps is added
to it (:func:`~.gaps.fill_in`), not asked for again. What failed is a :class:`Failure`, which
says whether the model answered at all (an answer that could not be used is not retried on the
same prompt).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from pydantic import ValidationError

from synopsis.errors import brief
from synopsis.summarizers.llm.answers import (
    SUMMARY_SCHEMA,
    SummaryContent,
    Update,
    carry_forward,
    joined,
    not_a_summary,
    parse_sectioned,
    parse_summary,
)
from synopsis.summarizers.llm.completion import (
    ChatMessage,
    CompletionRequest,
    CompletionResponse,
    TransportError,
    Usage,
    is_retryable,
)
from synopsis.summarizers.llm.effects import Call, Effect, Outcome, Sleep
from synopsis.summarizers.llm.gaps import Fact, Filled, fill_in
from synopsis.summarizers.llm.prompts import instructions_of
from synopsis.summarizers.records import SummaryRecord
from synopsis.summarizers.render import render

if TYPE_CHECKING:
    from collections.abc import Generator, Sequence

    from synopsis.messages import Message
    from synopsis.summarizers.llm.policy import Policy

__all__ = [
    "Context",
    "Failure",
    "Job",
    "Plan",
    "ask_models",
    "judge",
    "merge",
    "total",
    "update_of",
    "used",
]

logger = logging.getLogger("synopsis.summarizers")

_LOGGED_CHARS: Final = 200


@dataclass(frozen=True, slots=True)
class Failure:
    reason: str
    cause: BaseException | None = None
    context: Context | None = None
    """The request that failed in transport (to size a smaller one after an overflow)."""
    answered: bool = False
    """The model answered, and the answer could not be used."""


@dataclass(frozen=True, slots=True)
class Context:
    """One request to make (with every model in turn) and how to judge its answer."""

    prompt: list[ChatMessage]
    wanted: tuple[Fact, ...]
    """What the answer must keep, else it is added (:func:`~.gaps.wanted`); none for a
    partial summary, whose facts the whole one is checked for."""
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
class Job:
    """One ``summarize`` call: its arguments, and the usage of every accepted request."""

    messages: Sequence[Message]
    previous: SummaryRecord | None
    instructions: str | None
    limit: int
    spent: list[Usage] = field(default_factory=list)
    filled: Filled | None = None
    """What was added to the whole summary, once one is accepted with facts added."""
    wanted: dict[int, tuple[Fact, ...]] = field(default_factory=dict)
    """The facts the rule summary keeps, by the budget they were found for."""


Plan: TypeAlias = "Generator[Effect, Outcome, SummaryRecord | Failure]"


def total(usages: Sequence[Usage]) -> Usage:
    return Usage(**{name: sum(getattr(u, name) for u in usages) for name in Usage.model_fields})


def update_of(previous: SummaryRecord | None, messages: Sequence[Message]) -> Update | None:
    return Update.of(previous, messages) if previous is not None else None


def ask(
    policy: Policy, model: str, context: Context, turns: list[ChatMessage]
) -> Generator[Effect, Outcome, CompletionResponse | Exception]:
    aligned = bool(context.conversation)
    request = CompletionRequest(
        model=model,
        system="" if aligned else policy.system_prompt,
        messages=turns,
        temperature=policy.temperature,
        max_tokens=context.max_tokens,
        json_schema=None if aligned else SUMMARY_SCHEMA,
        conversation=context.conversation,
        tools=policy.tools if aligned else (),
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
        if attempt >= policy.max_retries or not is_retryable(outcome):
            return outcome
        yield Sleep(policy.backoff * 2**attempt)
        attempt += 1


def accept(
    policy: Policy,
    model: str,
    response: CompletionResponse,
    context: Context,
    usage: Usage,
) -> Filled | Failure:
    if not isinstance(response.text, str):
        # A completion that ignores its type gave no answer a summary can be read from.
        reason = f"answer text is {type(response.text).__name__}, not a string"
        return bad(model, reason, repr(response.text))
    try:
        content = parse_summary(response.text)
    except (ValueError, ValidationError) as error:
        sectioned = parse_sectioned(response.text)
        if sectioned is None:
            return bad(model, "invalid JSON summary", response.text, error)
        logger.info("summarizer %s: answer in sections, not JSON; its sections are kept", model)
        content = sectioned
    aligned = bool(context.conversation)
    instructions = instructions_of("" if aligned else policy.system_prompt, context.prompt)
    nothing = not_a_summary(content, instructions)
    if nothing is not None:
        return bad(model, nothing, response.text)
    return judge(policy, response.model or model, content, context, usage, text=response.text)


def judge(
    policy: Policy,
    model: str,
    content: SummaryContent,
    context: Context,
    usage: Usage,
    *,
    text: str = "",
) -> Filled | Failure:
    """The record of ``content`` (a model's summary, ``text`` as it answered), what it left
    out of the facts wanted added, within the budget; a failure when it is not shorter than
    what it replaces."""
    facts = context.wanted
    if context.update is not None:
        facts = context.update.current(facts, content)
        content = carry_forward(content, context.update)
    record = SummaryRecord(
        **context.base,
        narrative=content.narrative,
        key_points=content.key_points,
        sections=content.sections,
        facets=content.facets,
        model=model,
        usage=usage,
    )
    filled = fill_in(record, facts, policy.measure, context.max_tokens)
    tokens_out = policy.counter.count_text(render(filled.record))
    if context.input_tokens is not None and tokens_out >= context.input_tokens:
        return bad(
            model,
            f"summary not shorter than its input ({tokens_out} >= {context.input_tokens} tokens)",
            text,
        )
    if filled.added:
        logger.info(
            "summarizer %s: the summary left out %d facts the rule summary keeps; added",
            model,
            len(filled.added),
        )
    record = filled.record.model_copy(update={"tokens_out": tokens_out})
    return Filled(record, filled.added, filled.left_out)


def bad(model: str, reason: str, text: str, error: Exception | None = None) -> Failure:
    logger.warning("summarizer %s: bad output (%s): %r", model, reason, text[:_LOGGED_CHARS])
    return Failure(f"{model}: {reason}", error, answered=True)


def try_model(
    policy: Policy, model: str, context: Context
) -> Generator[Effect, Outcome, Filled | Failure]:
    outcome = yield from ask(policy, model, context, context.prompt)
    if isinstance(outcome, Exception):
        return Failure(f"{model}: transport error {brief(repr(outcome))}", outcome, context)
    return accept(policy, model, outcome, context, outcome.usage)


def ask_models(policy: Policy, job: Job, context: Context) -> Plan:
    failure = Failure("no model tried")
    for model in policy.models:
        result = yield from try_model(policy, model, context)
        if isinstance(result, Filled):
            return used(job, result)
        failure = result
    return failure


def merge(policy: Policy, job: Job, context: Context, partials: Sequence[SummaryRecord]) -> Plan:
    """The merge of ``partials`` that ``context`` asks for; when every model answered it with
    no summary at all, the partials joined as they are (:func:`~.answers.joined`), judged as
    an answer would be: the models wrote them, and a small one that cannot merge them still
    summarized each part."""
    result = yield from ask_models(policy, job, context)
    if not isinstance(result, Failure) or not result.answered:
        return result
    logger.warning(
        "summarizer: no model merged the %d partial summaries (%s); joined as they are",
        len(partials),
        result.reason,
    )
    model = next((p.model for p in partials if p.model != "rules"), policy.models[0])
    filled = judge(policy, model, joined(partials), context, Usage())
    return filled if isinstance(filled, Failure) else used(job, filled)


def used(job: Job, filled: Filled) -> SummaryRecord:
    """``filled``'s record, its usage and what was added to it noted in ``job``."""
    job.spent.append(filled.record.usage)
    if filled.added or filled.left_out:
        job.filled = filled
    return filled.record
