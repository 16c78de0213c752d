"""Debian's Chromium, driven through its own ChromeDriver, for the tests of the operator's page.

One browser per test process (each xdist worker starts its own the first time a test asks for
it, with a new empty profile, and quits it when the run ends). Each test gets it as a
:class:`Page` put back to a blank state: no cookies, no console messages, 1280 pixels wide.

Selenium is given the paths of the browser and of the driver, so its own manager, which would
look for or download them, never runs: the tests need no network. Chromium starts with the
flags that keep it off the network too (no background requests, no component or sync updates,
no QUIC): this machine's closed network refuses them, and each refusal is a console error.

Where the browser or its driver is missing (``make test`` installs Debian's ``chromium`` and
``chromium-driver`` where it may), the tests that need it are skipped with the reason; under
``CI=true`` they fail instead, like those that need PostgreSQL (``tests/postgres.py``).
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from tests.proxy.servers import Served
from tests.ui.artefacts import SCREENSHOTS

if TYPE_CHECKING:
    from collections.abc import Iterator

    from selenium.webdriver.remote.webelement import WebElement
    from starlette.applications import Starlette

__all__ = [
    "CHROMEDRIVER",
    "CHROMIUM",
    "SCREENSHOTS",
    "Browser",
    "BrowserUnavailableError",
    "Focus",
    "Page",
    "serve",
]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


FLAGS = (
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",  # a container's /dev/shm is small; a full one crashes a tab
    "--hide-scrollbars",  # screenshots of the same page look the same wherever they are taken
)

HEIGHT = 900
"""The window's height at any width: enough for the top of a page; screenshots take the whole
page whatever its height."""

_LONGEST_SCREENSHOT = 12_000
"""A page longer than this (pixels) is cut there in a screenshot: enough to see a layout."""

_NAME = """
function nameOf(el) {
  const text = (node) => (node ? (node.innerText || node.textContent || '') : '').trim();
  const by = el.getAttribute('aria-labelledby');
  if (by) {
    const named = by.split(/\\s+/).map((id) => text(document.getElementById(id))).join(' ');
    if (named.trim()) return named.trim();
  }
  const aria = (el.getAttribute('aria-label') || '').trim();
  if (aria) return aria;
  if (el.labels && el.labels.length) {
    const labelled = Array.from(el.labels).map(text).join(' ').trim();
    if (labelled) return labelled;
  }
  const kind = (el.getAttribute('type') || '').toLowerCase();
  if (el.tagName === 'INPUT' && ['submit', 'button', 'reset'].includes(kind)) {
    return (el.value || '').trim();
  }
  if (el.tagName === 'INPUT' && kind === 'image') return (el.alt || '').trim();
  if (['INPUT', 'SELECT', 'TEXTAREA'].includes(el.tagName)) return '';
  const own = text(el);
  if (own) return own;
  return Array.from(el.querySelectorAll('img[alt]')).map((img) => img.alt.trim()).join(' ').trim();
}
function tagOf(el) {
  return el.outerHTML.slice(0, el.outerHTML.indexOf('>') + 1);
}
"""
"""The accessible name of an element as the tests count it, in the page: what ``aria-labelledby``
names, else ``aria-label``, else its ``<label>``, else (a button, a link) its own text or the
``alt`` of its images. Stricter than the browser's own computation on purpose: a placeholder or
a ``title`` names nothing here (the one disappears when typing starts, the other shows only on
hover)."""

_ACTIVE = (
    _NAME
    + """
const el = document.activeElement;
if (!el || el === document.body || el === document.documentElement) return null;
return [el, el.tagName.toLowerCase(), nameOf(el), tagOf(el)];
"""
)

_UNLABELLED = (
    _NAME
    + """
const controls = document.querySelectorAll(
  'input:not([type=hidden]), select, textarea, button');
return Array.from(controls).filter((el) => !nameOf(el)).map(tagOf);
"""
)


def _console(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    """The console's messages since the last call (ChromeDriver hands each out once)."""
    return cast("list[dict[str, Any]]", driver.get_log("browser"))  # type: ignore[no-untyped-call]


class BrowserUnavailableError(Exception):
    """Chromium or its driver is missing, or did not start."""


@dataclass(frozen=True)
class Focus:
    """One stop of the keyboard's focus: the element's tag, its accessible name (``""`` when it
    has none), and its start tag as the page has it (for a failure's message)."""

    tag: str
    name: str
    html: str


