"""A compaction brought within the limit and valid for the provider: a call too large to
fit, oversized results reduced without a summary, a rebuilt history that breaks a rule,
a summary merged into a user turn taken apart, and what the saved tokens count."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import pytest

import synopsis
from synopsis.compaction.rebuild import finish
from synopsis.errors import (
    BudgetUnreachableError,
    ConversationError,
)
from synopsis.formats import decode, message_from_json
from synopsis.messages import Message, Role, TextPart, is_summary, is_summary_text
from synopsis.planning.reductions import SUMMARY_MARKER
from synopsis.stores import MemoryStore
from synopsis.testing import ScriptedSummarizer
from tests.compaction.helpers import (
    TRANSCRIPTS,
    kinds,
    load_items,
    make,
    run,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.compaction import CompactionResult
    from synopsis.events import Event

AIDER = load_items(next(p for p in TRANSCRIPTS if p.stem == "aider-census"))
"""20 plain user/assistant messages, about 2,200 tokens."""
MARSHMALLOW = load_items(next(p for p in TRANSCRIPTS if p.stem == "sweagent-marshmallow-1867-fc"))
"""A system prompt, a task and 13 tool calls with their results, about 8,000 tokens."""


def summaries_in(result: CompactionResult) -> list[Message]:
    decoded = decode(result.messages, result.format, system=result.system)
    return [m for m in decoded.messages if is_summary(m)]


def call(call_id: str, arguments: str = '{"path": "census.py"}') -> dict[str, Any]:
    function = {"name": "read_file", "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def tool(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


BIG_OUTPUT = "line 12: total population 331449281 for the census table\n" * 700
"""A tool output far over the message threshold (half the trigger) of ``make()``."""


# ------------------------------------------------------------------- 2. the other options


# ------------------------------------------------------------------- 3. the Compactor


# ------------------------------------------------------- 4. what the store keeps, per format


# ------------------------------------------------------------------- 5. the pipeline


def test_a_huge_call_whose_arguments_are_not_json_makes_the_budget_unreachable() -> None:
    huge = call("c1", arguments="x" * 40000)  # cannot be truncated as JSON
    history = [*AIDER, huge]
    store = MemoryStore()
    got: list[Event] = []
    compactor = make(store=store, session_id="huge", listeners=[got.append])
    with pytest.raises(BudgetUnreachableError, match="the messages that must be kept") as caught:
        run(compactor, history)
    assert "over the 3,200" in str(caught.value)
    assert history[-1] == huge
    assert store.recall("huge") == []
    assert store.summaries("huge") == []
    state = store.session("huge")  # an unreachable budget is no failure of the summarizer
    assert state is not None
    assert state.governor["consecutive_failures"] == 0
    error = caught.value
    assert (error.limit, error.window, error.reserve, error.protected) == (3_200, 4_000, 800, None)
    assert kinds(got) == ["CompactionStarted", "CompactionFailed"]


def test_an_oversized_result_of_a_running_turn_is_reduced_without_a_summary() -> None:
    # The model asked for two tools; one answered, hugely, the other may still be running:
    # nothing can be summarized, but the huge output is summarized on its own.
    both = call("c1")
    both["tool_calls"] += call("c2", '{"path": "other.py"}')["tool_calls"]
    history = [{"role": "user", "content": "Read both census files."}, both, tool("c1", BIG_OUTPUT)]
    store = MemoryStore()
    summarizer = ScriptedSummarizer()
    result = run(make(store=store, session_id="tail", summarizer=summarizer), history, force=True)
    assert result.compacted
    assert result.code == "forced"
    assert result.record is None
    assert summarizer.calls == []
    assert result.tokens_after < result.tokens_before
    assert result.messages[:2] == history[:2]
    assert result.messages[2]["tool_call_id"] == "c1"
    assert result.messages[2]["content"].startswith("Summary of tool output:")
    (original,) = store.recall("tail")
    assert json.loads(original.data) == history[2]
    assert result.offloaded == (original.id,)
    state = store.session("tail")
    assert state is not None
    assert state.compactions == 1
    assert state.summary_id is None


def test_a_forced_compaction_reduces_an_oversized_result_in_the_kept_tail() -> None:
    history = [{"role": "user", "content": "Read the census file."}, call("c1")]
    history.append(tool("c1", BIG_OUTPUT))
    store = MemoryStore()
    result = run(make(store=store, session_id="tail"), history, force=True)
    assert result.tokens_before > 4000  # the history does not fit the window at all
    assert result.compacted
    assert result.record is None
    assert result.messages[2]["content"].startswith("Summary of tool output:")
    (original,) = store.recall("tail")
    assert json.loads(original.data) == history[2]


def test_a_rebuilt_history_that_breaks_a_rule_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def dropping(kept: Sequence[Message], profile: Any, *, role: Any) -> Any:
        final, fixes = finish(kept, profile, role=role)
        first_result = next(i for i, m in enumerate(final) if m.role is Role.TOOL)
        return final[:first_result] + final[first_result + 1 :], fixes

    monkeypatch.setattr("synopsis.compaction.fitting.finish", dropping)
    store = MemoryStore()
    got: list[Event] = []
    compactor = make(context_window=8000, store=store, session_id="v")
    history = copy.deepcopy(MARSHMALLOW)
    with pytest.raises(ConversationError, match="the compacted history breaks") as caught:
        run(compactor, history, force=True, listeners=[got.append])
    assert caught.value.rule
    assert caught.value.rule.startswith("openai.")
    assert caught.value.rule in str(caught.value)
    assert history == MARSHMALLOW
    assert store.recall("v") == []
    assert kinds(got) == ["CompactionStarted", "CompactionFailed"]
    state = store.session("v")
    assert state is not None
    assert state.governor["consecutive_failures"] == 1


def test_a_summary_merged_into_the_middle_of_a_user_turn_is_taken_apart() -> None:
    earlier = run(make(), AIDER)
    (summary,) = summaries_in(earlier)
    messages = list(decode(AIDER, "openai").messages)
    turn = messages[2]
    assert turn.role is Role.USER
    before = (TextPart("Before the summary."), TextPart("Still before it."))
    merged = Message(Role.USER, (*before, TextPart(summary.text), TextPart("After it.")))
    messages[2] = merged
    summarizer = ScriptedSummarizer()
    store = MemoryStore()
    compactor = make(summarizer=summarizer, store=store, session_id="merged")
    result = compactor.compact(messages, format="synopsis", force=True)
    assert result.compacted
    (call,) = summarizer.calls
    given = call.messages
    # Three messages where the caller had one: the user's words on either side, apart.
    at = next(i for i, m in enumerate(given) if m.parts[:2] == before)
    assert [m.parts for m in given[at : at + 3]] == [
        before,
        (TextPart(summary.text),),
        (TextPart("After it."),),
    ]
    assert all(m.role is Role.USER for m in given[at : at + 3])
    assert [is_summary(m) for m in given[at : at + 3]] == [False, True, False]
    # The merged turn is stored once, whole, as the caller gave it.
    stored = [message_from_json(m.data) for m in store.recall("merged")]
    assert stored.count(merged) == 1


# ------------------------------------------------------------------- 6. the result


def test_saved_tokens_is_what_the_compaction_freed() -> None:
    result = run(make(), AIDER)
    assert result.compacted
    assert result.saved_tokens == result.tokens_before - result.tokens_after > 0
    skipped = run(make(), AIDER[:4])
    assert skipped.saved_tokens == 0


# -- the last resorts once nothing else can be cut ----------------------------------------------


def _lint_session() -> tuple[synopsis.Compactor, list[Any]]:
    """A session at 8,000 tokens whose system prompt takes over half the window, compacted
    once: its history is the system prompt, the task, the session's summary and a short tail."""

    def lint(turn: int) -> list[Any]:
        text = "\n".join(
            f"src/pkg_{turn}/mod_{i}.py:{i}: error E{i}{turn} undefined name value_{i}_{turn}"
            for i in range(40)
        )
        return [call(f"c{turn}", arguments=f'{{"cmd": "lint {turn}"}}'), tool(f"c{turn}", text)]

    items: list[Any] = [
        {"role": "system", "content": "You are a careful agent. " * 700},
        {"role": "user", "content": "Fix every undefined name in src."},
    ]
    for turn in range(4):
        items += lint(turn)
    compactor = synopsis.Compactor(
        model="gpt-4o", context_window=8_000, store="memory", session_id="s", environ={}
    )
    history: list[Any] = []
    for item in items:
        history.append(item)
        history = list(compactor.compact(history).messages)
    assert any(is_summary_text(str(m.get("content"))) for m in history)
    return compactor, history[:3]


