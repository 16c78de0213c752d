"""The compared systems by name, each imported only when asked for (a peer's import is slow,
and a child process measures one system alone)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from benchmarks.compare.systems import System

MODULES = {
    "synopsis": "benchmarks.compare.synopsis_system",
    "langchain": "benchmarks.compare.peers.langchain_mw",
    "zrb": "benchmarks.compare.peers.zrb_split",
    "adk-deepagents": "benchmarks.compare.peers.adk_deepagents",
    "langmem": "benchmarks.compare.peers.langmem_sm",
    "langchain-clear": "benchmarks.compare.peers.langchain_editing",
    "langchain-clear+summarize": "benchmarks.compare.peers.langchain_editing",
}
NAMES = tuple(MODULES)
PEERS = NAMES[1:]
FACTORIES = {"langchain-clear+summarize": "create_stacked"}
"""The factory of a system that shares its module with another (else ``create``), for
:func:`create` and :func:`create_non_llm` alike."""


def _module(name: str) -> Any:
    if name not in MODULES:
        raise SystemExit(f"unknown system {name!r}; known: {', '.join(NAMES)}")
    return importlib.import_module(MODULES[name])


VARIANTS = {
    "synopsis+sqlite": ("synopsis", "create_sqlite"),
    "synopsis+fresh": ("synopsis", "create_fresh"),
    "synopsis+resent": ("synopsis", "create_resent"),
}
"""Measured beside a system, not as a peer (speed only): synopsis with a SQLite store, given
the history decoded from JSON on each call, and given the whole history again after a
compaction."""


STRATEGIES = ("clear", "summarize", "clear+summarize")
"""synopsis's ``strategy`` settings compared (what it does under pressure, in order), as the
comparison names them; ``synopsis:clear`` and so on name synopsis with one."""
PREFIX = "synopsis:"


def strategy(name: str) -> tuple[str, ...] | None:
    """The ``strategy`` setting a system name asks of synopsis (``synopsis:clear+summarize``:
    ``("clear", "summarize")``), ``None`` for every other name."""
    if not name.startswith(PREFIX):
        return None
    chosen = name.removeprefix(PREFIX)
    if chosen not in STRATEGIES:
        raise SystemExit(f"unknown strategy {chosen!r}; known: {', '.join(STRATEGIES)}")
    return tuple(chosen.split("+"))


def strategy_names(strategies: str) -> list[str]:
    """``clear,summarize``, as ``--strategies`` takes them, as system names."""
    return [PREFIX + s for s in strategies.split(",") if s]


def create(name: str) -> System:
    """The system with the shared fake summarizer (or a variant of one)."""
    chosen = strategy(name)
    if chosen is not None:
        return cast("System", _module("synopsis").create_strategy(chosen))
    base, factory = VARIANTS.get(name, (name, FACTORIES.get(name, "create")))
    system: System = getattr(_module(base), factory)()
    return system


def create_non_llm(name: str) -> System:
    """The system's own way of shortening history without a model, where it has one; else
    :func:`create`'s (the fake summary carries nothing, so only the machinery's choices of
    what to keep count)."""
    chosen = strategy(name)
    if chosen is not None:
        return cast("System", _module("synopsis").create_strategy_non_llm(chosen))
    module = _module(name)
    own = FACTORIES.get(name)
    factory = getattr(module, own) if own else getattr(module, "create_non_llm", module.create)
    system: System = factory()
    return system
