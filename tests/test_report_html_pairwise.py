"""The pairwise page (``harness pairwise A B --html FILE``): each pair's comparisons with both
orders (the judge's answer by position, the verdict by run, the reasoning), the win-rate
forest's geometry, the command's options and errors, and the page in a browser (its figures
are the JSON's, the filters and the transcripts work, it reads without scripts, outside text
stays text). The runs and the judge are in ``report_runs``: the judge prefers the transcript
that finished and, between equal ones, the one shown first."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from harness.models.mock import register_mock, unregister_mock
from harness.report.html.pairwise_page import (
    pair_views,
    pairwise_page,
    scenario_order,
    win_rate_forest,
)
from harness.report.html.plots import PixelScale
from tests.helpers.cli import CliResult, run_cli
from tests.helpers.report_runs import PAYLOAD, PAYLOADS, PageAgent, PageJudge, in_thread, make_runs

RUBRIC = "task_completion"


@pytest.fixture(scope="module")
def mocks() -> Iterator[None]:
    register_mock("pageagent", PageAgent)
    register_mock("pagejudge", PageJudge)
    yield
    unregister_mock("pageagent")
    unregister_mock("pagejudge")


def pairwise(*args: str | Path) -> CliResult:
    # In a thread: the browser tests' Playwright loop owns the main thread (report_runs).
    return in_thread(run_cli, "pairwise", *args, "--judge", "mock:pagejudge", "--rubric",
                     RUBRIC, "--cache-mode", "off")


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory, mocks: None) -> dict[str, Any]:
    """Two runs judged with 2 samples: the JSON, the --out lines and the page's path."""
    base = tmp_path_factory.mktemp("pairwise-page")
    a, b = make_runs(base)
    done = pairwise(a, b, "--samples", "2", "--json", "--out", base / "pairs.jsonl",
                    "--html", base / "pairwise.html")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in (base / "pairs.jsonl").read_text().splitlines()]
    return {"report": json.loads(done.stdout), "lines": lines, "html": base / "pairwise.html",
            "runs": (a, b)}


# --- what the page is made of -------------------------------------------------------------


def test_pairs_show_both_orders_by_position_and_by_run(judged: dict[str, Any]) -> None:
    pairs = pair_views(judged["lines"])
    report = judged["report"]
    assert len(pairs) == report["counts"]["pairs"] == 30  # task-6 is in A only: skipped
    assert [p.index for p in pairs] == list(range(30))
    by_key = {(p.scenario_id, p.epoch): p for p in pairs}
    won_by_a = by_key[("task-0", 3)]  # A finished, B did not: A wins in both orders
    assert (won_by_a.winner, won_by_a.consistency) == ("A", "consistent")
    c = won_by_a.comparisons[0]
    assert [(o.shown_first, o.said, o.verdict) for o in c.orders] == [
        ("A", "first", "A"), ("B", "second", "A")]
    assert c.orders[0].reasoning == "Only one of them finished the task."
    same = by_key[("task-3", 0)]  # equal transcripts: the judge picks whatever is first
    assert (same.winner, same.consistency, same.n_inconsistent) == ("tie", "inconsistent", 2)
    assert [(o.shown_first, o.said, o.verdict) for o in same.comparisons[1].orders] == [
        ("A", "first", "A"), ("B", "first", "B")]
    assert [(c.judge, c.sample) for c in same.comparisons] == [("mock:pagejudge", 0),
                                                               ("mock:pagejudge", 1)]
    # The pairs' verdicts add up to the report's.
    assert sum(p.winner == "A" for p in pairs) == report["wins_a"]
    assert sum(p.winner == "B" for p in pairs) == report["wins_b"] == 5
    assert sum(p.n_inconsistent for p in pairs) == report["inconsistency_rate"]["k"]


