"""Anthropic's context management through the proxy (``context_management="emulate"``): the
real Anthropic SDK's beta ``messages`` with each edit, streamed and not, in front of the fake
upstream. The upstream gets a valid request without the field or its betas; the client gets
``applied_edits`` and the ``compaction`` block, as the API documents them."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

import anthropic
import pytest

from synopsis.messages import is_summary_text
from synopsis.proxy import create_app
from synopsis.testing.server import FakeLLMServer
from tests.proxy.native_histories import (
    BETA,
    COMPACT_BETA,
    MODEL,
    OTHER_BETA,
    SYSTEM,
    TOOLS,
    assert_valid,
    blocks_of,
    result_texts,
    thinking_history,
    tool_history,
)
from tests.proxy.sdk_clients import TEXT, answer, anthropic_client
from tests.proxy.servers import Served

if TYPE_CHECKING:
    from collections.abc import Iterator

    import httpx2

    from synopsis.testing.server import Recorded


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(default=answer) as server:
        yield server


@pytest.fixture(scope="module")
def served(upstream: FakeLLMServer) -> Iterator[Served]:
    app = create_app(
        upstream_openai=upstream.root,
        upstream_anthropic=upstream.root,
        environ={},
        context_management="emulate",
    )
    with Served(app) as server:
        yield server


@pytest.fixture
def client(served: Served, upstream: FakeLLMServer) -> Iterator[anthropic.Anthropic]:
    upstream.requests.clear()
    with anthropic_client(served) as made:
        yield made


def _create(
    client: anthropic.Anthropic,
    messages: list[dict[str, Any]],
    edits: list[dict[str, Any]],
    *,
    session: str,
    stream: bool = False,
    betas: tuple[str, ...] = (BETA, OTHER_BETA),
) -> Any:
    options: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 256,
        "system": SYSTEM,
        "tools": TOOLS,
        "messages": messages,
        "betas": list(betas),
        "context_management": {"edits": edits},
        "extra_headers": {"x-synopsis-session": session},
    }
    if not stream:
        return client.beta.messages.create(**options)
    with client.beta.messages.stream(**options) as events:
        return events.get_final_message()


def _edits(edits: list[dict[str, Any]]) -> Any:
    return {"edits": edits}


def _only(upstream: FakeLLMServer) -> Recorded:
    (recorded,) = upstream.requests
    assert_valid(recorded.body)
    betas = recorded.headers.get("anthropic-beta", "")
    assert BETA not in betas
    assert COMPACT_BETA not in betas
    return recorded


# -- clear_tool_uses_20250919 ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_clear_tool_uses(
    client: anthropic.Anthropic, upstream: FakeLLMServer, served: Served, *, stream: bool
) -> None:
    history = tool_history(6, names=("bash", "bash", "grep"))
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 1000},
        "keep": {"type": "tool_uses", "value": 2},
        "clear_at_least": {"type": "input_tokens", "value": 100},
        "exclude_tools": ["grep"],
        "clear_tool_inputs": True,
    }
    session = f"clear-{stream}"
    answer = _create(client, history, [edit], session=session, stream=stream)
    recorded = _only(upstream)
    assert recorded.headers["anthropic-beta"] == OTHER_BETA
    texts = result_texts(recorded.body["messages"])
    # The two newest outputs stay (uses 4 and 5), and grep's (2 and 5): 0, 1 and 3 are cleared.
    assert [t.startswith("[synopsis: cleared") for t in texts] == [1, 1, 0, 1, 0, 0]
    assert texts[4:] == result_texts(history)[4:]
    assert answer.content[0].text == TEXT
    (applied,) = answer.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919"
    assert applied.cleared_tool_uses == 3
    assert applied.cleared_input_tokens > 1000
    originals = served.state.compactors.store.recall(f"{session}:clear")
    recalled = result_texts([json.loads(o.data) for o in originals if o.role == "user"])
    assert set(recalled) >= {result_texts(history)[i] for i in (0, 1, 3)}


def test_below_the_trigger_nothing_is_cleared(
    client: anthropic.Anthropic, upstream: FakeLLMServer
) -> None:
    history = tool_history(3)
    edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 4}}
    answer = _create(client, history, [edit], session="below")
    assert _only(upstream).body["messages"] == history
    assert answer.context_management.applied_edits == []


def test_clear_at_least_not_met_leaves_the_history(
    client: anthropic.Anthropic, upstream: FakeLLMServer
) -> None:
    history = tool_history(4)
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 1},
        "clear_at_least": {"type": "input_tokens", "value": 10**6},
    }
    answer = _create(client, history, [edit], session="at-least")
    assert _only(upstream).body["messages"] == history
    assert answer.context_management.applied_edits == []


# -- clear_thinking_20251015 ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_clear_thinking(
    client: anthropic.Anthropic, upstream: FakeLLMServer, *, stream: bool
) -> None:
    history = thinking_history(3)
    edits: list[dict[str, Any]] = [
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
        {"type": "clear_tool_uses_20250919"},  # under its default trigger: not applied
    ]
    answer = _create(client, history, edits, session=f"think-{stream}", stream=stream)
    sent = _only(upstream).body["messages"]
    thought = [any(b["type"] == "thinking" for b in blocks_of(m)) for m in sent]
    # Of four thinking turns the newest two keep theirs, the current tool loop's among them.
    assert thought == [False, False, False, False, False, True, False, True, False]
    (applied,) = answer.context_management.applied_edits
    assert (applied.type, applied.cleared_thinking_turns) == ("clear_thinking_20251015", 2)
    assert applied.cleared_input_tokens > 0


def test_keep_all_thinking(client: anthropic.Anthropic, upstream: FakeLLMServer) -> None:
    history = thinking_history(2)
    answer = _create(
        client, history, [{"type": "clear_thinking_20251015", "keep": "all"}], session="all"
    )
    assert _only(upstream).body["messages"] == history
    assert answer.context_management.applied_edits == []


# -- compact_20260112 -------------------------------------------------------------------------


def _compact(pause: bool) -> dict[str, Any]:
    return {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": 2000},
        "instructions": "Keep every module name.",
        "pause_after_compaction": pause,
    }


@pytest.mark.parametrize("stream", [False, True])
def test_compaction_and_its_round_trip(
    client: anthropic.Anthropic, upstream: FakeLLMServer, *, stream: bool
) -> None:
    history = [*tool_history(5), {"role": "assistant", "content": "Five modules."}]
    history.append({"role": "user", "content": "Which one is largest?"})
    answer = _create(
        client, history, [_compact(pause=False)], session=f"compact-{stream}", stream=stream,
        betas=(COMPACT_BETA,),
    )  # fmt: skip
    block, text = answer.content
    assert block.type == "compaction"
    assert is_summary_text(block.content)
    assert text.text == TEXT
    assert answer.stop_reason == "end_turn"
    first = _only(upstream).body["messages"]
    assert "anthropic-beta" not in upstream.requests[0].headers
    assert first[0]["content"] == block.content
    assert first[-1] == history[-1]  # the question being answered stays whole
    assert len(first) < len(history)

    # The client sends the block back: the upstream gets the summary, never what it replaced.
    upstream.requests.clear()
    again: list[Any] = [
        *history,
        {"role": "assistant", "content": [b.to_dict() for b in answer.content]},
    ]
    again.append({"role": "user", "content": "Thanks."})
    _create(client, again, [_compact(pause=False)], session=f"compact-{stream}")
    second = _only(upstream).body["messages"]
    assert second[0] == {"role": "user", "content": [{"type": "text", "text": block.content}]}
    assert second[1:] == [
        *first[1:],
        {"role": "assistant", "content": [{"type": "text", "text": TEXT}]},
        {"role": "user", "content": "Thanks."},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_pause_after_compaction(
    client: anthropic.Anthropic, upstream: FakeLLMServer, *, stream: bool
) -> None:
    history = tool_history(5)
    answer = _create(
        client, history, [_compact(pause=True)], session=f"pause-{stream}", stream=stream
    )
    assert upstream.requests == []
    assert answer.stop_reason == "compaction"
    (block,) = answer.content
    assert is_summary_text(block.content)
    assert answer.usage.input_tokens == 0
    assert answer.context_management.applied_edits == []

    # Resumed as the docs say: the block appended as an assistant message, sent again.
    again = [*history, {"role": "assistant", "content": [block.to_dict()]}]
    _create(client, again, [_compact(pause=True)], session=f"pause-{stream}")
    sent = _only(upstream).body["messages"]
    assert is_summary_text(sent[0]["content"][0]["text"])
    assert sent[-1] == history[-1]
    assert all(m not in sent for m in history[1:-2])


def test_a_history_with_nothing_to_summarize_is_not_compacted(
    client: anthropic.Anthropic, upstream: FakeLLMServer
) -> None:
    history = [{"role": "user", "content": "Hello."}]
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 0}}
    answer = _create(client, history, [edit], session="nothing")
    assert _only(upstream).body["messages"] == history
    assert [b.type for b in answer.content] == ["text"]


def test_a_failed_compaction_block_is_a_no_op(
    client: anthropic.Anthropic, upstream: FakeLLMServer
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Hello."},
        {"role": "assistant", "content": [{"type": "compaction", "content": None}]},
        {"role": "assistant", "content": "Hi."},
        {"role": "user", "content": "Bye."},
    ]
    _create(client, history, [], session="failed-block")
    assert _only(upstream).body["messages"] == [history[0], history[2], history[3]]


# -- what cannot be emulated ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"type": "clear_everything_20300101"}, "not 'clear_everything_20300101'"),
        (
            {"type": "compact_20260112", "trigger": {"type": "tool_uses", "value": 3}},
            "trigger.type must be input_tokens",
        ),
        (
            {"type": "clear_tool_uses_20250919", "clear_tool_inputs": ["bash"]},
            "not a list of tools",
        ),
    ],
)
def test_refused_in_anthropics_shape(
    client: anthropic.Anthropic, upstream: FakeLLMServer, edit: dict[str, Any], said: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as raised:
        _create(client, tool_history(1), [edit], session="refused")
    assert raised.value.status_code == 400
    body = raised.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert said in body["error"]["message"]
    assert upstream.requests == []


# -- what is left alone ----------------------------------------------------------------------------


def test_a_request_without_the_fields_goes_on_byte_for_byte(
    served: Served, upstream: FakeLLMServer
) -> None:
    upstream.requests.clear()
    sent: list[httpx2.Request] = []
    # A compaction block too: without the field the API does not read it, nor does the proxy.
    block = {"role": "assistant", "content": [{"type": "compaction", "content": "Earlier."}]}
    history = [*tool_history(2), block, {"role": "user", "content": "Go on."}]
    with anthropic_client(served, sent) as plain:
        plain.messages.create(model=MODEL, max_tokens=64, messages=history)
    (recorded,) = upstream.requests
    assert recorded.raw == sent[0].content


def test_count_tokens_applies_the_clearing_not_the_compaction(
    client: anthropic.Anthropic, upstream: FakeLLMServer
) -> None:
    history = tool_history(5)
    edits = [
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1}},
        _compact(pause=True),
    ]
    counted = client.beta.messages.count_tokens(
        model=MODEL, messages=history, betas=[BETA], context_management=_edits(edits)
    )
    assert counted.input_tokens > 0
    (recorded,) = upstream.requests
    assert recorded.path == "/v1/messages/count_tokens"
    assert "context_management" not in recorded.body
    texts = result_texts(recorded.body["messages"])
    assert sum(t.startswith("[synopsis: cleared") for t in texts) == 2


def test_pass_through_forwards_untouched(upstream: FakeLLMServer) -> None:
    app = create_app(
        upstream_openai=upstream.root,
        upstream_anthropic=upstream.root,
        environ={},
        context_management="pass",
    )
    with contextlib.ExitStack() as stack:
        served = stack.enter_context(Served(app))
        upstream.requests.clear()
        sent: list[httpx2.Request] = []
        made = stack.enter_context(anthropic_client(served, sent))
        edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1}}
        answer = _create(made, tool_history(4), [edit], session="pass")
    (recorded,) = upstream.requests
    assert recorded.raw == sent[0].content
    assert recorded.headers["anthropic-beta"] == f"{BETA},{OTHER_BETA}"
    assert answer.context_management is None


def test_on_demand_compaction_is_refused_and_count_tokens_ignores_it(
    client: anthropic.Anthropic, upstream: FakeLLMServer
) -> None:
    upstream.requests.clear()
    on_demand = {"compaction": {"type": "summarize"}}
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(
            model=MODEL,
            max_tokens=64,
            messages=tool_history(1),
            extra_body=on_demand,
            extra_headers={"anthropic-beta": "compact-2026-09-04"},
        )
    body = raised.value.body
    assert isinstance(body, dict)
    assert body["error"]["type"] == "invalid_request_error"
    assert "compact-2026-09-04" in body["error"]["message"]
    assert upstream.requests == []
    counted = client.messages.count_tokens(
        model=MODEL, messages=tool_history(1), extra_body=on_demand
    )
    assert counted.input_tokens > 0
    (recorded,) = upstream.requests
    assert "compaction" not in recorded.body
