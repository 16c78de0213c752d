"""The operator's page in a real browser (Debian's Chromium through Selenium): sign-in, the
overview, the sessions, a session's compactions, search, export, forget, the planted markup,
the keyboard, both widths, and the live refresh, each against a real SQLite store
(:mod:`tests.ui.sample`) served by a real uvicorn.

Tests that only read share one store and one server per module; a test that changes its store
(forget, the refresh) builds one of its own.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait
from starlette.applications import Starlette
from starlette.routing import Mount

from synopsis import Compactor
from synopsis.stores import SQLiteStore
from synopsis.stores.export import export_markdown
from synopsis.stores.requests import RequestRecord
from synopsis.ui import data
from synopsis.ui.app import COOKIE, create_ui
from tests.ui import sample
from tests.ui.browser import serve

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from selenium.webdriver.remote.webelement import WebElement

    from synopsis.stores._base import StoreBase
    from tests.ui.browser import Page

TOKEN = "a-token-only-the-operator-knows"
LONG = "long-one"
"""A session in the module's store whose one compaction replaced more than a page of
originals (the sample's compactions are all smaller)."""


def _limits(model: str) -> tuple[int | None, int | None]:
    return sample.WINDOW, 4800


def _app(store: StoreBase, refresh: float = 0) -> Starlette:
    page = create_ui(store, auth_token=TOKEN, refresh=refresh, limits=_limits)
    return Starlette(routes=[Mount("/ui", app=page)])


def _add_long_session(store: StoreBase) -> None:
    history: list[dict[str, object]] = []
    for i in range(70):
        history.append({"role": "user", "content": f"Question {i}: what does line {i} do?"})
        history.append({"role": "assistant", "content": f"Answer {i}: it reads token {i}."})
    compactor = Compactor(model="gpt-4o-mini", context_window=1500, store=store)
    try:
        assert compactor.compact(history, session_id=LONG).compacted
    finally:
        compactor.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sample.Sample]:
    found = sample.build(tmp_path_factory.mktemp("ui-browser") / "store.db")
    _add_long_session(found.store)
    yield found
    found.store.close()


@pytest.fixture(scope="module")
def root(built: sample.Sample) -> Iterator[str]:
    """The module's page, read-only in practice (no test here changes this store), at
    ``<server>/ui``; no refresh, so that nothing changes under a test's feet."""
    with serve(_app(built.store)) as url:
        yield url + "/ui"


@pytest.fixture
def own(tmp_path: Path) -> Iterator[sample.Sample]:
    """A sample store of the test's own, for a test that changes it."""
    found = sample.build(tmp_path / "own.db")
    yield found
    found.store.close()


def _sign_in(browser: Page, root: str, path: str = "/") -> None:
    browser.open(root + path)
    browser.wait_for("#token").send_keys(TOKEN)
    browser.driver.find_element(By.CSS_SELECTOR, ".login button[type=submit]").click()
    WebDriverWait(browser.driver, 10).until(lambda d: "/login" not in d.current_url)


def _js(browser: Page, script: str, *args: object) -> Any:  # noqa: ANN401 - what the page returns
    return browser.driver.execute_script(script, *args)


def _session_url(root: str, session_id: str) -> str:
    return f"{root}/session?id={quote(session_id, safe='')}"


def _until(browser: Page, check: Callable[[], object], seconds: float = 10) -> None:
    WebDriverWait(browser.driver, seconds, poll_frequency=0.1).until(lambda _: check())


def _rect(element: WebElement) -> dict[str, float]:
    return cast("dict[str, float]", element.rect)


# 1. Sign-in


def test_sign_in_takes_the_token_and_keeps_only_an_httponly_cookie(
    browser: Page, root: str
) -> None:
    browser.open(root + "/sessions?q=ponyc")
    login = browser.wait_for("#token")
    assert urlsplit(browser.driver.current_url).path == "/ui/login"
    login.send_keys("not-the-token")
    browser.driver.find_element(By.CSS_SELECTOR, ".login button[type=submit]").click()
    error = browser.wait_for(".error[role=alert]")
    assert "not this proxy's token" in error.text
    assert browser.driver.get_cookies() == []
    browser.console_errors(clear=True)  # the 401 of the wrong token, logged as a failed load

    browser.driver.find_element(By.ID, "token").send_keys(TOKEN)
    browser.driver.find_element(By.CSS_SELECTOR, ".login button[type=submit]").click()
    browser.wait_for("table.sessions")
    landed = urlsplit(browser.driver.current_url)
    assert (landed.path, parse_qs(landed.query)["q"]) == ("/ui/sessions", ["ponyc"])
    cookies = browser.driver.get_cookies()
    assert [(c["name"], c["httpOnly"], c["sameSite"]) for c in cookies] == [
        (COOKIE, True, "Strict")
    ]
    assert TOKEN not in cookies[0]["value"]
    assert _js(browser, "return document.cookie") == ""
    for path in ("/", "/sessions", f"/session?id={quote(sample.CODING)}", "/login"):
        browser.open(root + path)
        assert TOKEN not in browser.driver.page_source


# 2. Overview


def test_the_overview_shows_its_cards_and_two_drawn_charts(
    browser: Page, root: str, built: sample.Sample
) -> None:
    _sign_in(browser, root)
    cards = {
        card.find_element(By.CLASS_NAME, "label").text: card.find_element(
            By.CLASS_NAME, "value"
        ).text
        for card in browser.driver.find_elements(By.CSS_SELECTOR, ".card")
    }
    assert {"Sessions kept", "Requests", "Tokens saved", "Input cost saved", "Errors"} <= set(cards)
    assert cards["Requests"] == f"{len(built.records):,}"
    assert cards["Errors"] == "1"
    charts = browser.driver.find_elements(By.CSS_SELECTOR, "figure.chart svg")
    assert len(charts) == 2
    for chart in charts:
        size = _rect(chart)
        assert size["width"] > 300
        assert size["height"] > 100
        # Drawn, not only sized: some shape of a series has an extent.
        drawn = _js(
            browser,
            "return Array.from(arguments[0].querySelectorAll('path, polyline, rect'))"
            ".some(e => { const b = e.getBBox(); return b.width > 0 && b.height > 0; })",
            chart,
        )
        assert drawn is True
