"""The incremental skip of a reused Compactor (synopsis.compaction.incremental): a history
grown at its end is decided on what was appended, and every result is the one a fresh
Compactor (the full path) gives."""

from __future__ import annotations

import asyncio
import collections
import copy
import dataclasses
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from synopsis.compaction import Compactor, compact
from synopsis.errors import StoreError, SynopsisError
from synopsis.formats import encode, gemini
from synopsis.messages import Message, Role, TextPart, ToolCallPart, ToolResultPart
from synopsis.planning import Keep, Trigger
from synopsis.stores import MemoryStore, SessionState, SQLiteStore
from synopsis.tokens import Calibrated, HeuristicCounter, counter_for_model
from tests.compaction.helpers import TRANSCRIPTS, load_items
from tests.strategies import TEXT, Style, assistant, tool_turn, user, valid_history

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from synopsis.compaction import CompactionResult
    from synopsis.compaction.incremental import Memo
    from synopsis.compaction.state import Request

# -- comparing results ----------------------------------------------------------------------

_VOLATILE = frozenset({"at", "duration", "record_id"})
"""Event fields that differ from one run to the next: times, and the new summary's id."""


def event_view(e: object) -> tuple[str, dict[str, Any]]:
    assert dataclasses.is_dataclass(e)
    fields = {f.name: getattr(e, f.name) for f in dataclasses.fields(e)}
    return type(e).__name__, {k: v for k, v in fields.items() if k not in _VOLATILE}


def view(result: CompactionResult) -> dict[str, Any]:
    """Every field of a result, but the summary's id and times."""
    record = result.record
    return {
        "messages": result.messages,
        "compacted": result.compacted,
        "code": result.code,
        "reason": result.reason,
        "record": record.model_dump(exclude={"id", "created_at"}) if record else None,
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        "events": [event_view(e) for e in result.events],
        "system": result.system,
        "format": result.format,
        "fixes": result.fixes,
        "offloaded": result.offloaded,
        "session_id": result.session_id,
    }


Outcome = tuple[Any, "CompactionResult | None"]


def outcome(call: Callable[[], CompactionResult]) -> Outcome:
    """What a call gives, as a comparable value, and the result itself (None on an error)."""
    try:
        result = call()
    except SynopsisError as error:
        return (type(error).__name__, str(error)), None
    return view(result), result


class Counting(Compactor):
    """A Compactor that counts the calls its memo answered (the fast path)."""

    fast = 0

    def _skipped(
        self, request: Request, found: tuple[CompactionResult, Memo] | None
    ) -> CompactionResult | None:
        result = super()._skipped(request, found)
        self.fast += result is not None
        return result


def both(
    make: Callable[[], Compactor], reused: Compactor, history: list[Any], **options: Any
) -> Outcome:
    """The reused Compactor's outcome, checked equal to a fresh one's, and its listeners
    told what the result says."""
    heard: list[object] = []
    got = outcome(lambda: reused.compact(history, listeners=[heard.append], **options))
    fresh = outcome(lambda: make().compact(history, **options))
    assert got[0] == fresh[0]
    if got[1] is not None:
        assert [event_view(e) for e in heard] == [event_view(e) for e in got[1].events]
        if not got[1].compacted and not got[1].fixes:
            # A skip hands back the caller's own items.
            assert all(a is b for a, b in zip(got[1].messages, history, strict=True))
    return got


# -- the property: a reused Compactor gives what a fresh one gives ---------------------------

ORPHAN = Message(Role.TOOL, (ToolResultPart("call_zzz", "stray"),))
SUMMARY = "<synopsis-summary>\nearlier work\n</synopsis-summary>"


@st.composite
def turn(draw: st.DrawFn, style: Style) -> list[Message]:
    """What an agent appends between two calls: an answer and the next user message, maybe
    after a tool exchange, or a tool call whose results are still to come."""
    kind = draw(st.sampled_from(["answer", "answer", "tools", "tools", "pending", "user"]))
    if kind == "user":
        return [user(draw(TEXT))]
    if kind == "pending":
        return draw(tool_turn(style, pending=True))
    lead = draw(tool_turn(style)) if kind == "tools" else []
    return [*lead, assistant(draw(TEXT)), user(draw(TEXT))]


