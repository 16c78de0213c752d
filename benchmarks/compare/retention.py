"""Retention: what survives of the part of a session that had to be summarized.

For each transcript large enough and each compression ratio r, the whole transcript is
compacted once with a budget of its system prompt plus ``conversation tokens / r`` (trigger
there, a window of that size, and half the conversation's share kept verbatim): the system
prompt is kept by every system, so the ratio applies to what can be compressed.
The anchors counted are those of the older segment that only a summary
can carry: not in the system prompt and not in the recent tail that every system was told to
keep (see :mod:`benchmarks.compare.anchors`). synopsis runs with its rule-based summarizer;
each peer with its own non-LLM path, or with the content-free fake summary where it has none.

An output larger than the window is a request the provider refuses: the agent has nothing of
it, so it retains nothing (it is counted under ``over``, as a raised call is under ``raised``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchmarks.compare import anchors
from benchmarks.compare.inputs import observation_sessions
from benchmarks.compare.judge import call_step, message_tokens, prompt_tokens, tokens
from benchmarks.compare.systems import Budget, Items, System

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

RATIOS = (5, 10)
MIN_BUDGET = 1_000
"""Below this a budget is smaller than any useful summary; such transcripts are left out."""


def run(
    systems: Sequence[System],
    transcripts: dict[str, Items],
    progress: Callable[[str], None],
) -> dict[str, Any]:
    out: dict[str, Any] = {"ratios": {}}
    observed = observation_sessions()
    for ratio in RATIOS:
        cases = []
        for name, items in transcripts.items():
            prompt, size = prompt_tokens(items)
            share = (size - prompt) // ratio
            if share >= MIN_BUDGET:
                budget = Budget(trigger=prompt + share, keep=share // 2, window=prompt + share)
                cases.append((name, items, size, budget))
        per_system: dict[str, Any] = {}
        for system in systems:
            found = dict.fromkeys(anchors.KINDS, 0)
            kept = dict.fromkeys(anchors.KINDS, 0)
            salient = [0, 0]
            achieved: list[float] = []
            raised: dict[str, str] = {}
            over: dict[str, int] = {}
            for name, items, size, budget in cases:
                want, spoken = anchors.targets(
                    items, budget.keep, message_tokens, observations_in_user_turns=name in observed
                )
                try:
                    result, _ = call_step(system, system.native(items), budget)
                except Exception as error:  # counted, not hidden: nothing retained
                    raised[name] = f"{type(error).__name__}: {error}"[:200]
                    result = None
                    sent: Items = []
                else:
                    sent = items if result is None else system.items(result)
                    size_out = tokens(sent)
                    achieved.append(size / max(1, size_out))
                    if size_out > budget.window:
                        over[name] = size_out
                        sent = []
                got = anchors.retained(want, sent)
                salient[0] += sum(len(v) for v in spoken.values())
                salient[1] += sum(anchors.retained(spoken, sent).values())
                for kind in anchors.KINDS:
                    found[kind] += len(want[kind])
                    kept[kind] += got[kind]
            per_system[system.name] = {
                "label": system.label,
                "anchors": found,
                "retained": kept,
                "share": {k: kept[k] / found[k] if found[k] else None for k in anchors.KINDS},
                "overall": sum(kept.values()) / max(1, sum(found.values())),
                "salient": salient[1] / max(1, salient[0]),
                "salient_anchors": salient[0],
                "compression": sorted(achieved),
                "raised": raised,
                "over": over,
            }
            progress(f"retention {ratio}x: {system.name} done")
        out["ratios"][str(ratio)] = {"transcripts": [c[0] for c in cases], "systems": per_system}
    return out