class Browser:
    """One Chromium and its ChromeDriver, with a new empty profile, until :meth:`quit`."""

    def __init__(self) -> None:
        for needed in (CHROMIUM, CHROMEDRIVER):
            if not os.access(needed, os.X_OK):
                raise BrowserUnavailableError(
                    f"{needed} is missing: install Debian's chromium and chromium-driver "
                    "(make test does, as root)"
                )
        self.profile = Path(tempfile.mkdtemp(prefix="synopsis-chromium-"))
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (*FLAGS, f"--user-data-dir={self.profile}"):
            options.add_argument(flag)
        # The console's messages, read back by Page.console_errors.
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        try:
            self.driver = webdriver.Chrome(
                options=options, service=Service(executable_path=str(CHROMEDRIVER))
            )
        except WebDriverException as exc:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise BrowserUnavailableError(f"Chromium did not start: {exc.msg}") from exc

    def quit(self) -> None:
        self.driver.quit()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """The browser as one test uses it. ``driver`` is Selenium's own, for what the helpers
    here do not do (find an element, click it, type into it)."""

    def __init__(self, browser: Browser) -> None:
        self.driver = browser.driver
        self._errors: list[str] = []
        self.reset()

    def reset(self) -> None:
        """A blank page, 1280 pixels wide, with no cookies and no console messages pending.
        The profile is the worker's, shared by its tests: cookies are kept per host, not per
        port, so one test's sign-in would otherwise reach the next test's server."""
        self.driver.get("about:blank")
        self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        self.at_width(1280)
        _console(self.driver)  # read, so dropped
        self._errors.clear()

    def open(self, url: str) -> None:
        """``url`` loaded (Selenium waits for its ``load`` event)."""
        self.driver.get(url)

    def wait_for(self, selector: str, *, seconds: float = 10) -> WebElement:
        """The first element ``selector`` (CSS) finds, once there is one: after a click that
        submits a form or follows a link, Selenium returns before the next page has loaded."""
        return WebDriverWait(self.driver, seconds).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, selector))
        )

    def at_width(self, width: int) -> None:
        """The page's viewport ``width`` CSS pixels wide (the window's frame, if any, is
        added): 1280 for a desktop, 390 for a phone."""
        self.driver.set_window_size(width, HEIGHT)
        inner = cast("int", self.driver.execute_script("return window.innerWidth"))
        if inner != width:
            self.driver.set_window_size(2 * width - inner, HEIGHT)

    def screenshot(self, name: str) -> Path:
        """The whole page, as wide as the viewport, saved as ``SCREENSHOTS/name.png``."""
        size = cast(
            "list[int]",
            self.driver.execute_script(
                "return [window.innerWidth, document.documentElement.scrollHeight]"
            ),
        )
        width, height = size[0], min(size[1], _LONGEST_SCREENSHOT)
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            },
        )
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def console_errors(self, *, clear: bool = False) -> list[str]:
        """The console's errors since the test began (or since ``clear``): what the page's
        scripts logged as errors, their uncaught exceptions, and the resources that failed to
        load. ``clear=True`` returns them and forgets them, for a test that caused some on
        purpose (every test that uses the browser must end with none)."""
        for entry in _console(self.driver):
            if entry["level"] == "SEVERE":
                self._errors.append(str(entry["message"]))
        found = list(self._errors)
        if clear:
            self._errors.clear()
        return found

    def tab_order(self, *, limit: int = 200) -> list[Focus]:
        """Where focus goes with each press of Tab, from the top of the page, until it leaves
        the page or comes back to where it began (at most ``limit`` stops)."""
        self.driver.execute_script(
            "if (document.activeElement) document.activeElement.blur();"
            "window.scrollTo(0, 0);"
            # Sequential navigation starts after the last element focused or clicked:
            # focusing the body, made focusable for the moment, moves that point to the top.
            "const body = document.body; body.setAttribute('tabindex', '-1'); body.focus();"
            "body.removeAttribute('tabindex');"
        )
        stops: list[Focus] = []
        first: WebElement | None = None
        for _ in range(limit):
            ActionChains(self.driver).send_keys(Keys.TAB).perform()  # one use: perform empties it
            found = cast("list[Any] | None", self.driver.execute_script(_ACTIVE))
            if found is None or (first is not None and found[0] == first):
                break
            first = first or found[0]
            stops.append(Focus(*found[1:]))
        return stops

    def unlabelled_controls(self) -> list[str]:
        """The start tags of the inputs, selects, text areas and buttons that have no
        accessible name (as :data:`_NAME` counts it)."""
        return cast("list[str]", self.driver.execute_script(_UNLABELLED))


@contextlib.contextmanager
def serve(app: Starlette) -> Iterator[str]:
    """``app`` on a real uvicorn at 127.0.0.1 (a free port) until the block ends: its root."""
    with Served(app) as server:
        yield server.url
