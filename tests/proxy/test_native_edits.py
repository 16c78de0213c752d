"""The pieces of Anthropic's context management as the proxy does it, without a server: the
edits read and refused, the thinking and tool-output clearing on any history (properties),
the compaction blocks a client sends back, and the stream events rewritten."""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.responses import Response

from synopsis.compaction import Compactor
from synopsis.formats import encode
from synopsis.proxy import create_app
from synopsis.proxy.compactors import Compactors
from synopsis.proxy.native_answers import answered
from synopsis.proxy.native_anthropic import (
    Native,
    clearing,
    emulates,
    expanded,
    thinking_cleared,
)
from synopsis.proxy.native_edits import (
    ClearThinking,
    ClearToolUses,
    Compact,
    Refused,
    read_edits,
)
from synopsis.validation import validate
from tests.strategies import valid_history

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from synopsis.messages import Message

# -- reading the edits ------------------------------------------------------------------------


def test_defaults_are_the_documented_ones() -> None:
    edits = read_edits(
        {
            "edits": [
                {"type": "clear_thinking_20251015"},
                {"type": "clear_tool_uses_20250919", "exclude_tools": None},
                {"type": "compact_20260112", "instructions": ""},
            ]
        }
    )
    assert edits == [
        ClearThinking(1),
        ClearToolUses("input_tokens", 100_000, 3, 0, (), inputs=False),
        Compact(150_000, None, pause=False),
    ]
    assert read_edits({}) == []
    keep_all = {"type": "clear_thinking_20251015", "keep": {"type": "all"}}
    assert read_edits({"edits": [keep_all]}) == [ClearThinking(None)]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ([], "must be an object"),
        ({"edits": [], "mode": 1}, "context_management.mode is not a field"),
        ({"edits": {}}, "edits must be a list"),
        ({"edits": ["clear"]}, "not 'clear'"),
        ({"edits": [{"type": "compact_20260112", "size": 1}]}, "edits.0.size is not a field"),
        (
            {"edits": [{"type": "compact_20260112"}, {"type": "compact_20260112"}]},
            "given twice",
        ),
        (
            {"edits": [{"type": "clear_tool_uses_20250919"}, {"type": "clear_thinking_20251015"}]},
            "must come first",
        ),
        (
            {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens"}}]},
            '{"type": ..., "value": N}',
        ),
        (
            {
                "edits": [
                    {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": True}}
                ]
            },
            "whole number >= 0, got True",
        ),
        (
            {"edits": [{"type": "clear_tool_uses_20250919", "exclude_tools": "bash"}]},
            "list of tool names",
        ),
        (
            {
                "edits": [
                    {
                        "type": "clear_thinking_20251015",
                        "keep": {"type": "thinking_turns", "value": 0},
                    }
                ]
            },
            "keep.value must be a whole number >= 1",
        ),
        ({"edits": [{"type": "compact_20260112", "instructions": 3}]}, "must be a string"),
        (
            {"edits": [{"type": "compact_20260112", "pause_after_compaction": "yes"}]},
            "true or false",
        ),
    ],
)
def test_what_cannot_be_emulated_is_refused(value: object, said: str) -> None:
    with pytest.raises(Refused, match=None) as raised:
        read_edits(value)
    assert said in str(raised.value)


def test_auto_emulates_for_every_upstream_but_anthropics_own() -> None:
    assert not emulates("auto", "https://api.anthropic.com")
    assert emulates("auto", "http://127.0.0.1:8080/v1")
    assert emulates("emulate", "https://api.anthropic.com")
    assert not emulates("pass", "http://127.0.0.1:8080")
    with pytest.raises(ValueError, match="context_management must be one of"):
        create_app(environ={}, context_management="sometimes")  # type: ignore[arg-type]


# -- the clearing edits always leave a request Anthropic accepts -----------------------------------


@given(valid_history("user"), st.one_of(st.none(), st.integers(1, 4)))
def test_thinking_clearing_keeps_the_history_valid(
    messages: list[Message], keep: int | None
) -> None:
    items = encode(messages, "anthropic").messages
    cleared, turns = thinking_cleared(items, keep)
    assert validate(cleared, "anthropic", format="anthropic") == []
    dropped = sum(1 for a, b in zip(items, cleared, strict=True) if a is not b)
    assert dropped == turns
    assert keep is not None or turns == 0


_COMPACTORS: dict[tuple[int, bool], Compactor] = {}
_SESSIONS = itertools.count()


