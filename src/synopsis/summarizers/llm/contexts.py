"""What to ask: the request for a whole summary, for one chunk's partial summary, for a
cache-aligned conversation, and for a merge of partial summaries, each with how its answer
will be judged (the facts it must keep, the size it must stay under).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Final

from synopsis.summarizers.llm.attempts import Context, Job, update_of
from synopsis.summarizers.llm.gaps import Fact, wanted
from synopsis.summarizers.llm.prompts import (
    UPDATE_INSTRUCTIONS,
    build_consolidation_prompt,
    build_prompt,
    cache_aligned_prompt,
    partial_json,
)
from synopsis.summarizers.records import Covers, SummaryRecord
from synopsis.summarizers.render import render

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message
    from synopsis.summarizers.llm.policy import Policy

__all__ = [
    "FRAME_TOKENS",
    "MIN_TRANSCRIPT",
    "aligned",
    "base_fields",
    "merged",
    "quoted",
    "room",
    "wanted_for",
]

logger = logging.getLogger("synopsis.summarizers")

FRAME_TOKENS: Final = 200
"""Tokens of a request's framing: the meta line, the headings, the closing request."""
MIN_TRANSCRIPT: Final = 256
"""The least transcript a request carries, however much else the input cap must hold."""


def base_fields(
    policy: Policy,
    messages: Sequence[Message],
    previous: SummaryRecord | None,
    offset: int = 0,
) -> dict[str, Any]:
    return {
        "created_at": policy.clock(),
        "depth": previous.depth + 1 if previous else 0,
        "parent_id": previous.id if previous else None,
        "covers": Covers.of(messages, offset),
        "covered_total": previous.messages_covered + len(messages) if previous else None,
        "tokens_in": sum(policy.counter.count_message(m) for m in messages),
    }


def wanted_for(policy: Policy, job: Job) -> tuple[Fact, ...]:
    """The facts the rule summary of the job's messages keeps at its budget: what the whole
    summary must keep (found once per budget)."""
    if policy.reference is None:
        return ()
    found = job.wanted.get(job.limit)
    if found is None:
        reference = policy.reference.summarize(
            job.messages, previous=job.previous, max_tokens=job.limit
        )
        found = job.wanted[job.limit] = wanted(reference)
    return found


def room(policy: Policy, job: Job, previous: SummaryRecord | None) -> int:
    """Tokens left for the transcript (or the partial summaries) in one request."""
    count = policy.counter.count_text
    used = count(policy.system_prompt) + FRAME_TOKENS
    used += count(partial_json(previous)) + count(UPDATE_INSTRUCTIONS) if previous else 0
    used += count(job.instructions) if job.instructions else 0
    return max(policy.input_cap - used, MIN_TRANSCRIPT)


def aligned(policy: Policy, job: Job) -> Context | None:
    prompt = cache_aligned_prompt(previous=job.previous, instructions=job.instructions)
    base = base_fields(policy, job.messages, job.previous)
    tools = sum(policy.counter.count_text(json.dumps(t, default=str)) for t in policy.tools)
    size = base["tokens_in"] + tools + policy.counter.count_text(prompt[0]["content"])
    if size > policy.input_cap:
        logger.info(
            "summarizer: the conversation (%d tokens) is over the input cap (%d); "
            "summarizing it without cache alignment",
            size,
            policy.input_cap,
        )
        return None
    previous = policy.counter.count_text(render(job.previous)) if job.previous else 0
    return Context(
        prompt,
        wanted_for(policy, job),
        base,
        base["tokens_in"] + previous,
        job.limit,
        tuple(job.messages),
        update_of(job.previous, job.messages),
    )


def quoted(
    policy: Policy, job: Job, start: int, stop: int, transcript: str, *, whole: bool
) -> Context:
    """The request over ``job.messages[start:stop]`` given as ``transcript``: the whole
    summary (with the previous one to revise), or one chunk's partial summary."""
    messages = job.messages[start:stop]
    previous = job.previous if whole else None
    base = base_fields(policy, messages, previous, start)
    prompt = build_prompt(
        messages,
        previous=previous,
        instructions=job.instructions,
        total_tokens=base["tokens_in"],
        transcript=transcript,
    )
    size = base["tokens_in"] + (policy.counter.count_text(render(previous)) if previous else 0)
    return Context(
        prompt,
        wanted_for(policy, job) if whole else (),
        base,
        size if whole else None,
        job.limit,
        update=update_of(previous, messages),
    )


def merged(
    policy: Policy,
    job: Job,
    partials: Sequence[SummaryRecord],
    text: str,
    *,
    final: bool,
) -> Context:
    previous = job.previous if final else None
    if final:
        base = base_fields(policy, job.messages, previous)
        facts = wanted_for(policy, job)
    else:
        base = {
            "created_at": policy.clock(),
            "covers": Covers.join(p.covers for p in partials),
            "tokens_in": sum(p.tokens_in for p in partials),
        }
        facts = ()
    prompt = build_consolidation_prompt(
        text,
        count=len(partials),
        messages=len(base["covers"]),
        previous=previous,
        instructions=job.instructions,
        total_tokens=base["tokens_in"],
    )
    size = base["tokens_in"] + (policy.counter.count_text(render(previous)) if previous else 0)
    update = update_of(previous, job.messages)
    return Context(prompt, facts, base, size if final else None, job.limit, update=update)
