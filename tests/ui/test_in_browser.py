"""The operator's page in a real browser (Debian's Chromium through Selenium): sign-in, the
overview, the sessions, a session's compactions, search, export, forget, the planted markup,
the keyboard, both widths, and the live refresh, each against a real SQLite store
(:mod:`tests.ui.sample`) served by a real uvicorn.

Tests that only read share one store and one server per module; a test that changes its store
(forget, the refresh) builds one of its own.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait
from starlette.applications import Starlette
from starlette.routing import Mount

from synopsis import Compactor
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


def _js(browser: Page, script: str, *args: object) -> Any:
    return browser.driver.execute_script(script, *args)


def _session_url(root: str, session_id: str) -> str:
    return f"{root}/session?id={quote(session_id, safe='')}"


def _until(browser: Page, check: Callable[[], object], seconds: float = 10) -> None:
    # A live refresh may replace what the check reads as it reads it: then it reads again.
    WebDriverWait(
        browser.driver,
        seconds,
        poll_frequency=0.1,
        ignored_exceptions=(StaleElementReferenceException,),
    ).until(lambda _: check())


def _url_holds(browser: Page, text: str) -> None:
    """Once the next page has loaded: after a click on a link, Selenium returns at once."""
    _until(browser, lambda: text in browser.driver.current_url)


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


# 3. Sessions


def _listed(browser: Page) -> list[str]:
    """The sessions listed, read in one script: the live refresh may replace the rows between
    two WebDriver calls (a stale element)."""
    found = _js(
        browser,
        "return Array.from(document.querySelectorAll('td[data-label=Session] a'),"
        " (e) => e.textContent)",
    )
    return cast("list[str]", found)


def test_sessions_are_found_by_typing_and_sorted_by_a_header(
    browser: Page, root: str, built: sample.Sample
) -> None:
    _sign_in(browser, root, "/sessions")
    assert set(_listed(browser)) == {*built.sessions, LONG}
    field = browser.driver.find_element(By.ID, "q")
    field.send_keys("CLEARED", Keys.ENTER)
    _url_holds(browser, "q=CLEARED")
    assert _listed(browser) == [sample.CLEARED]

    browser.open(root + "/sessions")
    for key, label in (("length", "Length"), ("saved", "Tokens saved")):
        for order in ("desc", "asc"):
            header = browser.driver.find_element(
                By.XPATH, f"//thead//a[starts-with(normalize-space(.), '{label}')]"
            )
            header.click()
            _url_holds(browser, f"sort={key}&order={order}")
            expected = data.session_page(built.store, sort=key, order=order).rows
            assert _listed(browser) == [r.id for r in expected]
    # The two orders differ (the sample's sessions differ in both), so each click told.
    assert [r.id for r in data.session_page(built.store, sort="saved", order="asc").rows] != [
        r.id for r in data.session_page(built.store, sort="saved", order="desc").rows
    ]

    browser.driver.find_element(By.LINK_TEXT, sample.CODING).click()
    heading = browser.wait_for("h1 code.sid")
    assert heading.text == sample.CODING
    assert parse_qs(urlsplit(browser.driver.current_url).query)["id"] == [sample.CODING]


# 4. A session's compactions


def _details(browser: Page) -> list[WebElement]:
    return browser.driver.find_elements(By.CSS_SELECTOR, "details.compaction")


def test_the_first_compaction_shows_its_summary_beside_its_originals(
    browser: Page, root: str
) -> None:
    _sign_in(browser, root, _session_url("", sample.CODING))
    first, *others = _details(browser)
    assert first.get_property("open") is True
    assert others
    assert not any(d.get_property("open") for d in others)
    summary = first.find_element(By.CSS_SELECTOR, "section.summary")
    originals = first.find_element(By.CSS_SELECTOR, "section.originals")
    assert summary.find_element(By.TAG_NAME, "pre").text.strip()
    assert originals.find_elements(By.CSS_SELECTOR, "li.msg")
    wide_s, wide_o = _rect(summary), _rect(originals)
    assert wide_s["y"] == wide_o["y"]
    assert wide_s["x"] + wide_s["width"] <= wide_o["x"]

    browser.at_width(390)
    narrow_s, narrow_o = _rect(summary), _rect(originals)
    assert narrow_s["x"] == narrow_o["x"]
    assert narrow_s["y"] + narrow_s["height"] <= narrow_o["y"]


def test_a_closed_compaction_opens_from_the_keyboard(browser: Page, root: str) -> None:
    _sign_in(browser, root, _session_url("", sample.CODING))
    second = _details(browser)[1]
    target = second.find_element(By.TAG_NAME, "summary")
    originals = second.find_elements(By.CSS_SELECTOR, "section.originals li.msg")
    assert originals
    assert not originals[0].is_displayed()
    for _ in range(60):
        ActionChains(browser.driver).send_keys(Keys.TAB).perform()
        if browser.driver.switch_to.active_element == target:
            break
    else:
        pytest.fail("Tab never reached the second compaction's summary")
    ActionChains(browser.driver).send_keys(Keys.ENTER).perform()
    assert second.get_property("open") is True
    assert originals[0].is_displayed()


def test_originals_past_fifty_are_paged(browser: Page, root: str, built: sample.Sample) -> None:
    stored = built.store.recall(LONG)
    assert len(stored) > 2 * data.ORIGINALS_PER_PAGE
    _sign_in(browser, root, _session_url("", LONG))
    shown: list[str] = []
    for page in range(1, 4):
        first = _details(browser)[0]
        assert first.get_property("open") is True
        heading = first.find_element(By.CSS_SELECTOR, "section.originals h3").text
        assert heading == f"Originals it replaced (page {page} of 3)"
        shown += [e.text for e in first.find_elements(By.CSS_SELECTOR, "li.msg .meta code")]
        if page < 3:
            first.find_element(By.LINK_TEXT, "Next").click()
            _url_holds(browser, f"page={page + 1}")
    assert shown == [m.id for m in stored]
    first = _details(browser)[0]
    first.find_element(By.LINK_TEXT, "Previous").click()
    _url_holds(browser, "page=2")
    assert "page 2 of 3" in _details(browser)[0].find_element(By.CSS_SELECTOR, ".originals h3").text


# 5. Search and export


def test_search_marks_the_words_found(browser: Page, root: str, built: sample.Sample) -> None:
    _sign_in(browser, root, _session_url("", sample.CODING))
    browser.driver.find_element(By.ID, "sq").send_keys("ponyc", Keys.ENTER)
    browser.wait_for("ol.hits")
    hits = browser.driver.find_elements(By.CSS_SELECTOR, "ol.hits li")
    expected = data.search(built.store, sample.CODING, "ponyc")
    assert len(hits) == len(expected) > 0
    marked = browser.driver.find_elements(By.CSS_SELECTOR, "ol.hits mark")
    assert marked
    assert all(m.text.casefold() == "ponyc" for m in marked)


def test_export_answers_the_sessions_markdown(
    browser: Page, root: str, built: sample.Sample
) -> None:
    _sign_in(browser, root, _session_url("", sample.CODING))
    link = browser.driver.find_element(By.LINK_TEXT, "Export as Markdown")
    href = link.get_attribute("href")
    answer = browser.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'same-origin'})"
        ".then(r => r.text().then(t => done([r.status, r.headers.get('content-type'), t])))"
        ".catch(e => done([0, '', String(e)]));",
        href,
    )
    status, kind, text = answer
    assert (status, kind.split(";")[0]) == (200, "text/markdown")
    assert text == export_markdown(built.store, sample.CODING)


# 6. Forget


def test_forgetting_is_confirmed_then_done(
    browser: Page, served: Callable[[Starlette], str], own: sample.Sample
) -> None:
    root = served(_app(own.store)) + "/ui"
    _sign_in(browser, root, _session_url("", sample.CODING))
    browser.driver.find_element(By.XPATH, "//button[.='Forget this session…']").click()
    confirm = browser.wait_for("input[name=confirm] ~ button.danger")
    assert confirm.text == "Forget it"
    assert sample.CODING in browser.driver.find_element(By.TAG_NAME, "h1").text
    assert own.store.session(sample.CODING) is not None
    assert own.store.recall(sample.CODING)
    confirm.click()
    notice = browser.wait_for(".notice[role=status]")
    assert urlsplit(browser.driver.current_url).path == "/ui/sessions"
    assert sample.CODING in notice.text
    assert own.store.session(sample.CODING) is None
    assert own.store.recall(sample.CODING) == []


# 7. The planted markup


@pytest.mark.parametrize("where", ["sessions", "session"])
def test_planted_markup_is_shown_as_text_and_never_runs(
    browser: Page, root: str, where: str
) -> None:
    path = "/sessions" if where == "sessions" else _session_url("", sample.CHAT)
    _sign_in(browser, root, path)
    shown = browser.driver.find_element(By.TAG_NAME, "main").get_property("textContent")
    assert sample.PLANTED in cast("str", shown)
    assert _js(browser, "return typeof window.__ran") == "undefined"
    assert browser.driver.find_elements(By.CSS_SELECTOR, "main script, main img") == []


# 8. Every page: labelled controls, no overflow at 390 pixels, screenshots, the keyboard

_OVERFLOWING = """
const width = document.documentElement.clientWidth;
const clipped = (el) => {
  for (let p = el.parentElement; p; p = p.parentElement) {
    const style = getComputedStyle(p);
    if (style.overflowX !== 'visible' && p !== document.documentElement && p !== document.body) {
      return true;
    }
  }
  return false;
};
return Array.from(document.querySelectorAll('body *'))
  .filter((el) => el.getBoundingClientRect().right > width + 0.5 && !clipped(el))
  .map((el) => el.outerHTML.slice(0, 120));
