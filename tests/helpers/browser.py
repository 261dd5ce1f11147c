"""Opening reports in a real browser for the tests: Debian's Chromium (``/usr/bin/chromium``,
or the path in ``HARNESS_CHROMIUM``) driven by Playwright's Python API. Nothing is downloaded.

Every request the page makes is routed: the report file itself is served, anything else is
recorded and aborted, so a test can assert that a page asked for nothing. Console messages
of type error or warning, uncaught page errors and dialogs (``alert``, ``confirm``) are
recorded too.

Without a Chromium the browser tests are skipped with the reason, except when
``HARNESS_REQUIRE_BROWSER=1`` (set by ``.ci/run``, which installs Chromium): then a missing
browser fails them, so CI can never pass by skipping.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SCREEN = {"width": 1366, "height": 860}  # a laptop screen


def chromium_path() -> str | None:
    """The system Chromium to drive, or ``None``."""
    configured = os.environ.get("HARNESS_CHROMIUM")
    if configured:
        return configured
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class OpenedPage:
    """A report opened in the browser, with what it did while loading and after."""

    page: Any  # playwright.sync_api.Page
    url: str
    requests: list[str] = field(default_factory=list)  # every request but the page's own
    console: list[str] = field(default_factory=list)  # console errors and warnings
    dialogs: list[str] = field(default_factory=list)

    def assert_quiet(self) -> None:
        """No request left the page, nothing went to the console, no dialog opened."""
        assert self.requests == [], self.requests
        assert self.console == [], self.console
        assert self.dialogs == [], self.dialogs

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        """Save what the page shows now (kept in the test's folder for people to look at)."""
        self.page.screenshot(path=str(path), full_page=full_page)
        return path


def _require_chromium() -> str:
    path = chromium_path()
    if path is None or not Path(path).exists():
        why = ("no Chromium found (apt-get install chromium, or set HARNESS_CHROMIUM to its "
               "path)")
        if os.environ.get("HARNESS_REQUIRE_BROWSER") == "1":
            pytest.fail(why + "; HARNESS_REQUIRE_BROWSER=1 forbids skipping")
        pytest.skip(why)
    return path


@pytest.fixture
def open_report() -> Iterator[Callable[..., OpenedPage]]:
    """``open_report(path, dark=False, scripts=True, bypass_csp=False)`` opens an HTML file
    and returns an :class:`OpenedPage`. ``bypass_csp`` ignores the page's Content-Security-
    Policy (to check that escaping alone keeps outside text inert).

    The browser starts at the first call and stops after the test. Playwright's sync API
    marks an event loop as running in this thread while it is started, so it must not be
    running while the test (or a fixture) runs something with asyncio, e.g. ``harness run``:
    do that before opening the first page."""
    path = _require_chromium()
    started: list[Any] = []  # the Playwright context manager and the browser, once started

    def _open(file: Path, *, dark: bool = False, scripts: bool = True,
              bypass_csp: bool = False) -> OpenedPage:
        if not started:
            from playwright.sync_api import sync_playwright

            manager = sync_playwright()
            playwright = manager.__enter__()
            # --no-sandbox: CI containers run as root, where Chromium's sandbox cannot start
            started.extend([manager, playwright.chromium.launch(executable_path=path,
                                                                args=["--no-sandbox"])])
        browser = started[1]
        url = Path(file).resolve().as_uri()
        context = browser.new_context(viewport=SCREEN, java_script_enabled=scripts,
                                      color_scheme="dark" if dark else "light",
                                      bypass_csp=bypass_csp)
        opened = OpenedPage(page=None, url=url)

        def route(r: Any) -> None:
            if r.request.url == url:
                r.continue_()
            else:
                opened.requests.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("request", lambda r: r.url != url and r.url not in opened.requests
                and opened.requests.append(r.url))
        page.on("console", lambda m: m.type in ("error", "warning")
                and opened.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: opened.console.append(f"page error: {e}"))

        def dialog(d: Any) -> None:
            opened.dialogs.append(f"{d.type}: {d.message}")
            d.dismiss()

        page.on("dialog", dialog)
        page.goto(url)
        page.wait_for_load_state("load")
        opened.page = page
        return opened

    yield _open
    if started:
        manager, browser = started
        browser.close()
        manager.__exit__(None, None, None)


def _watch(page: Any, opened: OpenedPage) -> None:
    """Record ``page``'s console errors and warnings, page errors and dialogs in ``opened``."""
    page.on("console", lambda m: m.type in ("error", "warning")
            and opened.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: opened.console.append(f"page error: {e}"))

    def dialog(d: Any) -> None:
        opened.dialogs.append(f"{d.type}: {d.message}")
        d.dismiss()

    page.on("dialog", dialog)


@pytest.fixture
def open_served() -> Iterator[Callable[..., OpenedPage]]:
    """``open_served(url, width=1366)`` opens a page of a server on this machine (``harness
    view``) in a browser context of its own (its own cookies: two calls are two people) and
    returns an :class:`OpenedPage`. Requests to the URL's origin go through; any other is
    recorded in ``requests`` and aborted. The same caveat as :func:`open_report` about
    asyncio holds: start the server in a thread of its own."""
    path = _require_chromium()
    started: list[Any] = []

    def _open(url: str, *, width: int = SCREEN["width"]) -> OpenedPage:
        if not started:
            from playwright.sync_api import sync_playwright

            manager = sync_playwright()
            playwright = manager.__enter__()
            started.extend([manager, playwright.chromium.launch(executable_path=path,
                                                                args=["--no-sandbox"])])
        parts = url.split("/", 3)
        origin = "/".join(parts[:3])
        context = started[1].new_context(viewport={"width": width,
                                                   "height": SCREEN["height"]})
        opened = OpenedPage(page=None, url=url)

        def route(r: Any) -> None:
            if r.request.url == origin or r.request.url.startswith(origin + "/"):
                r.continue_()
            else:
                opened.requests.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        _watch(page, opened)
        page.goto(url)
        page.wait_for_load_state("load")
        opened.page = page
        return opened

    yield _open
    if started:
        manager, browser = started
        browser.close()
        manager.__exit__(None, None, None)
