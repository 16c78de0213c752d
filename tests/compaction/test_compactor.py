"""The public entry points (:class:`Compactor`, :func:`compact`, :func:`acompact`) one
behaviour at a time: idempotence, the summary chain across calls, forced compactions, session
state, events, configuration, formats, bad input, the budget, the async driver and the
summary's voice. Every call that compacts checks that the caller's history was not changed."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from synopsis.compaction import CompactionResult, Compactor, acompact, compact
from synopsis.errors import (
    BudgetUnreachableError,
    ConfigurationError,
    ConversationError,
    StoreError,
    UnknownFormatError,
)
from synopsis.events import (
    CompactionCompleted,
    CompactionFailed,
    CompactionSkipped,
    CompactionStarted,
    Event,
    SummarizerFellBack,
    notify,
)
from synopsis.formats import decode
from synopsis.messages import Message, Role, is_summary
from synopsis.stores import MemoryStore, SQLiteStore
from synopsis.summarizers import RuleBasedSummarizer, SummaryRecord, render
from synopsis.testing import ScriptedSummarizer, SummarizeCall
from synopsis.validation import get_profile, validate
from tests.compaction.helpers import (
    TRANSCRIPTS,
    arun,
    in_format,
    kinds,
    load_items,
    make,
    run,
    store_of,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

AIDER = load_items(next(p for p in TRANSCRIPTS if p.stem == "aider-census"))
"""20 plain user/assistant messages, about 2,200 tokens."""
MARSHMALLOW = load_items(next(p for p in TRANSCRIPTS if p.stem == "sweagent-marshmallow-1867-fc"))
"""A system prompt, a task and 13 tool calls with their results, about 8,000 tokens."""
SYSTEM = "You are a census data assistant. Keep answers short."
FIXED = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
FOLLOW_UP = [
    {"role": "user", "content": "Now count the cities with more than 100000 people."},
    {"role": "assistant", "content": "There are 340 such cities in the 2020 census."},
]


def deterministic() -> RuleBasedSummarizer:
    return RuleBasedSummarizer(deterministic_ids=True, clock=lambda: FIXED)


class AsyncOnly:
    """A summarizer with nothing but ``asummarize`` (deterministic, optionally slow)."""

    def __init__(self, delay: float = 0.0) -> None:
        self.inner = deterministic()
        self.delay = delay
        self.calls = 0

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.inner.summarize(
            messages, previous=previous, instructions=instructions, max_tokens=max_tokens
        )


class Failing:
    """A summarizer that always raises: the rules take over."""

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        raise RuntimeError("the model is down")


def summaries_in(result: CompactionResult) -> list[Message]:
    decoded = decode(result.messages, result.format, system=result.system)
    return [m for m in decoded.messages if is_summary(m)]


# ------------------------------------------------------------------------- 1. idempotence


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic", "gemini"])
def test_compacting_a_compacted_history_that_fits_does_nothing(fmt: str) -> None:
    items, system = in_format([{"role": "system", "content": SYSTEM}, *AIDER], fmt)
    first = run(make(), items, system=system, format=fmt)
    assert first.compacted
    again = ScriptedSummarizer()
    second = run(make(summarizer=again), first.messages, system=first.system, format=fmt)
    assert not second.compacted
    assert second.code == "under-trigger"
    assert again.calls == []
    assert second.messages == first.messages
    assert second.system == first.system
    assert second.record is None
    assert second.tokens_after == second.tokens_before == first.tokens_after
    assert kinds(second.events) == ["CompactionSkipped"]


# ----------------------------------------------------------- 2. the summary chain across calls


def test_a_second_compaction_updates_the_first_summary_and_never_resummarizes_it() -> None:
    summarizer = ScriptedSummarizer()
    compactor = make(summarizer=summarizer, store="memory", session_id="chain")
    first = run(compactor, AIDER)
    assert first.compacted
    assert first.record is not None
    assert first.record.depth == 0
    covered_first = {m.text for m in summarizer.calls[0].messages}

    history = [*first.messages, *FOLLOW_UP]
    second = run(compactor, history, force=True)
    assert second.compacted
    assert second.code == "forced"
    assert len(summarizer.calls) == 2
    call = summarizer.calls[1]
    assert call.previous == first.record
    assert call.messages
    assert not any(is_summary(m) for m in call.messages)
    # Nothing the first record covers is summarized again.
    assert not covered_first & {m.text for m in call.messages}

    record = second.record
    assert record is not None
    assert record.depth == 1
    assert record.parent_id == first.record.id
    assert [r.id for r in store_of(compactor).summaries("chain")] == [first.record.id, record.id]
    # The history holds one summary: the new one replaced the old.
    assert len(summaries_in(second)) == 1


def test_gemini_a_second_compaction_continues_the_chain() -> None:
    items, system = in_format(AIDER, "gemini")
    extra, _ = in_format(FOLLOW_UP, "gemini")
    compactor = make(store="memory", session_id="gemini-chain")
    first = run(compactor, items, system=system, format="gemini")
    assert first.record is not None
    second = run(
        compactor, [*first.messages, *extra], system=first.system, format="gemini", force=True
    )
    assert second.record is not None
    text = json.dumps(second.messages)
    assert text.count("<synopsis-summary") == 1
    assert second.record.depth == 1
    assert second.record.parent_id == first.record.id


def test_merge_role_a_user_turn_merged_into_the_summary_is_not_lost() -> None:
    compactor = make(summary_role="merge", store="memory", session_id="merge")
    first = run(compactor, AIDER, force=True)
    merged = first.messages[1]
    assert isinstance(merged["content"], list)
    assert merged["content"][0]["text"].startswith("<synopsis-summary")
    words = merged["content"][1]["text"]  # the user's own turn, after the summary
    assert words in [m["content"] for m in AIDER]
    history = [*first.messages, *FOLLOW_UP, *FOLLOW_UP, *FOLLOW_UP]
    second = run(compactor, history, force=True)
    assert second.record is not None
    kept = (
        words in json.dumps(second.messages, ensure_ascii=False)
        or words[:40] in render(second.record)
        or any(words == m.text for m in store_of(compactor).recall("merge"))
    )
    assert kept, "the user's turn is gone from the history, the summary and the store"


# ------------------------------------------------------------------------- 3. forced


def test_force_compacts_below_the_trigger_and_passes_the_instructions() -> None:
    summarizer = ScriptedSummarizer()
    compactor = make(context_window=8000, summarizer=summarizer)
    assert run(compactor, AIDER).code == "under-trigger"
    assert summarizer.calls == []
    result = run(compactor, AIDER, force=True, instructions="keep the port numbers")
    assert result.compacted
    assert result.code == "forced"
    assert [c.instructions for c in summarizer.calls] == ["keep the port numbers"]
    assert result.tokens_after < result.tokens_before


def test_force_with_nothing_before_the_tail_does_not_compact() -> None:
    summarizer = ScriptedSummarizer()
    result = run(make(summarizer=summarizer), AIDER[:1], force=True)
    assert not result.compacted
    assert result.code == "nothing-to-compact"
    assert summarizer.calls == []
    assert result.messages == AIDER[:1]
    assert kinds(result.events)[-1] == "CompactionSkipped"


def test_force_on_a_history_shorter_than_the_kept_tail_does_not_compact() -> None:
    # An explicit tail: the automatic one gives a forced compaction half of what it can cut.
    summarizer = ScriptedSummarizer()
    result = run(make(summarizer=summarizer, keep="messages:6"), AIDER[:3], force=True)
    assert summarizer.calls == []
    assert not result.compacted
    assert result.code == "nothing-to-compact"
    assert result.messages == AIDER[:3]


# ------------------------------------------------------------------------- 4. sessions


def test_the_session_state_after_two_compactions() -> None:
    store = MemoryStore()
    compactor = make(store=store, session_id="s1")
    first = run(compactor, AIDER)
    second = run(compactor, [*first.messages, *FOLLOW_UP], force=True)
    assert first.record is not None
    assert second.record is not None
    state = store.session("s1")
    assert state is not None
    assert state.compactions == 2
    records = store.summaries("s1")
    assert records == [first.record, second.record]
    assert state.tokens_summarized == sum(r.tokens_in for r in records)
    assert state.summary_id == second.record.id
    assert state.last_summary == render(second.record)[:500]
    stored = store.recall("s1")
    assert state.offset == len(stored) == len(first.offloaded) + len(second.offloaded)
    assert [m.position for m in stored] == list(range(len(stored)))
    assert state.governor["compactions"] == 2


def test_a_skipped_call_persists_the_governor_state() -> None:
    store = MemoryStore()
    summarizer = ScriptedSummarizer()
    compactor = make(store=store, session_id="cool", min_messages=4, summarizer=summarizer)
    first = run(compactor, AIDER)
    assert first.compacted
    before = store.session("cool")
    assert before is not None
    # One more message, well over the trigger but below the window: still cooling down.
    question = {"role": "user", "content": "Show the whole table again: " + "row 12 = 34; " * 200}
    history = [*first.messages, question]
    result = run(compactor, history)
    assert result.tokens_before > compactor.setup.trigger.token_threshold(4000)  # type: ignore[operator]
    assert not result.compacted
    assert result.code == "cooldown"
    assert len(summarizer.calls) == 1
    assert result.messages == history
    after = store.session("cool")
    assert after is not None
    assert after.compactions == before.compactions == 1
    assert after.governor != before.governor  # a new user turn: the turn key moved on
    assert after.governor["turn"] != before.governor["turn"]
    assert after.governor["turn_compactions"] == 0
    assert after.updated_at is not None
    assert before.updated_at is not None
    assert after.updated_at >= before.updated_at
    assert after.summary_id == before.summary_id


# ------------------------------------------------------------------------- 5. events


def test_listeners_of_the_compactor_and_of_the_call_receive_every_event_in_order() -> None:
    held: list[Event] = []
    given: list[Event] = []
    compactor = make(summarizer=Failing(), listeners=[held.append], session_id="ev")
    result = run(compactor, AIDER, listeners=[given.append])
    assert result.compacted
    assert kinds(held) == ["CompactionStarted", "SummarizerFellBack", "CompactionCompleted"]
    assert held == given
    assert tuple(held) == result.events
    assert all(e.session_id == "ev" for e in held)
    started, fell_back, completed = held
    assert isinstance(started, CompactionStarted)
    assert started.reason == "triggered"
    assert isinstance(fell_back, SummarizerFellBack)
    assert fell_back.fallback == "rules"
    assert "the model is down" in fell_back.reason
    assert isinstance(completed, CompactionCompleted)
    assert completed.tokens_after == result.tokens_after
    assert result.record is not None
    assert completed.record_id == result.record.id


def test_a_skipped_call_emits_compaction_skipped_with_the_code() -> None:
    got: list[Event] = []
    result = run(make(listeners=[got.append]), AIDER[:4])
    assert not result.compacted
    assert kinds(got) == ["CompactionSkipped"]
    assert tuple(got) == result.events
    skipped = got[0]
    assert isinstance(skipped, CompactionSkipped)
    assert skipped.reason == result.code == "under-trigger"
    assert skipped.messages == 4
    assert skipped.tokens == result.tokens_before


def test_events_a_summarizer_reports_reach_the_listeners_and_the_result() -> None:
    def reporting(call: SummarizeCall) -> str:
        notify(SummarizerFellBack(model="big", reason="rate limited", fallback="small"))
        return "The small model summarized it."

    got: list[Event] = []
    result = run(
        make(summarizer=ScriptedSummarizer(default=reporting), session_id="r"),
        AIDER,
        listeners=[got.append],
    )
    assert kinds(got) == ["CompactionStarted", "SummarizerFellBack", "CompactionCompleted"]
    assert tuple(got) == result.events
    assert got[1].session_id == "r"


def test_a_listener_that_raises_does_not_break_the_compaction(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(event: Event) -> None:
        raise RuntimeError("listener bug")

    after: list[Event] = []
    result = run(make(listeners=[broken, after.append]), AIDER)
    assert result.compacted
    assert kinds(after) == ["CompactionStarted", "CompactionCompleted"]
    assert "listener" in caplog.text


# ------------------------------------------------------------------------- 6. configuration


def test_a_toml_file_changes_when_it_compacts(tmp_path: Path) -> None:
    assert not run(make(trigger=None, reset_ratio=0.7), AIDER).compacted  # 80%: no
    path = tmp_path / "synopsis.toml"
    path.write_text('[synopsis]\ntrigger = 0.5\nkeep = "messages:4"\nreset_ratio = 0.4\n')
    compactor = Compactor(config=path, model="gpt-4o", context_window=4000, environ={})
    assert compactor.settings.trigger == 0.5
    assert compactor.setup.keep.describe() == "the last 4 messages"
    result = run(compactor, AIDER)
    assert result.compacted
    assert result.code == "triggered"
    assert result.messages[-4:] == AIDER[-4:]
    assert result.messages[-5] != AIDER[-5]


def test_environment_variables_change_when_it_compacts() -> None:
    base: dict[str, Any] = {"model": "gpt-4o", "context_window": 4000, "reset_ratio": 0.4}
    assert not run(Compactor(environ={}, **base), AIDER).compacted
    compactor = Compactor(environ={"SYNOPSIS_TRIGGER": "0.5"}, **base)
    assert compactor.settings.trigger == 0.5
    assert run(compactor, AIDER).compacted
    # 60% of 4,000 is over the transcript's 2,232 tokens.
    assert not run(Compactor(environ={"SYNOPSIS_TRIGGER": "0.6"}, **base), AIDER).compacted


def test_precedence_is_keyword_then_environment_then_file(tmp_path: Path) -> None:
    path = tmp_path / "synopsis.toml"
    path.write_text("[synopsis]\ntrigger = 0.5\nreset_ratio = 0.4\nmin_messages = 3\n")
    env = {"SYNOPSIS_TRIGGER": "0.6"}
    file_only = Compactor(config=path, environ={})
    with_env = Compactor(config=path, environ=env)
    with_keyword = Compactor(config=path, environ=env, trigger=0.55)
    assert file_only.settings.trigger == 0.5
    assert with_env.settings.trigger == 0.6
    assert with_keyword.settings.trigger == 0.55
    assert with_keyword.settings.min_messages == 3  # what nobody overrode still comes from the file
    options: dict[str, Any] = {"model": "gpt-4o", "context_window": 4000}
    assert run(Compactor(config=path, environ={}, **options), AIDER).compacted
    assert not run(Compactor(config=path, environ=env, **options), AIDER).compacted
    assert run(Compactor(config=path, environ=env, trigger=0.5, **options), AIDER).compacted


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"trigger": 1.5}, "trigger"),
        ({"keep": -3}, "keep"),
        ({"environ": {"SYNOPSIS_TRIGGER": "abc"}}, "SYNOPSIS_TRIGGER"),
        ({"context_window": 0}, "context_window"),
        ({"store": 42}, "store"),
        ({"bogus_option": 1}, "bogus_option"),
    ],
    ids=["trigger", "keep", "env-trigger", "window", "store", "unknown-option"],
)
def test_a_bad_option_raises_a_configuration_error_naming_it(
    options: dict[str, Any], named: str
) -> None:
    options.setdefault("environ", {})
    with pytest.raises(ConfigurationError) as caught:
        Compactor(**options)
    text = str(caught.value)
    assert named in text
    assert "pydantic" not in text.lower()
    assert "validation error" not in text.lower()


def test_a_bad_value_in_the_file_names_the_file_and_the_option(tmp_path: Path) -> None:
    path = tmp_path / "synopsis.toml"
    path.write_text("[synopsis]\nkeep = -3\n")
    with pytest.raises(ConfigurationError, match="keep") as caught:
        Compactor(config=path, environ={})
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("kind", ["memory", "path", "path-text", "object"])
def test_every_kind_of_store_keeps_the_originals(kind: str, tmp_path: Path) -> None:
    database = tmp_path / "store.db"
    store: object = {
        "memory": "memory",
        "path": database,
        "path-text": str(database),
        "object": MemoryStore(),
    }[kind]
    compactor = make(store=store, session_id="kinds")
    if kind.startswith("path"):
        assert database.exists()
        assert isinstance(compactor.setup.store, SQLiteStore)
    else:
        assert isinstance(compactor.setup.store, MemoryStore)
    if kind == "object":
        assert compactor.setup.store is store
    result = run(compactor, AIDER)
    assert result.compacted
    recalled = store_of(compactor).recall("kinds")
    assert [m.id for m in recalled] == list(result.offloaded)
    assert [json.loads(m.data) for m in recalled] == AIDER[1 : 1 + len(recalled)]
    store_of(compactor).close()


def test_a_store_without_a_session_still_compacts() -> None:
    result = run(make(store="memory"), AIDER)
    assert result.compacted


def test_a_session_named_per_call_gets_a_store_of_its_own() -> None:
    compactor = make()
    assert compactor.setup.store is None
    result = run(compactor, AIDER, session_id="late")
    assert result.session_id == "late"
    assert isinstance(compactor.setup.store, MemoryStore)
    state = store_of(compactor).session("late")
    assert state is not None
    assert state.compactions == 1


# ------------------------------------------------------------------------- 7. formats


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic", "gemini"])
def test_the_result_is_in_the_callers_format(fmt: str) -> None:
    items, system = in_format([{"role": "system", "content": SYSTEM}, *AIDER], fmt)
    result = run(make(), items, system=system, format=fmt)
    assert result.compacted
    assert result.format == fmt
    assert all(isinstance(m, dict) for m in result.messages)
    problems = validate(result.messages, fmt, system=result.system)
    # Gemini's G5 asks for the next user turn, which the agent appends before sending.
    assert [p for p in problems if p.rule != "gemini.G5"] == []
    assert len(summaries_in(result)) == 1 or fmt == "gemini"  # Gemini merges it (see above)
    if fmt in ("anthropic", "gemini"):
        assert result.system == system
        assert all(m.get("role") != "system" for m in result.messages)
    else:
        assert result.system is None
        assert result.messages[0] == items[0]  # the system message stays first
    # The kept tail comes back as given (Gemini merges the tail's first user turn).
    kept = 5 if fmt == "gemini" else 6
    assert result.messages[-kept:] == items[-kept:]


def test_anthropic_with_the_system_prompt_given_apart() -> None:
    items, system = in_format([{"role": "system", "content": SYSTEM}, *AIDER], "anthropic")
    assert system == SYSTEM
    assert all(m["role"] != "system" for m in items)
    result = run(make(), items, system=SYSTEM, format="anthropic")
    assert result.compacted
    assert result.system == SYSTEM
    assert all(m["role"] in ("user", "assistant") for m in result.messages)
    assert result.messages[0]["role"] == "user"


def test_synopsis_messages_come_back_as_messages() -> None:
    messages = list(decode(AIDER, "openai").messages)
    before = list(messages)  # frozen values: the list is what could change
    result = make().compact(messages, format="synopsis")
    assert len(messages) == len(before)
    assert all(a is b for a, b in zip(messages, before, strict=True))
    assert result.compacted
    assert result.format == "synopsis"
    assert all(isinstance(m, Message) for m in result.messages)
    assert sum(is_summary(m) for m in result.messages) == 1
    assert result.messages[-6:] == messages[-6:]


def test_a_request_body_gives_back_its_list_of_messages() -> None:
    # pipeline._output returns the history's items, never the body: the caller puts them
    # back into its request (the other keys, such as "model", are not echoed).
    body = {"model": "gpt-4o", "temperature": 0, "messages": AIDER}
    result = run(make(), body)
    assert result.compacted
    assert result.format == "openai"
    assert isinstance(result.messages, list)
    assert all(isinstance(m, dict) and "role" in m for m in result.messages)
    assert result.messages[-6:] == AIDER[-6:]
    skipped = run(make(), {"model": "gpt-4o", "messages": AIDER[:4]})
    assert not skipped.compacted
    assert skipped.messages == AIDER[:4]
    assert all(a is b for a, b in zip(skipped.messages, AIDER, strict=False))


def test_an_anthropic_request_body_keeps_its_system_prompt() -> None:
    body = {"model": "claude", "system": SYSTEM, "messages": AIDER}
    result = run(make(), body, format="anthropic")
    assert result.compacted
    assert result.system == SYSTEM
    skipped = run(make(), {"model": "claude", "system": SYSTEM, "messages": AIDER[:4]})
    assert skipped.system == SYSTEM
    assert skipped.messages == AIDER[:4]


# ------------------------------------------------------------------------- 8. bad input


def test_an_orphaned_tool_result_in_the_middle_is_repaired() -> None:
    broken = copy.deepcopy(MARSHMALLOW)
    orphan = broken[7]["tool_call_id"]
    assert broken[6]["tool_calls"][0]["id"] == orphan
    del broken[6]  # the call goes; its result stays, answering nothing
    result = run(make(context_window=8000, trigger=None, reset_ratio=0.7), broken)
    assert [(f.index, f.action) for f in result.fixes] == [(6, "dropped orphaned result")]
    assert orphan not in json.dumps(result.messages)
    assert validate(result.messages, "openai") == []
    # Below the trigger too, the repaired history is what comes back.
    calm = run(make(context_window=32_000, trigger=None, reset_ratio=0.7), broken)
    assert not calm.compacted
    assert len(calm.fixes) == 1
    assert len(calm.messages) == len(broken) - 1


@pytest.mark.parametrize(
    ("data", "error", "rule"),
    [
        (42, UnknownFormatError, "format.detect"),
        ("hello", UnknownFormatError, "format.detect"),
        ({"model": "gpt-4o"}, UnknownFormatError, "format.detect"),
        ([1, 2], UnknownFormatError, "format.detect"),
        ([], ConversationError, "history.empty"),
        # Anthropic rejects blank text, and dropping the only message would leave nothing.
        (
            {"system": "Be brief.", "messages": [{"role": "user", "content": " \n"}]},
            ConversationError,
            "history.empty",
        ),
        ([{"role": "banana", "content": "x"}], ConversationError, "message.role"),
        (
            [
                {"role": "user", "content": "list it"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "a", "type": "function", "function": {"name": "ls", "arguments": ""}}
                    ]
                    * 2,
                },
                {"role": "tool", "tool_call_id": "a", "content": "x"},
                {"role": "tool", "tool_call_id": "a", "content": "y"},
            ],
            ConversationError,
            "openai.C3",
        ),
    ],
    ids=[
        "int",
        "text",
        "body-without-messages",
        "not-objects",
        "empty",
        "only-blank",
        "role",
        "duplicate-id",
    ],
)
def test_input_that_cannot_be_repaired_is_refused_with_a_rule(
    data: object, error: type[ConversationError], rule: str
) -> None:
    snapshot = copy.deepcopy(data)
    with pytest.raises(error) as caught:
        make().compact(data)
    assert caught.value.rule == rule
    assert f"[{rule}]" in str(caught.value)
    assert data == snapshot


# ------------------------------------------------------------------------- 9. the budget


def test_a_system_prompt_larger_than_the_window_is_unreachable_and_nothing_is_stored() -> None:
    store = MemoryStore()
    got: list[Event] = []
    compactor = make(store=store, session_id="big", listeners=[got.append])
    data = [{"role": "system", "content": "rule " * 3500}, *AIDER]
    snapshot = copy.deepcopy(data)
    with pytest.raises(BudgetUnreachableError, match="the system prompt alone takes"):
        compactor.compact(data)
    assert data == snapshot
    state = store.session("big")  # the governor's state only: no failure of the summarizer
    assert state is not None
    assert state.offset == 0
    assert state.governor["consecutive_failures"] == 0
    assert store.recall("big") == []
    assert store.summaries("big") == []
    assert kinds(got) == ["CompactionStarted", "CompactionFailed"]
    failed = got[-1]
    assert isinstance(failed, CompactionFailed)
    assert failed.error_type == "BudgetUnreachableError"
    assert failed.stage == "budget"


@pytest.mark.parametrize("reserve", [None, 1500, 2500])
def test_the_reserve_for_the_answer_is_honoured(reserve: int | None) -> None:
    compactor = make(reserve_output_tokens=reserve)
    expected = 800 if reserve is None else reserve  # by default a fifth of the window
    assert compactor.setup.reserve == expected
    result = run(compactor, AIDER, force=True)
    assert result.compacted
    assert result.tokens_after <= 4000 - expected


def test_a_store_that_cannot_save_refuses_the_compaction() -> None:
    class Broken(MemoryStore):
        def save(self, compaction: Any) -> None:
            raise OSError("disk full")

    store = Broken()
    with pytest.raises(StoreError, match="disk full"):
        run(make(store=store, session_id="full"), AIDER)
    assert store.session("full") is None
    assert store.recall("full") == []


# ------------------------------------------------------------------------- 10. async


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_acompact_gives_what_compact_gives(kind: str, tmp_path: Path) -> None:
    def build(name: str) -> Compactor:
        store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / f"{name}.db")
        return make(summarizer=deterministic(), store=store, session_id="same")

    blocking, awaiting = build("sync"), build("async")
    one = run(blocking, AIDER)
    two = arun(awaiting, AIDER)
    assert one.compacted
    assert two.compacted
    assert one.messages == two.messages
    assert one.record == two.record
    assert one.offloaded == two.offloaded
    assert kinds(one.events) == kinds(two.events)
    assert store_of(blocking).recall("same") == store_of(awaiting).recall("same")
    for compactor in (blocking, awaiting):
        state = store_of(compactor).session("same")
        assert state is not None
        assert state.compactions == 1


def test_an_async_summarizer_serves_both_drivers() -> None:
    reference = compact(
        AIDER,
        model="gpt-4o",
        context_window=4000,
        environ={},
        force=True,
        summarizer=deterministic(),
    )
    options: dict[str, Any] = {"model": "gpt-4o", "context_window": 4000, "environ": {}}
    summarizer = AsyncOnly()
    awaited = asyncio.run(acompact(AIDER, force=True, summarizer=summarizer, **options))
    blocked = compact(AIDER, force=True, summarizer=summarizer, **options)
    assert summarizer.calls == 2
    assert awaited.messages == reference.messages == blocked.messages
    assert kinds(awaited.events) == kinds(blocked.events) == kinds(reference.events)
    assert "SummarizerFellBack" not in kinds(awaited.events)


def test_a_slow_summarizer_gives_way_to_the_rules_when_awaited() -> None:
    compactor = make(summarizer=AsyncOnly(delay=0.3), summarizer_timeout=0.02)
    result = arun(compactor, AIDER)
    assert result.compacted
    assert kinds(result.events) == [
        "CompactionStarted",
        "SummarizerFellBack",
        "CompactionCompleted",
    ]


def test_a_slow_async_summarizer_gives_way_to_the_rules_when_blocking() -> None:
    compactor = make(summarizer=AsyncOnly(delay=0.3), summarizer_timeout=0.02)
    started = time.perf_counter()
    result = run(compactor, AIDER)
    assert result.compacted
    assert "SummarizerFellBack" in kinds(result.events)
    assert time.perf_counter() - started < 0.25


# ------------------------------------------------------------------------- 11. the summary


def test_a_system_voiced_summary_follows_the_openai_profile() -> None:
    result = run(make(summary_role="system", provider="openai"), AIDER)
    assert result.compacted
    (summary,) = summaries_in(result)
    expected = Role.SYSTEM  # OpenAI takes a system message anywhere in the history
    assert get_profile("openai").system == "anywhere"
    assert summary.role is expected
    wire = next(m for m in result.messages if "<synopsis-summary" in str(m.get("content")))
    assert wire["role"] == expected.value
    assert validate(result.messages, "openai") == []


def test_the_snapshot_style_renders_a_state_snapshot() -> None:
    snapshot = run(make(summary_style="snapshot"), AIDER)
    sections = run(make(), AIDER)
    (snap,) = summaries_in(snapshot)
    (sect,) = summaries_in(sections)
    assert "<state_snapshot>" in snap.text
    assert "</state_snapshot>" in snap.text
    assert "<state_snapshot>" not in sect.text
    assert "1. Primary Request and Intent" in sect.text
