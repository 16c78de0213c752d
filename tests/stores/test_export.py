"""The Markdown running log of a session's offloaded history."""

from __future__ import annotations

from synopsis.messages import Role
from synopsis.stores import (
    Compaction,
    MemoryStore,
    SessionState,
    SQLiteStore,
    StoredMessage,
    export_markdown,
)
from tests.stores.helpers import compaction, offload, record, stored


def test_one_section_per_compaction_in_order() -> None:
    store = MemoryStore()
    first = record()
    second = record(first, minutes=90)
    store.save(
        compaction(
            first,
            [
                stored(1, "it fails on import", compaction=first.id),
                stored(0, "Please analyze the codebase...", compaction=first.id),
            ],
        )
    )
    store.save(
        compaction(
            second,
            [
                stored(
                    2,
                    "I'll start by reading\nthe main files...",
                    compaction=second.id,
                    role=Role.ASSISTANT,
                )
            ],
        )
    )
    assert export_markdown(store, "s1") == (
        "# Session s1\n\n"
        "## Summarized at 2025-06-15T10:30:00+00:00\n\n"
        "[user]: Please analyze the codebase...\n\n"
        "[user]: it fails on import\n\n"
        "## Summarized at 2025-06-15T12:00:00+00:00\n\n"
        "[assistant]: I'll start by reading\nthe main files...\n"
    )


def test_an_unknown_session_gives_the_heading_alone() -> None:
    assert export_markdown(MemoryStore(), "nobody") == "# Session nobody\n"


def test_a_real_transcript_exports_every_message(tmp_path) -> None:
    saved, _ = offload("aider-census", 8)
    with SQLiteStore(tmp_path / "s.db") as store:
        store.save(saved)
        text = export_markdown(store, "s1")
    paragraphs = [p for p in text.split("\n\n") if p.startswith("[")]
    assert text.count("## Summarized at") == 1
    assert [p.split("]")[0][1:] for p in paragraphs] == ["user", "assistant"] * 4
    for message in saved.messages:
        assert f"[{message.role}]: {message.text}" in text


def test_a_compaction_that_only_reduced_has_its_own_section() -> None:
    store = MemoryStore()
    kept = StoredMessage(
        session_id="r",
        id="m1",
        position=0,
        role="tool",
        text="a very long log",
        sha256="0" * 64,
        format="openai",
        data='{"role": "tool"}',
        compaction_id="reduction-1",
    )
    store.save(Compaction("r", (), (kept,), SessionState("r")))
    text = export_markdown(store, "r")
    assert "## Reduced at " in text
    assert "[tool]: a very long log" in text
