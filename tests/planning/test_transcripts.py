"""Every cut point of every bundled real transcript: asking the planner to keep any number of
recent messages gives a plan that keeps tool units whole and a result each provider accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synopsis.formats import FormatName, decode, encode
from synopsis.planning import Keep, plan_split
from synopsis.tokens import counter_for_model
from synopsis.validation import check, get_profile, repair_messages
from tests.planning.helpers import summary
from tests.planning.test_properties import assert_units_whole

TRANSCRIPTS = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "transcripts").glob("*.jsonl")
)
COUNTER = counter_for_model("gpt-4o")


def test_the_transcripts_are_there() -> None:
    assert len(TRANSCRIPTS) == 10


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem)
@pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
def test_every_cut_point_stays_valid(path: Path, fmt: FormatName) -> None:
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    messages = decode(items, "openai").messages
    if fmt != "openai":
        wire = encode(messages, fmt)
        messages = decode(wire.messages, fmt, system=wire.system).messages
    counts = [COUNTER.count_message(m) for m in messages]
    profile = get_profile(fmt)
    planned = 0
    for keep in range(len(messages) + 1):
        plan = plan_split(
            messages,
            counts,
            keep=Keep.messages(keep),
            threshold=sum(counts),
            window=max(sum(counts), 1),
        )
        if plan is None:
            continue
        planned += 1
        assert_units_whole(list(messages), plan)
        out = plan.apply(messages, [summary()])
        rebuilt = repair_messages(out, profile).messages
        problems = [p for p in check(rebuilt, profile) if not p.conservative]
        assert problems == [], (keep, problems)
    assert planned > 0
