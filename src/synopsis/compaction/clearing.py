"""The clearing tier inside a compaction (:mod:`synopsis.planning.clearing`): what a
placeholder says, which originals it names for recall, and whether clearing answers the
pressure alone.

A placeholder names the tool, the gist of its call and how it went (the rules summarizer's
own extractor for that tool: the command and its exit code, the path read, the pattern
searched), the output's size, and the id the recall tool takes to bring it back. The
original goes to the store like any message a compaction made smaller.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from synopsis.compaction.shrink import trim_args
from synopsis.messages import (
    Message,
    ToolCallPart,
    ToolResultPart,
    after_compaction,
    content_hash,
    keeps_shape,
)
from synopsis.planning.clearing import CLEARED_MARKER, Cleared, clear_outputs
from synopsis.stores import RECALL_TOOL_NAME
from synopsis.summarizers.rules.exchanges import ToolExchange, parse_arguments
from synopsis.summarizers.rules.extractors import DEFAULT_EXTRACTORS, find_extractor
from synopsis.summarizers.scanning import named_in

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.compaction.setup import Setup
    from synopsis.compaction.state import Run
    from synopsis.planning import Decision

__all__ = ["clear_tier", "placeholder_text", "uncleared"]

_GIST_CHARS = 300
"""The most a placeholder's gist of the call may take."""
_NAMES_CHARS = 400
"""The most a placeholder's list of what the output named (paths, symbols, URLs) may take:
what the conversation most often needs again of an output it no longer holds."""


def placeholder_text(
    call: ToolCallPart | None, result: ToolResultPart, *, tokens: int, recall: str | None
) -> str:
    """What stands for a cleared output: tool, gist and status of the call, size, recall."""
    name = call.name if call is not None else (result.name or "a tool")
    text = result.text
    args, raw = parse_arguments(call.arguments) if call is not None else ({}, "")
    facts = find_extractor(name, DEFAULT_EXTRACTORS)(
        ToolExchange(name, args, raw, text, result.is_error)
    )
    gist = " | ".join(facts.facts)
    if len(gist) > _GIST_CHARS:
        gist = gist[: _GIST_CHARS - 1] + "…"
    status = "failed" if facts.status == "error" else "ok"
    where = (
        f"{RECALL_TOOL_NAME} with {json.dumps({'ids': [recall]})} brings it back"
        if recall is not None
        else "not kept"
    )
    about = f" ({gist})" if gist else ""
    names = [n for n in named_in(text, _NAMES_CHARS) if n not in gist]
    named = f"; it named: {', '.join(names)}" if names else ""
    return (
        f"{CLEARED_MARKER} the output of {name}{about}; {status}; {len(text):,} characters, "
        f"about {tokens:,} tokens{named}; {where}]"
    )


def clear_tier(run: Run, messages: Sequence[Message]) -> Cleared:
    """``messages`` with old tool outputs cleared toward the compaction's target (see
    :func:`~synopsis.planning.clearing.clear_outputs`)."""
    opened, setup = run.opened, run.setup
    counter = setup.counter
    keeps = setup.keeps_originals and opened.session_id is not None
    pinned = set(setup.protect.pinned)

    def placeholder(
        message: Message, result: ToolResultPart, call: ToolCallPart | None
    ) -> str | None:
        if keeps_shape(result):
            # A structured output kept as it came (a computer_call_output's screenshot):
            # the provider takes only that shape there, so no text may stand in for it.
            return None
        recall = opened.originals.name(message) if keeps else None
        if keeps and recall is None:
            return None  # not the caller's message: nothing to bring it back from
        tokens = counter.count_text(result.text)
        return placeholder_text(call, result, tokens=tokens, recall=recall)

    def whole(message: Message) -> bool:
        return bool(pinned) and (message.id in pinned or content_hash(message) in pinned)

    counts = [counter.count_message(m) for m in messages]
    cleared = clear_outputs(
        messages,
        counts,
        overhead=run.overhead,
        target=run.room.target,
        window=setup.window,
        config=setup.clearing,
        count=counter.count_message,
        count_text=counter.count_text,
        placeholder=placeholder,
        cut_call=trim_args,
        whole=whole,
        start=after_compaction(messages),
    )
    for before, after in zip(messages, cleared.messages, strict=True):
        if after is not before:
            opened.originals.adopt(before, after)
    return cleared


def uncleared(decision: Decision, cleared: Cleared, setup: Setup) -> Decision:
    """The decision of a clearing-only compaction that found too little to clear."""
    least = setup.clearing.least(setup.window)
    return replace(
        decision,
        compact=False,
        code="nothing-to-compact",
        reason=f"clearing old tool outputs would free {cleared.reachable:,} tokens, under the "
        f"{least:,} worth a change to the cached prefix",
    )
