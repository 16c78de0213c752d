"""Run every ``benchmarks/bench_*.py`` module's ``main()`` and the ``benchmarks.stores``
package's, in name order (``bench_`` left out of the name)."""

from __future__ import annotations

import importlib
import pkgutil

import benchmarks

PACKAGES = ("stores",)
"""Benchmarks that are packages of their own: ``main`` is in their ``__main__``."""


def main() -> None:
    found = {
        info.name.removeprefix("bench_"): f"benchmarks.{info.name}"
        for info in pkgutil.iter_modules(benchmarks.__path__)
        if info.name.startswith("bench_")
    }
    found |= {name: f"benchmarks.{name}.__main__" for name in PACKAGES}
    for name in sorted(found):
        module = importlib.import_module(found[name])
        print(f"== {found[name].split('.')[1]}")
        module.main()
        print()


if __name__ == "__main__":
    main()
