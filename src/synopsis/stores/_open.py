"""A store from its name: what ``store=`` takes in settings, TOML, the environment and on
every command line."""

from __future__ import annotations

import os

from synopsis.errors import ConfigurationError
from synopsis.stores.memory import MemoryStore
from synopsis.stores.protocols import AsyncStore, Store
from synopsis.stores.sqlite import SQLiteStore

__all__ = ["POSTGRES_SCHEMES", "is_postgres_url", "open_store"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(value: object) -> bool:
    return isinstance(value, str) and value.lower().startswith(POSTGRES_SCHEMES)


def open_store(value: object) -> Store | AsyncStore | None:
    """``value`` as a store: a store object as it is; ``"memory"``; ``"sqlite"`` (the default
    file); a ``postgresql://`` URL (the ``postgres`` extra); else a SQLite file's path."""
    if value is None or isinstance(value, Store | AsyncStore):
        return value
    if value == "memory":
        return MemoryStore()
    if value == "sqlite":
        return SQLiteStore()
    if is_postgres_url(value):
        from synopsis.stores.postgres import PostgresStore  # noqa: PLC0415 - the postgres extra

        assert isinstance(value, str)
        return PostgresStore(value)
    if isinstance(value, str | os.PathLike):
        return SQLiteStore(value)
    raise ConfigurationError(
        "store must be a Store, 'memory', 'sqlite', a postgresql:// URL or a file path, "
        f"got {value!r}"
    )
