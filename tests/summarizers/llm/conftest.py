"""The LLM summarizer's tests name made-up models on purpose ("a", "m", "small"): the fake
servers answer any name, and what a test checks is the summarizer, not the model table. The
warning such a name draws is pinned where it is the subject (tests/test_models.py, and
test_an_unknown_summarizer_model_says_how_to_give_its_window in test_summarizer.py)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import pytest

from synopsis.errors import UnknownModelWarning

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(autouse=True)
def _made_up_models_are_expected() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UnknownModelWarning)
        yield
