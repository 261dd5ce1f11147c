"""The compare and calibration pages in a 420 px window, light and dark: nothing makes the
page scroll sideways (a wide table or plot scrolls in its own box), and the calibration
page ends with its verdict in view of a reader who scrolls to the end."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.models.mock import register_mock, unregister_mock
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli
from tests.helpers.report_runs import PageAgent, make_runs

ROOT = Path(__file__).resolve().parents[1]
POINTWISE = ROOT / "examples" / "calibration" / "pointwise_judgments.jsonl"
NARROW = {"width": 420, "height": 860}
Opener = Callable[..., OpenedPage]


@pytest.fixture(scope="module")
def compare_html(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    register_mock("pageagent", PageAgent)
    try:
        base = tmp_path_factory.mktemp("narrow")
        a, b = make_runs(base)
        out = base / "compare.html"
        done = run_cli("compare", a, b, "--html", out)
        assert done.returncode in (0, 1), done.stderr  # 1: the regressions it holds
        yield out
    finally:
        unregister_mock("pageagent")


@pytest.fixture(scope="module")
def calibration_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("narrow-cal") / "calibration.html"
    done = run_cli("calibrate", "--judgments", POINTWISE, "--resamples", "100", "--html", out)
    assert done.returncode == 0, done.stderr
    return out


def _scroll_width(opened: OpenedPage) -> int:
    opened.page.set_viewport_size(NARROW)
    width: int = opened.page.evaluate("document.documentElement.scrollWidth")
    return width


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_compare_page_fits_a_420_px_window(compare_html: Path, open_report: Opener,
                                               dark: bool) -> None:
    opened = open_report(compare_html, dark=dark)
    assert _scroll_width(opened) <= NARROW["width"]
    opened.assert_quiet()


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_calibration_page_fits_a_420_px_window_and_ends_with_its_verdict(
        calibration_html: Path, open_report: Opener, dark: bool) -> None:
    opened = open_report(calibration_html, dark=dark)
    assert _scroll_width(opened) <= NARROW["width"]
    page = opened.page
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    verdicts = page.locator("#verdict .verdict-line")
    assert verdicts.count() == 2  # one per judge of the example
    for verdict in verdicts.all():
        assert verdict.is_visible() and "Krippendorff's α" in (verdict.text_content() or "")
    opened.assert_quiet()
