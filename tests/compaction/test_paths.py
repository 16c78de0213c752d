"""The less travelled paths of the pipeline, each as a user would see it: an LLM summarizer
built from the settings and talking to a (fake) server, request bodies of every format, a
store or a counter that fails at each step, trimming that cannot trim, a merged summary taken
apart, and the guard that refuses a rebuilt history no provider would accept."""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from synopsis import Keep, Trigger
from synopsis.compaction import CompactionResult, Compactor
from synopsis.compaction.offload import Originals
from synopsis.compaction.rebuild import finish
from synopsis.errors import (
    BudgetUnreachableError,
    ConfigurationError,
    ConversationError,
    StoreError,
)
from synopsis.events import CompactionFailed, Event, SummarizerFellBack
from synopsis.formats import decode, message_from_json
from synopsis.messages import Message, Role, TextPart, is_summary
from synopsis.stores import AsyncStore, MemoryStore, SQLiteStore, Store
from synopsis.stores._base import StoreBase
from synopsis.testing import FailingStore, ScriptedSummarizer
from synopsis.testing.server import FakeLLMServer, anthropic_message, chat_completion, response
from synopsis.tokens import counter_for_model
from synopsis.validation import validate
from tests.compaction.helpers import (
    TRANSCRIPTS,
    arun,
    in_format,
    kinds,
    load_items,
    make,
    run,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

    from synopsis.stores import Compaction, SearchHit, SessionState, StoredMessage
    from synopsis.summarizers import SummaryRecord

AIDER = load_items(next(p for p in TRANSCRIPTS if p.stem == "aider-census"))
"""20 plain user/assistant messages, about 2,200 tokens."""
MARSHMALLOW = load_items(next(p for p in TRANSCRIPTS if p.stem == "sweagent-marshmallow-1867-fc"))
"""A system prompt, a task and 13 tool calls with their results, about 8,000 tokens."""
FOLLOW_UP = [
    {"role": "user", "content": "Now count the cities with more than 100000 people."},
    {"role": "assistant", "content": "There are 340 such cities in the 2020 census."},
]


def summaries_in(result: CompactionResult) -> list[Message]:
    decoded = decode(result.messages, result.format, system=result.system)  # type: ignore[arg-type]
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


FIRST_REQUEST = "Please describe the weather in the mountains for my hiking trip"
LAST_REQUEST = "Describe the valley once more."
CHAT = [
    {"role": "user", "content": FIRST_REQUEST},
    *[
        item
        for _ in range(12)
        for item in (
            {"role": "assistant", "content": "The hills are green and the sky is blue. " * 10},
            {"role": "user", "content": LAST_REQUEST + " " + LAST_REQUEST},
        )
    ],
]
"""Plain words only: the quality guard asks the summary for the first request and the last
one (no paths or identifiers repeat)."""
SUMMARY_TEXT = json.dumps(
    {
        "narrative": "The user asked about the mountain weather and the valley.",
        "key_points": ["The hills are green and the sky is blue"],
        "sections": {
            "primary_request": [FIRST_REQUEST],
            "pending_tasks": [LAST_REQUEST + " " + LAST_REQUEST],
        },
    }
)


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()


FLAVOURS = [
    # summarizer, path, answer, the fake's model, the configured model
    ("openai", "/v1/chat/completions", chat_completion, "gpt-test", "gpt-4o-mini"),
    ("openai-responses", "/v1/responses", response, "gpt-test", "gpt-4o-mini"),
    ("anthropic", "/v1/messages", anthropic_message, "claude-test", "claude-haiku-4-5"),
]


@pytest.mark.parametrize(
    ("kind", "path", "answer", "served", "configured"), FLAVOURS, ids=[f[0] for f in FLAVOURS]
)
def test_an_llm_summarizer_named_in_the_settings_summarizes_through_its_server(
    kind: str,
    path: str,
    answer: Callable[[str], dict[str, Any]],
    served: str,
    configured: str,
    llm_server: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SYN_TEST_KEY", "k")
    llm_server.add(answer(SUMMARY_TEXT))
    # The Anthropic SDK adds /v1 itself; the OpenAI one expects it in the base URL.
    base = llm_server.root if kind == "anthropic" else llm_server.base_url
    compactor = Compactor(
        model="gpt-4o",
        summarizer_models=[configured],
        base_url=base,
        api_key_env="SYN_TEST_KEY",
        max_retries=0,
        summarizer=kind,
        environ={},
    )
    assert compactor.setup.summarizer_name == configured
    result = run(compactor, CHAT, force=True)
    assert result.compacted
    assert "SummarizerFellBack" not in kinds(result.events)
    assert result.record is not None
    assert result.record.model == served
    assert FIRST_REQUEST in result.record.sections.primary_request
    (request,) = llm_server.requests
    assert request.path == path
    assert request.body["model"] == configured
    headers = request.headers
    assert "k" in (
        headers.get("x-api-key"),
        headers.get("authorization", "").removeprefix("Bearer "),
    )
    (summary,) = summaries_in(result)
    assert "mountain weather" in summary.text


def test_the_summarizer_option_given_by_keyword_builds_the_llm_summarizer(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYN_TEST_KEY", "k")
    llm_server.add(chat_completion(SUMMARY_TEXT))
    compactor = Compactor(
        model="gpt-4o",
        summarizer="openai",
        summarizer_models=["gpt-4o-mini"],
        base_url=llm_server.base_url,
        api_key_env="SYN_TEST_KEY",
        max_retries=0,
        environ={},
    )
    result = run(compactor, CHAT, force=True)
    assert result.record is not None
    assert result.record.model == "gpt-test"


def test_an_llm_summarizer_without_any_model_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="needs a model") as caught:
        Compactor(environ={"SYNOPSIS_SUMMARIZER": "openai"})
    assert "summarizer_models" in str(caught.value)


def test_an_api_key_variable_that_is_not_set_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SYN_MISSING_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="SYN_MISSING_KEY") as caught:
        Compactor(
            model="gpt-4o",
            api_key_env="SYN_MISSING_KEY",
            environ={"SYNOPSIS_SUMMARIZER": "openai"},
        )
    assert "not set" in str(caught.value)


@pytest.mark.parametrize(
    ("kind", "module", "extra"),
    [
        ("openai", "openai", "openai"),
        ("openai-responses", "openai", "openai"),
        ("anthropic", "anthropic", "anthropic"),
    ],
)
def test_a_summarizer_whose_sdk_is_missing_says_what_to_install(
    kind: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ConfigurationError) as caught:
        Compactor(model="gpt-4o", environ={"SYNOPSIS_SUMMARIZER": kind})
    assert f'pip install "synopsis[{extra}]"' in str(caught.value)
    assert f'summarizer="{kind}"' in str(caught.value)


# ------------------------------------------------------------------- 2. the other options


def test_the_sqlite_store_lives_in_the_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNOPSIS_DATA_DIR", str(tmp_path))
    compactor = make(store="sqlite", session_id="data-dir")
    store = compactor.setup.store
    assert isinstance(store, SQLiteStore)
    try:
        result = run(compactor, AIDER)
        assert result.compacted
    finally:
        store.close()
    database = tmp_path / "synopsis.db"
    assert database.exists()
    reopened = SQLiteStore(database)
    try:
        assert [m.id for m in reopened.recall("data-dir")] == list(result.offloaded)
        state = reopened.session("data-dir")
        assert state is not None
        assert state.compactions == 1
    finally:
        reopened.close()


@pytest.mark.parametrize("reserve", [128_000, 200_000])
def test_a_reserve_as_large_as_the_models_window_is_refused(reserve: int) -> None:
    with pytest.raises(ConfigurationError, match=r"reserve_output_tokens") as caught:
        Compactor(model="gpt-4o", reserve_output_tokens=reserve, environ={})
    assert "128000" in str(caught.value)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"counter": object()}, "counter must be a TokenCounter"),
        ({"summarizer": object()}, "summarize() or asummarize()"),
    ],
    ids=["counter", "summarizer"],
)
def test_objects_of_the_wrong_kind_are_refused(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Compactor(environ={}, **options)
    assert named in str(caught.value)


# ------------------------------------------------------------------- 3. the Compactor


@pytest.mark.parametrize(
    "target_ratio",
    [
        pytest.param(None, id="default-target"),
        0.1,  # a target below the 1,000-token trigger
    ],
)
def test_trigger_and_keep_objects_take_effect(target_ratio: float | None) -> None:
    # 8,000 tokens: the default trigger (a share of the window) would not fire on 2,200.
    options: dict[str, Any] = {"model": "gpt-4o", "context_window": 8000, "environ": {}}
    if target_ratio is not None:
        options["target_ratio"] = target_ratio
    assert not run(Compactor(**options), AIDER).compacted
    compactor = Compactor(trigger=Trigger.tokens(1000), keep=Keep.messages(4), **options)
    assert compactor.setup.trigger == Trigger.tokens(1000)
    result = run(compactor, AIDER)
    assert result.compacted
    assert result.code == "triggered"
    assert result.messages[-4:] == AIDER[-4:]
    assert result.messages[-5] != AIDER[-5]


def test_the_repr_names_the_options_in_effect() -> None:
    compactor = make(trigger=Trigger.tokens(1000), keep=Keep.messages(4), store=MemoryStore())
    text = repr(compactor)
    assert text.startswith("Compactor(")
    for part in (
        "window=4000",
        "trigger=1,000 tokens",
        "keep=the last 4 messages",
        "summarizer='rules'",
        "store=MemoryStore",
    ):
        assert part in text
    assert "store=None" in repr(make())


class Failing:
    """A summarizer with nothing but a blocking ``summarize``, which always raises."""

    def summarize(self, messages: Sequence[Message], **_: Any) -> SummaryRecord:
        raise RuntimeError("the model is down")


def test_acompact_with_a_blocking_summarizer_that_raises_falls_back_to_the_rules() -> None:
    result = arun(make(summarizer=Failing()), AIDER)
    assert result.compacted
    assert kinds(result.events) == [
        "CompactionStarted",
        "SummarizerFellBack",
        "CompactionCompleted",
    ]
    fell = next(e for e in result.events if isinstance(e, SummarizerFellBack))
    assert "the model is down" in fell.reason
    assert result.record is not None
    assert result.record.model == "rules"


class SyncOnly:
    """A store with the blocking methods alone (not an AsyncStore), kept in a MemoryStore."""

    def __init__(self) -> None:
        self.inner = MemoryStore()

    def save(self, compaction: Compaction) -> None:
        self.inner.save(compaction)

    def session(self, session_id: str) -> SessionState | None:
        return self.inner.session(session_id)

    def save_session(self, state: SessionState) -> None:
        self.inner.save_session(state)

    def summaries(self, session_id: str) -> list[SummaryRecord]:
        return self.inner.summaries(session_id)

    def recall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]:
        return self.inner.recall(session_id, ids=ids, start=start, stop=stop)

    def search(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]:
        return self.inner.search(session_id, query, limit=limit)

    def sessions(self) -> list[str]:
        return self.inner.sessions()

    def close(self) -> None:
        self.inner.close()


