"""The browser fixture leaves nothing behind: Playwright's sync API keeps an event loop
running while it is open, so a browser kept open for the whole session made every later
test on the same worker that calls asyncio.run fail ("cannot be called from a running
event loop"). The fixture starts the browser at a test's first page and stops it after the
test."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.browser import chromium_path

pytest_plugins = ["pytester"]


@pytest.mark.skipif(chromium_path() is None and os.environ.get("HARNESS_REQUIRE_BROWSER") != "1",
                    reason="no Chromium")
def test_asyncio_runs_after_a_browser_test(pytester: pytest.Pytester) -> None:
    shutil.copy(Path(__file__).parent / "helpers" / "browser.py", pytester.path / "browser.py")
    pytester.makeconftest("from browser import open_report  # noqa: F401\n")
    pytester.makepyfile(test_two="""
        import asyncio

        def test_a_browser(open_report, tmp_path):
            page = tmp_path / "p.html"
            page.write_text("<!DOCTYPE html><title>t</title><p>hello</p>")
            open_report(page).assert_quiet()

        def test_then_asyncio():
            async def one():
                return 1
            assert asyncio.run(one()) == 1
    """)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
