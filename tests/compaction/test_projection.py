"""A client that sends its whole history again on every request gets what a client keeping
``result.messages`` gets: the same outputs, byte for byte, and the summarizer asked as often.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import synopsis
from synopsis.compaction.offload import Originals
from synopsis.compaction.projection import Projection, digest, recorded
from synopsis.messages import Message, Role, TextPart, content_hash
from tests.compaction.helpers import TRANSCRIPTS, load_items

if TYPE_CHECKING:
    from pathlib import Path

    from synopsis.summarizers import SummaryRecord


class Counting(synopsis.RuleBasedSummarizer):
    def __init__(self) -> None:
        super().__init__(max_summary_tokens=8_000)
        self.calls = 0

    def summarize(self, *args: Any, **options: Any) -> SummaryRecord:
        self.calls += 1
        return super().summarize(*args, **options)


Items = list[dict[str, Any]]


def replay(
    items: Items,
    *,
    resend: bool,
    window: int,
    store: Any = None,
    reopen: Any = None,
    force_at: frozenset[int] = frozenset(),
    **options: Any,
) -> tuple[int, list[str], list[synopsis.Event], list[bool]]:
    """``items`` played as an agent sends them: the model's every turn is a request. With
    ``resend`` the client sends its whole history each time, else it keeps the output. The
    summarizer's calls, each output as JSON text, the events and whether each request was
    compacted. ``reopen`` makes a new
    store (and compactor) halfway, as a restarted process does; ``options`` go to the
    compactor."""
    summarizer = Counting()
    events: list[synopsis.Event] = []

    def compactor(on: Any) -> synopsis.Compactor:
        return synopsis.Compactor(
            context_window=window,
            summarizer=summarizer,
            store=on if on is not None else synopsis.MemoryStore(),
            session_id="projection",
            listeners=[events.append],
            **options,
        )

    c = compactor(store)
    sent: Items = []
    full: Items = []
    outputs: list[str] = []
    compacted: list[bool] = []
    requests = 0
    for item in items:
        if item.get("role") == "assistant" and full:
            if reopen is not None and requests == len(items) // 4:
                c = compactor(reopen())
            history = copy.deepcopy(full if resend else sent)
            result = c.compact(history, format="openai", force=requests in force_at)
            outputs.append(json.dumps(result.messages))
            compacted.append(result.compacted)
            sent = list(result.messages)
            requests += 1
        full.append(item)
        sent.append(item)
    return summarizer.calls, outputs, events, compacted


def transcript(stem: str) -> Items:
    return load_items(next(p for p in TRANSCRIPTS if stem in p.name))


def summary_end(output: str) -> int | None:
    found = [i for i, m in enumerate(json.loads(output)) if "<synopsis-summary" in str(m)]
    return found[-1] if found else None


@pytest.mark.parametrize(
    ("stem", "window"),
    [
        ("ponyc-4588", 8_000),
        ("pydicom", 8_000),
        ("codex-compaction", 32_000),
        ("taubench-airline-task3", 8_000),
    ],
)
def test_a_resent_history_gets_what_a_kept_one_gets(stem: str, window: int) -> None:
    items = transcript(stem)
    kept_calls, kept, _, _ = replay(items, resend=False, window=window)
    sent_calls, sent, events, compacted = replay(items, resend=True, window=window)
    assert kept_calls > 0
    assert sent_calls == kept_calls
    assert sent == kept
    assert not [e for e in events if isinstance(e, synopsis.ChainInvalidated)]
    # Between compactions the prefix up to the newest summary does not change, byte for
    # byte: prompt caches hit.
    unchanged = 0
    for before, after, new in zip(sent, sent[1:], compacted[1:], strict=False):
        end = summary_end(before)
        if end is not None and not new:
            assert after.startswith(json.dumps(json.loads(before)[: end + 1])[:-1])
            unchanged += 1
    assert unchanged > 0


def test_the_projection_survives_a_restart_with_a_sqlite_file(tmp_path: Path) -> None:
    items = transcript("ponyc-4588")
    kept_calls, kept, _, _ = replay(items, resend=False, window=8_000)
    path = tmp_path / "sessions.db"
    calls, sent, _, _ = replay(
        items,
        resend=True,
        window=8_000,
        store=synopsis.SQLiteStore(path),
        reopen=lambda: synopsis.SQLiteStore(path),
    )
    assert calls == kept_calls
    assert sent == kept


def test_forced_compactions_project_as_well() -> None:
    items = transcript("pydicom")
    force = frozenset({1, 4})
    kept_calls, kept, _, _ = replay(items, resend=False, window=8_000, force_at=force)
    sent_calls, sent, _, _ = replay(items, resend=True, window=8_000, force_at=force)
    assert sent_calls == kept_calls
    assert sent == kept


def test_a_history_edited_inside_the_summarized_part_invalidates_the_chain() -> None:
    items = transcript("ponyc-4588")
    store = synopsis.MemoryStore()
    events: list[synopsis.Event] = []
    c = synopsis.Compactor(
        context_window=8_000, store=store, session_id="edited", listeners=[events.append]
    )
    head = items[:40]
    first = c.compact(head, format="openai")
    assert first.compacted
    state = store.session("edited")
    assert state is not None
    found = Projection.of(state.projection)
    assert found is not None
    stored = len(store.recall("edited"))
    edited = copy.deepcopy(head)
    edited[found.start + 1]["content"] = "an edit inside what was summarized"
    again = c.compact(edited, format="openai")
    (invalid,) = (e for e in events if isinstance(e, synopsis.ChainInvalidated))
    assert f"messages {found.start} to {found.start + found.count - 1}" in invalid.reason
    assert "edited, dropped or inserted" in invalid.message
    # The history is taken as it now is: summarized afresh, onto no earlier record.
    assert again.compacted
    assert again.record is not None
    assert again.record.parent_id is None
    assert "an edit inside what was summarized" not in json.dumps(again.messages[:2])
    assert len(store.recall("edited")) > stored  # the earlier originals are all still there
    shorter = c.compact(edited[:3], format="openai")
    assert not shorter.compacted
    reasons = [e.reason for e in events if isinstance(e, synopsis.ChainInvalidated)]
    assert "fewer than the" in reasons[-1]


def test_a_state_without_a_projection_or_with_a_broken_one_projects_nothing() -> None:
    assert Projection.of({}) is None
    assert (
        Projection.of({"start": 1, "count": 0, "digest": "x", "role": "user", "text": ""}) is None
    )
    assert Projection.of({"start": 1, "count": 2, "digest": "x", "role": "??", "text": ""}) is None
    assert Projection.of({"start": "one"}) is None
    whole = {"start": 1, "count": 2, "digest": "d", "role": "user", "text": "t"}
    found = Projection.of(whole)
    assert found is not None
    assert Projection.of(found.to_json()) == found


@given(
    turns=st.lists(
        st.tuples(st.integers(1, 400), st.integers(0, 3), st.integers(1, 900)),
        min_size=4,
        max_size=24,
    ),
    window=st.sampled_from([1_500, 2_500, 4_000]),
)
def test_any_agent_loop_resent_whole_gets_what_a_kept_one_gets(
    turns: list[tuple[int, int, int]], window: int
) -> None:
    items: Items = [{"role": "system", "content": "You are terse."}]
    items.append({"role": "user", "content": "Fix the build, then the docs."})
    for n, (said, calls, size) in enumerate(turns):
        ids = [f"c{n}_{k}" for k in range(calls)]
        items.append(
            {
                "role": "assistant",
                "content": "step " * (said // 5 + 1),
                **(
                    {
                        "tool_calls": [
                            {
                                "id": i,
                                "type": "function",
                                "function": {"name": "run", "arguments": json.dumps({"n": n})},
                            }
                            for i in ids
                        ]
                    }
                    if ids
                    else {}
                ),
            }
        )
        items += [{"role": "tool", "tool_call_id": i, "content": "out " * size} for i in ids]
        if n % 3 == 2:
            items.append({"role": "user", "content": f"Now step {n}, please."})
    kept_calls, kept, _, _ = replay(items, resend=False, window=window)
    sent_calls, sent, events, _ = replay(items, resend=True, window=window)
    assert sent_calls == kept_calls
    assert sent == kept
    assert not [e for e in events if isinstance(e, synopsis.ChainInvalidated)]


def _messages(*texts: str) -> tuple[Message, ...]:
    return tuple(Message(Role.USER, (TextPart(t),)) for t in texts)


def test_a_smaller_copy_is_put_back_only_in_its_format_and_for_its_own_original() -> None:
    ours = _messages("head", "a", "b", "kept original", "new")
    smaller = json.dumps({"role": "user", "content": "kept, smaller"})
    found = Projection(
        start=1,
        count=2,
        digest=digest(ours[1:3]),
        role="user",
        text="<synopsis-summary>s</synopsis-summary>",
        format="openai",
        smaller=(
            (3, content_hash(ours[3]), smaller),
            (4, "not the hash of message 4", smaller),
            (9, content_hash(ours[3]), smaller),
        ),
    )
    applied = found.apply(ours, "openai")
    assert not isinstance(applied, str)
    messages, swapped = applied
    assert [m.text for m in messages] == [
        "head",
        "<synopsis-summary>s</synopsis-summary>",
        "kept, smaller",
        "new",
    ]
    assert swapped == [(ours[3], messages[2])]
    other = found.apply(ours, "anthropic")
    assert not isinstance(other, str)
    assert [m.text for m in other[0]][2] == "kept original"
    assert other[1] == []


def test_nothing_is_recorded_when_the_kept_messages_are_not_the_callers_in_order() -> None:
    decoded = _messages("head", "a", "b", "tail")
    summary = Message(Role.USER, (TextPart("<synopsis-summary>s</synopsis-summary>"),))
    originals = Originals(decoded, [{"role": "user", "content": m.text} for m in decoded], "openai")
    assert recorded([decoded[0], summary, decoded[3]], decoded, originals, "openai") is not None
    # the tail before the head: not one run of the caller's messages
    assert recorded([decoded[3], summary, decoded[0]], decoded, originals, "openai") is None
    # no summary, two summaries, or a summary of more than text
    assert recorded(list(decoded), decoded, originals, "openai") is None
    assert recorded([summary, summary], decoded, originals, "openai") is None


def test_a_kept_message_that_no_one_item_stands_for_has_no_smaller_copy() -> None:
    system = Message(Role.SYSTEM, (TextPart("rules " * 50),))
    decoded = (system, *_messages("task", "a", "b"))
    originals = Originals(decoded, [{"role": "user", "content": "x"}] * 3, "anthropic")
    shorter = Message(Role.SYSTEM, (TextPart("rules"),))
    originals.adopt(system, shorter)
    summary = Message(Role.USER, (TextPart("<synopsis-summary>s</synopsis-summary>"),))
    found = recorded([shorter, decoded[1], summary], decoded, originals, "anthropic")
    assert found is not None
    assert found.smaller == ()  # an Anthropic system prompt is no item of the list


def test_a_summary_merged_into_a_users_turn_is_not_projected() -> None:
    decoded = _messages("head", "a", "b")
    originals = Originals(decoded, [{"role": "user", "content": m.text} for m in decoded], "openai")
    merged = Message(
        Role.USER, (TextPart("<synopsis-summary>s</synopsis-summary>"), TextPart("go on"))
    )
    assert recorded([decoded[0], merged], decoded, originals, "openai") is None
    assert recorded(list(decoded), decoded, originals, "synopsis") is None


def test_a_resent_history_that_needs_a_repair_still_reuses_the_chain() -> None:
    # No projection for a history repaired on the way in (positions move); the chain's
    # content hashes still find the prefix it already summarized.
    items = transcript("ponyc-4588")
    broken = [*items[:2], {"role": "tool", "tool_call_id": "nobody", "content": "x"}, *items[2:]]
    summarizer = Counting()
    c = synopsis.Compactor(
        context_window=8_000, summarizer=summarizer, store=synopsis.MemoryStore(), session_id="r"
    )
    first = c.compact(copy.deepcopy(broken), format="openai", force=True)
    assert first.compacted
    assert first.fixes
    calls = summarizer.calls
    again = c.compact(copy.deepcopy(broken), format="openai", force=True)
    assert summarizer.calls == calls
    assert json.dumps(again.messages) == json.dumps(first.messages)
