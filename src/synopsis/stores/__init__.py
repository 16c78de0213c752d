"""Stores: where compaction puts what it replaces, so nothing is lost.

A store keeps, per session, the original messages a compaction summarized (append-only,
their wire items byte-identical), the chain of summary records, and the pipeline's state; it
recalls messages by id or position and searches their text with BM25. :class:`MemoryStore`
lives in the process; :class:`SQLiteStore` in one SQLite file (standard library only);
:class:`PostgresStore` in a PostgreSQL database that several processes and machines share
(the ``postgres`` extra), with a lock per session so one compactor at a time works on it.
:func:`recall_tool` and :func:`handle_recall` let the model look things up itself.

>>> from synopsis.stores import MemoryStore, Store, AsyncStore
>>> store = MemoryStore()
>>> isinstance(store, Store) and isinstance(store, AsyncStore)
True
>>> store.recall("no-such-session")
[]
"""

from __future__ import annotations

from synopsis.errors import StoreError
from synopsis.stores._open import is_postgres_url, open_store
from synopsis.stores._paths import data_dir, default_database_path
from synopsis.stores._query import MARK as SNIPPET_MARK  # how a snippet marks a match
from synopsis.stores.export import export_markdown
from synopsis.stores.memory import MemoryStore
from synopsis.stores.postgres import PostgresStore
from synopsis.stores.protocols import AsyncStore, LockingStore, Store
from synopsis.stores.records import (
    LAST_SUMMARY_CHARS,
    Compaction,
    SearchHit,
    SessionState,
    SessionStats,
    StoredMessage,
    wire_json,
)
from synopsis.stores.sqlite import SQLiteStore
from synopsis.stores.tool import RECALL_TOOL_NAME, ahandle_recall, handle_recall, recall_tool

__all__ = [
    "LAST_SUMMARY_CHARS",
    "RECALL_TOOL_NAME",
    "SNIPPET_MARK",
    "AsyncStore",
    "Compaction",
    "LockingStore",
    "MemoryStore",
    "PostgresStore",
    "SQLiteStore",
    "SearchHit",
    "SessionState",
    "SessionStats",
    "Store",
    "StoreError",
    "StoredMessage",
    "ahandle_recall",
    "data_dir",
    "default_database_path",
    "export_markdown",
    "handle_recall",
    "is_postgres_url",
    "open_store",
    "recall_tool",
    "wire_json",
]
