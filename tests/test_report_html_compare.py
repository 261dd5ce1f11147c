"""The compare page (``harness compare A B --html FILE``): the scenarios ordered by what
changed, the forest plot's geometry, the epoch the side-by-side opens on, the command's
options and errors, and the page in a browser (its figures are the JSON's, the side-by-side
works, it reads without scripts, outside text stays text)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.models.mock import register_mock, unregister_mock
from harness.report.html.compare_page import (
    change_of,
    compare_page,
    difference_forest,
    difference_rows,
    side_by_side_data,
)
from harness.report.html.plots import PixelScale, symmetric_domain
from harness.runs.comparison import compare_run_dirs
from tests.helpers.cli import run_cli
from tests.helpers.report_runs import PAYLOAD, PAYLOADS, PageAgent, make_runs


@pytest.fixture(scope="module")
def agent() -> Iterator[None]:
    register_mock("pageagent", PageAgent)
    yield
    unregister_mock("pageagent")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, agent: None) -> tuple[Path, Path]:
    return make_runs(tmp_path_factory.mktemp("compare-runs"))


@pytest.fixture(scope="module")
def comparison(runs: tuple[Path, Path]) -> dict[str, Any]:
    done = run_cli("compare", *runs, "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


# --- what changed, in what order --------------------------------------------------------


def test_change_is_read_from_the_interval() -> None:
    assert change_of(-0.5, -0.9, -0.1) == "regression"
    assert change_of(0.5, 0.1, 0.9) == "improvement"
    assert change_of(-0.5, -0.9, 0.1) == "lower"
    assert change_of(0.5, -0.1, 0.9) == "higher"
    assert change_of(0.0, -0.3, 0.3) == "same"
    assert change_of(-1.0, None, None) == "lower"  # no interval: never called a regression


def test_regressions_come_first_then_improvements_then_the_rest() -> None:
    def row(sid: str, d: float, low: float | None, high: float | None) -> dict[str, Any]:
        return {"scenario_id": sid, "baseline_mean": 0.5, "candidate_mean": 0.5 + d,
                "difference": d, "ci_low": low, "ci_high": high, "baseline_epochs": 3,
                "candidate_epochs": 3}

    rows = difference_rows({"scenarios": [
        row("small-up", 0.1, -0.2, 0.4), row("reg-mild", -0.3, -0.5, -0.1),
        row("imp-big", 0.6, 0.2, 0.9), row("same", 0.0, -0.2, 0.2),
        row("reg-big", -0.7, -0.9, -0.4), row("down", -0.2, -0.6, 0.2),
        row("imp-mild", 0.3, 0.1, 0.5), row("no-interval", -0.9, None, None),
    ]})
    assert [r.scenario_id for r in rows] == [
        "reg-big", "reg-mild", "imp-big", "imp-mild", "no-interval", "down", "same", "small-up"]
    assert [r.index for r in rows] == list(range(8))
    assert [r.change for r in rows[:4]] == ["regression"] * 2 + ["improvement"] * 2


def test_rows_of_the_runs_match_their_known_differences(comparison: dict[str, Any]) -> None:
    rows = difference_rows(comparison)
    assert [(r.scenario_id, r.change) for r in rows] == [
        ("task-0", "regression"), ("task-1", "regression"), ("task-5", "improvement"),
        ("task-2", "lower"), ("task-3", "same"), ("task-4", "same")]
    by_id = {s["scenario_id"]: s for s in comparison["scenarios"]}
    for r in rows:
        s = by_id[r.scenario_id]
        assert (r.difference, r.ci_low, r.ci_high) == (s["difference"], s["ci_low"],
                                                       s["ci_high"])


def test_single_epoch_runs_have_no_scenario_interval_and_no_clear_change(
        tmp_path: Path, agent: None) -> None:
    runs = make_runs(tmp_path, epochs=1)
    data = compare_run_dirs(*runs)
    rows = difference_rows(data)
    assert all(r.ci_low is None and r.ci_high is None for r in rows)
    assert [(r.scenario_id, r.change) for r in rows] == [
        ("task-0", "lower"), ("task-1", "lower"), ("task-2", "lower"), ("task-3", "same"),
        ("task-4", "same"), ("task-5", "higher")]
    html = compare_page(data, *runs)
    assert html.count('<td class="ci">—</td>') == 6
    assert 'data-figure="regressions">0<' in html


# --- the forest plot ---------------------------------------------------------------------


def test_symmetric_domain() -> None:
    assert symmetric_domain([0.03, -0.04, None], 1.0) == (-0.05, 0.05)
    assert symmetric_domain([0.3, -0.12], 1.0) == (-0.5, 0.5)
    assert symmetric_domain([0.5], 1.0) == (-0.5, 0.5)
    assert symmetric_domain([-0.51], 1.0) == (-1.0, 1.0)
    assert symmetric_domain([3.0], 1.0) == (-1.0, 1.0)  # never wider than the limit
    assert symmetric_domain([None], 2.0) == (-0.1, 0.1)


def test_forest_puts_zero_in_the_middle_and_each_difference_on_the_scale(
        comparison: dict[str, Any]) -> None:
    rows = difference_rows(comparison)
    f = difference_forest(comparison, rows)
    assert f.reference_x == (f.plot_left + f.plot_right) / 2
    assert "0" in [t.label for t in f.ticks] and len(f.ticks) == 5
    assert [r.label for r in f.rows] == ["all scenarios (mean)"] + [r.scenario_id for r in rows]
    scale = PixelScale(-1.0, 1.0, f.plot_left, f.plot_right)  # the intervals reach past ±0.5
    d = comparison["difference"]
    assert (f.rows[0].x, f.rows[0].low, f.rows[0].high) == (
        scale(d["value"]), scale(d["ci_low"]), scale(d["ci_high"]))
    assert f.rows[0].tone == "total"
    for drawn, r in zip(f.rows[1:], rows, strict=True):
        assert drawn.x == scale(r.difference)
        assert drawn.tone == {"regression": "worse", "improvement": "better"}.get(r.change, "")
        assert drawn.x is not None and (drawn.x < f.reference_x) == (r.difference < 0)


# --- the side-by-side's data -------------------------------------------------------------


def view(epoch: int, status: str = "scored", score: float | None = 1.0) -> dict[str, Any]:
    return {"epoch": epoch, "status": status, "score": score}


def test_side_by_side_opens_on_the_epoch_that_differs_most() -> None:
    a = {"s": {0: view(0, score=1.0), 1: view(1, score=1.0), 2: view(2, score=0.5)},
         "t": {0: view(0), 1: view(1, "errored", None)},
         "only-a": {3: view(3)}}
    b = {"s": {0: view(0, score=0.9), 1: view(1, score=0.2), 2: view(2, score=0.0)},
         "t": {0: view(0, score=0.0), 1: view(1, score=1.0), 2: view(2)},
         "only-b": {0: view(0)}}
    data = side_by_side_data(["t", "s"], a, b)
    assert [s["id"] for s in data["scenarios"]] == ["t", "s", "only-a", "only-b"]
    t, s, only_a, only_b = data["scenarios"]
    assert t["first_epoch"] == 1  # errored in one run only: the biggest difference there is
    assert t["epochs"] == [0, 1, 2]
    assert s["first_epoch"] == 1  # |0.2 - 1.0| beats |0.0 - 0.5| and |0.9 - 1.0|
    assert (only_a["in_baseline"], only_a["in_candidate"]) == (True, False)
    assert only_a["first_epoch"] == 3 and only_b["first_epoch"] == 0
    assert [v["epoch"] for v in data["baseline"][0]] == [0, 1]
    assert [v["epoch"] for v in data["candidate"][0]] == [0, 1, 2]
    assert data["candidate"][2] == [] and data["baseline"][3] == []


def test_side_by_side_breaks_a_tie_on_the_lowest_epoch() -> None:
    a = {"s": {e: view(e) for e in range(4)}}
    b = {"s": {e: view(e, score=0.0 if e in (1, 3) else 1.0) for e in range(4)}}
    assert side_by_side_data(["s"], a, b)["scenarios"][0]["first_epoch"] == 1


# --- the command ---------------------------------------------------------------------------


def test_compare_html_writes_the_page_and_keeps_the_json(runs: tuple[Path, Path],
                                                         tmp_path: Path,
                                                         comparison: dict[str, Any]) -> None:
    out = tmp_path / "deep" / "cmp.html"
    done = run_cli("compare", *runs, "--json", "--html", out)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == comparison  # --html changes nothing printed
    assert f"wrote {out}" in done.stderr
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and 'id="compare-data"' in html
    assert compare_run_dirs(*runs) == comparison  # the command prints what the page shows


def test_a_bare_html_is_refused_in_one_line(runs: tuple[Path, Path]) -> None:
    for args in (("--html",), ("--html", "--json")):
        done = run_cli("compare", *runs, *args)
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "--html: needs a FILE" in lines[0], done.stderr
        assert "no default place" in lines[0] and done.stdout == ""


def test_an_unwritable_html_is_refused_before_any_work(runs: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = run_cli("compare", *runs, "--html", blocker / "cmp.html")
    assert done.returncode == 2
    assert done.stdout == ""  # refused before the comparison was printed
    assert len(done.stderr.strip().splitlines()) == 1 and str(blocker) in done.stderr
    done = run_cli("compare", *runs, "--html", tmp_path)
    assert done.returncode == 2 and "is a directory" in done.stderr


def test_bad_input_writes_no_page(runs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp.html"
    done = run_cli("compare", runs[0], tmp_path / "missing", "--html", out)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "missing" in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # neither the page nor a temporary file


def test_fail_on_regression_still_exits_1_with_the_page(runs: tuple[Path, Path],
                                                        tmp_path: Path,
                                                        comparison: dict[str, Any]) -> None:
    out = tmp_path / "cmp.html"
    done = run_cli("compare", *reversed(runs), "--fail-on-regression", "--html", out)
    swapped = compare_run_dirs(*reversed(runs))
    assert done.returncode == (1 if swapped["significant_regression"] else 0)
    assert out.exists()


# --- in the browser ------------------------------------------------------------------------


def figure(page: Any, name: str) -> str:
    return str(page.locator(f'[data-figure="{name}"]').inner_text()).strip()


def test_compare_page_in_the_browser(runs: tuple[Path, Path], comparison: dict[str, Any],
                                     tmp_path: Path, open_report: Any) -> None:
    out = tmp_path / "cmp.html"
    assert run_cli("compare", *runs, "--html", out).returncode == 0
    opened = open_report(out)
    page = opened.page
    d = comparison["difference"]
    p = comparison["t_test"]["p_value"]
    assert figure(page, "difference") == f"{d['value']:+.3f}"
    assert figure(page, "difference-ci") == f"[{d['ci_low']:.3f}, {d['ci_high']:.3f}]"
    assert figure(page, "baseline-mean") == f"{comparison['baseline_mean']:.3f}"
    assert figure(page, "candidate-mean") == f"{comparison['candidate_mean']:.3f}"
    expected_p = "<0.001" if p < 0.0005 else f"{p:.3f}"
    assert figure(page, "p-value") == expected_p == figure(page, "verdict-p")
    assert (figure(page, "regressions"), figure(page, "improvements")) == ("2", "1")
    assert "only in A: task-6" in page.locator("#unpaired").inner_text()
    # The table: one row per common scenario, in the order of what changed, JSON figures.
    by_id = {s["scenario_id"]: s for s in comparison["scenarios"]}
    cells = page.locator("#diff-table tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.innerText.trim()))")
    assert [c[0] for c in cells] == ["task-0", "task-1", "task-5", "task-2", "task-3", "task-4"]
    for c in cells:
        s = by_id[c[0]]
        assert c[1:5] == [f"{s['baseline_mean']:.3f}", f"{s['candidate_mean']:.3f}",
                          f"{s['difference']:+.3f}", f"[{s['ci_low']:.3f}, {s['ci_high']:.3f}]"]
    assert [c[6] for c in cells[:3]] == ["regression", "regression", "improvement"]
    assert page.locator("svg .row.worse").count() == 2
    assert page.locator("svg .row.better").count() == 1

    # The side-by-side opens on the most regressed scenario, on an epoch where they differ.
    a, b = page.locator("#side-a"), page.locator("#side-b")
    page.wait_for_selector("#side-a .sample")
    assert page.evaluate("location.hash") == ""  # the first view is not a link of its own
    assert "task-0 · epoch 0" in a.locator("h3").first.inner_text()
    assert "task-0 · epoch 0" in b.locator("h3").first.inner_text()
    assert "passed" in a.locator(".tag").first.inner_text()
    assert "failed" in b.locator(".tag").first.inner_text()
    assert a.locator(".msgbox.assistant").inner_text().endswith("DONE")
    assert b.locator(".msgbox.assistant").inner_text().endswith("no idea")
    # Another scenario from the table; then the epochs, by the buttons.
    page.locator("#diff-table a.pick-side", has_text="task-2").click()
    page.wait_for_function("document.querySelector('#side-a h3').textContent.includes('task-2')")
    assert page.locator("#side-epoch").input_value() == "0"  # fails in B's even epochs
    assert page.locator("#diff-3").get_attribute("class") == "current"
    page.locator("#side-next").click()
    page.wait_for_function("document.querySelector('#side-b h3').textContent.includes('epoch 1')")
    assert "passed" in b.locator(".tag").first.inner_text()
    assert page.evaluate("location.hash") == "#side-3-1"  # a link to what is shown
    # A scenario only in A: B says so.
    page.locator("#side-scenario").select_option(label="task-6")
    page.wait_for_function("document.querySelector('#side-a h3').textContent.includes('task-6')")
    assert b.inner_text().strip() == "This scenario is not in this run."
    opened.screenshot(tmp_path / "compare-light.png")
    opened.assert_quiet()

    dark = open_report(out, dark=True)
    dark.page.locator("#side").scroll_into_view_if_needed()
    dark.screenshot(tmp_path / "compare-dark.png")
    dark.assert_quiet()


def test_compare_page_opens_on_a_linked_scenario_and_epoch(
        runs: tuple[Path, Path], tmp_path: Path, open_report: Any) -> None:
    out = tmp_path / "cmp.html"
    assert run_cli("compare", *runs, "--html", out).returncode == 0
    opened = open_report(out)
    opened.page.goto(opened.url + "#side-2-4")
    opened.page.wait_for_function(
        "document.querySelector('#side-a h3').textContent.includes('task-5 · epoch 4')")
    assert opened.page.locator("#diff-2").get_attribute("class") == "current"
    opened.assert_quiet()


def test_compressed_samples_are_drawn_too(runs: tuple[Path, Path], tmp_path: Path,
                                          comparison: dict[str, Any], open_report: Any,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Large runs' samples are embedded gzipped; the side-by-side inflates them.
    monkeypatch.setattr("harness.report.html.page.COMPRESS_ABOVE_BYTES", 0)
    out = tmp_path / "cmp.html"
    out.write_text(compare_page(comparison, *runs), encoding="utf-8")
    assert 'id="compare-data" data-encoding="gzip-base64"' in out.read_text(encoding="utf-8")
    opened = open_report(out)
    opened.page.wait_for_selector("#side-b .sample")
    assert "task-0 · epoch 0" in opened.page.locator("#side-b h3").first.inner_text()
    opened.assert_quiet()


def test_compare_page_reads_without_scripts(runs: tuple[Path, Path], tmp_path: Path,
                                            comparison: dict[str, Any],
                                            open_report: Any) -> None:
    out = tmp_path / "cmp.html"
    assert run_cli("compare", *runs, "--html", out).returncode == 0
    opened = open_report(out, scripts=False)
    page = opened.page
    assert figure(page, "difference") == f"{comparison['difference']['value']:+.3f}"
    assert page.locator("#diff-table tbody tr").count() == 6
    assert page.locator("#scenarios svg .row").count() == 7
    assert page.locator("#side-controls").is_hidden()
    assert page.locator("#side-by-side").is_hidden()
    note = page.locator("#side noscript p")  # (Playwright's text search skips <noscript>)
    assert note.is_visible() and "side by side needs scripts" in note.inner_text()
    opened.screenshot(tmp_path / "compare-noscript.png", full_page=True)
    opened.assert_quiet()


def test_outside_text_stays_text(tmp_path_factory: pytest.TempPathFactory, agent: None,
                                 tmp_path: Path, open_report: Any) -> None:
    runs = make_runs(tmp_path_factory.mktemp("hostile"), hostile=True)
    try:
        data = compare_run_dirs(*runs)
        html = compare_page(data, *runs)
    finally:
        PageAgent.hostile = False
    for payload in PAYLOADS:  # never as markup in the file, server side or in the data
        assert payload not in html
    out = tmp_path / "cmp.html"
    out.write_text(html, encoding="utf-8")
    opened = open_report(out)
    page = opened.page
    page.wait_for_selector("#side-a .sample")
    # The run directory's name is shown as text; the conversation is drawn as text.
    assert "A <img src=x onerror=alert(1)>" in page.locator("#card-baseline").inner_text()
    for side in ("#side-a", "#side-b"):
        user = page.locator(f"{side} .msgbox.user pre").inner_text()
        assert user == f"do it {PAYLOAD}"
        assert PAYLOAD in page.locator(f"{side} .msgbox.assistant pre").inner_text()
    assert page.evaluate("window.__xss") is None
    assert page.locator("img, a[href^='javascript']").count() == 0
    assert page.locator("script").count() == 2  # the data block and ours, nothing injected
    opened.assert_quiet()  # no dialog, no request (an <img src=x> would make one)