Step = tuple[str, Any]


def steps(turns: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Step]]:
    """What the caller does before each call: appends (what the strategy gives), passes the
    same list again, or something the fast path must not take: an orphan result (repaired),
    an item no format knows (an error), a summary merged into a user turn, a list that drops
    an item or changes a copy of one (no longer starts with the last list), or a deep copy
    of the same list."""
    special = st.sampled_from(["same", "copy", "orphan", "bogus", "merged", "drop", "rename"])
    append = st.tuples(st.just("append"), turns)
    return st.lists(
        st.one_of(append, append, append, st.tuples(special, st.integers(0, 10_000))),
        min_size=1,
        max_size=10,
    )


def wire(messages: Sequence[Message], fmt: str) -> list[Any]:
    if fmt == "synopsis":
        return list(messages)
    return encode(messages, fmt).messages  # type: ignore[arg-type]


def apply(
    step: Step, history: list[Any], fmt: str, appended: Callable[[Any], list[Any]]
) -> list[Any]:
    """The next list the caller passes."""
    kind, arg = step
    if kind == "append":
        return [*history, *appended(arg)]
    if kind == "same":
        return list(history)
    if kind == "copy":  # what a client decoding its history from JSON again sends
        return [
            dataclasses.replace(i) if isinstance(i, Message) else copy.deepcopy(i) for i in history
        ]
    if kind == "orphan":
        return [*history, *wire([ORPHAN], fmt)]
    if kind == "bogus":
        return [*history, {"role": "bogus", "content": "?"}]
    if kind == "merged":
        merged = Message(Role.USER, (TextPart(SUMMARY), TextPart("and my question")))
        return [*history, *wire([merged], fmt)]
    k = arg % len(history)
    if kind == "drop" and len(history) > 1:
        return history[:k] + history[k + 1 :]
    item = history[k]
    if isinstance(item, Message):
        changed: Any = dataclasses.replace(item, name="renamed")
    else:
        changed = {**item, "id": "renamed"}
    return [*history[:k], changed, *history[k + 1 :]]


def play(
    make: Callable[[], Compactor],
    history: list[Any],
    plan: list[Step],
    fmt: str,
    appended: Callable[[Any], list[Any]],
    **options: Any,
) -> int:
    """Every step's outcome from a reused Compactor and from a fresh one; how many calls the
    reused one answered from its memo. After a compaction the caller goes on from the
    compacted history; after an error, from the history before it."""
    reused = make()
    assert isinstance(reused, Counting)
    both(make, reused, history, **options)
    for step in plan:
        grown = apply(step, history, fmt, appended)
        _, result = both(make, reused, grown, **options)
        if result is None:
            continue
        history = list(result.messages) if result.compacted else grown
    return reused.fast


def tokens_of(history: list[Any], **options: Any) -> int:
    counted = Compactor(context_window=10**9, environ={}).compact(history, **options)
    return counted.tokens_before


