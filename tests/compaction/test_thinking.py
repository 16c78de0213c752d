"""Thinking blocks across a compaction (provider rules A6, A9, A10): earlier turns' blocks go,
the current turn's stay, unless the model has preserved thinking; the originals are kept."""

from __future__ import annotations

from typing import Any

from synopsis.compaction import Compactor
from synopsis.messages import (
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    content_hash,
)
from synopsis.stores import MemoryStore


def thinking(text: str) -> ReasoningPart:
    return ReasoningPart(text, signature=f"sig-{text}")


def history() -> list[Message]:
    out = [Message(Role.USER, (TextPart("Refactor the parser in src/parse.py " * 20),))]
    for i in range(8):
        out += [
            Message(Role.ASSISTANT, (thinking(f"plan {i}"), ToolCallPart(f"c{i}", "read", "{}"))),
            Message(Role.USER, (ToolResultPart(f"c{i}", f"contents of part {i} " * 80),)),
            Message(Role.ASSISTANT, (thinking(f"done {i}"), TextPart(f"Part {i} read."))),
            Message(Role.USER, (TextPart(f"Go on with part {i + 1}."),)),
        ]
    out += [Message(Role.ASSISTANT, (thinking("now"), ToolCallPart("cz", "read", "{}")))]
    return out


def run(**options: Any) -> tuple[list[Message], MemoryStore, list[Message]]:
    store = MemoryStore()
    given = history()
    c = Compactor(
        model="claude-sonnet-4-5",
        context_window=8_000,
        store=store,
        session_id="t",
        environ={},
        **options,
    )
    result = c.compact(given, format="synopsis", force=True)
    return result.messages, store, given


def blocks(messages: list[Message]) -> list[str]:
    return [p.text for m in messages for p in m.parts if isinstance(p, ReasoningPart)]


def test_only_the_current_turns_thinking_is_kept_and_the_rest_is_stored():
    out, store, given = run(provider="anthropic")
    assert blocks(out) == ["now"]
    assert out[-1] == given[-1]  # the running tool loop, verbatim
    stored = {m.sha256 for m in store.recall("t")}
    for message in given:
        if message.role is Role.ASSISTANT and blocks([message]) and message not in out:
            assert content_hash(message) in stored


def test_preserved_thinking_drops_every_block_after_the_edit():
    out, store, given = run(provider="anthropic", preserved_thinking=True)
    assert blocks(out) == []
    stored = {m.sha256 for m in store.recall("t")}
    assert content_hash(given[-1]) in stored  # the running turn's original, with its block


def test_other_providers_keep_thinking_as_it_was():
    out, _, given = run(provider="openai")
    kept = [m for m in out if m.role is Role.ASSISTANT]
    assert all(m in given for m in kept)
