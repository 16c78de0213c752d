"""Fixtures of the live tests: the model server that ``make live`` (scripts/live.sh) started.

The script exports ``LIVE_BASE_URL`` (the server's OpenAI-compatible ``/v1`` URL) and
``LIVE_MODEL`` (the model id the server reports). Without them every test fails:
these tests are never skipped, and the default run (``make test``) does not collect them
(``norecursedirs`` in pyproject.toml).

What each test saw (which model wrote the record, what fell back and why) is printed in a
"live results" section at the end of the run.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable

VARIABLES = ("LIVE_BASE_URL", "LIVE_MODEL")

_RESULTS: list[str] = []


@pytest.fixture(scope="session")
def live_server() -> dict[str, str]:
    missing = [name for name in VARIABLES if not os.environ.get(name)]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not set: the live tests need a running model server. "
            "Run `make live` (scripts/live.sh), which starts one and sets both.",
            pytrace=False,
        )
    return {name: os.environ[name] for name in VARIABLES}


@pytest.fixture(scope="session")
def base_url(live_server: dict[str, str]) -> str:
    """The server's OpenAI-compatible base URL, ``http://127.0.0.1:<port>/v1``."""
    return live_server["LIVE_BASE_URL"]


@pytest.fixture(scope="session")
def model(live_server: dict[str, str]) -> str:
    """The id of the model the server reports on ``GET /v1/models``."""
    return live_server["LIVE_MODEL"]


@pytest.fixture
def live_report(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Adds a line about this test to the "live results" section of the run's summary."""

    def add(line: str) -> None:
        _RESULTS.append(f"{request.node.name}: {line}")

    return add


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _RESULTS:
        terminalreporter.section("live results")
        for line in _RESULTS:
            terminalreporter.write_line(line)
