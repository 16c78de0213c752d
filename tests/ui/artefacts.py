"""Where the browser tests leave what a person looks at after the run (no Selenium here: the
run's controlling process imports this to name the folder at the end)."""

from __future__ import annotations

import time
from pathlib import Path

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artefacts" / "screenshots"
"""Where ``Page.screenshot`` writes (ignored by git; kept after the run to look at)."""

RUN_STARTED = time.time()
"""About when the run began: this module is imported as the suite's conftest loads."""


def screenshots_note() -> str | None:
    """The line the run ends with when its tests took screenshots."""
    if not SCREENSHOTS.is_dir():
        return None
    taken = [p for p in SCREENSHOTS.glob("*.png") if p.stat().st_mtime >= RUN_STARTED]
    if not taken:
        return None
    return f"{len(taken)} screenshots from the browser tests in {SCREENSHOTS}"
