"""OpenAI's Responses compaction through the proxy (``context_management="emulate"``): the
real OpenAI SDK's ``responses.compact`` and ``context_management`` in front of the fake
upstream. The upstream gets valid requests without the field; the client gets a
``compaction`` item synopsis reads back, and the originals stay recallable."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import openai
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.responses import Response, StreamingResponse

from synopsis.messages import is_summary_text
from synopsis.proxy import create_app
from synopsis.proxy.native_anthropic import emulates
from synopsis.proxy.native_openai import MARK, Native, _canon, answered, expanded
from synopsis.testing.server import FakeLLMServer
from synopsis.validation import validate
from tests.proxy.sdk_clients import TEXT, answer, openai_client
from tests.proxy.servers import Served

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    import httpx2


MODEL = "gpt-4.1"
INSTRUCTIONS = "You are a careful agent."
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "name": "bash", "description": "run", "parameters": {"type": "object"}}
]


def history(uses: int) -> list[Any]:
    """A task, then ``uses`` function calls with long outputs: an agent mid-loop."""
    out: list[Any] = [{"role": "user", "content": "List every module, then sum up."}]
    for i in range(uses):
        args = json.dumps({"cmd": f"ls {i}"})
        out.append({"type": "function_call", "call_id": f"c{i}", "name": "bash", "arguments": args})
        listing = "\n".join(f"src/module_{i}/file_{j}.py: line {j}" for j in range(60))
        out.append({"type": "function_call_output", "call_id": f"c{i}", "output": listing})
    return out


def assert_valid(body: dict[str, Any]) -> None:
    assert "context_management" not in body
    assert not [i for i in body["input"] if isinstance(i, dict) and i.get("type") == "compaction"]
    problems = validate(body["input"], "responses", format="responses")
    assert problems == []


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(default=answer) as server:
        yield server


def _served(upstream: FakeLLMServer, mode: str) -> Served:
    app = create_app(
        upstream_openai=upstream.root,
        upstream_anthropic=upstream.root,
        environ={},
        context_management=mode,  # type: ignore[arg-type]
    )
    return Served(app)


@pytest.fixture(scope="module")
def served(upstream: FakeLLMServer) -> Iterator[Served]:
    with _served(upstream, "emulate") as server:
        yield server


@pytest.fixture
def sent() -> list[httpx2.Request]:
    return []


@pytest.fixture
def client(
    served: Served, upstream: FakeLLMServer, sent: list[httpx2.Request]
) -> Iterator[openai.OpenAI]:
    upstream.requests.clear()
    with openai_client(served, sent) as made:
        yield made


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, list):
        return "".join(b["text"] for b in content)
    return content if isinstance(content, str) else ""


def _mark(item: dict[str, Any]) -> dict[str, Any]:
    content = item["encrypted_content"]
    assert content.startswith(MARK)
    found: dict[str, Any] = json.loads(content.removeprefix(MARK))
    return found


def _compact(client: openai.OpenAI, items: list[Any], session: str) -> Any:
    return client.responses.compact(
        model=MODEL,
        input=items,
        instructions=INSTRUCTIONS,
        extra_headers={"x-synopsis-session": session},
    )


# -- POST /v1/responses/compact ------------------------------------------------------------------


def test_compact_answers_a_window_synopsis_reads_back(
    client: openai.OpenAI, upstream: FakeLLMServer, served: Served
) -> None:
    items = history(8)
    compacted = _compact(client, items, "compact")
    assert compacted.object == "response.compaction"
    assert compacted.usage.input_tokens > compacted.usage.output_tokens > 0
    *kept, item = [o.model_dump(exclude_unset=True) for o in compacted.output]
    assert item["type"] == "compaction"
    assert item["id"].startswith("cmp_")
    mark = _mark(item)
    assert is_summary_text(mark["summary"])
    assert mark["kept"] == len(kept)
    assert mark["covers"] > 0
    # What synopsis kept whole is the client's newest items, as they were.
    assert kept == items[len(items) - len(kept) :]
    assert upstream.requests == []  # a summary of synopsis's own: no upstream call
    # The originals are in the store, under the session the item names.
    originals = served.state.compactors.store.recall(mark["session"])
    recalled = {json.loads(o.data).get("output") for o in originals}
    assert items[2]["output"] in recalled

    # The next turn, the compacted window sent back: the upstream reads the summary.
    turn = [*kept, item, {"role": "user", "content": "And now?"}]
    reply = client.responses.create(model=MODEL, input=turn, instructions=INSTRUCTIONS)
    assert reply.output_text == TEXT
    (recorded,) = upstream.requests
    assert_valid(recorded.body)
    forwarded = recorded.body["input"]
    assert forwarded[0] == {"role": "user", "content": mark["summary"]}
    assert forwarded[1:] == [*kept, turn[-1]]


def test_a_window_changed_by_the_client_loses_what_it_kept(
    client: openai.OpenAI, upstream: FakeLLMServer
) -> None:
    compacted = _compact(client, history(8), "changed")
    *kept, item = [o.model_dump(exclude_unset=True) for o in compacted.output]
    assert kept
    changed = [{"role": "user", "content": "Something else."}, item]
    client.responses.create(model=MODEL, input=changed)
    (recorded,) = upstream.requests
    assert_valid(recorded.body)
    assert recorded.body["input"] == [expanded([item])[0]]


def test_compact_after_compact_summarizes_the_summary(
    client: openai.OpenAI, upstream: FakeLLMServer
) -> None:
    first = _compact(client, history(8), "twice")
    window = [o.model_dump(exclude_unset=True) for o in first.output]
    window += history(6)[1:]
    second = _compact(client, window, "twice")
    *_, item = [o.model_dump(exclude_unset=True) for o in second.output]
    assert is_summary_text(_mark(item)["summary"])
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"input": [{"role": "user", "content": "hi"}]}, "nothing synopsis can summarize"),
        (
            {"input": [{"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA"}]},
            "OpenAI's own",
        ),
        ({"input": [{"type": "compaction_trigger"}]}, "compaction_trigger"),
        (
            {"input": [{"type": "compaction", "id": "c", "encrypted_content": MARK + "{"}]},
            "not a compaction item synopsis wrote",
        ),
        (
            {"input": [{"type": "compaction", "id": "c", "encrypted_content": MARK + "[1]"}]},
            "not a compaction item synopsis wrote",
        ),
    ],
)
def test_compact_refuses_what_it_cannot_do(
    client: openai.OpenAI, upstream: FakeLLMServer, body: dict[str, Any], says: str
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.post("/responses/compact", body={"model": MODEL, **body}, cast_to=object)
    assert says in raised.value.message
    assert upstream.requests == []


# -- context_management on /v1/responses ---------------------------------------------------------


def _managed(threshold: Any) -> list[Any]:
    return [{"type": "compaction", "compact_threshold": threshold}]


def test_over_the_threshold_the_answer_carries_the_item(
    client: openai.OpenAI, upstream: FakeLLMServer, served: Served
) -> None:
    items = history(8)
    reply = client.responses.create(
        model=MODEL,
        input=items,
        instructions=INSTRUCTIONS,
        tools=TOOLS,  # type: ignore[arg-type]
        context_management=_managed(1000),
        extra_headers={"x-synopsis-session": "managed"},
    )
    (recorded,) = upstream.requests
    assert_valid(recorded.body)
    assert recorded.body["instructions"] == INSTRUCTIONS
    assert len(recorded.body["input"]) < len(items)
    item, *rest = [o.model_dump(exclude_unset=True) for o in reply.output]
    assert item["type"] == "compaction"
    assert reply.output_text == TEXT
    mark = _mark(item)
    forwarded = recorded.body["input"]
    assert mark["summary"] in [_text(i) for i in forwarded]
    originals = served.state.compactors.store.recall(mark["session"])
    assert items[2]["output"] in {json.loads(o.data).get("output") for o in originals}

    # Chained statelessly: the output appended to the input, and one more turn.
    upstream.requests.clear()
    turn = [*items, *[o.model_dump(exclude_unset=True) for o in reply.output]]
    turn.append({"role": "user", "content": "Go on."})
    client.responses.create(
        model=MODEL,
        input=turn,
        context_management=_managed(1_000_000),
        tools=TOOLS,  # type: ignore[arg-type]
    )
    (recorded,) = upstream.requests
    assert_valid(recorded.body)
    assert recorded.body["input"] == [*forwarded, *turn[len(items) + 1 :]]
    assert rest[0]["type"] == "message"


def test_under_the_threshold_only_the_field_is_taken_off(
    client: openai.OpenAI, upstream: FakeLLMServer, sent: list[httpx2.Request]
) -> None:
    items = history(2)
    reply = client.responses.create(model=MODEL, input=items, context_management=_managed(10**9))
    (recorded,) = upstream.requests
    assert [o.type for o in reply.output] == ["message"]
    body = orjson.loads(sent[0].content)
    del body["context_management"]
    assert recorded.body == body


def test_a_string_input_only_loses_the_field(
    client: openai.OpenAI, upstream: FakeLLMServer
) -> None:
    client.responses.create(model=MODEL, input="hi", context_management=_managed(1))
    (recorded,) = upstream.requests
    assert recorded.body == {"model": MODEL, "input": "hi"}


def test_a_stored_response_cannot_be_compacted(
    client: openai.OpenAI, upstream: FakeLLMServer
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(
            model=MODEL, input="hi", previous_response_id="resp_1", context_management=_managed(1)
        )
    assert "previous_response_id" in raised.value.message
    assert upstream.requests == []


def test_a_streamed_response_over_the_threshold_carries_the_item(
    client: openai.OpenAI, upstream: FakeLLMServer
) -> None:
    items = history(8)
    options: Any = {"model": MODEL, "input": items, "context_management": _managed(1000)}
    with client.responses.stream(**options) as stream:
        events = list(stream)
        final = stream.get_final_response()
    (recorded,) = upstream.requests
    assert_valid(recorded.body)
    assert len(recorded.body["input"]) < len(items)
    item, reply = final.output
    assert (item.type, reply.type) == ("compaction", "message")
    assert is_summary_text(_mark(item.model_dump())["summary"])
    assert final.output_text == TEXT
    numbers = [e.sequence_number for e in events]
    assert numbers == list(range(len(events)))
    added = [e for e in events if e.type == "response.output_item.added"]
    assert [(e.output_index, e.item.type) for e in added] == [(0, "compaction"), (1, "message")]
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"


async def _chunks(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def _rewrite(*chunks: bytes) -> bytes:
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": MARK + "{}"}
    response = StreamingResponse(_chunks(*chunks))
    out = answered(Native(item), response)
    assert isinstance(out, StreamingResponse)

    async def read() -> bytes:
        found = [c async for c in out.body_iterator]
        assert all(isinstance(c, bytes) for c in found)
        return b"".join(c for c in found if isinstance(c, bytes))

    return asyncio.run(read())


def test_a_stream_keeps_what_it_cannot_read() -> None:
    kept = b": ping\n\ndata: not json\n\ndata: [1]\n\n"
    assert _rewrite(kept[:7], kept[7:], b"data: {") == kept + b"data: {"


def test_a_stream_without_sequence_numbers_gets_the_item_from_zero() -> None:
    out = _rewrite(b'data: {"type": "response.created"}\n\n')
    events = [json.loads(line[6:]) for line in out.split(b"\n") if line.startswith(b"data: ")]
    assert [(e["type"], e.get("sequence_number")) for e in events] == [
        ("response.created", None),
        ("response.output_item.added", 1),
        ("response.output_item.done", 2),
    ]


@pytest.mark.parametrize(
    ("managed", "says"),
    [
        ({"type": "compaction"}, "must be"),
        ([{"type": "other"}], "not {'type': 'other'}"),
        ([{"type": "compaction", "compact_threshold": 5, "x": 1}], "context_management.0.x"),
        (_managed(None), "compact_threshold must be"),
        (_managed(True), "compact_threshold must be"),
    ],
)
def test_context_management_it_cannot_emulate_is_refused(
    client: openai.OpenAI, upstream: FakeLLMServer, managed: Any, says: str
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model=MODEL, input=history(1), context_management=managed)
    assert says in raised.value.message
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("status", "content"), [(500, b'{"output": []}'), (200, b"not json"), (200, b'{"id": 1}')]
)
def test_an_answer_it_cannot_add_to_comes_back_as_sent(status: int, content: bytes) -> None:
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": MARK + "{}"}
    response = Response(content, status_code=status)
    assert answered(Native(item), response) is response


def test_an_answer_gains_the_item_first(upstream: FakeLLMServer) -> None:
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": MARK + "{}"}
    response = Response(b'{"output": [{"type": "message"}]}', headers={"x-a": "1"})
    out = answered(Native(item), response)
    assert orjson.loads(out.body)["output"] == [item, {"type": "message"}]
    assert out.headers["x-a"] == "1"
    assert int(out.headers["content-length"]) == len(out.body)


# -- pass, and requests without these fields --------------------------------------------------


def test_without_these_fields_the_request_goes_on_byte_for_byte(
    client: openai.OpenAI, upstream: FakeLLMServer, sent: list[httpx2.Request]
) -> None:
    client.responses.create(model=MODEL, input=history(2), instructions=INSTRUCTIONS)
    (recorded,) = upstream.requests
    assert recorded.raw == sent[0].content


def test_pass_forwards_everything_untouched(upstream: FakeLLMServer) -> None:
    sent: list[httpx2.Request] = []
    foreign: Any = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA"}
    with _served(upstream, "pass") as served, openai_client(served, sent) as client:
        upstream.requests.clear()
        client.responses.create(
            model=MODEL,
            input=[foreign, {"role": "user", "content": "hi"}],
            context_management=_managed(1),
        )
        # The fake upstream knows no compact endpoint: its 404 comes back through.
        compact = {"model": MODEL, "input": history(8)}
        with pytest.raises(openai.NotFoundError):
            client.post("/responses/compact", body=compact, cast_to=object)
    first, second = upstream.requests
    assert first.raw == sent[0].content
    assert second.path == "/v1/responses/compact"
    assert second.raw == sent[1].content


def test_a_request_with_nothing_to_summarize_gets_no_item(
    client: openai.OpenAI, upstream: FakeLLMServer
) -> None:
    hi: Any = [{"role": "user", "content": "hi"}]
    reply = client.responses.create(model=MODEL, input=hi, context_management=_managed(1))
    (recorded,) = upstream.requests
    assert recorded.body == {"model": MODEL, "input": hi}
    assert [o.type for o in reply.output] == ["message"]


def test_a_string_input_without_the_field_goes_on_byte_for_byte(
    client: openai.OpenAI, upstream: FakeLLMServer, sent: list[httpx2.Request]
) -> None:
    client.responses.create(model=MODEL, input="hi")
    (recorded,) = upstream.requests
    assert recorded.raw == sent[0].content


def test_auto_emulates_unless_the_upstream_is_openai() -> None:
    assert emulates("auto", "http://localhost:8000/v1", "openai")
    assert not emulates("auto", "https://api.openai.com/v1", "openai")
    assert emulates("emulate", "https://api.openai.com/v1", "openai")
    assert not emulates("pass", "http://localhost:8000/v1", "openai")


# -- expanded, over any history -----------------------------------------------------------------

_ITEMS = st.lists(
    st.builds(
        lambda role, text: {"role": role, "content": text},
        st.sampled_from(["user", "assistant"]),
        st.text(max_size=20),
    ),
    max_size=8,
)


def _item(kept: list[Any], at: int, summary: str = "<synopsis-summary>s") -> dict[str, Any]:
    mark = {"summary": summary, "kept": len(kept), "at": at, "digest": _canon(kept)}
    return {"type": "compaction", "id": "cmp_1", "encrypted_content": MARK + json.dumps(mark)}


@given(before=_ITEMS, kept=_ITEMS, after=_ITEMS, data=st.data())
def test_expanded_keeps_exactly_what_the_item_kept(
    before: list[Any], kept: list[Any], after: list[Any], data: st.DataObject
) -> None:
    at = data.draw(st.integers(0, len(kept)))
    item = _item(kept, at)
    summary = {"role": "user", "content": "<synopsis-summary>s"}
    out = expanded([*before, *kept, item, *after])
    assert out == [*kept[:at], summary, *kept[at:], *after]
    # Ids and statuses a client drops or adds on replay do not matter.
    replayed = [{**k, "id": "x", "status": "completed"} for k in kept]
    assert len(expanded([*before, *replayed, item, *after])) == len(out)


@given(before=_ITEMS, kept=_ITEMS.filter(bool), after=_ITEMS)
def test_expanded_drops_what_the_client_changed(
    before: list[Any], kept: list[Any], after: list[Any]
) -> None:
    item = _item(kept, len(kept))
    changed = [*kept[:-1], {**kept[-1], "content": [kept[-1]["content"]]}]
    out = expanded([*before, *changed, item, *after])
    assert out == [{"role": "user", "content": "<synopsis-summary>s"}, *after]
    assert expanded([*before, *after]) == [*before, *after]


def test_auto_sends_openais_own_items_on_and_answers_compact(upstream: FakeLLMServer) -> None:
    """In front of a host that is not OpenAI's (it may be a gateway to it), OpenAI's own items
    go on as they came; the compact endpoint is synopsis's."""
    sent: list[httpx2.Request] = []
    foreign: Any = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA"}
    with _served(upstream, "auto") as served, openai_client(served, sent) as client:
        upstream.requests.clear()
        client.responses.create(model=MODEL, input=[foreign, {"role": "user", "content": "hi"}])
        compacted = client.responses.compact(model=MODEL, input=history(8))
    (recorded,) = upstream.requests
    assert recorded.raw == sent[0].content
    assert _mark(compacted.output[-1].model_dump())["kept"] == len(compacted.output) - 1
