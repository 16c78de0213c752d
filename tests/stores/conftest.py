"""The store under test: every contract test runs against each bundled store, and against a
SQLite store closed and reopened from its file between writing and reading."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from synopsis.stores import MemoryStore, SQLiteStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from synopsis.stores._base import StoreBase

KINDS = ["memory", "sqlite", "sqlite-reopened"]


class Harness:
    """``store`` is written to; :meth:`reader` gives the store to read back from (for the
    reopened kind, a new store on the same file, so reads come from disk)."""

    def __init__(self, kind: str, path: Path) -> None:
        self.kind = kind
        self.path = path
        self.store: StoreBase = MemoryStore() if kind == "memory" else SQLiteStore(path)

    def reader(self) -> StoreBase:
        if self.kind == "sqlite-reopened":
            self.store.close()
            self.store = SQLiteStore(self.path)
        return self.store


@pytest.fixture(params=KINDS)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    h = Harness(request.param, tmp_path / "synopsis.db")
    yield h
    h.store.close()
