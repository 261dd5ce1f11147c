"""The run page's Tags section in headless Chromium: a forest plot and a table of each tag's
figures as summary.json has them, tags from outside shown as text, and no section when no
scenario has a tag."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.report.html.run_page import REPORT_FILENAME, write_run_report
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli
from tests.helpers.hostile import HOSTILE, hostile_run

ROOT = Path(__file__).resolve().parents[1]
Opener = Callable[..., OpenedPage]


@pytest.fixture(scope="module")
def tagged_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tags") / "run"
    done = run_cli("run", ROOT / "scenarios", "--offline", "--agent", "mock:agent-flaky",
                   "--epochs", "2", "--cache-mode", "off", "--out", out)
    assert done.returncode == 0, done.stderr
    return out


def test_the_tags_section_shows_each_tags_figures(tagged_run: Path, open_report: Opener,
                                                  tmp_path: Path) -> None:
    tags = json.loads((tagged_run / "summary.json").read_text())["tags"]
    opened = open_report(tagged_run / REPORT_FILENAME)
    page = opened.page
    assert page.locator('nav a[href="#tags"]').count() == 1
    assert page.locator("#tags svg .row").count() == len(tags)
    for tag, figures in tags.items():
        cells = page.locator(f'#tags tr[data-tag="{tag}"] td').all_text_contents()
        mean = figures["mean"]
        assert cells[:4] == [tag, str(figures["scenarios"]), str(figures["samples"]),
                             f"{mean['value']:.3f}"]
        if mean["ci_low"] is not None:
            assert cells[4] == f"[{mean['ci_low']:.3f}, {mean['ci_high']:.3f}]"
        assert cells[5] == f"{figures['pass_rate']['value']:.2f}"
    page.locator("#tags").scroll_into_view_if_needed()
    opened.screenshot(tmp_path / "tags.png")
    opened.assert_quiet()


def test_a_tag_from_outside_is_text(tmp_path: Path, open_report: Opener) -> None:
    opened = open_report(write_run_report(hostile_run(tmp_path / "run")))
    page = opened.page
    assert HOSTILE["tag"] in page.text_content("#tags table")
    assert page.locator("#tags img, #tags script, #tags iframe").count() == 0
    assert page.evaluate("window.__pwned") is None
    opened.assert_quiet()


def test_no_tags_section_without_tags(tmp_path: Path, open_report: Opener) -> None:
    text = (ROOT / "scenarios" / "weather.yaml").read_text()
    untagged = tmp_path / "untagged.yaml"
    untagged.write_text("\n".join(line for line in text.splitlines()
                                  if not line.strip().startswith("tags:")) + "\n")
    done = run_cli("run", f"{untagged}:weather-current-paris", "--offline", "--epochs", "2",
                   "--cache-mode", "off", "--out", tmp_path / "r")
    assert done.returncode in (0, 1), done.stderr
    opened = open_report(tmp_path / "r" / REPORT_FILENAME)
    assert opened.page.locator("#tags").count() == 0
    assert opened.page.locator('nav a[href="#tags"]').count() == 0
    opened.assert_quiet()