@given(data=st.data())
def test_a_transcript_grown_call_by_call_gives_what_the_full_path_gives(
    data: st.DataObject,
) -> None:
    items = load_items(data.draw(st.sampled_from(TRANSCRIPTS)))
    start = data.draw(st.integers(1, len(items)))
    cut = data.draw(st.lists(st.integers(1, 12), min_size=1, max_size=6))
    chunks = iter([items[start:][sum(cut[:i]) : sum(cut[: i + 1])] for i in range(len(cut))])
    plan = data.draw(steps(turn("tool")))

    def appended(messages: list[Message]) -> list[Any]:
        # The transcript's next items while there are any, then the generated turn.
        chunk = next(chunks, [])
        return chunk or wire(messages, "openai")

    # A token trigger somewhere between the first history and the whole transcript, so that
    # a compaction may happen on the way (and then the next calls go on from its output).
    low, high = tokens_of(items[:start]), tokens_of(items)
    threshold = data.draw(st.integers(max(low // 2, 1), max(high, low) + 2_000))

    def make() -> Compactor:
        return Counting(
            model="gpt-4o",
            context_window=max(high, low) * 4 + 100_000,
            trigger=Trigger.tokens(threshold),
            environ={},
        )

    fast = play(make, items[:start], plan, "openai", appended)
    event(f"fast path: {'yes' if fast else 'no'}")


FORMATS: dict[str, Style] = {
    "openai": "tool",
    "responses": "tool",
    "synopsis": "tool",
    "anthropic": "user",
    "gemini": "user",
}


@given(data=st.data())
def test_a_generated_history_grown_call_by_call_gives_what_the_full_path_gives(
    data: st.DataObject,
) -> None:
    fmt = data.draw(st.sampled_from(sorted(FORMATS)))
    style = FORMATS[fmt]
    pending = data.draw(st.booleans())
    base = data.draw(valid_history(style, allow_pending=pending, reasoning=fmt == "responses"))
    plan = data.draw(steps(turn(style)))
    system = None
    if fmt in ("anthropic", "gemini"):
        first = encode(base, fmt)  # type: ignore[arg-type]
        history, system = first.messages, first.system
    else:
        history = wire(base, fmt)
    named = data.draw(st.sampled_from([fmt, None]))  # the format given, or detected
    # A token trigger a little above the first history, so that the history crosses it on
    # the way (a compaction, and the calls after it go on from its output), or not.
    low = tokens_of(history, format=named, system=system)
    threshold = data.draw(st.integers(low, low + 400))
    keep = data.draw(st.integers(1, 4))

    def make() -> Compactor:
        return Counting(
            context_window=100_000,
            trigger=Trigger.tokens(threshold),
            keep=Keep.messages(keep),
            min_messages=4,
            environ={},
        )

    fast = play(
        make,
        history,
        plan,
        fmt,
        lambda messages: wire(messages, fmt),
        format=named,
        system=system,
    )
    event(f"{fmt}: fast path {'yes' if fast else 'no'}")


# -- the fast path is taken, and only when it may be -----------------------------------------

CLEAN = next(p for p in TRANSCRIPTS if p.name.startswith("sweagent-pydicom"))
"""A transcript of several user turns that ends with the model's answer."""


def big(**options: Any) -> Counting:
    """A Compactor that never compacts these histories."""
    return Counting(model="gpt-4o", context_window=10**9, environ={}, **options)


def ask(text: str = "and now?") -> dict[str, Any]:
    return {"role": "user", "content": text}


def seeded(**options: Any) -> tuple[Counting, list[Any]]:
    """A Compactor that has seen the clean transcript once, and that transcript."""
    compactor = big()
    history = load_items(CLEAN)
    first = compactor.compact(history, **options)
    assert first.code == "under-trigger"
    assert compactor._memo is not None
    return compactor, history


def corrupt(compactor: Compactor, by: int = -1_000) -> Memo:
    """The memo with a token count that is off by ``by``: a call that reads it says so."""
    memo = compactor._memo
    assert memo is not None
    compactor._memo = dataclasses.replace(memo, tokens=memo.tokens + by)
    return memo


def test_an_appended_turn_is_read_alone_and_gives_the_full_paths_result() -> None:
    compactor, history = seeded()
    memo = compactor._memo
    assert memo is not None
    assert 0 < memo.boundary < len(history)
    assert len(memo.window) == len(history) - memo.boundary
    for k in range(3):
        history = [*history, {"role": "assistant", "content": f"answer {k}"}, ask(f"q{k}")]
        result = both(big, compactor, history)[1]
        assert result is not None
        assert result.code == "under-trigger"
    assert compactor.fast == 3
    moved = compactor._memo
    assert moved is not None
    # The window now starts at the newest user message: what the next call reads again.
    assert moved.boundary == len(history) - 1
    assert moved.window == (moved.window[0],)
    assert moved.count == len(history)


def test_the_fast_path_reads_the_memo_and_reset_forgets_it() -> None:
    compactor, history = seeded()
    memo = corrupt(compactor)
    grown = [*history, ask()]
    fresh = big().compact(grown)
    assert compactor.compact(grown).tokens_before == fresh.tokens_before - 1_000
    assert compactor.fast == 1
    compactor.reset()
    assert compactor._memo is None
    assert view(compactor.compact(grown)) == view(fresh)
    assert compactor.fast == 1
    assert memo.count == len(history)


def test_the_same_list_again_is_a_fast_skip() -> None:
    compactor, history = seeded()
    both(big, compactor, list(history))
    assert compactor.fast == 1


def test_acompact_takes_the_same_fast_path() -> None:
    compactor, history = seeded()
    corrupt(compactor)
    grown = [*history, ask()]
    fresh = big().compact(grown)
    result = asyncio.run(compactor.acompact(grown))
    assert result.tokens_before == fresh.tokens_before - 1_000
    assert compactor.fast == 1
    # Seeded by acompact's full path, the fast path gives the full path's result.
    compactor.reset()
    assert view(asyncio.run(compactor.acompact(grown))) == view(fresh)
    again = [*grown, {"role": "assistant", "content": "fine"}, ask()]
    assert view(asyncio.run(compactor.acompact(again))) == view(big().compact(again))
    assert compactor.fast == 2


def _not_a_prefix(history: list[Any]) -> list[Any]:
    return [history[0], *history[2:], ask()]


def _a_copy_changed(history: list[Any]) -> list[Any]:
    return [history[0], {**history[1], "content": "changed"}, *history[2:], ask()]


def _function_message(history: list[Any]) -> list[Any]:
    call = {"name": "lookup", "arguments": "{}"}
    return [
        *history,
        {"role": "assistant", "content": None, "function_call": call},
        {"role": "function", "name": "lookup", "content": "found"},
        ask(),
    ]


def _anthropic_block(history: list[Any]) -> list[Any]:
    # A block only Anthropic has: without a format, the whole list is read as Anthropic.
    block = {"type": "tool_result", "tool_use_id": "t1", "content": "x"}
    return [*history, {"role": "user", "content": [block]}]


def _merged_summary(history: list[Any]) -> list[Any]:
    parts = [{"type": "text", "text": SUMMARY}, {"type": "text", "text": "go on"}]
    return [*history, {"role": "user", "content": parts}]


CHANGES: dict[str, Callable[[list[Any]], list[Any]]] = {
    "not a prefix": _not_a_prefix,
    "an earlier item replaced by a changed copy": _a_copy_changed,
    "shorter": lambda h: h[:-2],
    "a dangling call then a user message (repaired)": lambda h: [
        *h,
        {"role": "assistant", "tool_calls": [{"id": "c9", "function": {"name": "f"}}]},
        ask(),
    ],
    "an orphan result (repaired)": lambda h: [
        *h,
        {"role": "tool", "tool_call_id": "nobody", "content": "?"},
    ],
    "an item no format knows (an error)": lambda h: [*h, {"role": "bogus", "content": "?"}],
    "a legacy function message": _function_message,
    "an item of another format": _anthropic_block,
    "a summary merged into a user turn": _merged_summary,
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_corrupted_memo_is_not_read_when_the_list_is_not_the_same_grown(change: str) -> None:
    compactor, history = seeded()
    corrupt(compactor)
    both(big, compactor, CHANGES[change](history))
    assert compactor.fast == 0


OPTIONS: dict[str, dict[str, Any]] = {
    "force": {"force": True},
    "instructions": {"instructions": "keep the numbers"},
    "another system": {"system": "be brief"},
    "a format named": {"format": "openai"},
    "tools": {"tools": [{"type": "function", "function": {"name": "f"}}]},
    "a session": {"session_id": "s1"},
}


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_a_corrupted_memo_is_not_read_for_other_arguments(option: str) -> None:
    compactor, history = seeded()
    corrupt(compactor)
    both(big, compactor, [*history, ask()], **OPTIONS[option])
    assert compactor.fast == 0


def test_a_decision_to_compact_is_never_made_from_the_memo() -> None:
    compactor, history = seeded()
    # The memo says the history overflows the window: the fast path would compact, so the
    # full path runs on the caller's items instead, and finds nothing to do.
    corrupt(compactor, by=10**10)
    result = both(big, compactor, [*history, ask()])[1]
    assert result is not None
    assert result.code == "under-trigger"
    assert compactor.fast == 0
    assert compactor._memo is not None  # the full path's skip seeds a new memo


def test_a_compaction_and_an_error_forget_the_memo() -> None:
    items = load_items(next(p for p in TRANSCRIPTS if p.name.startswith("aider")))

    def small() -> Counting:
        # The aider transcript (2,232 tokens) compacts at a 50% trigger of 4,000.
        return Counting(
            model="gpt-4o", context_window=4_000, trigger=0.5, reset_ratio=0.4, environ={}
        )

    compactor = small()
    both(small, compactor, items[:10])
    assert compactor._memo is not None
    result = both(small, compactor, items)[1]
    assert result is not None
    assert result.compacted
    assert compactor._memo is None
    after = [*result.messages, ask("next")]
    both(small, compactor, after)
    assert compactor._memo is not None
    with pytest.raises(SynopsisError):
        compactor.compact([*after, {"role": "bogus"}])
    assert compactor._memo is None


def test_an_item_changed_in_place_is_not_noticed_until_reset() -> None:
    history = [dict(item) for item in load_items(CLEAN)]  # the caller's own dicts, to change
    compactor = big()
    compactor.compact(history)
    extra = ask()
    before = compactor.compact([*history, extra])
    history[1]["content"] += " and much longer now" * 500
    grown = [*history, extra, ask("again")]
    stale = compactor.compact(grown)
    assert stale.messages[1] is history[1]  # the caller's item, as it is now
    assert stale.tokens_before < big().compact(grown).tokens_before
    assert stale.tokens_before > before.tokens_before
    compactor.reset()
    assert view(compactor.compact(grown)) == view(big().compact(grown))


def test_tools_are_the_same_when_they_are_the_same_objects() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    tools = [tool]
    compactor, history = seeded(tools=tools)
    asks = [ask(f"q{k}") for k in range(6)]  # the same items call after call, as in a loop
    both(big, compactor, [*history, *asks[:1]], tools=[tool])  # a new list of the same tool
    both(big, compactor, [*history, *asks[:2]], tools=(tool,))
    assert compactor.fast == 2
    tools.append({"type": "function", "function": {"name": "g"}})  # changed in place
    both(big, compactor, [*history, *asks[:3]], tools=tools)
    assert compactor.fast == 2
    both(big, compactor, [*history, *asks[:4]], tools=collections.UserList(tools))
    assert compactor.fast == 2
    assert compactor._memo is None  # tools that are not a list or tuple: not remembered
    both(big, compactor, [*history, *asks[:5]], tools=tools)
    both(big, compactor, [*history, *asks[:6]], tools=None)
    assert compactor.fast == 2


def test_an_equal_system_text_is_the_same_system() -> None:
    items = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    compactor = big()
    both(big, compactor, items, system="".join(["be ", "brief"]))
    grown = [*items, {"role": "assistant", "content": "yes"}, ask()]
    both(big, compactor, grown, system="".join(["be ", "brief"]))
    assert compactor.fast == 1
    both(big, compactor, [*grown, ask()], system=["be brief"])
    assert compactor.fast == 1


def test_what_is_not_remembered() -> None:
    cases: dict[str, tuple[Compactor, Any, dict[str, Any]]] = {
        "a request body": (big(), {"messages": load_items(CLEAN)}, {}),
        "a calibrated counter": (big(counter=Calibrated(counter_for_model("gpt-4o"))), [], {}),
        "a counter of its own": (big(counter=OwnCounter()), [], {}),
        "a repaired history": (
            big(),
            [ask(), {"role": "tool", "tool_call_id": "nobody", "content": "?"}],
            {},
        ),
        "a merged summary": (big(), _merged_summary([ask()]), {}),
    }
    for name, (compactor, data, options) in cases.items():
        result = compactor.compact(data or [ask()], **options)
        assert not result.compacted, name
        assert compactor._memo is None, name


def test_the_one_shot_compact_keeps_the_full_path() -> None:
    history = [*load_items(CLEAN), ask()]
    once = compact(history, model="gpt-4o", context_window=10**9, environ={})
    assert view(once) == view(big().compact(history))


class OwnCounter(HeuristicCounter):
    """A counter whose total is its own (not a sum over messages)."""

    def count_messages(self, messages: Sequence[Message], *, tools: Any = None) -> int:
        return 1 + super().count_messages(messages, tools=tools)


# -- found by review: each of these once let the memo answer for something it had not seen ---


def test_an_equal_copy_of_an_item_is_read_again() -> None:
    # 1 == True, but Anthropic's is_error must be a boolean: the copy is an error to report.
    result_block = {"type": "tool_result", "tool_use_id": "t1", "content": "no", "is_error": True}
    call = {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
    history: list[Any] = [
        {"role": "user", "content": "run ls"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result_block]},
        {"role": "assistant", "content": "failed"},
    ]
    compactor = big()
    both(big, compactor, history, format="anthropic")
    assert compactor._memo is not None
    copied = [*history[:2], {**history[2], "content": [{**result_block, "is_error": 1}]}]
    assert copied == history[:3]
    got = both(big, compactor, [*copied, history[3], ask()], format="anthropic")
    assert got[1] is None  # the full path read the copy and refused it
    assert compactor.fast == 0


def test_a_system_prompt_changed_in_place_is_read_again() -> None:
    system = [{"type": "text", "text": "You are terse."}]
    history: list[Any] = [ask("hi")]
    compactor = big()
    both(big, compactor, history, system=system, format="anthropic")
    history = [*history, {"role": "assistant", "content": "yes"}, ask()]
    both(big, compactor, history, system=system, format="anthropic")
    assert compactor.fast == 1
    system.append({"type": "text", "text": "A very long policy. " * 200})
    history = [*history, {"role": "assistant", "content": "ok"}, ask()]
    got = both(big, compactor, history, system=system, format="anthropic")
    assert compactor.fast == 1
    assert got[1] is not None
    assert got[1].tokens_before > 1_000


def test_a_listener_that_appends_during_a_fast_skip_does_not_reach_the_memo() -> None:
    compactor, history = seeded()
    history = list(history)

    def log(event: object) -> None:
        if getattr(event, "kind", "") == "compaction_skipped":
            history.append({"role": "assistant", "content": "LOG " * 3_000})

    history.append(ask())
    compactor.compact(history, listeners=[log])
    assert compactor.fast == 1
    memo = compactor._memo
    assert memo is not None
    assert len(memo.items) == memo.count == len(history) - 1
    history.append(ask("and?"))
    both(big, compactor, list(history))  # the logged item is read, not taken as seen


def test_a_deep_copy_after_an_edit_in_place_is_read_again() -> None:
    history = [dict(item) for item in load_items(CLEAN)]
    compactor = big()
    compactor.compact(history)
    history[1]["content"] = "edited " * 3_000
    both(big, compactor, [*copy.deepcopy(history), ask()])
    assert compactor.fast == 0


def _store_compactor(store: Any) -> Counting:
    return Counting(
        model="gpt-4o", context_window=10**9, summarizer="rules", store=store,
        session_id="s", environ={},
    )  # fmt: skip


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_with_a_store_the_fast_path_gives_what_the_full_path_gives(
    kind: str, tmp_path: Path
) -> None:
    def store() -> Any:
        return MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / f"{len(made)}.db")

    made: list[Any] = []
    history = load_items(CLEAN)
    fast = _store_compactor(store())
    made.append(fast)
    fast.compact(history)
    for n in range(3):
        history = [*history, ask(), {"role": "assistant", "content": f"done {n}"}]
        got = fast.compact(history)
        full = _store_compactor(store())
        made.append(full)
        full.compact(history[: len(load_items(CLEAN))])
        expected = full.compact(history)
        assert view(got) == view(expected)
        assert got.session_id == "s"
    assert fast.fast == 3


def test_a_session_another_call_changed_is_read_again() -> None:
    store = MemoryStore()
    one, other = _store_compactor(store), _store_compactor(store)
    history = load_items(CLEAN)
    one.compact(history)
    history = [*history, ask()]
    other.compact(history)  # saves the session: one's memo no longer holds
    grown = [*history, {"role": "assistant", "content": "ok"}]
    one.compact(grown)
    assert one.fast == 0
    one.compact([*grown, ask()])
    assert one.fast == 1


class Awaited(MemoryStore):
    """Counts the session reads made through the async half (the event loop's way)."""

    awaited = 0

    async def asession(self, session_id: str) -> SessionState | None:
        self.awaited += 1
        return await super().asession(session_id)


def test_an_awaiting_call_reads_the_store_back_awaiting_and_gives_the_full_paths_result() -> None:
    store = Awaited()
    compactor = _store_compactor(store)
    history = load_items(CLEAN)
    asyncio.run(compactor.acompact(history))
    before = store.awaited
    got = asyncio.run(compactor.acompact([*history, ask()]))
    assert compactor.fast == 1
    assert store.awaited == before + 1  # the memo's session, read back without blocking
    full = _store_compactor(MemoryStore())
    full.compact(history)
    full.reset()
    assert view(got) == view(full.compact([*history, ask()]))
    # The memo an awaiting call left serves a blocking call, and the other way round.
    compactor.compact([*history, ask(), ask()])
    asyncio.run(compactor.acompact([*history, ask(), ask(), ask()]))
    assert compactor.fast == 3


def test_each_session_keeps_its_own_memo_up_to_the_remembered_number() -> None:
    compactor = _store_compactor(MemoryStore())
    compactor.remembered_sessions = 2
    history = load_items(CLEAN)
    for session in ("a", "b"):
        compactor.compact(history, session_id=session)
    for session in ("a", "b"):  # interleaved conversations each take the fast way
        compactor.compact([*history, ask()], session_id=session)
    assert compactor.fast == 2
    compactor.compact(history, session_id="c")  # a third: "a", used least lately, goes
    compactor.compact([*history, ask(), ask()], session_id="b")
    assert compactor.fast == 3
    compactor.compact([*history, ask(), ask()], session_id="a")
    assert compactor.fast == 3


def test_a_store_that_fails_on_reading_back_sends_the_call_the_full_way() -> None:
    class Flaky(MemoryStore):
        fail = False

        def session(self, session_id: str) -> SessionState | None:
            if self.fail:
                raise OSError("gone")
            return super().session(session_id)

    store = Flaky()
    compactor = _store_compactor(store)
    history = load_items(CLEAN)
    compactor.compact(history)
    store.fail = True
    with pytest.raises(StoreError):
        compactor.compact([*history, ask()])
    assert compactor.fast == 0


# -- one long tool loop: the window checked is the turn's opening and the last step on -------


@st.composite
def loop_step(draw: st.DrawFn, style: Style) -> tuple[str, Any]:
    """What an agent in one long tool loop appends before its next call: a tool exchange,
    with thinking or reasoning or none; a call whose results come later; or, rarely, what
    reaches back past the last step (a result for a call answered long ago, a call reusing
    an old id) or the person's next message."""
    kind = draw(
        st.sampled_from(
            ["tools", "tools", "tools", "reasoning", "pending", "stale", "reuse", "user"]
        )
    )
    if kind in ("tools", "reasoning"):
        return "append", draw(tool_turn(style, reasoning=kind == "reasoning"))
    if kind == "pending":
        return "append", draw(tool_turn(style, pending=True))
    if kind == "user":
        return "append", [user(draw(TEXT))]
    return kind, draw(st.integers(0, 10_000))


def _loop_next(step: tuple[str, Any], messages: list[Message]) -> list[Message]:
    kind, arg = step
    if kind == "append":
        return [*messages, *arg]
    calls = [p for m in messages for p in m.parts if isinstance(p, ToolCallPart)]
    if not calls:
        return messages
    old = calls[arg % len(calls)]
    if kind == "stale":  # a second result for a call answered long ago
        return [*messages, Message(Role.TOOL, (ToolResultPart(old.call_id, "again"),))]
    reused = Message(Role.ASSISTANT, (ToolCallPart(old.call_id, old.name, "{}"),))
    return [*messages, reused, Message(Role.TOOL, (ToolResultPart(old.call_id, "ok"),))]


@given(data=st.data())
def test_one_long_tool_loop_grown_call_by_call_gives_what_the_full_path_gives(
    data: st.DataObject,
) -> None:
    fmt = data.draw(st.sampled_from(sorted(FORMATS)))
    style = FORMATS[fmt]
    messages: list[Message] = [user("Port the scheduler to asyncio.")]
    for _ in range(data.draw(st.integers(1, 6))):
        messages += data.draw(tool_turn(style, reasoning=fmt == "responses"))
    plan = data.draw(st.lists(loop_step(style), min_size=1, max_size=12))
    # An agent that appends its new items to the list it keeps, or one that encodes its
    # whole history again for every call (recognised only in OpenAI chat, by equality).
    appends = data.draw(st.booleans())

    def make() -> Counting:
        return Counting(context_window=10**9, environ={})

    reused = make()
    items = wire(messages, fmt)
    both(make, reused, items, format=fmt)
    for step in plan:
        grown = _loop_next(step, messages)
        sent = [*items, *wire(grown[len(messages) :], fmt)] if appends else wire(grown, fmt)
        _, result = both(make, reused, sent, format=fmt)
        if result is not None:
            messages, items = grown, sent
    event(f"{fmt}: fast path {'yes' if reused.fast else 'no'}")


def test_a_long_tool_loop_keeps_a_short_window_and_reads_only_what_is_new() -> None:
    history: list[Any] = [ask("Port the scheduler to asyncio.")]
    compactor = big()
    for k in range(200):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        history = [
            *history,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": "PASSED"},
        ]
        assert compactor.compact(history).code == "under-trigger"
    memo = compactor._memo
    assert memo is not None
    assert compactor.fast == 199
    # The person's message, then the last step: not the 401 messages of the loop.
    assert [m.role for m in memo.window] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert (memo.boundary, memo.tail) == (0, 399)
    # A result for a call answered at the loop's start is still found.
    stale = [*history, {"role": "tool", "tool_call_id": "c0", "content": "again"}]
    assert both(big, compactor, stale)[1] is not None
    assert compactor.fast == 199


def test_a_gemini_tool_loop_reads_only_what_is_new_and_gives_the_full_paths_result() -> None:
    """Gemini's derived call ids count contents: the fast path decodes what was appended from
    where the last call's decode left off, so the ids are those the whole list gets."""
    system = {"parts": [{"text": "You port code."}]}
    contents: list[Any] = [{"role": "user", "parts": [{"text": "Port the scheduler."}]}]
    compactor = big()
    for k in range(60):
        contents = [
            *contents,
            {"role": "model", "parts": [{"functionCall": {"name": "bash", "args": {"n": k}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "bash"}}]},
        ]
        both(big, compactor, contents, format="gemini", system=system)
    assert compactor.fast == 59
    memo = compactor._memo
    assert memo is not None
    assert memo.resume == gemini.Resume(121, 119, {("bash", 0): "gemini_119_bash_0"})
    assert [m.role for m in memo.window] == [Role.USER, Role.ASSISTANT, Role.USER]
    # A second response to the last call breaks Gemini's count: found, as the full path finds.
    extra = {"role": "user", "parts": [{"functionResponse": {"name": "bash"}}]}
    assert both(big, compactor, [*contents, extra], format="gemini", system=system)[1]
    assert compactor.fast == 59


def test_a_target_that_wants_reasoning_with_every_output_keeps_the_whole_turn() -> None:
    from synopsis.compaction.incremental import checked  # noqa: PLC0415
    from synopsis.validation import get_profile  # noqa: PLC0415

    wants_reasoning = dataclasses.replace(get_profile("responses"), reasoning_required=True)

    loop = [
        Message(Role.USER, (TextPart("go"),)),
        Message(Role.ASSISTANT, (ToolCallPart("a", "f", "{}"),)),
        Message(Role.TOOL, (ToolResultPart("a", "ok"),)),
        Message(Role.ASSISTANT, (ToolCallPart("b", "f", "{}"),)),
        Message(Role.TOOL, (ToolResultPart("b", "ok"),)),
    ]
    window = tuple(loop)
    assert checked(window, 0, 1, wants_reasoning) == (window, 0, 1)
    shortened, start, tail = checked(window, 0, 1, get_profile("openai"))
    assert shortened == (loop[0], loop[3], loop[4])
    assert (start, tail) == (0, 3)
    # No person's message to open the window: kept whole.
    assert checked(window[1:], 1, 2, get_profile("openai")) == (window[1:], 1, 2)
