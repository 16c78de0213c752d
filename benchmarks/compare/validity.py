"""Validity: every cut point of every bundled transcript, compacted by every system.

A cut point is the history as it stood after message ``i``: real sessions are compacted at
any moment, mid tool loop included. Each gets a budget that forces compaction (trigger at half
its conversation's tokens past the system prompt, keep a fifth, a window of twice its size so
that fitting is never the issue) and
each output is judged for OpenAI and Anthropic. Cut points where the recorded history is
itself invalid are left out, so no system is blamed for its input; the count says how many.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchmarks.compare.judge import Tally, call_step, problems, prompt_tokens
from benchmarks.compare.systems import Budget, Items, System

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


def cut_points(transcripts: dict[str, Items]) -> list[tuple[str, Items]]:
    """Every prefix of every transcript whose own history is valid for both providers."""
    out = []
    for name, items in transcripts.items():
        for i in range(1, len(items) + 1):
            prefix = items[:i]
            if not problems(prefix, "openai") and not problems(prefix, "anthropic"):
                out.append((name, prefix))
    return out


def forcing_budget(items: Items) -> Budget:
    """Over the trigger by half the conversation, whatever the system prompt takes (every
    system keeps the prompt, and some reserve it off the top of their trigger)."""
    prompt, size = prompt_tokens(items)
    talk = size - prompt
    return Budget(
        trigger=prompt + max(1, talk // 2), keep=max(1, talk // 5), window=max(2, 2 * size)
    )


def inputs(
    points: list[tuple[str, Items]], tessera: Callable[[Items], tuple[bool, str]] | None
) -> dict[str, Any]:
    """The cut points themselves, judged the same way: what every output is measured against
    (tessera-transcript fails a history that ends mid-call, which a cut point may)."""
    tally = Tally()
    for _, prefix in points:
        tally.judge(prefix, tessera)
    return tally.as_json()


def run(
    systems: Sequence[System],
    points: list[tuple[str, Items]],
    tessera: Callable[[Items], tuple[bool, str]] | None,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in systems:
        tally = Tally()
        for done, (_, prefix) in enumerate(points, 1):
            if done % 100 == 0:
                progress(f"validity: {system.name} {done} of {len(points)}")
            try:
                native = system.native(prefix)
                result, _ = call_step(system, native, forcing_budget(prefix))
            except Exception as error:  # a peer that raises is what is being counted
                tally.failed(error)
                continue
            if result is not None:
                tally.compacted += 1
            sent = prefix if result is None else system.items(result)
            tally.judge(sent, tessera)
        out[system.name] = tally.as_json()
        progress(f"validity: {system.name} done ({tally.outputs} outputs)")
    return out
