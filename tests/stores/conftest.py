"""The store under test: every contract test runs against each bundled store, and against a
SQLite or PostgreSQL store closed and reopened between writing and reading."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from synopsis.stores import MemoryStore, PostgresStore, SQLiteStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from synopsis.stores._base import StoreBase

KINDS = ["memory", "sqlite", "sqlite-reopened", "postgres", "postgres-reopened"]


class Harness:
    """``store`` is written to; :meth:`reader` gives the store to read back from (for the
    reopened kinds, a new store on the same file or database, so reads come from disk);
    :meth:`another` is a second, empty store of the same kind."""

    def __init__(self, kind: str, path: Path, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        self.path = path
        self._request = request
        self.url = request.getfixturevalue("postgres_url") if kind.startswith("postgres") else ""
        self.store: StoreBase = self._open(self.path, self.url)
        self._others: list[StoreBase] = []

    def _open(self, path: Path, url: str) -> StoreBase:
        if self.kind == "memory":
            return MemoryStore()
        if self.kind.startswith("sqlite"):
            return SQLiteStore(path)
        return PostgresStore(url)

    def reader(self) -> StoreBase:
        if self.kind.endswith("-reopened"):
            self.store.close()
            self.store = self._open(self.path, self.url)
        return self.store

    def another(self) -> StoreBase:
        url = self._request.getfixturevalue("server").create_database() if self.url else ""
        other = self._open(self.path.with_name("another.db"), url)
        self._others.append(other)
        return other

    def close(self) -> None:
        for store in (self.store, *self._others):
            store.close()


@pytest.fixture(params=KINDS)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    h = Harness(request.param, tmp_path / "synopsis.db", request)
    yield h
    h.close()
