"""Fixtures of the browser tests: ``browser``, a :class:`~tests.ui.browser.Page` of the worker's
one Chromium put back to a blank state for the test, and ``served``, which serves a Starlette
app on a real uvicorn for the test's duration. A test that used the browser fails if the page
logged a console error while it ran (``Page.console_errors``)."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

import pytest

from tests.ui.browser import Browser, BrowserUnavailableError, Page, serve

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator

    from starlette.applications import Starlette


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """The worker's Chromium, started by the first test that needs it, quit when the run ends."""
    try:
        started = Browser()
    except BrowserUnavailableError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no browser for the browser tests: {exc}")
        pytest.skip(f"no browser for the browser tests: {exc}")
    yield started
    started.quit()


@pytest.fixture
def browser(chromium: Browser) -> Page:
    """The worker's Chromium as this test's own: a blank page, no cookies, 1280 wide. What
    the page does once the test's body ended (a refresh that finds its server stopped) is
    dropped when the next test begins."""
    return Page(chromium)


@pytest.fixture
def served() -> Iterator[Callable[[Starlette], str]]:
    """``served(app)``: ``app`` on a real uvicorn at 127.0.0.1 until the test ends; its root."""
    with contextlib.ExitStack() as stack:
        yield lambda app: stack.enter_context(serve(app))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """After the test's body, before any teardown stops its servers: the console is clean."""
    result = yield
    page = getattr(item, "funcargs", {}).get("browser")
    if isinstance(page, Page):
        errors = page.console_errors()
        if errors:
            pytest.fail("the page logged console errors:\n" + "\n".join(errors))
    return result
