"""The LangChain middleware's hooks called directly: options, threads, the install hint, and a
property: a history compacted and mapped back is LangChain's own messages, the kept ones the
very objects given, valid for OpenAI and round-tripping through LangChain's serializer."""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_from_dict,
    messages_to_dict,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.runtime import ExecutionInfo, Runtime

import synopsis
from synopsis import CompactionCompleted, Compactor, ConfigurationError, MemoryStore
from synopsis.adapters.langchain import SynopsisMiddleware, SynopsisRequestMiddleware
from tests.adapters.clearing import cleared, recalled

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentState

    from synopsis.events import Event

WINDOW = 3000


def runtime(thread_id: str | None) -> Runtime[Any]:
    return Runtime(
        execution_info=ExecutionInfo(
            checkpoint_id="cp", checkpoint_ns="", task_id="task", thread_id=thread_id
        )
    )


def state(messages: list[BaseMessage]) -> AgentState[Any]:
    return {"messages": messages}  # type: ignore[typeddict-item]


def rounds(n: int, *, start: int = 0, size: int = 120) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for k in range(start, start + n):
        out += [
            HumanMessage(f"run test {k}", id=f"h{k}"),
            AIMessage(
                "",
                tool_calls=[{"name": "bash", "args": {"cmd": f"pytest -k t{k}"}, "id": f"c{k}"}],
                id=f"a{k}",
                usage_metadata={
                    "input_tokens": 10 * k,
                    "output_tokens": 7,
                    "total_tokens": 10 * k + 7,
                },
                response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
            ),
            ToolMessage(f"t{k} " + "PASSED " * size, tool_call_id=f"c{k}", name="bash", id=f"r{k}"),
            AIMessage(f"step {k} done", id=f"d{k}"),
        ]
    return out


# -- options -----------------------------------------------------------------------------------


def test_options_make_the_compactor_or_take_one() -> None:
    made = SynopsisMiddleware(model="gpt-4o", context_window=WINDOW, session_id="s")
    assert made.compactor.setup.window == WINDOW
    assert isinstance(made.store, MemoryStore)  # a session id gives the Compactor a store
    assert made.compactor.remembered_sessions == 32
    many = SynopsisMiddleware(conversations=100)
    assert many.compactor.remembered_sessions == 100  # one fast path per thread it keeps
    compactor = Compactor(model="gpt-4o", context_window=WINDOW)
    given_one = SynopsisRequestMiddleware(compactor=compactor, conversations=100)
    assert given_one.compactor is compactor
    assert compactor.remembered_sessions == 32  # a Compactor given is left as it was
    assert given_one.store is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"compactor": Compactor(), "model": "gpt-4o"}, "not both"),
        ({"conversations": 0}, "at least 1"),
        ({"conversations": True}, "must be a whole number"),
        ({"conversations": "3"}, "must be a whole number"),
        ({"context_window": "big"}, "context_window"),
    ],
)
def test_wrong_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        SynopsisMiddleware(**options)