def _stats(n: int, *first: Any) -> list[Any]:
    """One turn of ``n`` parallel calls whose results are each too short to be made smaller
    (after the results ``first``, answering calls of their own ids): a unit that can be
    neither cut nor trimmed but for those."""
    ids = [r["tool_call_id"] for r in first] + [f"p{k}" for k in range(n)]
    calls = [
        {"id": i, "type": "function", "function": {"name": "stat", "arguments": "{}"}} for i in ids
    ]
    results = [
        tool(f"p{k}", f"src/f{k}.py: 120 lines, modified today, owner dev{k}, mode 0644")
        for k in range(n)
    ]
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *first, *results]


def test_the_sessions_summary_is_written_again_shorter_when_nothing_else_can_give() -> None:
    compactor, head = _lint_session()
    before = compactor.compact([*head]).tokens_after  # the history as it stands
    result = compactor.compact([*head, *_stats(60)])
    assert result.compacted
    assert result.tokens_after <= compactor.setup.limit
    record = result.record
    assert record is not None
    assert record.parent_id is not None  # the session's summary, written again shorter
    summary = next(m for m in result.messages if str(m["content"]).startswith("<synopsis-summary"))
    old = next(m for m in head if str(m["content"]).startswith("<synopsis-summary"))
    assert len(summary["content"]) < len(old["content"])
    assert before < result.tokens_before
    # Past what even the shortest summary leaves (not even its frame fits, or there is no
    # room for a summary at all), it says so.
    for n in (67, 80):
        with pytest.raises(BudgetUnreachableError, match="even at their smallest"):
            compactor.compact([*head, *_stats(n)])


def test_a_digest_kept_from_an_earlier_compaction_is_cut_to_its_first_half_as_a_last_resort() -> (
    None
):
    compactor, head = _lint_session()
    lines = "\n".join(f"Named: src/pkg/mod_{i}.py (error E{i})" for i in range(60))
    digest = tool("d1", f"{SUMMARY_MARKER} Earlier: 1 message.\n{lines}")
    # Larger than the other, so tried first: a digest of one line has no first half to keep.
    one_line = tool("d2", f"{SUMMARY_MARKER} " + "a digest on a single line " * 150)
    result = compactor.compact([*head, *_stats(5, digest, one_line)])
    assert result.tokens_after <= compactor.setup.limit
    (kept,) = [m for m in result.messages if m.get("tool_call_id") == "d1"]
    assert kept["content"].startswith(SUMMARY_MARKER)
    assert kept["content"].endswith("the rest of this digest was cut to fit the window]")
    assert len(kept["content"]) < len(digest["content"]) * 0.6
    (line,) = [m for m in result.messages if m.get("tool_call_id") == "d2"]
    assert line == one_line