def test_acompact_uses_a_store_that_only_blocks() -> None:
    store = SyncOnly()
    assert isinstance(store, Store)
    assert not isinstance(store, AsyncStore)
    compactor = make(store=store, session_id="sync")
    assert compactor.setup.store is store
    first = arun(compactor, AIDER)
    assert first.compacted
    assert [m.id for m in store.recall("sync")] == list(first.offloaded)
    second = arun(compactor, [*first.messages, *FOLLOW_UP], force=True)
    assert second.record is not None
    assert first.record is not None
    assert second.record.parent_id == first.record.id  # the chain was read back from it
    state = store.session("sync")
    assert state is not None
    assert state.compactions == 2


def test_acompact_with_a_blocking_store_that_cannot_save_leaves_the_input_untouched() -> None:
    class Full(SyncOnly):
        def save(self, compaction: Compaction) -> None:
            raise OSError("disk full")

    store = Full()
    with pytest.raises(StoreError, match="disk full"):
        arun(make(store=store, session_id="full"), AIDER)
    assert store.recall("full") == []
    assert store.session("full") is None


# ------------------------------------------------------- 4. what the store keeps, per format


def test_a_gemini_request_body_stores_its_own_contents() -> None:
    items, _ = in_format(AIDER, "gemini")
    body = {"contents": items, "systemInstruction": {"parts": [{"text": "Be brief."}]}}
    store = MemoryStore()
    result = run(make(store=store, session_id="g"), body, format="gemini")
    assert result.compacted
    assert result.system == body["systemInstruction"]
    stored = store.recall("g")
    assert stored
    assert [m.id for m in stored] == list(result.offloaded)
    assert all(m.format == "gemini" for m in stored)
    # The system prompt (decoded as a leading message) is not an item: no shift.
    assert [json.loads(m.data) for m in stored] == items[1 : 1 + len(stored)]


