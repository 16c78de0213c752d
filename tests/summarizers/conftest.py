"""Fixtures for summarizer tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from synopsis.testing.server import FakeLLMServer

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    """A fake OpenAI/Anthropic server on 127.0.0.1, stopped after the test."""
    with FakeLLMServer() as server:
        yield server