def test_the_module_names_its_extra_when_langchain_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # None in sys.modules makes an import fail; the submodules already loaded need it too.
    for name in [m for m in sys.modules if m == "langchain" or m.startswith("langchain.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "synopsis.adapters.langchain")
    with pytest.raises(ImportError, match=r'pip install "synopsis\[langchain\]"'):
        importlib.import_module("synopsis.adapters.langchain")


def test_importing_synopsis_does_not_import_langchain() -> None:
    code = (
        "import sys, synopsis, synopsis.adapters; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain', 'langchain_core', 'langgraph')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert out.stdout.strip() == "[]"


# -- the persistent hook -----------------------------------------------------------------------


def test_under_the_trigger_the_state_is_left_alone() -> None:
    middleware = SynopsisMiddleware(model="gpt-4o", context_window=WINDOW)
    history = rounds(1)
    assert middleware.before_model(state(history), runtime("t")) is None
    assert middleware.last is not None
    assert not middleware.last.compacted


def test_a_compaction_replaces_the_state_and_keeps_the_originals() -> None:
    events: list[Event] = []
    middleware = SynopsisMiddleware(
        model="gpt-4o", context_window=WINDOW, listeners=[events.append]
    )
    history = rounds(12)
    update = middleware.before_model(state(history), runtime("t"))
    assert update is not None
    remove, *new = update["messages"]
    assert isinstance(remove, RemoveMessage)
    assert remove.id == REMOVE_ALL_MESSAGES
    kept = [m for m in new if any(m is h for h in history)]
    made = [m for m in new if not any(m is h for h in history)]
    assert kept  # the recent rounds, as the very objects given
    assert kept[-1] is history[-1]
    assert len(made) == 1
    assert "<synopsis-summary" in str(made[0].content)
    assert any(isinstance(e, CompactionCompleted) for e in events)
    # What synopsis replaced is kept in the thread's session and comes back as LangChain
    # messages with their ids; the Compactor finds it by id too.
    recalled = middleware.recall("t")
    assert [m.id for m in recalled[:3]] == ["a0", "r0", "d0"]  # the task stays in the state
    assert recalled[0].tool_calls == history[1].tool_calls  # type: ignore[attr-defined]
    assert recalled[1].content == history[2].content
    assert {m.id for m in recalled} | {m.id for m in kept} == {m.id for m in history}
    assert middleware.compactor.recall("t", ids=["r0"])[0].role == "tool"
    assert middleware.compactor.search("t0", "t")
    # The next call, on the state the reducer made, compacts nothing more.
    after = add_messages(list[Any](history), update["messages"])
    assert middleware.before_model(state([*after, HumanMessage("next")]), runtime("t")) is None


def test_the_async_hook_does_what_the_blocking_one_does() -> None:
    blocking = SynopsisMiddleware(model="gpt-4o", context_window=WINDOW)
    awaiting = SynopsisMiddleware(model="gpt-4o", context_window=WINDOW)
    history = rounds(12)
    one = blocking.before_model(state(history), runtime("t"))
    two = asyncio.run(awaiting.abefore_model(state(history), runtime("t")))
    assert one is not None
    assert two is not None
    assert [m.content for m in one["messages"][1:]] == [m.content for m in two["messages"][1:]]


def test_each_thread_is_its_own_conversation() -> None:
    middleware = SynopsisMiddleware(model="gpt-4o", context_window=WINDOW)
    short, long = rounds(1), rounds(12, start=100)
    assert middleware.before_model(state(long), runtime("a")) is not None
    assert middleware.before_model(state(short), runtime("b")) is None
    assert middleware.recall("a")
    assert middleware.recall("b") == []


def test_without_a_thread_the_compactors_session_is_used() -> None:
    middleware = SynopsisMiddleware(model="gpt-4o", context_window=WINDOW, session_id="mine")
    assert middleware.before_model(state(rounds(12)), Runtime()) is not None
    assert middleware.compactor.recall("mine")
    assert [m.id for m in middleware.recall()] == [
        m.id for m in middleware.compactor.recall("mine")
    ]


def test_only_the_threads_used_last_keep_their_messages() -> None:
    middleware = SynopsisMiddleware(model="gpt-4o", context_window=WINDOW, conversations=2)
    for thread in ("a", "b", "a", "c"):
        middleware.before_model(state(rounds(1)), runtime(thread))
    # What each thread keeps is private; its bound is what this checks.
    assert list(middleware._threads) == ["a", "c"]


def test_the_clearing_strategy_makes_old_tool_messages_placeholders() -> None:
    """``strategy=("clear",)``, passed as any option: the oldest ``ToolMessage``s become
    placeholders that keep their message and call ids, the newest three stay whole, nothing is
    summarized, every other message is the object given, and the originals are recallable."""
    middleware = SynopsisMiddleware(model="gpt-4o", context_window=WINDOW, strategy=("clear",))
    given = rounds(10)
    update = middleware.before_model(state(given), runtime("t"))
    assert update is not None
    out = update["messages"][1:]
    assert len(out) == len(given)
    outputs = [m for m in out if isinstance(m, ToolMessage)]
    placeholders = [m for m in outputs if cleared(m.content)]
    assert placeholders == outputs[: len(placeholders)]  # the oldest
    assert 0 < len(placeholders) <= len(outputs) - 3
    originals = {m.id: m for m in given}
    for message in placeholders:
        original = originals[message.id]
        assert isinstance(original, ToolMessage)
        assert message.tool_call_id == original.tool_call_id
        assert json.dumps(original.content) in recalled(middleware.store, "t", str(message.content))
    made = {id(m) for m in placeholders}
    assert all(o is g for o, g in zip(out, given, strict=True) if id(o) not in made)


# -- the property ------------------------------------------------------------------------------

_TEXT = st.text(alphabet="abcdefgh xyz", min_size=1, max_size=40)


@st.composite
def histories(draw: st.DrawFn) -> list[BaseMessage]:
    """A LangChain history with what conversion could lose: ids, usage, response metadata,
    signed thinking blocks, several calls per turn, long tool results."""
    out: list[BaseMessage] = [HumanMessage(draw(_TEXT), id="h")]
    for k in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["tools", "text", "user"]))
        if kind == "user":
            out.append(HumanMessage(draw(_TEXT), id=f"u{k}"))
            continue
        content: str | list[str | dict[str, Any]] = draw(_TEXT)
        if draw(st.booleans()):
            content = [
                {"type": "thinking", "thinking": draw(_TEXT), "signature": f"sig{k}"},
                {"type": "text", "text": draw(_TEXT)},
            ]
        calls = draw(st.integers(1, 2)) if kind == "tools" else 0
        out.append(
            AIMessage(
                content,
                id=f"a{k}",
                tool_calls=[
                    {"name": "grep", "args": {"q": f"{k}.{j}"}, "id": f"c{k}.{j}"}
                    for j in range(calls)
                ],
                usage_metadata={"input_tokens": k, "output_tokens": 1, "total_tokens": k + 1},
                response_metadata={"model_name": "fake", "stop": draw(_TEXT)},
            )
        )
        for j in range(calls):
            size = draw(st.sampled_from([1, 30, 900]))
            out.append(
                ToolMessage(
                    f"{k}.{j} " + "found it " * size,
                    tool_call_id=f"c{k}.{j}",
                    name="grep",
                    id=f"r{k}.{j}",
                    artifact={"hits": size},
                )
            )
        if kind == "tools":
            out.append(AIMessage(draw(_TEXT), id=f"d{k}"))
    out.append(HumanMessage(draw(_TEXT), id="last"))
    return out


@given(histories())
def test_compacted_histories_are_langchain_messages_that_round_trip(
    history: list[BaseMessage],
) -> None:
    middleware = SynopsisMiddleware(model="gpt-4o", context_window=WINDOW)
    update = middleware.before_model(state(history), runtime("t"))
    out: list[BaseMessage] = history if update is None else update["messages"][1:]
    given_ids = {id(m) for m in history}
    made = [m for m in out if id(m) not in given_ids]
    if update is None:
        assert not made
    else:
        result = middleware.last
        assert result is not None
        # Only the summary and what the reductions shortened are new objects.
        summaries = [m for m in made if "<synopsis-summary" in str(m.content)]
        assert len(summaries) == (1 if result.compacted and result.record else 0)
        for m in made:
            assert m not in summaries or isinstance(m, HumanMessage)
            if isinstance(m, ToolMessage):  # a shortened result: same call, same id
                assert any(
                    isinstance(h, ToolMessage) and (h.tool_call_id, h.id) == (m.tool_call_id, m.id)
                    for h in history
                )
        # The reducer takes the update as the persistent hook gives it.
        assert add_messages(list[Any](history), update["messages"]) == out
    assert all(isinstance(m, BaseMessage) for m in out)
    assert synopsis.validate(convert_to_openai_messages(out), "openai", format="openai") == []
    assert messages_from_dict(messages_to_dict(out)) == out