def test_a_responses_request_body_stores_its_own_input_items() -> None:
    items, _ = in_format(AIDER, "responses")
    store = MemoryStore()
    result = run(make(store=store, session_id="r"), {"input": items}, format="responses")
    assert result.compacted
    stored = store.recall("r")
    assert stored
    assert all(m.format == "responses" for m in stored)
    assert [json.loads(m.data) for m in stored] == items[1 : 1 + len(stored)]


def test_a_responses_body_whose_input_is_a_string_comes_back_as_one_user_item() -> None:
    store = MemoryStore()
    result = run(make(store=store, session_id="s"), {"input": "How many counties?"})
    assert result.format == "responses"
    assert not result.compacted
    assert result.messages == [{"role": "user", "content": "How many counties?"}]
    assert validate(result.messages, "responses") == []


def test_a_repaired_history_still_stores_the_callers_own_items() -> None:
    broken = copy.deepcopy(MARSHMALLOW)
    del broken[6]  # a call goes; its result stays, answering nothing
    store = MemoryStore()
    compactor = make(context_window=8000, store=store, session_id="fixed")
    result = run(compactor, broken, force=True)
    assert result.compacted
    assert result.fixes
    stored = store.recall("fixed")
    assert stored
    assert [m.id for m in stored] == list(result.offloaded)
    for kept in stored:
        assert kept.format == "openai"
        assert json.loads(kept.data) in broken
    # The orphaned result the repair dropped was never part of the history sent on.
    orphan = broken[6]
    assert all(json.loads(m.data) != orphan for m in stored)