"""
"""The elements that reach past the right edge of the viewport, other than those inside a
box that scrolls or clips them (the sessions table's own scroller at a middle width)."""


def _open_page(browser: Page, root: str, name: str) -> None:
    """One of the page's views, signed in already."""
    if name == "forget":
        browser.open(_session_url(root, sample.CODING))
        browser.driver.find_element(By.XPATH, "//button[.='Forget this session…']").click()
        browser.wait_for("input[name=confirm]")
        return
    paths = {
        "overview": "/",
        "sessions": "/sessions",
        "session": _session_url("", sample.CODING),
        "search": f"/session/search?id={quote(sample.CODING)}&q=ponyc",
    }
    browser.open(root + paths[name])
    browser.wait_for("main h1")


VIEWS = ("overview", "sessions", "session", "forget", "search")


def test_every_page_is_labelled_fits_a_phone_and_is_photographed(browser: Page, root: str) -> None:
    browser.open(root + "/login")
    assert browser.unlabelled_controls() == []
    browser.screenshot("ui-login-1280")
    _sign_in(browser, root)
    for name in VIEWS:
        browser.at_width(1280)
        _open_page(browser, root, name)
        assert browser.unlabelled_controls() == [], name
        assert _js(browser, _OVERFLOWING) == [], name
        browser.screenshot(f"ui-{name}-1280")
        browser.at_width(390)
        assert _js(browser, _OVERFLOWING) == [], name
        assert _js(browser, "return document.documentElement.scrollWidth") <= 390, name
        browser.screenshot(f"ui-{name}-390")


def _stops(browser: Page) -> list[tuple[str, str]]:
    return [(stop.tag, stop.name) for stop in browser.tab_order()]


HEADER = [
    ("a", "Skip to content"),
    ("a", "synopsis"),
    ("a", "Overview"),
    ("a", "Sessions"),
    ("button", "Sign out"),
]


def test_the_keyboard_goes_skip_link_navigation_then_the_page(browser: Page, root: str) -> None:
    _sign_in(browser, root, "/sessions")
    stops = _stops(browser)
    assert stops[: len(HEADER)] == HEADER
    assert stops[len(HEADER) : len(HEADER) + 3] == [
        ("input", "Find a session"),
        ("button", "Find"),
        ("a", "Last seen, sorted descending"),
    ]

    browser.open(_session_url(root, sample.CODING))
    stops = _stops(browser)
    assert stops[: len(HEADER)] == HEADER
    page = stops[len(HEADER) :]
    assert page[:4] == [
        ("input", "Search its originals"),
        ("button", "Search"),
        ("a", "Export as Markdown"),
        ("button", "Forget this session…"),
    ]
    summaries = browser.driver.find_elements(By.CSS_SELECTOR, "details.compaction > summary")
    assert [s for s in page if s[0] == "summary"] == [
        ("summary", cast("str", s.get_property("innerText")).strip()) for s in summaries
    ]

    # The skip link takes focus past the header.
    browser.tab_order(limit=1)
    ActionChains(browser.driver).send_keys(Keys.ENTER).perform()
    assert _js(browser, "return document.activeElement.id") == "main"


# 9. The live refresh


def _record(session_id: str, tokens: int = 1000) -> RequestRecord:
    return RequestRecord(
        at=datetime.now(UTC),
        session_id=session_id,
        model="gpt-4o-mini",
        route="/v1/chat/completions",
        format="openai",
        status=200,
        messages_in=2,
        tokens_before=tokens,
        tokens_after=tokens,
    )


def _updated(browser: Page) -> str:
    return browser.driver.find_element(By.ID, "updated").text


def test_the_open_page_updates_itself_without_a_reload(
    browser: Page, served: Callable[[Starlette], str], own: sample.Sample
) -> None:
    root = served(_app(own.store, refresh=1)) + "/ui"
    _sign_in(browser, root, "/sessions")
    _js(browser, "window.__stayed = true")
    assert "arrived-later" not in _listed(browser)
    own.store.save_requests([_record("arrived-later")])
    _until(browser, lambda: "arrived-later" in _listed(browser), seconds=6)
    assert _js(browser, "return window.__stayed") is True
    assert _js(browser, "return performance.getEntriesByType('navigation').length") == 1

    # Not while someone types in the search field: its results would move under them.
    browser.driver.find_element(By.ID, "q").click()
    own.store.save_requests([_record("arrived-while-typing")])
    time.sleep(2.5)
    assert "arrived-while-typing" not in _listed(browser)
    browser.driver.find_element(By.TAG_NAME, "h1").click()  # focus leaves the field
    _until(browser, lambda: "arrived-while-typing" in _listed(browser), seconds=6)
    assert _js(browser, "return window.__stayed") is True


def test_a_compaction_opened_stays_open_across_a_refresh(
    browser: Page, served: Callable[[Starlette], str], own: sample.Sample
) -> None:
    root = served(_app(own.store, refresh=1)) + "/ui"
    _sign_in(browser, root, _session_url("", sample.CODING))
    first, second = _details(browser)[:2]
    second.find_element(By.TAG_NAME, "summary").click()
    first.find_element(By.TAG_NAME, "summary").click()
    assert (first.get_property("open"), second.get_property("open")) == (False, True)
    _js(browser, "window.__stayed = true")
    before = browser.driver.find_element(By.XPATH, "//dt[.='Requests']/../dd").text
    own.store.save_requests([_record(sample.CODING)])
    _until(
        browser,
        lambda: browser.driver.find_element(By.XPATH, "//dt[.='Requests']/../dd").text != before,
        seconds=6,
    )
    first, second = _details(browser)[:2]
    assert (first.get_property("open"), second.get_property("open")) == (False, True)
    assert _js(browser, "return window.__stayed") is True
    assert _updated(browser).startswith("Updated ")
