"""Shared pieces for the pipeline tests: bundled transcripts, a counting summarizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synopsis.formats import decode, encode
from synopsis.summarizers import RuleBasedSummarizer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message
    from synopsis.summarizers import SummaryRecord

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


class Counting:
    """The rule-based summarizer, counting its calls."""

    def __init__(self) -> None:
        self.inner = RuleBasedSummarizer()
        self.calls: list[int] = []

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        self.calls.append(len(messages))
        return self.inner.summarize(
            messages, previous=previous, instructions=instructions, max_tokens=max_tokens
        )
