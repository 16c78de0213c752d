from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports laid out 160 columns wide, as on a wide terminal: the tests read table rows
    whole, and the width outside a terminal would otherwise be the host's."""
    monkeypatch.setenv("COLUMNS", "160")
