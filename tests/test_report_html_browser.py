"""The run's HTML report in headless Chromium: it asks the network for nothing, logs no
error, shows the figures of summary.json, opens a sample's drill-down, filters and searches
its samples, reads with scripts off, and runs nothing that came from outside. Screenshots of
each view (light and dark) are kept in the test's folder for people to look at."""

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
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "run"
    done = run_cli("run", ROOT / "scenarios", "--offline", "--agent", "mock:agent-flaky",
                   "--epochs", "3", "--cache-mode", "off", "--out", out)
    assert done.returncode == 0, done.stderr
    return out


def _visible_rows(opened: OpenedPage) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = opened.page.eval_on_selector_all(
        "#sample-table tbody tr:not(.hidden)",
        "rows => rows.map(r => ({...r.dataset}))")
    return rows


def test_the_page_is_quiet_and_shows_the_summary_figures(
        offline_run: Path, open_report: Opener, tmp_path: Path) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    summary = json.loads((offline_run / "summary.json").read_text())
    page = opened.page
    assert page.text_content('[data-figure="mean"]') == f"{summary['score']['mean']:.3f}"
    low, high = summary["score"]["pass_rate"]["ci_low"], summary["score"]["pass_rate"]["ci_high"]
    assert page.text_content('[data-figure="pass-rate-ci"]') == f"[{low:.3f}, {high:.3f}]"
    assert page.text_content('[data-figure="samples"]') == str(summary["counts"]["samples"])
    assert page.locator("#offline-notice").is_visible()
    assert page.locator("#scenarios svg .row").count() == summary["counts"]["scenarios"]
    assert page.text_content("#f-count") == (f"{summary['counts']['samples']} of "
                                             f"{summary['counts']['samples']} samples")
    opened.screenshot(tmp_path / "run-light.png")
    opened.assert_quiet()


def test_a_drill_down_shows_the_conversation_tool_calls_checks_and_judges(
        offline_run: Path, open_report: Opener, tmp_path: Path) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    page = opened.page
    row = page.locator('#sample-table tr[data-scenario="support-cancel-pending-order"]').first
    row.locator("a").click()
    drill = page.locator("#drill")
    drill.wait_for(state="visible")
    call = drill.locator('.call[data-tool="get_order"]').first
    assert '"order_id": "A-1001"' in call.locator(".args").text_content()
    assert '"status": "pending"' in call.locator(".result").text_content()
    assert drill.locator(".msgbox.user").count() >= 1
    assert drill.locator('tr[data-check="trajectory_exact_match"]').count() == 1
    assert drill.locator(".rubric").count() >= 1
    drill.locator("details.judge-sample summary").first.click()
    assert drill.locator(".verdict").first.is_visible()
    page.locator("#samples").scroll_into_view_if_needed()
    opened.screenshot(tmp_path / "drill-light.png")
    drill.locator("button.close").click()
    assert not drill.is_visible()
    opened.assert_quiet()


def test_filters_and_search_pick_the_samples(offline_run: Path, open_report: Opener) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    page = opened.page
    samples = [json.loads(line) for line in
               (offline_run / "samples.jsonl").read_text().splitlines()]
    failed = sum(s["status"] == "scored" and not s["passed"] for s in samples)
    page.select_option("#f-outcome", "failed")
    rows = _visible_rows(opened)
    assert len(rows) == failed and {r["outcome"] for r in rows} == {"failed"}
    page.select_option("#f-scenario", "files-action-items")
    assert {r["scenario"] for r in _visible_rows(opened)} == {"files-action-items"}
    page.select_option("#f-outcome", "")
    page.select_option("#f-scenario", "")
    page.select_option("#f-kind", "missing_tool")
    rows = _visible_rows(opened)
    assert rows and all("missing_tool" in r["kinds"].split("|") for r in rows)
    page.select_option("#f-kind", "")
    tagged = {s["scenario_id"] for s in samples if s["scenario_id"].startswith("home-")}
    tags = page.eval_on_selector_all("#f-tag option", "o => o.map(x => x.value)")
    assert len(tags) > 1
    page.select_option("#f-tag", tags[1])
    assert all(tags[1] in r["tags"].split("|") for r in _visible_rows(opened))
    page.select_option("#f-tag", "")
    # search over the conversation text: an order id only the support scenarios mention
    page.fill("#f-text", "A-1001")
    page.locator("#sample-table tr.hidden").first.wait_for(state="attached")
    assert {r["scenario"] for r in _visible_rows(opened)} == {"support-cancel-pending-order"}
    page.fill("#f-text", "")
    page.locator("#sample-table tr.hidden").first.wait_for(state="detached")
    assert len(_visible_rows(opened)) == len(samples) and tagged
    opened.assert_quiet()


def test_the_page_reads_with_scripts_off(offline_run: Path, open_report: Opener) -> None:
    opened = open_report(offline_run / REPORT_FILENAME, scripts=False)
    page = opened.page
    assert page.locator('[data-figure="mean"]').is_visible()
    assert page.locator("#sample-table tbody tr").first.is_visible()
    assert not page.locator("#filters").is_visible()  # they need scripts, so they stay hidden
    assert "need scripts" in page.text_content("#samples")
    opened.assert_quiet()


def test_dark_mode_uses_the_dark_palette(offline_run: Path, open_report: Opener,
                                        tmp_path: Path) -> None:
    opened = open_report(offline_run / REPORT_FILENAME, dark=True)
    background = opened.page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(21, 24, 30)"
    opened.screenshot(tmp_path / "run-dark.png")
    opened.page.locator("#sample-table a").first.click()
    opened.page.locator("#drill").wait_for(state="visible")
    opened.screenshot(tmp_path / "drill-dark.png")
    opened.assert_quiet()


@pytest.mark.parametrize("bypass_csp", [False, True], ids=["with-csp", "escaping-alone"])
def test_text_from_outside_runs_nothing(tmp_path: Path, open_report: Opener,
                                        bypass_csp: bool) -> None:
    report = write_run_report(hostile_run(tmp_path / "run"))
    opened = open_report(report, bypass_csp=bypass_csp)
    page = opened.page
    # shown as text in the tables and the error list
    assert HOSTILE["scenario"] in page.text_content("#scenarios")
    assert HOSTILE["error"] in page.text_content("#errors")
    # and in the drill-down of each sample, every judge sample opened
    texts = []
    for index in range(3):
        page.evaluate(f"location.hash = '#sample-{index}'")
        page.locator(f"#row-{index}.current").wait_for()
        page.locator("#drill details").evaluate_all("ds => ds.forEach(d => d.open = true)")
        texts.append(page.text_content("#drill") or "")
    drill = "".join(texts)
    assert HOSTILE["user"] in drill and HOSTILE["agent"] in drill
    assert HOSTILE["reasoning"] in drill and HOSTILE["tool"] in drill
    assert HOSTILE["finding"] in drill  # the simulated user's finding, as text
    page.fill("#f-text", "pwned")
    page.locator("#sample-table tr.hidden").first.wait_for(state="attached")
    for link in page.locator("a").all():
        assert not (link.get_attribute("href") or "").startswith("javascript")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#drill script, #drill img, #drill iframe, #drill svg").count() == 0
    opened.screenshot(tmp_path / "hostile.png")
    opened.assert_quiet()  # no dialog opened, nothing requested, no console error
