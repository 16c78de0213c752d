"""The pure helpers that fit a summarizer's input into its cap."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from synopsis.summarizers.llm.chunking import clip_text, group, trim
from synopsis.tokens import counter_for_model

COUNT = counter_for_model("gpt-4o").count_text


@given(st.lists(st.integers(0, 50), max_size=40), st.integers(1, 60))
def test_groups_partition_in_order_and_fit_unless_alone(sizes: list[int], budget: int):
    runs = group(sizes, budget)
    assert [i for run in runs for i in run] == list(range(len(sizes)))
    for run in runs:
        assert len(run) > 0
        assert len(run) == 1 or sum(sizes[i] for i in run) <= budget
    # Greedy: the next item never fits into the run before it.
    for before, after in itertools.pairwise(runs):
        assert sum(sizes[i] for i in before) + sizes[after.start] > budget


def test_no_sizes_no_groups():
    assert group([], 10) == []


@given(st.text(min_size=1, max_size=3000), st.integers(30, 400))
def test_clipped_text_fits_and_keeps_both_ends(text: str, budget: int):
    clipped = clip_text(text, budget, COUNT)
    assert COUNT(clipped) <= budget or clipped == text
    if clipped != text:
        head = clipped.split("\n[… ", 1)[0]
        tail = clipped.rsplit("…]\n", 1)[1]
        assert text.startswith(head)
        assert text.endswith(tail)
        assert len(text) - len(head) - len(tail) == int(clipped.split("[… ")[1].split()[0])


def test_clipping_is_as_long_as_the_budget_allows():
    text = "word " * 2000
    clipped = clip_text(text, 300, COUNT)
    assert 280 <= COUNT(clipped) <= 300


def test_text_within_budget_is_not_clipped():
    assert clip_text("short", 10, COUNT) == "short"


def blocks_of(count: int) -> list[str]:
    return [f"[{i + 1}] user:\n" + f"message {i} " * 30 for i in range(count)]


def test_trim_keeps_everything_that_fits():
    blocks = blocks_of(3)
    assert trim(blocks, [COUNT(b) for b in blocks], 10_000, COUNT, keep=0) == blocks


@given(st.integers(2, 30), st.integers(150, 900), st.none() | st.integers(0, 5))
def test_trim_fits_keeps_the_request_and_a_newest_run(count: int, budget: int, keep: int | None):
    blocks = blocks_of(count)
    if keep is not None and keep >= count:
        keep = None
    sizes = [COUNT(b) for b in blocks]
    out = trim(blocks, sizes, budget, COUNT, keep=keep)
    assert sum(COUNT(b) for b in out) <= budget
    numbers = [int(b[1:].split("]")[0]) for b in out if not b.lstrip().startswith("[… ")]
    assert numbers == sorted(numbers)
    if keep is not None:
        assert keep + 1 in numbers
    # What is kept besides the request is the newest messages, the last included.
    others = [n for n in numbers if keep is None or n != keep + 1]
    candidates = [i + 1 for i in range(count) if i != keep]
    assert others == candidates[len(candidates) - len(others) :]
    assert others
    assert sum(b.lstrip().startswith("[… ") for b in out) <= 2


def test_trim_clips_a_newest_message_too_big_to_fit_alone():
    blocks = [*blocks_of(2), "[3] tool:\n" + "huge output " * 3000]
    sizes = [COUNT(b) for b in blocks]
    out = trim(blocks, sizes, 600, COUNT, keep=0)
    assert sum(COUNT(b) for b in out) <= 600
    assert out[0] == blocks[0]
    assert out[1] == "[… message 2 omitted: over the summarizer's input cap …]"
    assert out[2].startswith("[3] tool:")
    assert "characters cut" in out[2]


def test_trim_without_a_request_keeps_the_newest():
    blocks = blocks_of(10)
    sizes = [COUNT(b) for b in blocks]
    out = trim(blocks, sizes, 300, COUNT)
    assert out[0] == "[… messages 1 to 8 omitted: over the summarizer's input cap …]"
    assert out[1:] == blocks[8:]


def test_trim_clips_a_huge_request_to_half_and_keeps_all_the_rest():
    blocks = ["[1] user:\n" + "do this " * 2000, *blocks_of(3)[1:]]
    sizes = [COUNT(b) for b in blocks]
    out = trim(blocks, sizes, 800, COUNT, keep=0)
    assert out[1:] == blocks[1:]
    assert "characters cut" in out[0]
    assert COUNT(out[0]) <= 800 // 2
