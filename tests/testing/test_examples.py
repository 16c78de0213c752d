"""The examples in synopsis.testing's docstrings run as written (docs/testing.md's blocks run in
tests/test_docs.py, with every page's)."""

from __future__ import annotations

import doctest

import synopsis.testing


def test_the_docstring_example_runs() -> None:
    failed, attempted = doctest.testmod(synopsis.testing, optionflags=doctest.ELLIPSIS)
    assert attempted > 0
    assert failed == 0
