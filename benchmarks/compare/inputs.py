"""The inputs every system gets: the bundled real transcripts, and long histories built from
them.

Long histories repeat the transcripts one after another behind a single system prompt. Each
repetition gets its own tool-call ids (a suffix per copy), so that a history of 100k messages
is what one long agent session looks like, not the same ten sessions with colliding ids; ids
that a transcript itself reuses stay reused, as they were recorded.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks.compare.systems import Items

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "examples" / "transcripts"


def load_transcripts() -> dict[str, Items]:
    """Each bundled transcript by file stem, in name order."""
    out: dict[str, Items] = {}
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        out[path.stem] = [json.loads(line) for line in lines if line.strip()]
    if not out:
        raise SystemExit(f"no transcripts under {TRANSCRIPTS}")
    return out


def observation_sessions() -> set[str]:
    """Transcripts whose manifest says the agent's observations come back as user turns."""
    path = TRANSCRIPTS / "manifest.json"
    if not path.exists():
        return set()
    entries = json.loads(path.read_text(encoding="utf-8"))
    return {
        e["id"]
        for e in entries
        if "observations as user turns" in str((e.get("meta") or {}).get("tool_format", ""))
    }


def leading_system(items: Items) -> int:
    """How many system messages open ``items``."""
    n = 0
    while n < len(items) and items[n].get("role") == "system":
        n += 1
    return n


def _renamed(item: dict[str, Any], suffix: str) -> dict[str, Any]:
    item = copy.deepcopy(item)
    for call in item.get("tool_calls") or ():
        call["id"] = f"{call['id']}{suffix}"
    if item.get("role") == "tool" and "tool_call_id" in item:
        item["tool_call_id"] = f"{item['tool_call_id']}{suffix}"
    return item


def _settled(items: Items) -> bool:
    """No tool call waiting for its result: the next message may be anybody's."""
    waiting: set[str] = set()
    for item in items:
        if item.get("role") == "tool":
            waiting.discard(item.get("tool_call_id", ""))
        for call in item.get("tool_calls") or ():
            waiting.add(call["id"])
    return not waiting


def build_history(transcripts: dict[str, Items], size: int) -> Items:
    """About ``size`` messages (a few fewer when ``size`` falls inside a tool exchange, which
    is left out so that any message may follow): one system prompt, then the transcripts'
    conversations over and over, each copy with its own tool-call ids."""
    bodies = [t[leading_system(t) :] for t in transcripts.values()]
    # A system message inside a conversation is not what long sessions carry; leave them out.
    bodies = [[i for i in b if i.get("role") != "system"] for b in bodies]
    for body in bodies:
        # A run cut mid-call is normal at the end of a session, not in the middle of one.
        while body and body[-1].get("tool_calls"):
            body.pop()
    first = next(t for t in transcripts.values() if leading_system(t))
    out: Items = [copy.deepcopy(first[0])]
    copy_no = 0
    while len(out) < size:
        for k, body in enumerate(bodies):
            out.extend(_renamed(i, f"~{copy_no}.{k}") for i in body)
        copy_no += 1
    out = out[:size]
    while not _settled(out):
        out.pop()
    return out


def next_item(transcripts: dict[str, Items], n: int) -> dict[str, Any]:
    """A fresh user message, the ``n``th of a run: what an agent loop appends between calls."""
    return {"role": "user", "content": f"Next step ({n}): carry on with the task."}