def test_synopsis_messages_are_stored_as_synopsis_json() -> None:
    messages = list(decode(AIDER, "openai").messages)
    store = MemoryStore()
    result = make(store=store, session_id="own").compact(messages, format="synopsis")
    assert result.compacted
    stored = store.recall("own")
    assert stored
    assert all(m.format == "synopsis" for m in stored)
    assert [message_from_json(m.data) for m in stored] == messages[1 : 1 + len(stored)]


def foreign_history() -> tuple[list[dict[str, Any]], str]:
    """A history compacted by another compactor (another store), one more turn on it."""
    first = run(make(store="memory", session_id="elsewhere"), AIDER)
    (summary,) = summaries_in(first)
    return [*first.messages, *FOLLOW_UP], summary.text


def test_a_summary_from_another_compactor_is_summarized_with_the_rest() -> None:
    history, summary = foreign_history()
    summarizer = ScriptedSummarizer()
    store = MemoryStore()
    result = run(make(store=store, session_id="here", summarizer=summarizer), history, force=True)
    assert result.compacted
    assert result.record is not None
    assert result.record.depth == 0  # no record of it in this store: a new chain
    (call,) = summarizer.calls
    given = call.messages
    assert [m.text for m in given if is_summary(m)] == [summary]
    assert len(given) > 1
    assert len(summaries_in(result)) == 1


def test_a_summary_from_another_compactor_is_stored_with_the_callers_items() -> None:
    # This store has no record of it, so its text is the only copy: it is kept like any item
    # the caller sent, word for word.
    history, _ = foreign_history()
    store = MemoryStore()
    result = run(make(store=store, session_id="here"), history, force=True)
    stored = store.recall("here")
    assert len(stored) == len(result.offloaded) > 0
    foreign = [m for m in stored if m.text.startswith("<synopsis-summary")]
    assert len(foreign) == 1
    assert json.loads(foreign[0].data) in history


def test_adopting_a_message_that_is_not_an_input_changes_nothing() -> None:
    messages = decode(AIDER[:2], "openai").messages
    originals = Originals(messages, AIDER[:2], "openai")
    stranger = Message(Role.USER, (TextPart("not in the history"),))
    replacement = Message(Role.USER, (TextPart("a copy of it"),))
    originals.adopt(stranger, replacement)
    assert originals.index(replacement) is None
    assert not originals.changed(replacement)
    at = datetime(2024, 5, 1, tzinfo=UTC)
    assert originals.stored([replacement], session_id="s", offset=0, compaction_id="c", at=at) == []
    # An input's copy, by contrast, stands for the input's item.
    copy_of_first = Message(Role.USER, (TextPart("shorter"),))
    originals.adopt(messages[1], copy_of_first)
    assert originals.index(copy_of_first) == 1
    assert originals.changed(copy_of_first)
    (kept,) = originals.stored([copy_of_first], session_id="s", offset=7, compaction_id="c", at=at)
    assert json.loads(kept.data) == AIDER[1]
    assert kept.position == 7


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
    state = store.session("huge")  # the breaker counts the failed attempt, nothing else
    assert state is not None
    assert state.governor["consecutive_failures"] == 1
    assert kinds(got) == ["CompactionStarted", "CompactionFailed"]


def test_a_store_that_cannot_read_the_session_refuses_the_call() -> None:
    store = FailingStore(fail={"session"})
    history = list(AIDER)
    with pytest.raises(StoreError, match="could not read session 'st'") as caught:
        run(make(store=store, session_id="st"), history)
    assert "session is broken" in str(caught.value)
    assert history == AIDER
    assert store.recall("st") == []


