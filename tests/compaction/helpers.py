"""Shared pieces for the pipeline tests: bundled transcripts, a compactor, its drivers."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synopsis.compaction import CompactionResult, Compactor
from synopsis.formats import decode, encode
from synopsis.stores import Store

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.events import Event

TRANSCRIPTS = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "transcripts").glob("*.jsonl")
)


def load_items(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def in_format(items: list[dict[str, Any]], fmt: str) -> tuple[list[Any], Any]:
    """A transcript (OpenAI chat items) in ``fmt``: its items and top-level system."""
    if fmt == "openai":
        return items, None
    wire = encode(decode(items, "openai").messages, fmt)  # type: ignore[arg-type]
    return wire.messages, wire.system


def make(**options: Any) -> Compactor:
    """A compactor at a 4,000-token window that compacts the aider transcript (2,232 tokens at
    a 50% trigger) and ignores the process's ``SYNOPSIS_*`` variables."""
    base: dict[str, Any] = {
        "model": "gpt-4o",
        "context_window": 4000,
        "trigger": 0.5,
        "reset_ratio": 0.4,
        "environ": {},
    }
    base.update(options)
    return Compactor(**base)


def run(compactor: Compactor, data: Any, **options: Any) -> CompactionResult:
    """``compactor.compact``, checking that the caller's input is not mutated."""
    snapshot = copy.deepcopy(data)
    result = compactor.compact(data, **options)
    assert data == snapshot
    return result


def arun(compactor: Compactor, data: Any, **options: Any) -> CompactionResult:
    """``compactor.acompact`` in an event loop of its own, with the same check."""
    snapshot = copy.deepcopy(data)
    result = asyncio.run(compactor.acompact(data, **options))
    assert data == snapshot
    return result


def kinds(events: Sequence[Event]) -> list[str]:
    return [type(e).__name__ for e in events]


def store_of(compactor: Compactor) -> Store:
    """The compactor's blocking store (every compactor these tests read back has one)."""
    store = compactor.setup.store
    assert isinstance(store, Store), store
    return store
