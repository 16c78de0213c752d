"""A summary states only true things: a result the deduplication replaced by a reference
carries the status and size of the result it repeats, the counts of calls and failures are
right, numbers are read whole, and identical calls are said once with how many times they ran.

The histories go through the real deduplication (:func:`synopsis.planning.reduce`), as the
compaction pipeline hands them to the summarizer.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.planning import Measure, Reductions, reduce
from synopsis.planning.reductions import DUPLICATE_MARKER
from synopsis.summarizers import RuleBasedSummarizer, render
from synopsis.summarizers.scanning import scan_text
from tests.summarizers.helpers import exchange, say, user

if TYPE_CHECKING:
    from synopsis.messages import Message

BIG = RuleBasedSummarizer(max_summary_tokens=50_000)
WINDOW = 100_000
FAILING = (
    "============ FAILURES ============\n"
    "FAILED tests/test_totals.py::test_sum - AssertionError: expected 3, got 2\n"
    + "x" * 240
    + "\n1 failed in 0.12s\nexit code: 1"
)
PASSING = "....\n" + "." * 240 + "\n4 passed in 0.10s\nexit code: 0"


def deduplicated(history: list[Message]) -> tuple[Message, ...]:
    """``history`` after the deduplication, every old repeat replaced by a reference."""
    reduced = reduce(
        history,
        [1] * len(history),
        measure=Measure(len(history), len(history), WINDOW),
        threshold=WINDOW,
        config=Reductions(truncate_args=None, message_threshold=None),
    )
    return reduced.messages


def reruns(times: int, output: str) -> list[Message]:
    history = [user("Make the totals test pass.")]
    for i in range(times):
        history += exchange(f"c{i}", "bash", {"command": "pytest"}, output)
    # Newer messages, so the repeats are old enough to be replaced.
    return history + [say(f"Still looking ({i}).") for i in range(25)]


def references(messages: tuple[Message, ...]) -> int:
    return sum(p.text.startswith(DUPLICATE_MARKER) for m in messages for p in m.tool_results)


def test_a_failing_command_rerun_33_times_is_33_failures() -> None:
    messages = deduplicated(reruns(33, FAILING))
    assert references(messages) == 32  # the case: all but the first are references
    record = BIG.summarize(messages)
    assert "33 tool calls (bash x33), 33 failed." in record.narrative
    (point,) = record.key_points
    lines = len(FAILING.splitlines())
    assert point.startswith(
        f"[❌ bash x33, all failed: Command: pytest | Exit: 1 | Output: {lines} lines"
    )
    assert "FAILED tests/test_totals.py::test_sum" in point
    assert not any("✓" in p for p in record.key_points)
    (error,) = record.sections.errors_and_fixes
    assert error.endswith("(33 times)")
    assert "bash `pytest`: last attempt failed" in record.facets.unresolved


def test_a_reference_to_a_passing_result_is_a_success_of_its_size() -> None:
    record = BIG.summarize(deduplicated(reruns(5, PASSING)))
    assert "5 tool calls (bash x5)." in record.narrative
    assert "failed" not in record.narrative
    lines = len(PASSING.splitlines())
    assert record.key_points == (f"[✓ bash x5: Command: pytest | Exit: 0 | Output: {lines} lines]",)


def test_a_reused_call_id_is_resolved_by_the_size_the_reference_gives() -> None:
    # The id "c0" answers a passing run first, then a failing one; the reference to the
    # failing text names "c0" and its size, and only the failing result has that size.
    history = [
        user("Run the tests."),
        *exchange("c0", "bash", {"command": "pytest"}, PASSING),
        *exchange("c0", "bash", {"command": "pytest"}, FAILING),
        *exchange("c1", "bash", {"command": "pytest"}, FAILING),
        *[say(f"step {i}") for i in range(25)],
    ]
    messages = deduplicated(history)
    assert references(messages) == 1
    record = BIG.summarize(messages)
    assert "3 tool calls (bash x3), 2 failed." in record.narrative
    assert record.key_points[-1].startswith("[❌ bash x2, all failed:")


def test_a_reference_to_a_result_summarized_before_claims_no_outcome() -> None:
    messages = deduplicated(reruns(4, FAILING))
    later = [m for m in messages[3:] if m.role.value != "user"]  # the original is gone
    record = BIG.summarize(later)
    assert "3 tool calls (bash x3), 3 repeating a result summarized before." in record.narrative
    assert "failed" not in record.narrative
    assert record.key_points == (
        f"[= bash x3: Command: pytest | Result: identical to an earlier one "
        f"({len(FAILING):,} characters), summarized before]",
    )
    assert record.sections.errors_and_fixes == ()
    assert record.facets.unresolved == ()


def test_a_reference_flagged_as_an_error_is_a_failure() -> None:
    note = next(
        p.text
        for m in deduplicated(reruns(3, FAILING))
        for p in m.tool_results
        if p.text.startswith(DUPLICATE_MARKER)
    )
    record = BIG.summarize(exchange("c9", "bash", {"command": "pytest"}, note, is_error=True))
    assert "1 tool call (bash x1), 1 failed." in record.narrative
    assert record.key_points[0].startswith("[❌ bash: Command: pytest")


def test_output_that_only_looks_like_a_reference_is_read_as_it_is() -> None:
    fake = f"{DUPLICATE_MARKER} '\\N{{no such name}}'; 12 characters] and more"
    record = BIG.summarize(exchange("c1", "bash", {"command": "cat notes"}, fake))
    assert record.key_points == ("[✓ bash: Command: cat notes | Output: 1 lines]",)


CALLS = st.lists(st.tuples(st.sampled_from(["pytest", "ruff check", "ls"]), st.booleans()))
GROUP = re.compile(r"^\[(\S+) bash(?: x(\d+))?")


@given(CALLS)
def test_the_counts_of_calls_and_failures_are_right(calls: list[tuple[str, bool]]) -> None:
    history = [user("Check everything.")]
    for i, (command, fails) in enumerate(calls):
        status = "FAILED\nexit code: 1" if fails else "ok\nexit code: 0"
        history += exchange(
            f"c{i}", "bash", {"command": command}, f"{command}: {status}" + "." * 200
        )
    history += [say(f"step {i}") for i in range(25)]
    record = BIG.summarize(deduplicated(history))
    failures = sum(fails for _, fails in calls)
    calls_said = re.search(r"(\d+) tool calls? ", record.narrative)
    failed_said = re.search(r"(\d+) failed", record.narrative)
    assert (int(calls_said.group(1)) if calls_said else 0) == len(calls)
    assert (int(failed_said.group(1)) if failed_said else 0) == failures
    # At most six distinct calls: every call is in a group, every failure in a ❌ group.
    groups = [GROUP.match(p) for p in record.key_points]
    counts = [(g.group(1), int(g.group(2) or 1)) for g in groups if g]
    assert sum(n for _, n in counts) == len(calls)
    assert sum(n for mark, n in counts if mark == "❌") == failures


def test_identical_calls_are_said_once_with_how_many_times() -> None:
    history = [user("Look around.")]
    for i in range(4):
        history += exchange(f"l{i}", "bash", {"command": "ls"}, "a.py\nb.py")
    history += exchange("r", "read_file", {"path": "a.py"}, "x = 1\n")
    history += exchange("l9", "bash", {"command": "ls"}, "a.py\nb.py")
    record = BIG.summarize(history)
    assert record.key_points == (
        "[✓ read_file: File: a.py | Lines: 1 | Type: python]",
        "[✓ bash x5: Command: ls | Output: 2 lines]",
    )
    assert "6 tool calls (bash x5, read_file x1)." in record.narrative


def test_groups_carried_from_an_earlier_summary_add_up() -> None:
    part = [user("Run it."), *exchange("a", "bash", {"command": "make"}, "FAILED\nexit code: 2")]
    first = BIG.summarize(part * 2)
    second = BIG.summarize(
        exchange("b", "bash", {"command": "make"}, "FAILED\nexit code: 2"), previous=first
    )
    point = "Command: make | Exit: 2 | Output: 2 lines | Error: FAILED]"
    assert first.key_points == (f"[❌ bash x2, all failed: {point}",)
    assert second.key_points == (f"[❌ bash x3, all failed: {point}",)


@pytest.mark.parametrize(
    ("text", "figures"),
    [
        ("They want a 400,000 loan.", ("400,000",)),
        ("The population was 2,017, growing fast.", ("2,017",)),
        ("$1,250,000, they said.", ("$1,250,000",)),
        ("It costs €2.5 million, or 3,000 USD a month.", ("€2.5 million", "3,000 USD")),
        ("Latency went from 1,234.5 ms to 980 ms.", ("1,234.5 ms", "980 ms")),
        ("Coverage is 87.5% now.", ("87.5%",)),
        ("We shipped in 2019.", ("2019",)),
        ("Disk: 1.5GB free of 250 GB.", ("1.5GB", "250 GB")),
        ("Not a figure: 10.0.0.1, v1.2.3 or issue-123.", ()),
    ],
)
def test_numbers_are_read_whole(text: str, figures: tuple[str, ...]) -> None:
    assert scan_text(text).numbers == figures
    record = BIG.summarize([user(text)])
    assert record.facets.entities.numbers == figures
    shown = render(record)
    for figure in figures:
        assert figure in shown
