"""A store as an operator's page finds it: real compactions of bundled transcripts, request
records as a proxy writes them, and text planted to try the page's escaping."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from synopsis import Compactor
from synopsis.stores import SQLiteStore
from synopsis.stores.requests import RequestRecord

if TYPE_CHECKING:
    from synopsis.stores._base import StoreBase

TRANSCRIPTS = Path(__file__).parents[2] / "examples" / "transcripts"
PLANTED = '<script>window.__ran=1</script><img src=x onerror="window.__ran=2">'
"""Markup a page must show as text: in a session's name and in a message."""
WINDOW = 6000
CODING = "openhands-ponylang-ponyc-4588"
CHAT = "aider-census" + PLANTED
CLEARED = "cleared-only"


def transcript(name: str) -> list[dict[str, object]]:
    text = (TRANSCRIPTS / f"{name}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@dataclass
class Sample:
    store: StoreBase
    records: list[RequestRecord]
    sessions: list[str]


def _replay(
    store: StoreBase,
    session: str,
    messages: list[dict[str, object]],
    start: datetime,
    strategy: tuple[str, ...] = ("summarize",),
) -> list[RequestRecord]:
    """The session's requests as a client that keeps its own history sends them, one after
    each assistant turn, each compacted and recorded."""
    compactor = Compactor(
        model="gpt-4o-mini", context_window=WINDOW, store=store, strategy=strategy
    )
    records, history, at = [], list[dict[str, object]](), start
    try:
        for i, message in enumerate(messages):
            history.append(message)
            if message["role"] != "assistant" and i != len(messages) - 1:
                continue
            result = compactor.compact(history, session_id=session)
            at += timedelta(minutes=2)
            records.append(
                RequestRecord(
                    at=at,
                    session_id=session,
                    model="gpt-4o-mini",
                    route="/v1/chat/completions",
                    format="openai",
                    status=200,
                    messages_in=len(history),
                    tokens_before=result.tokens_before,
                    tokens_after=result.tokens_after,
                    compacted=result.compacted,
                    code=result.code,
                    ms_total=2.5,
                )
            )
    finally:
        compactor.close()
    return records


_MADE: list[tuple[Path, list[RequestRecord]]] = []
"""This process's first sample, which later ones copy: its compactions are the same each time,
and replaying them again cost each test that wants a store of its own a second."""


def build(path: Path) -> Sample:
    """A SQLite file with three compacted sessions (one whose name and first message hold
    markup, one compacted by clearing alone) and a failed request; a copy of the first one
    this process built."""
    if not _MADE:
        folder = Path(tempfile.mkdtemp(prefix="synopsis-ui-sample-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        made = _made(folder / "sample.db")
        made.store.close()  # its log written into the file: a copy holds everything
        _MADE.append((folder / "sample.db", made.records))
    template, records = _MADE[0]
    shutil.copyfile(template, path)
    return Sample(SQLiteStore(path), list(records), [CODING, CHAT, CLEARED])


def _made(path: Path) -> Sample:
    store = SQLiteStore(path)
    now = datetime.now(UTC)
    chat = transcript("aider-census")
    chat[0] = {**chat[0], "content": f"{PLANTED} {chat[0]['content']}"}
    records = _replay(store, CODING, transcript(CODING), now - timedelta(hours=5))
    records += _replay(store, CHAT, chat, now - timedelta(hours=3))
    records += _replay(
        store,
        CLEARED,
        transcript("sweagent-marshmallow-1867-fc"),
        now - timedelta(hours=2),
        strategy=("clear",),
    )
    failed = RequestRecord(
        at=now - timedelta(minutes=30),
        session_id=CODING,
        model="gpt-4o-mini",
        route="/v1/chat/completions",
        format="openai",
        status=400,
        messages_in=3,
        tokens_before=100,
        tokens_after=100,
        error="bad_request",
    )
    records.append(failed)
    store.save_requests(records)
    return Sample(store, records, [CODING, CHAT, CLEARED])
