"""The recall tool: its definition per provider, and the handler's answers to good and bad
calls (a bad call gets a sentence for the model, never an exception)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from synopsis.errors import ConfigurationError
from synopsis.stores import (
    RECALL_TOOL_NAME,
    MemoryStore,
    SQLiteStore,
    ahandle_recall,
    handle_recall,
    recall_tool,
)
from synopsis.stores.tool import MAX_LIMIT
from tests.stores.helpers import compaction, offload, record, stored

PROPERTIES = {"ids", "start", "stop", "query", "limit"}


def test_the_definition_in_each_providers_shape() -> None:
    chat = recall_tool()
    assert chat["type"] == "function"
    assert set(chat["function"]) == {"name", "description", "parameters"}
    assert chat["function"]["name"] == RECALL_TOOL_NAME == "recall_history"
    schema = chat["function"]["parameters"]
    assert schema["type"] == "object"
    assert set(schema["properties"]) == PROPERTIES
    assert schema["properties"]["ids"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": schema["properties"]["ids"]["description"],
    }
    assert schema["properties"]["limit"]["default"] == 10
    responses = recall_tool("responses")
    assert set(responses) == {"type", "name", "description", "parameters"}
    assert responses["parameters"] == schema
    anthropic = recall_tool("anthropic")
    assert set(anthropic) == {"name", "description", "input_schema"}
    assert anthropic["input_schema"] == schema
    json.dumps([chat, responses, anthropic])


def test_each_definition_is_a_fresh_copy() -> None:
    recall_tool()["function"]["parameters"]["properties"].clear()
    assert set(recall_tool()["function"]["parameters"]["properties"]) == PROPERTIES


def test_an_unknown_provider_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown provider 'gemini'"):
        recall_tool("gemini")  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path):
    saved, _ = offload("sweagent-marshmallow-1867-fc", 10)
    with SQLiteStore(tmp_path / "s.db") as opened:
        opened.save(saved)
        yield opened


def test_recall_by_ids_gives_the_original_items(store) -> None:
    messages = store.recall("s1")
    wanted = [messages[4].id, "nope", messages[2].id]
    out = json.loads(handle_recall(store, "s1", json.dumps({"ids": wanted})))
    assert [m["position"] for m in out["messages"]] == [2, 4]
    first = out["messages"][0]
    assert first == {
        "id": messages[2].id,
        "position": 2,
        "role": messages[2].role,
        "item": json.loads(messages[2].data),
    }
    assert out["not_found"] == ["nope"]
    assert "note" not in out


def test_a_bare_id_string_is_read_as_one_id(store) -> None:
    first = store.recall("s1")[0]
    out = json.loads(handle_recall(store, "s1", {"ids": first.id}))
    assert [m["id"] for m in out["messages"]] == [first.id]
    assert "not_found" not in out


def test_recall_by_range(store) -> None:
    out = json.loads(handle_recall(store, "s1", {"start": 3, "stop": 6}))
    assert [m["position"] for m in out["messages"]] == [3, 4, 5]
    assert "not_found" not in out
    empty = json.loads(handle_recall(store, "s1", {"start": 50}))
    assert empty["messages"] == []
    assert "Search with a query" in empty["note"]


def test_search_gives_ranked_hits(store) -> None:
    out = json.loads(handle_recall(store, "s1", '{"query": "TimeDelta serialization"}'))
    assert out["query"] == "TimeDelta serialization"
    hits = out["hits"]
    assert hits
    assert set(hits[0]) == {"id", "position", "role", "score", "snippet"}
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert "**" in hits[0]["snippet"]
    none = json.loads(handle_recall(store, "s1", {"query": "zzzqqq"}))
    assert none["hits"] == []
    assert "Try other words" in none["note"]


def test_a_search_asking_too_much_gets_the_cap() -> None:
    store = MemoryStore()
    summary = record()
    rows = [stored(i, f"word {i}", compaction=summary.id) for i in range(MAX_LIMIT + 5)]
    store.save(compaction(summary, rows))
    out = json.loads(handle_recall(store, "s1", {"query": "word", "limit": 1000}))
    assert len(out["hits"]) == MAX_LIMIT
    out = json.loads(handle_recall(store, "s1", {"query": "word", "limit": 3}))
    assert len(out["hits"]) == 3


def test_items_that_are_not_json_or_hold_a_lone_surrogate(store) -> None:
    summary = record()
    odd = replace(stored(0, "odd", compaction=summary.id, session="t"), data="not json {")
    lone = stored(1, "lone", compaction=summary.id, session="t", item={"c": "a\ud800"})
    store.save(compaction(summary, [odd, lone], session="t"))
    text = handle_recall(store, "t", {"start": 0})
    text.encode("utf-8")  # sendable
    out = json.loads(text)
    assert [m["item"] for m in out["messages"]] == ["not json {", {"c": "a\ud800"}]
    assert "\\ud800" in text


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object, not list"),
        ("", "Nothing asked"),
        ("  ", "Nothing asked"),
        ({}, "Nothing asked"),
        ({"id": "x"}, "Unknown argument(s): id"),
        ({"ids": [1]}, "`ids` must be a list"),
        ({"ids": {"a": 1}}, "`ids` must be a list"),
        ({"start": -1}, "`start` must be a whole number"),
        ({"stop": True}, "`stop` must be a whole number"),
        ({"start": 1.5}, "`start` must be a whole number"),
        ({"query": 3}, "`query` must be a string"),
        ({"query": "x", "limit": 0}, "`limit` must be a whole number of at least 1"),
        ({"query": "x", "limit": "5"}, "`limit` must be"),
        ({"query": "x", "ids": ["a"]}, "not both"),
        ({"query": "x", "stop": 3}, "not both"),
        ({"ids": ["a"], "start": 0}, "Recall with `ids` or with `start`/`stop`, not both"),
    ],
)
def test_bad_calls_get_a_sentence(store, arguments: object, says: str) -> None:
    text = handle_recall(store, "s1", arguments)  # type: ignore[arg-type]
    assert says in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert asyncio.run(ahandle_recall(store, "s1", arguments)) == text  # type: ignore[arg-type]


def test_the_async_handler_agrees(store) -> None:
    for arguments in ({"query": "marshmallow"}, {"start": 1, "stop": 3}, {"ids": ["x"]}):
        got = asyncio.run(ahandle_recall(store, "s1", arguments))
        assert got == handle_recall(store, "s1", arguments)
