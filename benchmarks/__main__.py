"""Run every ``benchmarks/bench_*.py`` module's ``main()``, in name order."""

from __future__ import annotations

import importlib
import pkgutil

import benchmarks


def main() -> None:
    for info in sorted(pkgutil.iter_modules(benchmarks.__path__), key=lambda i: i.name):
        if info.name.startswith("bench_"):
            module = importlib.import_module(f"benchmarks.{info.name}")
            print(f"== {info.name}")
            module.main()
            print()


if __name__ == "__main__":
    main()
