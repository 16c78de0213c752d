#!/usr/bin/env python3
"""Make the screenshots of ``docs/ui.md`` from a real run.

It starts ``synopsis serve`` (a subprocess, on a free port, with a SQLite store in a
temporary folder and a token) in front of :class:`synopsis.testing.server.FakeLLMServer`,
replays bundled transcripts from ``examples/transcripts/`` through it turn by turn with the
OpenAI SDK (each under its own ``x-synopsis-session``, with a small window so that they
compact), then signs in to the page with Debian's Chromium (as the browser tests drive it,
``tests/ui/browser.py``) and writes:

- ``docs/images/ui-overview.png``: the overview,
- ``docs/images/ui-session.png``: the top of one session (its figures and chart),
- ``docs/images/ui-compaction.png``: that session's newest compaction, its summary beside
  the originals it replaced,
- ``docs/images/ui-sessions-narrow.png``: the sessions, 390 pixels wide.

Usage, from the repository's root (needs the ``dev`` extra and ``chromium``, as
``make browser`` installs it)::

    .venv/bin/python scripts/ui_screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import httpx2
import openai

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the browser machinery of the tests, below

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402
from tests.ui.browser import Browser, Page  # noqa: E402

from synopsis.testing.server import FakeLLMServer, Reply, chat_completion  # noqa: E402

TRANSCRIPTS = ROOT / "examples" / "transcripts"
SESSIONS = {
    "openhands-ponylang-ponyc-4588": "fix-the-pony-parser",
    "sweagent-marshmallow-1867-fc": "marshmallow-timedelta",
    "aider-census": "census-notebook",
}
"""The transcripts replayed, each under a session name an operator might see."""
SHOWN = "fix-the-pony-parser"
"""The session whose page and compaction are photographed."""
MODEL = "gpt-4o-mini"
WINDOW = 6000
TOKEN = "screenshot-token"
TALLEST = 1100
"""Pixels: a picture of a page longer than this shows its top."""


def _messages(name: str) -> list[dict[str, Any]]:
    lines = (TRANSCRIPTS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _serve(upstream: str, store: Path, log: Any) -> tuple[subprocess.Popen[bytes], str]:  # noqa: ANN401 - a file
    """``synopsis serve`` on a free port, and its root once it answers."""
    command = Path(sys.executable).parent / "synopsis"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNOPSIS_")}
    process = subprocess.Popen(
        [
            str(command), "serve", "--port", "0", "--store", str(store),
            "--auth-token", TOKEN, "--upstream-openai", upstream,
            "--model-window", f"{MODEL}={WINDOW}", "--log-json",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("synopsis serve stopped: " + Path(log.name).read_text())
        for line in Path(log.name).read_text().splitlines():
            if '"proxy_started"' in line:
                url = str(json.loads(line)["listening"])
                try:
                    if httpx2.get(url + "/healthz", timeout=1).status_code == 200:
                        return process, url
                except httpx2.TransportError:
                    pass
        time.sleep(0.1)
    process.terminate()
    raise SystemExit("synopsis serve did not start within 30 s")


def _replay(url: str, name: str, session: str) -> int:
    """The transcript sent as its agent sent it: one request before each assistant turn,
    with the history so far; the transcript's own turn is appended, not the fake's answer."""
    client = openai.OpenAI(
        base_url=url + "/v1",
        api_key="unused",
        default_headers={"x-synopsis-session": session, "x-synopsis-token": TOKEN},
    )
    sent = 0
    history: list[dict[str, Any]] = []
    with client:
        for message in _messages(name):
            if message["role"] == "assistant" and history:
                client.chat.completions.create(model=MODEL, messages=cast("Any", history))
                sent += 1
            history.append(message)
    return sent


def _recorded(url: str, requests: int) -> None:
    """Once every request's record is written (off the request's path)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        page = httpx2.get(url + "/ui/", headers={"x-synopsis-token": TOKEN}, timeout=5).text
        if f'<span class="label">Requests</span><span class="value">{requests:,}<' in page:
            return
        time.sleep(0.2)
    raise SystemExit("the request records were not all written within 30 s")


def _capture(page: Page, path: Path, clip: dict[str, float]) -> None:
    shot = page.driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True, "clip": {**clip, "scale": 1}},
    )
    path.write_bytes(base64.b64decode(shot["data"]))
    print(f"{path.name}: {path.stat().st_size // 1024} KB", file=sys.stderr)


def _top(page: Page, path: Path, tallest: int = TALLEST) -> None:
    """The page from its top, as wide as the window, at most ``tallest`` pixels."""
    width, height = page.driver.execute_script(
        "return [window.innerWidth, document.documentElement.scrollHeight]"
    )
    _capture(page, path, {"x": 0, "y": 0, "width": width, "height": min(height, tallest)})


def _photograph(url: str, out: Path) -> None:
    browser = Browser()
    try:
        page = Page(browser)
        page.open(url + "/ui/login")
        page.wait_for("#token").send_keys(TOKEN)
        page.driver.find_element(By.CSS_SELECTOR, ".login button[type=submit]").click()
        WebDriverWait(page.driver, 10).until(lambda d: "/login" not in d.current_url)
        page.wait_for(".cards")
        _top(page, out / "ui-overview.png", tallest=2 * TALLEST)  # down to its tables

        page.open(f"{url}/ui/session?id={SHOWN}")
        page.wait_for("details.compaction")
        chart = page.driver.find_element(By.ID, "chart-h").find_element(By.XPATH, "..")
        bottom = chart.rect["y"] + chart.rect["height"] + 16
        _top(page, out / "ui-session.png", tallest=int(bottom))

        # From the list's heading to the end of the first compaction, open as the page opens.
        heading = page.driver.find_element(By.ID, "compactions-h").rect
        first = page.driver.find_element(By.CSS_SELECTOR, "details.compaction[open]").rect
        top = heading["y"] - 12
        height = first["y"] + first["height"] + 12 - top
        _capture(
            page, out / "ui-compaction.png", {"x": 0, "y": top, "width": 1280, "height": height}
        )

        page.at_width(390)
        page.open(url + "/ui/sessions")
        page.wait_for("table.sessions")
        _top(page, out / "ui-sessions-narrow.png", tallest=2 * TALLEST)
        errors = page.console_errors()
        if errors:
            raise SystemExit("the page logged console errors:\n" + "\n".join(errors))
    finally:
        browser.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    out = parser.parse_args().out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="synopsis-ui-shots-") as temp,
        FakeLLMServer(default=lambda _: Reply(chat_completion("On it."))) as upstream,
        (Path(temp) / "serve.log").open("wb") as log,
    ):
        process, url = _serve(upstream.root, Path(temp) / "ui.db", log)
        try:
            sent = sum(_replay(url, name, session) for name, session in SESSIONS.items())
            _recorded(url, sent)
            _photograph(url, out)
        finally:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
