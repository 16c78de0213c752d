"""Shared fixtures for the token tests: the bundled example transcripts, decoded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from synopsis.formats import openai_chat

if TYPE_CHECKING:
    from synopsis.messages import Message

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "examples" / "transcripts"


def load_transcripts() -> dict[str, tuple[Message, ...]]:
    out: dict[str, tuple[Message, ...]] = {}
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        out[path.stem] = openai_chat.decode(items)
    return out


@pytest.fixture(scope="session")
def transcripts() -> dict[str, tuple[Message, ...]]:
    found = load_transcripts()
    if not found:
        pytest.skip("examples/transcripts is not present (an sdist or a partial checkout)")
    return found