def test_scenario_win_rate_intervals_are_scipys(judged: dict[str, Any]) -> None:
    scores: dict[str, list[float]] = defaultdict(list)
    for line in judged["lines"]:
        if line["status"] == "decided":
            scores[line["scenario_id"]].append(line["b_score"])
    for s in judged["report"]["scenarios"]:
        x = scores[s["scenario_id"]]
        if max(x) > min(x):  # a t interval on n - 1 df, cut at [0, 1]
            low, high = sps.t.interval(0.95, len(x) - 1, loc=sum(x) / len(x), scale=sps.sem(x))
            expected = (max(float(low), 0.0), min(float(high), 1.0))
        elif x[0] in (0.0, 1.0):  # no spread at an end: Clopper-Pearson's exact bound
            ci = sps.binomtest(int(x[0]) * len(x), len(x)).proportion_ci(method="exact")
            expected = (float(ci.low), float(ci.high))
        else:  # all ties: Wilson's interval for n units at 0.5 (statsmodels)
            expected = proportion_confint(len(x) / 2, len(x), method="wilson")
        assert (s["b_win_rate_ci_low"], s["b_win_rate_ci_high"]) == pytest.approx(expected)


def test_forest_of_win_rates(judged: dict[str, Any]) -> None:
    report = judged["report"]
    scenarios = scenario_order(report)
    assert [s["scenario_id"] for s in scenarios] == [
        "task-0", "task-1", "task-2", "task-3", "task-4", "task-5"]  # B's worst first
    f = win_rate_forest(report, scenarios)
    assert f is not None
    assert f.reference_x == (f.plot_left + f.plot_right) / 2  # 0.5: no preference
    assert [t.label for t in f.ticks] == ["0", "0.25", "0.5", "0.75", "1"]
    scale = PixelScale(0.0, 1.0, f.plot_left, f.plot_right)
    rate = report["b_win_rate"]
    assert (f.rows[0].x, f.rows[0].low, f.rows[0].high, f.rows[0].tone) == (
        scale(rate["value"]), scale(rate["ci_low"]), scale(rate["ci_high"]), "total")
    for drawn, s in zip(f.rows[1:], scenarios, strict=True):
        assert (drawn.label, drawn.x) == (s["scenario_id"], scale(s["b_win_rate"]))
        assert (drawn.low, drawn.high) == (scale(s["b_win_rate_ci_low"]),
                                           scale(s["b_win_rate_ci_high"]))
    # Five pairs that all went one way cannot exclude 0.5: 0 of 5 has the exact upper bound
    # 1 - 0.025^(1/5) = 0.52, so no scenario here is coloured.
    assert scenarios[0]["b_win_rate_ci_high"] == pytest.approx(1 - 0.025 ** (1 / 5))
    assert [r.tone for r in f.rows[1:]] == [""] * 6


def test_forest_colours_the_scenarios_whose_interval_excludes_half() -> None:
    def row(sid: str, value: float | None, low: float | None,
            high: float | None) -> dict[str, Any]:
        return {"scenario_id": sid, "b_win_rate": value, "b_win_rate_ci_low": low,
                "b_win_rate_ci_high": high, "wins_a": 0, "wins_b": 0, "ties": 0, "decided": 0}

    report = {"b_win_rate": {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 9,
                             "n_clusters": 4},
              "scenarios": [row("up", 0.9, 0.6, 1.0), row("down", 0.1, 0.0, 0.45),
                            row("even", 0.5, 0.2, 0.8), row("one", 1.0, None, None),
                            row("undecided", None, None, None)]}
    f = win_rate_forest(report, scenario_order(report))
    assert f is not None
    assert [(r.label, r.tone) for r in f.rows] == [
        ("all scenarios", "total"), ("down", "worse"), ("even", ""), ("up", "better"),
        ("one", "")]  # a scenario with no decided pair has no row


def test_no_decided_pair_has_no_forest() -> None:
    assert win_rate_forest({"b_win_rate": None, "scenarios": []}, []) is None


# --- the command ---------------------------------------------------------------------------


def test_a_bare_html_is_refused_before_any_judge_is_called(judged: dict[str, Any],
                                                           tmp_path: Path) -> None:
    out = tmp_path / "pairs.jsonl"
    done = pairwise(*judged["runs"], "--html", "--out", out)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert "--html: needs a FILE" in done.stderr and "pairwise comparison" in done.stderr
    assert not out.exists()  # nothing was judged, nothing written