@given(valid_history("user"), st.integers(0, 3), st.booleans())
def test_tool_clearing_keeps_the_history_valid(
    messages: list[Message], keep: int, inputs: bool
) -> None:
    wire = encode(messages, "anthropic")
    edit = ClearToolUses("tool_uses", 0, keep, 0, ("grep",), inputs=inputs)
    compactor = _COMPACTORS.get((keep, inputs))
    if compactor is None:
        compactor = _COMPACTORS[keep, inputs] = Compactor(
            model="claude-sonnet-4-6", store="memory", environ={}, **clearing(edit)
        )
    result = compactor.compact(
        wire.messages,
        system=wire.system,
        format="anthropic",
        force=True,
        session_id=f"p{next(_SESSIONS)}",
    )
    assert validate(result.messages, "anthropic", format="anthropic", system=result.system) == []


# -- the blocks a client sends back --------------------------------------------------------------


def _block(summary: str | None, **more: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "compaction", "content": summary, **more}]}


def test_a_block_without_what_it_kept_meets_the_next_message() -> None:
    # The client dropped what came before (the API allows it): the summary opens the next
    # user message, with the block's cache_control.
    items = [_block("S", cache_control={"type": "ephemeral"}), {"role": "user", "content": "Go"}]
    assert expanded(items) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "Go"},
            ],
        }
    ]


def test_messages_said_kept_are_kept_only_as_they_were() -> None:
    turn = [{"role": "user", "content": "Q"}]
    digest = "0" * 16
    for mark in ("synopsis:kept=1:" + digest, "synopsis:kept=x:", "other", None):
        items = [*turn, _block("S", encrypted_content=mark)]
        assert expanded(items) == [{"role": "user", "content": [{"type": "text", "text": "S"}]}]


def test_the_current_tool_loop_keeps_its_thinking() -> None:
    def thinking(i: int, call: str) -> dict[str, Any]:
        blocks = [
            {"type": "thinking", "thinking": f"t{i}", "signature": f"s{i}"},
            {"type": "tool_use", "id": call, "name": "grep", "input": {}},
        ]
        return {"role": "assistant", "content": blocks}

    def result(call: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call}]}

    items = [
        {"role": "user", "content": "Q"},
        thinking(0, "a"),
        result("a"),
        thinking(1, "b"),
        result("b"),
    ]
    assert thinking_cleared(items, 1) == (items, 0)


def test_a_block_with_no_summary_yet() -> None:
    native = Native()
    assert native.block() == {"type": "compaction", "content": None, "encrypted_content": None}


# -- the answer ---------------------------------------------------------------------------------


def _stream(chunks: list[bytes], native: Native) -> bytes:
    from starlette.responses import StreamingResponse  # noqa: PLC0415

    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    async def read() -> bytes:
        response = answered(native, StreamingResponse(body()))
        assert isinstance(response, StreamingResponse)
        return b"".join([bytes(c) async for c in response.body_iterator])  # type: ignore[arg-type]

    return asyncio.run(read())


def test_events_that_say_nothing_of_it_pass_as_they_came() -> None:
    native = Native(summary="S", kept="k")
    events = [
        b": a comment\n\n",
        b"event: x\ndata: not json\n\n",
        b'data: {"type":"content_block_delta"}\n\n',
        b'data: {"type":"ping"}\r\n\r\n',
        b"data: [DONE]",  # no end: what came last, as it came
    ]
    whole = b"".join(events)
    assert _stream([whole[:7], whole[7:40], whole[40:]], native) == whole


def test_answers_not_a_message_pass_as_they_came() -> None:
    native = Native()
    for response in (
        Response(b"{}", status_code=400),
        Response(b"not json", status_code=200),
        Response(b'{"content": "text"}', status_code=200),
    ):
        assert answered(native, response) is response
    rewritten = answered(native, Response(b'{"content": []}'))
    assert orjson.loads(rewritten.body) == {
        "content": [],
        "context_management": {"applied_edits": []},
    }


def test_variants_are_bounded() -> None:
    compactors = Compactors(environ={}, max_compactors=1)
    try:
        first = compactors.variant("claude-sonnet-4-6", keep="messages:0")
        assert compactors.variant("claude-sonnet-4-6", keep="messages:0") is first
        compactors.variant("claude-sonnet-4-6", keep="messages:1")
        assert compactors.variant("claude-sonnet-4-6", keep="messages:0") is not first
    finally:
        compactors.close()
