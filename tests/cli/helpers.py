"""The bundled transcripts the CLI tests read, and reading a JSONL file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRANSCRIPTS = Path(__file__).parent.parent.parent / "examples" / "transcripts"
AIDER = TRANSCRIPTS / "aider-census.jsonl"
CODEX = TRANSCRIPTS / "codex-compaction-config-change.jsonl"
DANGLING = TRANSCRIPTS / "openhands-ponylang-ponyc-4593.jsonl"
TAU = TRANSCRIPTS / "taubench-airline-task2-trial1.jsonl"


def lines(path: Path) -> list[Any]:
    """The items of a JSONL file, one per line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
