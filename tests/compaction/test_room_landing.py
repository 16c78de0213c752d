"""Where a compaction lands: near ``target_ratio`` of the window, shared between the protected
head, a summary whose budget grows with the window, and a verbatim tail (the room's, or the
caller's own ``keep``), always within the window less the answer's reserve.

Long histories are the OpenHands ponyc session played more than once, each repeat with fresh
tool-call ids and tool outputs of its own (so that no call pairs across repeats and no result
is an exact duplicate of an earlier one, which the reductions would fold away)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import synopsis
from synopsis.compaction.budgets import MIN_SUMMARY_TOKENS
from tests.compaction.helpers import TRANSCRIPTS, load_items

PONYC = load_items(next(p for p in TRANSCRIPTS if "ponyc-4588" in p.name))
MODEL = "gpt-4o"


def long_history(copies: int, *, requests: bool = True) -> list[dict[str, Any]]:
    """The ponyc session, its work (everything after the system prompt and the task) played
    ``copies`` times. ``requests=False`` leaves out the user turns inside the tool loop (the
    tool errors OpenHands sends as user messages): a turn start lets the split keep a longer
    tail than asked for (up to 70% of the trigger's threshold), so without one the tail is
    the one the keep policy sized."""
    base = [m for i, m in enumerate(PONYC) if requests or i < 2 or m["role"] != "user"]
    out = copy.deepcopy(base)
    for k in range(1, copies):
        for item in copy.deepcopy(base[2:]):
            for call in item.get("tool_calls") or []:
                call["id"] = f"{call['id']}-{k}"
            if "tool_call_id" in item:
                item["tool_call_id"] = f"{item['tool_call_id']}-{k}"
                item["content"] = f"(run {k + 1})\n{item['content']}"
            out.append(item)
    return out


def summary_index(messages: list[Any]) -> int:
    (index,) = (
        i for i, m in enumerate(messages) if str(m.get("content")).startswith("<synopsis-summary")
    )
    return index


def parts(result: synopsis.CompactionResult) -> tuple[int, int, int]:
    """Tokens of the head before the summary, of the summary, and of the tail after it."""
    messages = result.messages
    i = summary_index(messages)
    count = synopsis.count_tokens
    return (
        count(messages[:i], MODEL),
        count(messages[i : i + 1], MODEL),
        count(messages[i + 1 :], MODEL),
    )


def forced(history: list[dict[str, Any]], **options: Any) -> synopsis.CompactionResult:
    compactor = synopsis.Compactor(model=MODEL, environ={}, **options)
    result = compactor.compact(history, force=True)
    assert result.compacted
    assert result.record is not None
    assert result.tokens_after <= compactor.setup.window - compactor.setup.reserve
    assert synopsis.validate(result.messages, "openai") == []
    return result


def play(items: list[dict[str, Any]], window: int) -> list[tuple[synopsis.CompactionResult, int]]:
    """Each item appended in turn and the result carried on, as ``synopsis.replay`` does:
    every call's result and the size of the history it was given. Every history sent fits and
    stays under the trigger."""
    compactor = synopsis.Compactor(
        model=MODEL, context_window=window, store="memory", session_id="s", environ={}
    )
    limit = compactor.setup.window - compactor.setup.reserve
    threshold = compactor.setup.trigger.token_threshold(window)
    assert threshold is not None
    history: list[Any] = []
    results = []
    for item in items:
        history.append(item)
        result = compactor.compact(history)
        assert result.tokens_after <= limit
        assert result.tokens_after < threshold, (len(history), result.code, result.reason)
        if result.compacted:
            assert synopsis.validate(result.messages, "openai") == []
        results.append((result, len(history)))
        history = list(result.messages)
    return results


# The ponyc session alone (22k tokens) never reaches the trigger of a 32k window: played twice.
@pytest.mark.parametrize(("window", "copies"), [(8_000, 1), (32_000, 2)])
def test_a_live_replay_fits_and_fills_the_window(window: int, copies: int) -> None:
    results = play(long_history(copies), window)
    landed = [r.tokens_after / window for r, _ in results if r.compacted]
    assert landed
    # It fills: a compaction lands near the target, not at six messages and a short summary.
    assert any(0.3 <= share <= 0.75 for share in landed), landed
    assert all(r.record is not None for r, _ in results if r.compacted)


def test_a_long_session_at_128k_compacts_when_it_reaches_the_trigger() -> None:
    results = play(long_history(7), 128_000)
    assert any(r.compacted for r, _ in results)


def test_target_ratio_moves_the_landing() -> None:
    history = long_history(3)
    window = 32_000
    low = forced(history, context_window=window, target_ratio=0.3)
    high = forced(history, context_window=window, target_ratio=0.6)
    assert low.tokens_after < high.tokens_after
    assert high.tokens_after - low.tokens_after >= 0.1 * window


def test_a_lower_trigger_fraction_lands_lower_and_under_it() -> None:
    # trigger=0.6 was refused while the reset ratio stayed at 0.7; now both follow it down.
    history = long_history(3)
    window = 32_000
    usual = forced(history, context_window=window)
    low = forced(history, context_window=window, trigger=0.6)
    assert low.tokens_after < usual.tokens_after
    assert low.tokens_after < 0.6 * window * 0.875
    (done,) = [e for e in low.events if isinstance(e, synopsis.CompactionCompleted)]
    assert done.target_tokens is not None
    assert done.target_tokens < 0.6 * 0.875 * window


def test_the_summary_budget_scales_with_the_window() -> None:
    history = long_history(6)
    small = forced(history, context_window=8_000)
    large = forced(history, context_window=128_000)
    small_text = str(small.messages[summary_index(small.messages)]["content"])
    large_text = str(large.messages[summary_index(large.messages)]["content"])
    # A 128k window leaves the summary room a 500-token budget never had.
    assert len(large_text) > 2 * len(small_text)
    assert synopsis.count_tokens(large_text, MODEL) > 2_000


class Budgets(synopsis.RuleBasedSummarizer):
    """The rule summarizer at its default ceiling, keeping the budget each call is given."""

    def __init__(self) -> None:
        super().__init__(max_summary_tokens=8_000, model_for_counting=MODEL)
        self.budgets: list[int | None] = []

    def summarize(
        self, messages: Any, *, max_tokens: int | None = None, **options: Any
    ) -> synopsis.SummaryRecord:
        self.budgets.append(max_tokens)
        return super().summarize(messages, max_tokens=max_tokens, **options)


def test_an_explicit_keep_sizes_the_tail_and_the_summary_takes_what_the_target_leaves() -> None:
    history = long_history(2, requests=False)
    window = 16_000
    slack = 0.03 * window
    seen = {}
    for keep in (2_000, 4_000):
        summarizer = Budgets()
        result = forced(
            history, context_window=window, keep=f"tokens:{keep}", summarizer=summarizer
        )
        head, summary, tail = parts(result)
        # The defaults: 0.5 / 0.7 of what the head leaves under the reset ratio, on top of it.
        target = head + (0.5 / 0.7) * (0.7 * window - head)
        (budget,) = summarizer.budgets
        assert budget is not None
        seen[keep] = (budget, summary, tail)
        # The tail is the caller's (not the automatic one, about 4k here) ...
        assert keep / 2 <= tail <= keep
        # ... the summary's budget is what the target leaves after the head and that tail ...
        assert abs(budget - (target - head - tail)) <= slack
        # ... and the summary keeps within it, so the compaction lands at the target or under.
        assert summary <= budget + slack
        assert result.tokens_after <= target + slack
    (budget_short, summary_short, tail_short) = seen[2_000]
    (budget_long, summary_long, tail_long) = seen[4_000]
    assert tail_short < tail_long
    # What the longer tail takes comes out of the summary's share.
    assert abs((budget_short - budget_long) - (tail_long - tail_short)) <= slack
    assert summary_short > summary_long


def one_shot(
    name: str, ratio: int, summarizer: Any = "rules", **options: Any
) -> synopsis.CompactionResult:
    """The whole transcript compacted once into a window of a ``ratio``-th of it, told to keep
    half that window's worth of the newest messages (as the 5x/10x anchors benchmark does)."""
    items = load_items(next(p for p in TRANSCRIPTS if name in p.name))
    share = synopsis.count_tokens(items) // ratio
    compactor = synopsis.Compactor(
        context_window=share,
        trigger=synopsis.Trigger.tokens(share),
        keep=synopsis.Keep.tokens(share // 2),
        summarizer=summarizer,
        **options,
    )
    return compactor.compact(items, format="openai")


def summary_tokens(result: synopsis.CompactionResult) -> int:
    (summary,) = (m for m in result.messages if "<synopsis-summary" in str(m.get("content")))
    return synopsis.count_tokens([summary])


def test_a_tail_of_large_results_is_made_small_before_the_split_so_the_summary_is_sized_once() -> (
    None
):
    # The tail the caller asked for holds large results; in this emergency they are made small
    # before the split (not after it), so the summary's one budget is what the target leaves
    # it, and the compaction lands at its target in one pass.
    recorded = Budgets()
    events: list[synopsis.events.Event] = []
    result = one_shot(
        "claudecode-cli-spec-main", 4, recorded, summary_ratio=0.3, listeners=[events.append]
    )
    assert result.compacted
    (budget,) = recorded.budgets
    assert budget is not None
    assert summary_tokens(result) <= budget + 40  # its frame is counted apart from the record
    assert result.record is not None
    assert result.record.model == "rules"
    (done,) = [e for e in events if isinstance(e, synopsis.CompactionCompleted)]
    assert abs(done.landed - done.target) <= 0.1 or done.off_target
    assert result.tokens_after <= result.tokens_before


class Scripted(synopsis.summarizers.RuleBasedSummarizer):
    """Rules under another name: a summarizer whose calls cost something is not asked twice."""

    model = "scripted"  # type: ignore[misc]


def test_a_summary_that_is_not_the_rules_is_not_written_again() -> None:
    recorded = Budgets()
    ruled = one_shot("claudecode-cli-spec-main", 4, recorded, summary_ratio=0.3)
    other = one_shot("claudecode-cli-spec-main", 4, Scripted(), summary_ratio=0.3)
    assert other.record is not None
    assert other.record.truncated
    assert summary_tokens(other) < summary_tokens(ruled)


def test_a_tail_given_as_a_share_of_the_window_sizes_it_too() -> None:
    window = 16_000
    result = forced(long_history(2, requests=False), context_window=window, keep="fraction:0.1")
    _, _, tail = parts(result)
    assert 0.05 * window <= tail <= 0.1 * window
    assert result.tokens_after <= window - 3_200


def test_a_refill_that_would_not_fit_leaves_the_first_summary() -> None:
    # Half the window reserved for the answer (and some tokens more): the target is the
    # whole of what is left, and a summary written again to fill it comes out a few tokens
    # over (its framing): refused. (Whether it does depends on how close each rule summary
    # comes to its budget: the reserve is one where the second comes closer than the first.)
    items = load_items(next(p for p in TRANSCRIPTS if "claudecode-cli-spec-main" in p.name))
    share = synopsis.count_tokens(items) // 4
    rules = Budgets()
    reserve = share // 2 + 70
    result = one_shot(
        "claudecode-cli-spec-main", 4, rules, summary_ratio=0.3, reserve_output_tokens=reserve
    )
    assert result.compacted
    (first_budget,) = rules.budgets
    assert first_budget is not None
    assert summary_tokens(result) <= first_budget  # the larger one was tried and refused
    assert result.record is not None
    assert result.record.truncated
    assert result.tokens_after <= share - reserve


def test_several_passes_end_as_one_record_over_everything_they_summarized() -> None:
    store = synopsis.MemoryStore()
    recorded = Budgets()
    result = one_shot(
        "openhands-ponylang-ponyc-4588", 6, recorded, store=store, session_id="passes"
    )
    assert len(recorded.budgets) >= 2  # the compaction took more than one pass
    record = result.record
    assert record is not None
    assert record.depth == 0
    assert record.parent_id is None
    (done,) = (e for e in result.events if isinstance(e, synopsis.CompactionCompleted))
    assert len(record.covers) == done.summarized
    assert f'messages="{done.summarized}"' in str(result.messages[2]["content"])
    assert [r.id for r in store.summaries("passes")] == [record.id]
    originals = store.recall("passes")
    assert len(originals) >= done.summarized
    assert {m.compaction_id for m in originals} == {record.id}


def test_a_summary_a_few_tokens_too_many_is_written_shorter_rather_than_giving_up() -> None:
    # The kept messages and a summary at its floor come out some tens of tokens over what
    # the window leaves: the summary is written again smaller instead of the compaction
    # failing with BudgetUnreachableError.
    items = load_items(next(p for p in TRANSCRIPTS if "ponyc-4588" in p.name))
    window = synopsis.count_tokens(items) // 10
    result = one_shot("ponyc-4588", 10, store=synopsis.MemoryStore(), session_id="tight")
    assert result.compacted
    assert result.tokens_after <= window - window // 5  # the reserve: a fifth at most
    assert summary_tokens(result) < MIN_SUMMARY_TOKENS
    assert synopsis.validate(result.messages, provider="openai", format="openai") == []


def test_a_trimmed_argument_still_names_what_it_held() -> None:
    result = one_shot("claudecode-cli-spec-main", 10)
    (write,) = (
        c
        for m in result.messages
        for c in m.get("tool_calls") or ()
        if c["function"]["name"] == "Write"
    )
    content = json.loads(write["function"]["arguments"])["content"]
    assert content.startswith("# Technical Specification")
    assert "...(argument truncated) [" in content
    assert "characters; it named: " in content
    for named in ("src/cli/commands/init.ts", "src/cli/commands/clean.ts", "createInitCommand()"):
        assert named in content


def test_a_history_a_summary_cannot_make_fit_still_fails_with_its_reason() -> None:
    # Hundreds of tokens over with the newest turn and the task alone: not even a summary's
    # frame would make room, so the compaction gives up as before, saying why.
    with pytest.raises(synopsis.BudgetUnreachableError, match="the messages that must be kept"):
        one_shot("ponyc-4588", 11, store=synopsis.MemoryStore(), session_id="hopeless")


def test_a_summary_floor_set_below_the_default_lets_a_small_window_land_under_its_trigger() -> None:
    items: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding assistant."}]
    for n in range(40):
        items += [
            {"role": "user", "content": f"Step {n}: never touch module_{n}.py without asking."},
            {"role": "assistant", "content": "Noted, continuing with the plan."},
        ]

    def landing(floor: int) -> int:
        compactor = synopsis.Compactor(
            context_window=300,
            trigger=synopsis.Trigger.tokens(210),
            keep=synopsis.Keep.tokens(20),
            min_summary_tokens=floor,
            target_ratio=0.7,
        )
        return compactor.compact(items, force=True).tokens_after

    # The default floor of 256 tokens is more than this window's trigger leaves a summary.
    assert landing(256) > 210
    assert landing(64) <= 210
