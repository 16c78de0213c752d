"""The browser tests' own machinery (tests/ui/browser.py), against a page of its own: a form
with labelled controls and one that is not, a button that logs a console error, and text that
holds markup."""

from __future__ import annotations

import html
import struct
from typing import TYPE_CHECKING

import pytest
from selenium.webdriver.common.by import By
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.ui.artefacts import SCREENSHOTS

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.requests import Request

    from tests.ui.browser import Page

PLANTED = '<script>window.__ran = true</script><img src="data:," onerror="window.__ran = true">'
"""Markup a message or a session name may hold: shown as text, it must never run."""

FORM = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Machinery</title><link rel="icon" href="data:,"></head>
<body><main>
<h1 id="top">A form</h1>
<a href="#top">Back to the top</a>
<form action="/sent">
  <label for="name">Name</label> <input id="name" name="name">
  <input id="orphan" name="orphan" placeholder="a placeholder is no label">
  <label for="kind">Kind</label> <select id="kind" name="kind"><option>one</option></select>
  <button type="button" id="fail" onclick="console.error('planted failure')">Break</button>
  <button type="button" aria-label="Close" tabindex="-1">&times;</button>
  <button type="submit">Send</button>
</form>
<p id="planted">{planted}</p>
</main></body></html>
"""


def app() -> Starlette:
    async def escaped(request: Request) -> HTMLResponse:
        return HTMLResponse(FORM.format(planted=html.escape(PLANTED)))

    async def raw(request: Request) -> HTMLResponse:
        return HTMLResponse(FORM.format(planted=PLANTED))

    async def sent(request: Request) -> HTMLResponse:
        name = html.escape(request.query_params.get("name", ""))
        return HTMLResponse(f'<!doctype html><link rel="icon" href="data:,"><p id="sent">{name}')

    return Starlette(routes=[Route("/", escaped), Route("/raw", raw), Route("/sent", sent)])


@pytest.fixture
def root(served: Callable[[Starlette], str]) -> str:
    return served(app())


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height, from its header chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("width", [1280, 390])
def test_a_screenshot_is_a_png_of_the_asked_width(browser: Page, root: str, width: int) -> None:
    browser.open(root)
    browser.at_width(width)
    path = browser.screenshot(f"machinery-{width}")
    assert path.parent == SCREENSHOTS
    assert path.name == f"machinery-{width}.png"
    shot_width, shot_height = png_size(path.read_bytes())
    assert shot_width == width
    assert shot_height >= browser.driver.execute_script(
        "return document.documentElement.scrollHeight"
    )


def test_the_keyboard_visits_every_focusable_control_with_its_name(
    browser: Page, root: str
) -> None:
    browser.open(root)
    stops = [(stop.tag, stop.name) for stop in browser.tab_order()]
    assert stops == [
        ("a", "Back to the top"),
        ("input", "Name"),
        ("input", ""),
        ("select", "Kind"),
        ("button", "Break"),
        ("button", "Send"),
    ]


def test_the_tab_order_starts_at_the_top_wherever_focus_was(browser: Page, root: str) -> None:
    browser.open(root)
    browser.driver.find_element(By.ID, "kind").click()
    assert [stop.name for stop in browser.tab_order()][:2] == ["Back to the top", "Name"]


def test_a_control_without_a_name_is_found(browser: Page, root: str) -> None:
    browser.open(root)
    assert browser.unlabelled_controls() == [
        '<input id="orphan" name="orphan" placeholder="a placeholder is no label">'
    ]


def test_a_console_error_is_caught(browser: Page, root: str) -> None:
    browser.open(root)
    assert browser.console_errors() == []
    browser.driver.find_element(By.ID, "fail").click()
    errors = browser.console_errors(clear=True)
    assert len(errors) == 1
    assert "planted failure" in errors[0]
    assert browser.console_errors() == []


def test_markup_in_text_is_shown_as_text_and_never_runs(browser: Page, root: str) -> None:
    browser.open(root)
    shown = browser.driver.find_element(By.ID, "planted")
    assert shown.get_property("textContent") == PLANTED
    assert browser.driver.execute_script("return typeof window.__ran") == "undefined"


def test_the_same_markup_unescaped_runs(browser: Page, root: str) -> None:
    """The check above can fail: the planted markup, put in the page as markup, runs."""
    browser.open(f"{root}/raw")
    assert browser.driver.execute_script("return window.__ran") is True
    browser.console_errors(clear=True)


def test_a_form_is_filled_and_sent(browser: Page, root: str) -> None:
    browser.open(root)
    browser.driver.find_element(By.ID, "name").send_keys("<b>Ada</b>")
    browser.driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    assert browser.wait_for("#sent").text == "<b>Ada</b>"


def test_each_test_begins_with_no_cookies(browser: Page, root: str) -> None:
    """Cookies are kept per host, not per port: one test's sign-in must not reach the next
    test's server, though both are on 127.0.0.1."""
    browser.open(root)
    browser.driver.execute_script("document.cookie = 'signed=in; path=/'")
    assert browser.driver.get_cookie("signed") is not None
    browser.reset()
    browser.open(root)
    assert browser.driver.get_cookies() == []