def test_an_unwritable_html_is_refused_before_any_judge_is_called(judged: dict[str, Any],
                                                                  tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    done = pairwise(*judged["runs"], "--html", tmp_path / "file" / "p.html")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "file" in done.stderr


def test_the_page_is_written_with_the_report(judged: dict[str, Any]) -> None:
    html = judged["html"].read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and 'id="pair-transcripts"' in html
    assert html.count('<details class="pair"') == judged["report"]["counts"]["pairs"]


# --- in the browser ------------------------------------------------------------------------


def figure(page: Any, name: str) -> str:
    return str(page.locator(f'[data-figure="{name}"]').inner_text()).strip()


def ci(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def test_pairwise_page_in_the_browser(judged: dict[str, Any], tmp_path: Path,
                                      open_report: Any) -> None:
    r = judged["report"]
    opened = open_report(judged["html"])
    page = opened.page
    rate = r["b_win_rate"]
    assert figure(page, "b-win-rate") == f"{rate['value']:.3f}"
    assert figure(page, "b-win-rate-ci") == ci(rate["ci_low"], rate["ci_high"])
    assert figure(page, "wins") == f"{r['wins_a']} / {r['wins_b']} / {r['ties']}"
    inc, first = r["inconsistency_rate"], r["first_position_rate"]
    assert figure(page, "inconsistency") == f"{inc['value']:.3f}"
    assert figure(page, "inconsistency-ci") == ci(inc["ci_low"], inc["ci_high"])
    assert figure(page, "first-position") == f"{first['value']:.3f}"
    assert figure(page, "first-position-ci") == ci(first["ci_low"], first["ci_high"])
    verdict = page.locator("#verdict").inner_text()
    assert not r["significant_regression"] and not r["significant_improvement"]
    assert verdict.startswith("No significant preference") and "includes 0.5" in verdict
    cells = page.locator("#scenario-table tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.innerText.trim()))")
    for c, s in zip(cells, scenario_order(r), strict=True):
        assert c[:5] == [s["scenario_id"], str(s["pairs"]),
                         f"{s['wins_a']} / {s['wins_b']} / {s['ties']}",
                         f"{s['b_win_rate']:.3f}",
                         ci(s["b_win_rate_ci_low"], s["b_win_rate_ci_high"])]
        assert c[5] == f"{s['inconsistent_comparisons']} / {s['comparisons']}"
    assert page.locator("#skipped-table").inner_text().count("only in a") == 5

    # Filters: the verdict, the orders, a scenario from its table.
    shown = "() => document.querySelectorAll('details.pair:not([hidden])').length"
    assert page.locator("#p-count").inner_text() == "30 of 30 pairs"
    page.locator("#p-winner").select_option("B")
    assert page.evaluate(shown) == r["wins_b"] == 5
    assert page.locator("#p-count").inner_text() == "5 of 30 pairs"
    page.locator("#p-winner").select_option("")
    page.locator("#p-consistency").select_option("inconsistent")
    disagreeing = sum(1 for x in judged["lines"] if x.get("n_inconsistent"))
    assert page.evaluate(shown) == disagreeing
    page.locator("#p-consistency").select_option("")
    page.locator("#scenario-table a.pick-pairs", has_text="task-5").click()
    assert page.evaluate(shown) == 5
    assert page.locator("#p-scenario").input_value() == "task-5"

    # A pair: both orders' answers, verdicts and reasoning; then both transcripts.
    pair = page.locator("details.pair[data-scenario='task-5']").first
    pair.locator("summary").click()
    rows = pair.locator("table.orders tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.innerText.trim()))")
    assert rows[0][1:] == ["A, then B", "second", "B", "Only one of them finished the task."]
    assert rows[1] == ["B, then A", "first", "B", "Only one of them finished the task."]
    assert "agree" in rows[0][0] and "mock:pagejudge · 0" in rows[0][0]
    pair.locator("button.show-transcripts").click()
    side = pair.locator(".pair-transcripts")
    side.locator(".sample").nth(1).wait_for()
    views = side.locator(".sample > h3:first-child").all_inner_texts()
    assert views == ["task-5 · epoch 0", "task-5 · epoch 0"]
    assert side.locator(".msgbox.assistant pre").all_inner_texts() == ["no idea", "DONE"]
    pair.locator("button.show-transcripts").click()
    assert side.is_hidden()
    pair.scroll_into_view_if_needed()
    opened.screenshot(tmp_path / "pairwise-light.png")
    opened.assert_quiet()

    dark = open_report(judged["html"], dark=True)
    dark.screenshot(tmp_path / "pairwise-dark.png")
    dark.assert_quiet()


def test_a_linked_pair_opens(judged: dict[str, Any], open_report: Any) -> None:
    opened = open_report(judged["html"])
    opened.page.goto(opened.url + "#pair-7")
    assert opened.page.locator("#pair-7").get_attribute("open") is not None
    opened.assert_quiet()


def test_pairwise_page_reads_without_scripts(judged: dict[str, Any], tmp_path: Path,
                                             open_report: Any) -> None:
    opened = open_report(judged["html"], scripts=False)
    page = opened.page
    assert figure(page, "b-win-rate") == f"{judged['report']['b_win_rate']['value']:.3f}"
    assert page.locator("#win-rates svg .row").count() == 7
    assert page.locator("#pair-filters").is_hidden()
    assert page.locator("button.show-transcripts").first.is_hidden()
    pair = page.locator("details.pair").first
    pair.locator("summary").click()  # <details> opens without scripts
    assert "Only one of them finished the task." in pair.locator("table.orders").inner_text()
    note = page.locator("#pairs noscript p")
    assert note.is_visible() and "need scripts" in note.inner_text()
    opened.screenshot(tmp_path / "pairwise-noscript.png")
    opened.assert_quiet()


def test_failed_comparisons_are_errors_beside_the_verdicts(tmp_path: Path, mocks: None,
                                                           open_report: Any) -> None:
    a, b = make_runs(tmp_path)
    PageJudge.fail_first_shown = "no idea"  # B's failed answers, shown first, break the judge
    try:
        done = pairwise(a, b, "--json", "--out", tmp_path / "pairs.jsonl")
    finally:
        PageJudge.fail_first_shown = None
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    lines = [json.loads(x) for x in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    out = tmp_path / "pairwise.html"
    out.write_text(pairwise_page(report, lines), encoding="utf-8")
    opened = open_report(out)
    page = opened.page
    # Every pair where one run said "no idea": task-0, task-1, task-2's even epochs, task-5.
    assert figure(page, "judge-errors") == str(report["counts"]["judge_errors"]) == "18"
    errored = page.locator("details.pair[data-winner='error']")
    assert errored.count() == 18
    assert page.locator("details.pair[data-consistency='undecided']").count() == 18
    pair = page.locator("details.pair[data-scenario='task-0']").first
    assert "judge error" in pair.locator("summary").inner_text()
    pair.locator("summary").click()
    rows = pair.locator("table.orders tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.innerText.trim()))")
    # The order that was answered, then the error of the one that failed: never a verdict.
    assert rows[0][1:4] == ["A, then B", "first", "A"] and "error" in rows[0][0]
    assert rows[1][0].startswith("Failed after retries (an error, never a verdict): "
                                 "ModelUnavailableError")
    page.locator("#p-winner").select_option("error")
    assert page.locator("#p-count").inner_text() == "18 of 30 pairs"
    assert page.locator("#judge-error-table tbody tr").count() == len(report["judge_errors"])
    opened.assert_quiet()


def test_outside_text_stays_text(tmp_path: Path, mocks: None, open_report: Any) -> None:
    PageJudge.hostile = True
    try:
        a, b = make_runs(tmp_path, hostile=True)
        done = pairwise(a, b, "--json", "--out", tmp_path / "pairs.jsonl")
    finally:
        PageJudge.hostile = PageAgent.hostile = False
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    html = pairwise_page(json.loads(done.stdout), lines)
    for payload in PAYLOADS:
        assert payload not in html
    out = tmp_path / "pairwise.html"
    out.write_text(html, encoding="utf-8")
    opened = open_report(out)
    page = opened.page
    pair = page.locator("details.pair").first
    pair.locator("summary").click()
    reasoning = pair.locator("td.reasoning").first.inner_text()
    assert reasoning.endswith(PAYLOAD) and "\n" in reasoning  # shown as written
    pair.locator("button.show-transcripts").click()
    pair.locator(".pair-transcripts .sample").nth(1).wait_for()
    texts = pair.locator(".pair-transcripts .msgbox.user pre").all_inner_texts()
    assert texts == [f"do it {PAYLOAD}"] * 2
    assert page.evaluate("window.__xss") is None
    assert page.locator("img, a[href^='javascript']").count() == 0
    assert page.locator("script").count() == 2
    opened.assert_quiet()
