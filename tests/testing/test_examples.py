"""The examples in synopsis.testing's docstrings and in docs/testing.md run as written."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

import synopsis.testing


def test_the_docstring_example_runs() -> None:
    failed, attempted = doctest.testmod(synopsis.testing, optionflags=doctest.ELLIPSIS)
    assert attempted > 0
    assert failed == 0


DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_the_docs_examples_run(index: int) -> None:
    namespace: dict[str, object] = {}
    exec(compile(_blocks()[index], f"docs/testing.md block {index + 1}", "exec"), namespace)
    tests = [value for name, value in namespace.items() if name.startswith("test_")]
    for test in tests:
        assert callable(test)
        test()
    assert tests or "fixture" in _blocks()[index]
