"""Why a sample failed, in two clicks: the run page's way from the headline to a failed
sample and what failed it. Without a browser: what the page builder says failed a sample
(only gating checks and failing rubrics), the run's name as the title. In headless Chromium:
the headline's "failed samples (N)" link, sorting, a click anywhere on a row, scenario and
sample links, the "failed because" line, information badges on checks that do not decide,
the rubric's rule, CSV and JSONL export of the rows shown, and no sideways scroll at 420 px
(light and dark)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.checks.result import CheckResult
from harness.report.html.run_page import (
    REPORT_FILENAME,
    run_name,
    sample_view,
    write_run_report,
)
from harness.report.html.sample_outcome import (
    RubricRule,
    failed_because,
    rubric_rule_text,
    rubric_rules,
)
from harness.runs.config import RunConfig
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.runs.summary import summarise, write_summary
from harness.transcript import Transcript
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli
from tests.helpers.hostile import HOSTILE, hostile_run

ROOT = Path(__file__).resolve().parents[1]
Opener = Callable[..., OpenedPage]
NARROW = {"width": 420, "height": 860}
FORMULA = "=HYPERLINK(\"http://127.0.0.1/\",\"x\")"


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("samples") / "nightly-run"
    done = run_cli("run", ROOT / "scenarios", "--offline", "--agent", "mock:agent-flaky",
                   "--epochs", "3", "--cache-mode", "off", "--out", out)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def records(offline_run: Path) -> list[SampleRecord]:
    with RunStore.open(offline_run) as store:
        return list(store.iter_samples())


def _failing_gates(record: SampleRecord) -> set[str]:
    return {r["name"] for report in record.checks for r in report["results"]
            if CheckResult.model_validate(r).gating and r.get("passed") is False}


def _visible(opened: OpenedPage) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = opened.page.eval_on_selector_all(
        "#sample-table tbody tr:not(.hidden)",
        "rows => rows.map(r => ({...r.dataset, score: r.cells[3].textContent.trim()}))")
    return rows


# --- without a browser ----------------------------------------------------------------------


def test_failed_because_names_the_gating_checks_and_rubrics_that_failed_and_nothing_else(
        records: list[SampleRecord]) -> None:
    failed = [r for r in records if r.status == "scored" and r.passed is False]
    assert failed and any(r.passed for r in records)
    for record in records:
        reasons = failed_because(record, None, {})
        if record not in failed:
            assert reasons == []
            continue
        rubrics = {f"rubric {j['rubric_id']}" for j in record.judgments
                   if j.get("passed") is False}
        assert {r["name"] for r in reasons} == _failing_gates(record) | rubrics
        assert reasons, "a failed sample always says what failed it"
    # the descriptive trajectory views fail in these samples, but never decide them
    views = {"trajectory_exact_match", "trajectory_in_order_match", "trajectory_precision"}
    named = {r["name"] for record in failed for r in failed_because(record, None, {})}
    assert not views & named


def test_failed_because_says_expected_against_actual(records: list[SampleRecord]) -> None:
    texts = [r["text"] for record in records for r in sample_view(record)["failed_because"]]
    trajectory = next(t for t in texts if t.startswith("tool_trajectory_avg_score"))
    assert "needs ≥ 1" in trajectory and "expected " in trajectory and "called " in trajectory
    assert any(t.startswith("response_match_score") and "threshold 0.8" in t for t in texts)


def test_a_rubrics_rule_gives_its_threshold_and_aggregation(
        records: list[SampleRecord]) -> None:
    judged = sample_view(records[0], None)["judgments"]
    assert judged and all("passes when the score is at least" in j["rule"] for j in judged)
    rules = rubric_rules([])
    view = sample_view(records[0], rules)
    quality = next(j for j in view["judgments"] if j["rubric_id"] == "final_response_quality")
    threshold = next(r.threshold for (rid, _), r in rules.items()
                     if rid == "final_response_quality")
    assert f"at least {threshold:g}" in quality["rule"] and "one judge sample" in quality["rule"]


def test_the_page_is_titled_with_the_runs_name(offline_run: Path, tmp_path: Path) -> None:
    text = (offline_run / REPORT_FILENAME).read_text(encoding="utf-8")
    assert "<title>Run nightly-run</title>" in text
    assert run_name(tmp_path / "demo-20260101-120000" / "suite") == "demo-20260101-120000"
    assert run_name(tmp_path / "suite-b") == "suite-b"


# --- in a browser ---------------------------------------------------------------------------


def test_the_headline_link_shows_only_the_failed_samples(
        offline_run: Path, records: list[SampleRecord], open_report: Opener) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    page = opened.page
    failed = sum(r.status == "scored" and r.passed is False for r in records)
    page.select_option("#f-scenario", "files-action-items")  # cleared by the link
    link = page.locator("#headline a#failed-link")
    assert link.text_content() == f"failed samples ({failed})"
    link.click()
    rows = _visible(opened)
    assert len(rows) == failed and {r["outcome"] for r in rows} == {"failed"}
    assert page.evaluate("location.hash") == "#samples"
    assert page.text_content("#f-count") == f"{failed} of {len(records)} samples"
    opened.assert_quiet()


def test_a_header_sorts_the_samples_table_and_again_reverses(
        offline_run: Path, open_report: Opener) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    page = opened.page
    page.locator("#sample-table th", has_text="score").locator("button").click()
    scores = [float(r["score"]) for r in _visible(opened)]
    assert scores == sorted(scores) and scores[0] < scores[-1]
    page.locator("#sample-table th", has_text="score").locator("button").click()
    assert [float(r["score"]) for r in _visible(opened)] == sorted(scores, reverse=True)
    assert page.get_attribute("#sample-table th:nth-child(4)", "aria-sort") == "descending"
    page.locator("#sample-table th", has_text="outcome").locator("button").click()
    outcomes = [r["outcome"] for r in _visible(opened)]
    assert outcomes == sorted(outcomes)
    opened.assert_quiet()


def test_a_click_anywhere_on_a_row_opens_its_sample(
        offline_run: Path, records: list[SampleRecord], open_report: Opener) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    page = opened.page
    index = next(i for i, r in enumerate(records) if r.passed is False)
    page.locator(f"#row-{index} td:nth-child(2)").click()  # the epoch cell, not a link
    drill = page.locator("#drill")
    drill.wait_for(state="visible")
    record = records[index]
    assert drill.locator("h3").first.text_content().startswith(
        f"{record.scenario_id} · epoch {record.epoch}")
    assert page.locator(f"#row-{index}.current").count() == 1
    # "what went wrong" stays beside the open sample
    assert page.locator(f"#row-{index} td.why").is_visible()
    opened.assert_quiet()


def test_a_failed_sample_opens_with_what_failed_it(
        offline_run: Path, records: list[SampleRecord], open_report: Opener,
        tmp_path: Path) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    page = opened.page
    index = next(i for i, r in enumerate(records) if r.passed is False and _failing_gates(r))
    page.evaluate(f"location.hash = '#sample-{index}'")
    because = page.locator("#drill .because")
    because.wait_for(state="visible")
    line = because.locator(".because-line").text_content() or ""
    assert line.startswith("Failed because ")
    assert all(name in line for name in _failing_gates(records[index]))
    # it comes before the conversation
    order = page.eval_on_selector_all(
        "#drill .sample > *", "els => els.map(e => e.className + '|' + e.textContent)")
    first_because = next(i for i, x in enumerate(order) if x.startswith("banner bad because"))
    conversation = next(i for i, x in enumerate(order) if x == "|Conversation")
    assert first_because < conversation
    opened.screenshot(tmp_path / "because.png")
    opened.assert_quiet()


def test_checks_that_do_not_decide_wear_an_information_badge(
        offline_run: Path, records: list[SampleRecord], open_report: Opener) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    page = opened.page
    index = next(i for i, r in enumerate(records) if any(
        c["name"] == "trajectory_exact_match" and c["passed"] is False
        for rep in r.checks for c in rep["results"]))
    page.evaluate(f"location.hash = '#sample-{index}'")
    page.locator(f"#row-{index}.current").wait_for()
    view = page.locator('#drill tr[data-check="trajectory_exact_match"]')
    assert view.locator(".tag").all_text_contents() == ["information"]
    # its findings are information too: nothing in red in a view that does not decide
    any_order = page.locator('#drill tr[data-check="trajectory_any_order_match"]')
    assert any_order.locator(".tag.info").count() >= 2  # the badge and a finding's kind
    assert any_order.locator(".tag.bad").count() == 0
    gate = page.locator('#drill tr[data-check="tool_trajectory_avg_score"]')
    assert gate.locator(".tag").all_text_contents() in (["pass"], ["fail"])
    rule = page.locator("#drill .rubric .rule").first.text_content() or ""
    assert "passes when the score is at least" in rule
    opened.assert_quiet()


def test_failure_examples_open_their_sample_and_scenario_links_filter(
        offline_run: Path, open_report: Opener) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    page = opened.page
    example = page.locator("#failures a.sample-link").first
    name = example.text_content() or ""
    example.click()
    page.locator("#drill").wait_for(state="visible")
    scenario, epoch = name.rsplit("#", 1)
    assert page.locator("#drill h3").first.text_content().startswith(
        f"{scenario} · epoch {epoch}")
    # every scenario link, wherever it is, filters the samples to that scenario
    for where in ("#scenarios", "#failures"):
        link = page.locator(f"{where} a.pick-scenario").first
        picked = link.get_attribute("data-scenario")
        link.click()
        assert {r["scenario"] for r in _visible(opened)} == {picked}
    assert page.locator("#sample-table a").evaluate_all(
        "links => links.every(a => a.classList.contains('open-sample'))")
    opened.assert_quiet()


def _download(page: Any, button: str) -> str:
    with page.expect_download() as info:
        page.click(button)
    return Path(info.value.path()).read_text(encoding="utf-8")


def test_export_writes_the_filtered_samples_as_csv_and_jsonl(
        offline_run: Path, records: list[SampleRecord], open_report: Opener) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    page = opened.page
    page.click("#failed-link")
    page.select_option("#f-scenario", "files-action-items")
    shown = [(r["scenario"], r["outcome"]) for r in _visible(opened)]
    assert shown and len(shown) < len(records)
    rows = list(csv.DictReader(io.StringIO(_download(page, "#export-csv"))))
    assert [(r["scenario_id"], r["outcome"]) for r in rows] == shown
    assert all(r["failed_because"] for r in rows)
    lines = _download(page, "#export-jsonl").splitlines()
    exported = [json.loads(line) for line in lines]
    assert [(s["scenario_id"], s["passed"]) for s in exported] == [
        (scenario, False) for scenario, _ in shown]
    assert all(s["messages"] and s["failed_because"] for s in exported)
    opened.assert_quiet()  # made in the page: nothing requested


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_a_420_px_window_does_not_scroll_sideways(
        offline_run: Path, open_report: Opener, dark: bool, tmp_path: Path) -> None:
    opened = open_report(offline_run / REPORT_FILENAME, dark=dark)
    page = opened.page
    page.set_viewport_size(NARROW)
    width = "document.documentElement.scrollWidth"
    assert page.evaluate(width) <= NARROW["width"]
    page.locator("#sample-table tbody tr").first.locator("td").nth(2).click()
    page.locator("#drill").wait_for(state="visible")
    page.locator("#drill details").evaluate_all("ds => ds.forEach(d => d.open = true)")
    assert page.evaluate(width) <= NARROW["width"]
    assert page.locator("#drill").is_visible()
    opened.screenshot(tmp_path / f"narrow-{'dark' if dark else 'light'}.png")
    opened.assert_quiet()


@pytest.mark.parametrize("width", [1366, 420])
def test_the_search_placeholder_is_not_cut(offline_run: Path, open_report: Opener,
                                           width: int) -> None:
    opened = open_report(offline_run / REPORT_FILENAME)
    opened.page.set_viewport_size({"width": width, "height": 860})
    # the placeholder's width in the input's own font, against the room inside the input
    room, needed = opened.page.evaluate("""() => {
        const input = document.getElementById('f-text'), style = getComputedStyle(input);
        const ctx = document.createElement('canvas').getContext('2d');
        ctx.font = style.font;
        const inner = input.clientWidth - parseFloat(style.paddingLeft)
            - parseFloat(style.paddingRight);
        return [inner, ctx.measureText(input.placeholder).width];
    }""")
    # a search field keeps room at its end for its clear button (about 16 px in Chromium)
    assert needed + 24 <= room
    opened.assert_quiet()


def _formula_run(run_dir: Path) -> Path:
    """A run of one failed sample whose scenario id a spreadsheet would run as a formula."""
    config = RunConfig(scenario_paths=["x.yaml"], offline=True, epochs=1)
    with RunStore.create(run_dir, config.model_dump(mode="json")) as store:
        store.write_sample(SampleRecord(
            scenario_id=FORMULA, epoch=0, status="scored", score=0.0, passed=False,
            tags=[HOSTILE["tag"]], transcript=Transcript(scenario_id=FORMULA, epoch=0,
                                                         stop_reason="goal_met")))
        write_summary(run_dir, summarise(store, config, run_dir=run_dir))
    return run_dir


def test_exported_outside_text_is_data_in_both_files(tmp_path: Path,
                                                     open_report: Opener) -> None:
    hostile = write_run_report(hostile_run(tmp_path / "hostile"))
    formula = write_run_report(_formula_run(tmp_path / "formula"))
    opened = open_report(hostile)
    page = opened.page
    rows = list(csv.DictReader(io.StringIO(_download(page, "#export-csv"))))
    assert {r["scenario_id"] for r in rows} >= {HOSTILE["scenario"]}
    failed = next(r for r in rows if r["outcome"] == "failed")
    assert HOSTILE["user"] in failed["failed_because"]  # the finding, as written
    exported = [json.loads(line) for line in _download(page, "#export-jsonl").splitlines()]
    assert exported[0]["messages"][0]["content"] == HOSTILE["user"]
    assert page.evaluate("window.__pwned") is None
    opened.assert_quiet()
    opened = open_report(formula)
    rows = list(csv.DictReader(io.StringIO(_download(opened.page, "#export-csv"))))
    assert rows[0]["scenario_id"] == "'" + FORMULA  # written as text, never run
    opened.assert_quiet()


def test_a_rubric_threshold_that_disagrees_with_the_stored_verdict_is_not_shown(
        records: list[SampleRecord]) -> None:
    judged = next(j for r in records for j in r.judgments if j.get("passed") is True)
    key = (judged["rubric_id"], str(judged["rubric_version"]))
    edited = {key: RubricRule(threshold=judged["score"] + 0.1, criterion_thresholds={})}
    rule = rubric_rule_text(judged, edited)
    assert f"{judged['score'] + 0.1:g}" not in rule and "the rubric's threshold" in rule
    kept = {key: RubricRule(threshold=judged["score"] - 0.1, criterion_thresholds={})}
    assert f"at least {judged['score'] - 0.1:g}" in rubric_rule_text(judged, kept)
