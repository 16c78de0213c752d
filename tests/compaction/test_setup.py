"""How a Compactor builds its parts from the options: an LLM summarizer named in the
settings and talking to its (fake) server, API keys, missing SDKs, the store's location,
the reserve, objects of the wrong kind, and the repr."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import synopsis
from synopsis import Keep, Trigger
from synopsis.compaction import CompactionResult, Compactor, SummarizerOption
from synopsis.errors import ConfigurationError, StoreError
from synopsis.formats import decode
from synopsis.messages import Message, is_summary
from synopsis.stores import MemoryStore, SQLiteStore, handle_recall
from synopsis.testing.server import FakeLLMServer, anthropic_message, chat_completion, response
from tests.compaction.helpers import (
    TRANSCRIPTS,
    kinds,
    load_items,
    make,
    run,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


AIDER = load_items(next(p for p in TRANSCRIPTS if p.stem == "aider-census"))
"""20 plain user/assistant messages, about 2,200 tokens."""


def summaries_in(result: CompactionResult) -> list[Message]:
    decoded = decode(result.messages, result.format, system=result.system)
    return [m for m in decoded.messages if is_summary(m)]


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
    kind: SummarizerOption,
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


def test_the_sqlite_store_lives_in_the_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNOPSIS_DATA_DIR", str(tmp_path))
    compactor = make(store="sqlite", session_id="data-dir")
    store = compactor.store
    assert isinstance(store, SQLiteStore)
    try:
        result = run(compactor, AIDER)
        assert result.compacted
        # The recall loop answers from the Compactor's own store.
        first = result.offloaded[0]
        answer = json.loads(handle_recall(store, "data-dir", {"ids": [first]}))
        assert [m["id"] for m in answer["messages"]] == [first]
    finally:
        compactor.close()
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


def _open_files(path: Path) -> int:
    """How many of this process's file descriptors point at ``path`` (Linux)."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if fd.resolve() == path.resolve())


def test_a_store_the_compactor_opened_is_closed_with_it(tmp_path: Path) -> None:
    path = tmp_path / "own.db"
    with Compactor(model="gpt-4o", store=str(path), session_id="s", environ={}) as compactor:
        compactor.compact(AIDER, force=True)
        assert _open_files(path) >= 1
    assert _open_files(path) == 0
    with pytest.raises(StoreError, match="closed"):
        compactor.recall()


def test_a_store_the_caller_passed_stays_open() -> None:
    store = MemoryStore()
    with Compactor(model="gpt-4o", store=store, session_id="s", environ={}) as compactor:
        result = compactor.compact(AIDER, force=True)
    assert [m.id for m in store.recall("s")] == list(result.offloaded)


def test_a_memory_store_made_for_a_session_is_the_compactors_own() -> None:
    compactor = Compactor(model="gpt-4o", environ={})
    compactor.compact(AIDER, session_id="late", force=True)
    compactor.close()
    with pytest.raises(StoreError, match="closed"):
        compactor.recall("late")


@pytest.mark.parametrize("awaiting", [False, True])
def test_one_compact_call_closes_the_store_it_opened(tmp_path: Path, awaiting: bool) -> None:
    path = tmp_path / "once.db"
    options: dict[str, Any] = {"model": "gpt-4o", "store": path, "session_id": "s", "force": True}
    if awaiting:
        result = asyncio.run(synopsis.acompact(AIDER, environ={}, **options))
    else:
        result = synopsis.compact(AIDER, environ={}, **options)
    assert result.offloaded
    assert _open_files(path) == 0
    with SQLiteStore(path) as store:
        assert [m.id for m in store.recall("s")] == list(result.offloaded)