def test_a_store_that_cannot_read_the_summaries_refuses_the_compaction() -> None:
    store = FailingStore()
    got: list[Event] = []
    compactor = make(store=store, session_id="st", listeners=[got.append])
    first = run(compactor, AIDER)
    assert first.compacted
    offloaded = store.recall("st")
    store.fail("summary")  # the chain's head, read alone
    with pytest.raises(StoreError, match="could not read the summary of 'st'"):
        run(compactor, [*first.messages, *FOLLOW_UP], force=True)
    assert kinds(got)[-1] == "CompactionFailed"
    store.heal()
    assert store.recall("st") == offloaded
    state = store.session("st")
    assert state is not None
    assert state.compactions == 1


def test_a_store_that_cannot_save_the_session_state_refuses_a_skipped_call() -> None:
    store = FailingStore(fail={"save_session"})
    with pytest.raises(StoreError, match="could not save session 'st'"):
        run(make(store=store, session_id="st"), AIDER[:4])
    store.heal()
    assert store.session("st") is None


class BrokenCounter:
    """gpt-4o's counter, except that counting a bare text raises."""

    def __init__(self) -> None:
        self.inner = counter_for_model("gpt-4o")

    def count_text(self, text: str) -> int:
        raise RuntimeError("the tokenizer is gone")

    def count_message(self, message: Message) -> int:
        return self.inner.count_message(message)

    def count_messages(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        return self.inner.count_messages(messages, tools=tools)


def test_a_counter_that_fails_fails_the_compaction_and_counts_as_a_failure() -> None:
    store = MemoryStore()
    got: list[Event] = []
    compactor = make(
        store=store, session_id="count", counter=BrokenCounter(), listeners=[got.append]
    )
    # An oversized tool output: sizing its part is what needs count_text.
    history = [*AIDER, call("c1"), tool("c1", BIG_OUTPUT), *FOLLOW_UP]
    with pytest.raises(RuntimeError, match="the tokenizer is gone"):
        run(compactor, history)
    assert kinds(got) == ["CompactionStarted", "CompactionFailed"]
    failed = got[-1]
    assert isinstance(failed, CompactionFailed)
    assert failed.error_type == "RuntimeError"
    assert "the tokenizer is gone" in failed.error
    state = store.session("count")
    assert state is not None
    assert state.governor["consecutive_failures"] == 1
    assert state.compactions == 0
    assert store.recall("count") == []


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


class WithoutOneRecord:
    """A store that meets the Store protocol by delegation, with no ``summary`` method: the
    chain is read whole, as before the method existed."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.summaries_read = 0

    def summaries(self, session_id: str) -> list[SummaryRecord]:
        self.summaries_read += 1
        return self.inner.summaries(session_id)

    def __getattr__(self, name: str) -> Any:
        if name in ("summary", "asummary"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_a_store_without_one_record_reads_the_chain_whole() -> None:
    store = WithoutOneRecord()
    plain = MemoryStore()
    first = run(make(store=store, session_id="w"), AIDER)
    second = run(make(store=store, session_id="w"), [*first.messages, *FOLLOW_UP], force=True)
    assert store.summaries_read == 1
    same = run(make(store=plain, session_id="w"), AIDER)
    other = run(make(store=plain, session_id="w"), [*same.messages, *FOLLOW_UP], force=True)
    assert second.record is not None
    assert other.record is not None
    assert second.record.depth == other.record.depth == 1
    assert first.record is not None
    assert second.record.parent_id == first.record.id
    broken = WithoutOneRecord()
    done = run(make(store=broken, session_id="w"), AIDER)
    broken.summaries = lambda session_id: (_ for _ in ()).throw(OSError("broken"))  # type: ignore[method-assign]
    with pytest.raises(StoreError, match="could not read the summaries of 'w'"):
        run(make(store=broken, session_id="w"), [*done.messages, *FOLLOW_UP], force=True)


def test_the_base_store_finds_one_record_among_them_all(tmp_path: Path) -> None:
    class Plain(MemoryStore):
        summary = StoreBase.summary  # the default, which reads every record

    for store in (Plain(), MemoryStore(), SQLiteStore(tmp_path / "s.db")):
        first = run(make(store=store, session_id="b"), AIDER)
        assert first.record is not None
        assert store.summary("b", first.record.id) == first.record
        assert store.summary("b", "no such record") is None
        assert store.summary("no such session", first.record.id) is None
        found = asyncio.run(store.asummary("b", first.record.id))
        assert found == first.record
