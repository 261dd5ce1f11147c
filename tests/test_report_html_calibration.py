"""The calibration page: its plot geometry, its item views (cross-checked against the
report's own statistics and LLMBar's published figures), the CLI and study wiring, and the
page in a real browser (figures equal `--json`, the interactive parts, scripts off,
escaping)."""

from __future__ import annotations

import json
import statistics
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from harness.calibration import AnalysisOptions, analyse, build_pairwise
from harness.calibration.datasets import PairwiseDataset, PairwiseItem
from harness.calibration.judgments import PairwiseJudgment, load_judgments
from harness.report.html.calibration_items import (
    VERDICT_LABELS,
    largest_differences,
    most_wrong,
    pairwise_items,
    pointwise_items,
    verdict_tables,
)
from harness.report.html.calibration_page import (
    MAX_LISTED,
    calibration_page,
    estimate_at,
    judge_views,
    write_calibration_page,
)
from harness.report.html.plots import Point, heatmap, scatter
from tests.helpers.cli import run_cli

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples" / "calibration"
POINTWISE = EXAMPLES / "pointwise_judgments.jsonl"
PAIRWISE = EXAMPLES / "pairwise_judgments.jsonl"
LLMBAR = ROOT / "tests" / "data" / "llmbar-natural"
FAST = AnalysisOptions(n_resamples=100, pass_threshold=4)


# --- geometry ------------------------------------------------------------------------------


def test_heatmap_places_cells_row_by_row_and_shades_by_the_largest_count() -> None:
    m = heatmap([[4, 1], [0, 2]], ["1", "2"], ["1", "2"], row_title="people",
                col_title="judge", cell=40)
    cells = {(c.row, c.col): c for c in m.cells}
    assert [cells[0, 0].count, cells[0, 1].count, cells[1, 0].count] == [4, 1, 0]
    assert cells[0, 1].x - cells[0, 0].x == 40 and cells[1, 0].y - cells[0, 0].y == 40
    assert (cells[0, 0].shade, cells[0, 1].shade, cells[1, 0].shade) == (1.0, 0.25, 0.0)
    assert [c.diagonal for c in m.cells] == [True, False, False, True]
    assert cells[0, 1].tooltip == "people 1, judge 2: 1 (20% of the row)"
    assert m.width == m.left + 2 * 40 + 28 and [t.label for t in m.row_labels] == ["1", "2"]


def test_heatmap_diagonal_leaves_out_labels_that_are_no_agreement() -> None:
    m = heatmap([[1, 0], [0, 1]], ["A", "none"], ["A", "none"], not_agreement=["none"])
    assert [c.diagonal for c in m.cells] == [True, False, False, False]
    assert all(c.shade == 0 for c in heatmap([[0]], ["a"], ["a"]).cells)
    with pytest.raises(ValueError, match="one label per row"):
        heatmap([[1, 2]], ["a"], ["a"])


def test_scatter_maps_the_domain_to_the_plot_and_draws_the_diagonal() -> None:
    s = scatter([Point(1, 1), Point(5, 5), Point(3, 1)], domain=(1, 5), tick_values=[1, 3, 5])
    low, high, side = s.points
    assert (low.cx, low.cy) == (s.left, s.bottom) and (high.cx, high.cy) == (s.right, s.top)
    assert side.cx == (s.left + s.right) / 2 and side.cy == s.bottom
    assert s.diagonal == (s.left, s.bottom, s.right, s.top)
    assert [t.label for t in s.x_ticks] == ["1", "3", "5"] and s.y_ticks[1].at == (
        s.top + s.bottom) / 2


def test_scatter_jitter_is_bounded_and_the_same_every_time() -> None:
    points = [Point(3, 3)] * 200
    first = scatter(points, domain=(1, 5), jitter=0.2, seed=1)
    per_unit = (first.right - first.left) / 4
    xs = [p.cx for p in first.points]
    centre = (first.left + first.right) / 2
    assert max(abs(x - centre) for x in xs) <= 0.2 * per_unit + 0.01
    assert len(set(xs)) > 150  # told apart
    assert scatter(points, domain=(1, 5), jitter=0.2, seed=1) == first
    assert scatter(points, domain=(1, 5), jitter=0.2, seed=2) != first
    assert {p.cx for p in scatter(points, domain=(1, 5)).points} == {centre}


# --- item views against the report and published figures ---------------------------------


def _raw_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_pointwise_item_means_equal_an_independent_reading_and_the_report() -> None:
    data = load_judgments(POINTWISE)
    report = analyse(data, FAST)
    for judge in report.judges:
        records = [r for r in data.records if r.judge_id == judge.judge_id]
        views = pointwise_items(records)
        # independently: the raw JSON lines, statistics.mean of the values present
        raw = {}
        for line in _raw_lines(POINTWISE):
            human = [v for v in line["human"] or [] if v is not None]
            judged = [v for v in line["judge"] or [] if v is not None]
            if line["judge_id"] == judge.judge_id and human and judged:
                raw[line["item_id"]] = (statistics.mean(human), statistics.mean(judged))
        assert {v.item_id for v in views} == set(raw)
        for v in views:
            assert (v.human_mean, v.judge_mean) == pytest.approx(raw[v.item_id])
        assert len(views) == judge.n_items
        differences = [v.difference for v in views]
        assert statistics.mean(differences) == pytest.approx(judge.mean_bias.value)
        assert statistics.mean(map(abs, differences)) == pytest.approx(judge.mae.value)


def test_largest_differences_come_first_and_agreeing_items_are_left_out() -> None:
    data = load_judgments(POINTWISE)
    views = pointwise_items([r for r in data.records if r.judge_id == "strict-prompt"])
    listed = largest_differences(views, 3)
    gaps = [abs(v.difference) for v in largest_differences(views, len(views))]
    assert gaps == sorted(gaps, reverse=True) and 0 < len(gaps) < len(views)
    assert [abs(v.difference) for v in listed] == gaps[:3]
    assert all(v.difference != 0 for v in largest_differences(views, 100))


def _llmbar(prompt: str = "CoT", judge: str = "GPT-4") -> tuple[list[PairwiseJudgment],
                                                                 PairwiseDataset]:
    """LLMBar's recorded verdicts as contract-3 records (output_1 is A), with the judge's
    own completion as its reasoning (the Rating prompt has none), and its items as the
    study's dataset."""
    names = {"1": "A", "2": "B", None: None}
    records, items = [], []
    for i, item in enumerate(json.loads((LLMBAR / "evaluators" / judge / prompt /
                                         "result.json").read_text())):
        result = item["results"][0]
        gold = {1: "A", 2: "B"}[item["label"]]
        items.append(PairwiseItem(item_id=str(i), input=item["input"],
                                  output_a=item["output_1"], output_b=item["output_2"],
                                  gold=gold))
        for swapped in (False, True):
            said = result[f"swap = {swapped}"]
            records.append(PairwiseJudgment(
                item_id=str(i), gold=gold, verdict=names[said["winner"]], swapped=swapped,
                judge_id=f"{judge} {prompt}",
                metadata={"reasoning": said["completion"][0]} if "completion" in said else {}))
    return records, PairwiseDataset(source="llmbar", items=items)


def _ratio(text: str) -> float:
    count, total = text.split("=")[0].split("/")
    return int(count) / int(total)


@pytest.mark.parametrize("prompt", ["Vanilla", "CoT", "Rating"])
def test_verdict_tables_reproduce_llmbars_published_figures(prompt: str) -> None:
    records, _ = _llmbar(prompt)
    published = json.loads((LLMBAR / "evaluators" / "GPT-4" / prompt /
                            "statistics.json").read_text())
    by_gold, by_order = verdict_tables(records)
    consistent = sum(by_order[i][i] for i in range(3))
    assert consistent / sum(map(sum, by_order)) == pytest.approx(_ratio(published["equal"]))
    correct = sum(by_gold[i][i] for i in range(3))
    average = float(published["correct_average"].rstrip("%")) / 100
    assert correct / sum(map(sum, by_gold)) == pytest.approx(average)
    assert sum(map(sum, by_gold)) == 200 and sum(map(sum, by_order)) == 100


def test_verdict_tables_count_a_missing_verdict_as_none_and_match_the_report() -> None:
    data = load_judgments(PAIRWISE)
    judge = analyse(data, FAST).judges[0]
    by_gold, by_order = verdict_tables(data.records)
    none = VERDICT_LABELS.index("none")
    assert sum(row[none] for row in by_gold) == judge.n_missing_verdicts == 1
    assert sum(by_order[i][i] for i in range(3)) / judge.n_units_both_orders == pytest.approx(
        judge.position_consistency.value)


def test_most_wrong_items_hold_every_verdict_and_the_judges_reasoning() -> None:
    records, dataset = _llmbar("CoT")
    views = pairwise_items(records, {i.item_id: i for i in dataset.items})
    wrong = most_wrong(views, 100)
    judge = analyse(build_pairwise(records, "llmbar"), FAST).judges[0]
    # every wrong verdict is on a listed item: the listed items' wrong verdicts add up to
    # (1 - accuracy) of all verdicts
    assert sum(v.wrong for v in wrong) / 200 == pytest.approx(1 - judge.accuracy.value)
    shares = [v.share_wrong for v in wrong]
    assert shares == sorted(shares, reverse=True) and shares[0] == 1.0
    first = wrong[0]
    assert first.output_a == dataset.items[int(first.item_id)].output_a
    assert all(v.reasoning and "Output" in v.reasoning for v in first.verdicts)
    assert most_wrong(views, 3) == wrong[:3]


# --- the page's context ---------------------------------------------------------------------


class _Figures(HTMLParser):
    """Every ``data-figure`` element's path and text, with the judge it belongs to (the
    nearest enclosing ``data-judge-index``)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, str | None, list[str] | None]] = []
        self.found: list[tuple[str | None, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        judge = a.get("data-judge-index") or next(
            (j for _, j, _ in reversed(self.stack) if j is not None), None)
        figure = [a["data-figure"] or "", ""] if a.get("data-figure") else None
        self.stack.append((tag, judge, figure))

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            name, judge, figure = self.stack.pop()
            if figure is not None:
                self.found.append((judge, figure[0], " ".join(figure[1].split())))
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, _, figure in self.stack:
            if figure is not None:
                figure[1] += data


def figures(html: str) -> list[tuple[str | None, str, str]]:
    parser = _Figures()
    parser.feed(html)
    return parser.found


def _lookup(data: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        data = data[part]
    return data


def _shown(estimate: dict[str, Any]) -> str:
    return "undefined" if estimate["value"] is None else f"{estimate['value']:.3f}"


def check_figures_equal_json(found: list[tuple[str | None, str, str]],
                             report: dict[str, Any]) -> int:
    """Every figure on the page equals the JSON report's, judge by judge; returns how many
    were checked."""
    judges = report.get("judges") or [report]
    for judge_index, path, text in found:
        if path.startswith("human_baseline."):
            expected = _lookup(report, path)
        else:
            expected = _lookup(judges[int(judge_index or 0)], path)
        assert text == _shown(expected), (judge_index, path)
    return len(found)


def test_every_figure_of_the_page_equals_the_json_report() -> None:
    data = load_judgments(POINTWISE)
    report = analyse(data, FAST)
    found = figures(calibration_page(report, data))
    assert check_figures_equal_json(found, report.to_json_dict()) > 60
    paths = {p for _, p, _ in found}
    assert {"spearman", "pass_fail.coverage", "bland_altman.lower",
            "human_baseline.fleiss_kappa", "thresholds.best_threshold"} <= paths
    assert {j for j, _, _ in found} >= {"0", "1"}


def test_page_context_uses_the_reports_confusion_matrix_and_threshold_curve() -> None:
    data = load_judgments(POINTWISE)
    report = analyse(data, FAST)
    view = judge_views(report, data)[0]
    judge = report.judges[0]
    counts = judge.confusion_matrix.counts
    assert [[c.count for c in view.confusion.cells[i * 5:(i + 1) * 5]] for i in range(5)] == (
        counts)
    t = view.thresholds
    assert t is not None and t.curve == judge.thresholds.curve and t.best == judge.thresholds.best
    best_x = t.chart.extra[-1][0]
    kappa = next(s for s in t.chart.series if s.name == "Cohen's κ")
    index = [p.threshold for p in t.curve].index(t.best.threshold)
    assert best_x == kappa.dots[index][0]  # the dashed line stands on the best threshold
    assert view.n_plotted == judge.n_items == len(view.scatter.points)
    linked = [p for p in view.scatter.points if p.anchor]
    assert len(linked) == len(view.pointwise_listed) == view.n_disagreeing <= MAX_LISTED
    assert estimate_at(judge, "pass_fail.accuracy") == judge.pass_fail.accuracy
    assert estimate_at(judge, "ppi.mean_score") is None  # not an estimate
    assert estimate_at(analyse(data, AnalysisOptions(n_resamples=0)).judges[0],
                       "pass_fail.accuracy") is None  # no threshold, no pass/fail
    assert calibration_page(report, data) == calibration_page(report, data)  # jitter seeded


def test_without_records_the_page_says_the_item_views_are_not_available() -> None:
    report = analyse(load_judgments(PAIRWISE), FAST)
    html = calibration_page(report)
    assert "Not available: the page was written without the judgment records" in html
    assert "No verdict table" in html and 'data-figure="position_consistency"' in html


# --- the command line and the study directory ----------------------------------------------


def test_calibrate_judgments_html_writes_the_page_beside_the_json(tmp_path: Path) -> None:
    page = tmp_path / "out" / "calibration.html"
    done = run_cli("calibrate", "--judgments", POINTWISE, "--pass-threshold", "4",
                   "--resamples", "100", "--json", "--html", page)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # stdout stays one JSON object
    assert f"wrote {page}" in " ".join(done.stderr.split())
    assert check_figures_equal_json(figures(page.read_text()), report) > 60


def test_a_bare_html_writes_beside_the_judgments_file(tmp_path: Path) -> None:
    judgments = tmp_path / "mine.jsonl"
    judgments.write_text(PAIRWISE.read_text())
    done = run_cli("calibrate", "--judgments", judgments, "--resamples", "50", "--html")
    assert done.returncode == 0, done.stderr
    assert "Judge calibration" in done.stdout  # the terminal report is printed as well
    assert "Position consistency" in (tmp_path / "mine.html").read_text()


@pytest.mark.parametrize("target", ["directory", "input"])
def test_an_html_path_that_cannot_be_written_is_one_line_and_nothing_is_written(
        tmp_path: Path, target: str) -> None:
    judgments = tmp_path / "j.jsonl"
    judgments.write_text(PAIRWISE.read_text())
    html = tmp_path if target == "directory" else judgments
    done = run_cli("calibrate", "--judgments", judgments, "--html", html)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and str(html) in done.stderr
    expected = "is a directory" if target == "directory" else "is the input file"
    assert expected in done.stderr
    assert judgments.read_text() == PAIRWISE.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.jsonl"]


def test_a_study_writes_report_html_and_html_file_copies_it(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text((EXAMPLES / "pairwise_items.jsonl").read_text())
    out, page = tmp_path / "study", tmp_path / "elsewhere" / "page.html"
    common = ("--judge", "mock:judge-first", "--rubric", "final_response_quality", "--out", out,
              "--cache-mode", "off", "--resamples", "50")
    done = run_cli("calibrate", items, *common, "--json", "--html", page)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    html = (out / "report.html").read_text()
    assert page.read_text() == html
    assert "report.html" in done.stderr
    assert check_figures_equal_json(figures(html), report) >= 12
    assert "Position consistency" in html and "output A" in html  # the dataset's outputs
    # a bare --html means the study's own page: nothing is written beside the dataset
    (out / "report.html").unlink()
    again = run_cli("calibrate", items, *common, "--html")
    assert again.returncode == 0, again.stderr
    assert (out / "report.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "items.jsonl", "study"]


def test_a_bad_html_path_stops_a_study_before_any_judge_call(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = run_cli("calibrate", EXAMPLES / "pointwise_items.jsonl", "--offline", "--rubric",
                   "final_response_quality", "--out", tmp_path / "study", "--html",
                   blocker / "page.html")
    assert done.returncode == 2 and "is a file, not a directory" in done.stderr
    assert not (tmp_path / "study").exists()


# --- in the browser ---------------------------------------------------------------------------


def _write(tmp_path: Path, source: Path = POINTWISE, **options: Any) -> tuple[Path, dict]:
    data = load_judgments(source)
    report = analyse(data, AnalysisOptions(n_resamples=100, **options))
    return write_calibration_page(tmp_path / "page.html", report, data), report.to_json_dict()


def _page_figures(page: Any) -> list[tuple[str | None, str, str]]:
    return [(f["judge"], f["path"], " ".join(f["text"].split())) for f in page.evaluate(
        """() => Array.from(document.querySelectorAll('[data-figure]')).map(e => ({
             path: e.dataset.figure, text: e.innerText,
             judge: (e.closest('[data-judge-index]') || {dataset: {}}).dataset.judgeIndex
                    || null}))""")]


def test_the_page_in_a_browser_shows_the_jsons_figures_and_asks_for_nothing(
        tmp_path: Path, open_report: Any) -> None:
    path, report = _write(tmp_path, pass_threshold=4)
    opened = open_report(path)
    opened.assert_quiet()
    shown = _page_figures(opened.page)
    # hidden judges (the picker shows one) still hold their figures
    assert check_figures_equal_json(shown, report) > 60
    opened.screenshot(tmp_path / "light.png", full_page=True)
    dark = open_report(path, dark=True)
    dark.assert_quiet()
    dark.screenshot(tmp_path / "dark.png", full_page=True)
    background = dark.page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(21, 24, 30)"


def test_the_judge_picker_shows_one_judge_at_a_time(tmp_path: Path, open_report: Any) -> None:
    path, _ = _write(tmp_path, pass_threshold=4)
    opened = open_report(path)
    page = opened.page
    assert page.is_visible("#judge-picker")
    assert page.is_visible("#judge-0") and not page.is_visible("#judge-1")
    page.click("#judge-picker button[data-judge='1']")
    assert page.is_visible("#judge-1") and not page.is_visible("#judge-0")
    assert page.get_attribute("#judge-picker button[data-judge='1']", "aria-pressed") == "true"
    page.click("nav a[href='#judge-0']")
    page.wait_for_function("!document.getElementById('judge-1').offsetParent")
    assert page.is_visible("#judge-0")
    opened.assert_quiet()


def test_the_threshold_picker_describes_the_picked_threshold(tmp_path: Path,
                                                            open_report: Any) -> None:
    path, report = _write(tmp_path, pass_threshold=4)
    opened = open_report(path)
    page = opened.page
    picker = "#j0-threshold-picker"
    curve = report["judges"][0]["thresholds"]["curve"]
    best = report["judges"][0]["thresholds"]["best"]
    text = page.inner_text(f"{picker} output")
    assert f"score ≥ {best['threshold']:.4g}:" in text
    assert f"passes {100 * best['judge_pass_rate']:.0f}% of the items" in text
    page.eval_on_selector(f"{picker} input", "(e) => { e.value = 0; e.dispatchEvent("
                          "new Event('input')); }")
    text = page.inner_text(f"{picker} output")
    assert text.startswith(f"score ≥ {curve[0]['threshold']:.4g}: the judge passes "
                           f"{100 * curve[0]['judge_pass_rate']:.0f}%")
    current = page.eval_on_selector_all("#j0-curve tbody tr.current", "rs => rs.map(r => "
                                        "r.dataset.threshold)")
    assert current == [f"{curve[0]['threshold']:.4g}"]
    opened.assert_quiet()


def test_the_disagreement_list_shows_outputs_and_reasoning_on_demand(
        tmp_path: Path, open_report: Any) -> None:
    records, dataset = _llmbar("CoT", "ChatGPT")
    data = build_pairwise(records, "llmbar")
    path = write_calibration_page(tmp_path / "llmbar.html", analyse(data, FAST), data, dataset)
    assert len(most_wrong(pairwise_items(records), 100)) > MAX_LISTED
    opened = open_report(path)
    page = opened.page
    assert page.locator("section.disagree tr.item").count() == MAX_LISTED
    assert page.locator("section.disagree details[open]").count() == 0
    assert not page.is_visible("section.disagree pre.reasoning")
    page.click("section.disagree button.expand-all")
    assert page.locator("section.disagree details[open]").count() == MAX_LISTED
    assert page.is_visible("section.disagree pre.reasoning >> nth=0")
    assert "Output (a)" in page.inner_text("section.disagree")  # GPT-4's own reasoning
    assert page.inner_text("section.disagree button.expand-all") == "collapse all"
    opened.screenshot(tmp_path / "llmbar.png")
    opened.assert_quiet()


def test_a_scatter_point_leads_to_its_item_with_the_reasoning_open(
        tmp_path: Path, open_report: Any) -> None:
    path, _ = _write(tmp_path, pass_threshold=4)
    opened = open_report(path)
    page = opened.page
    link = page.locator("#j0-plots svg a").first
    target = link.get_attribute("href")
    assert target and target.startswith("#j0-item-")
    link.click()
    page.wait_for_function(f"location.hash === '{target}'")
    # the page's hashchange handler opens the reasoning after the hash has changed
    page.locator(f"{target} + tr.more details[open]").wait_for(timeout=5000)
    assert page.locator(f"{target} + tr.more details").get_attribute("open") is not None
    opened.assert_quiet()


def test_the_page_reads_with_scripts_off(tmp_path: Path, open_report: Any) -> None:
    path, report = _write(tmp_path, pass_threshold=4)
    opened = open_report(path, scripts=False)
    page = opened.page
    assert page.is_visible("#judge-0") and page.is_visible("#judge-1")
    assert not page.is_visible("#judge-picker") and not page.is_visible("#j0-threshold-picker")
    assert not page.is_visible("button.expand-all")
    assert check_figures_equal_json(_page_figures(page), report) > 60
    assert page.locator("#j0-plots svg circle").count() == report["judges"][0]["n_items"]
    assert page.locator("#j0-curve tbody tr").count() == len(
        report["judges"][0]["thresholds"]["curve"])
    opened.screenshot(tmp_path / "noscript.png")
    opened.assert_quiet()


PAYLOADS = ["<script>window.pwned=1</script>", "<img src=x onerror=\"window.pwned=1\">",
            "[click](javascript:window.pwned=1) <a href=\"javascript:window.pwned=1\">x</a>",
            "</script><script>window.pwned=1</script>"]


def test_outside_text_is_shown_as_text_and_never_runs(tmp_path: Path, open_report: Any) -> None:
    evil = " ".join(PAYLOADS)
    lines = [{"item_id": f"{p} {i}", "human": [1, 2][i % 2], "judge": [[5, 4], [1, 2]][i % 2],
              "judge_id": f"judge {PAYLOADS[0]}", "output": evil,
              "metadata": {"reasoning": [evil, PAYLOADS[1]]}}
             for i, p in enumerate(PAYLOADS * 2)]
    source = tmp_path / "evil.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    pairs = tmp_path / "evil-pairs.jsonl"
    pairs.write_text("".join(json.dumps({
        "item_id": p, "gold": "A", "verdict": "B", "swapped": swapped, "judge_id": p,
        "metadata": {"reasoning": evil, "said": "A"}}) + "\n"
        for p in PAYLOADS for swapped in (False, True)))
    for i, path in enumerate((source, pairs)):
        data = load_judgments(path)
        report = analyse(data, AnalysisOptions(n_resamples=20))
        page_path = write_calibration_page(tmp_path / f"evil{i}.html", report, data)
        opened = open_report(page_path)
        page = opened.page
        page.click("section.disagree button.expand-all")
        assert page.evaluate("window.pwned") is None
        assert page.locator("main img, main script, a[href^='javascript']").count() == 0
        text = page.inner_text("main")
        for payload in PAYLOADS:
            assert payload in text
        opened.assert_quiet()
        html = page_path.read_text()
        assert "<script>window.pwned" not in html and "<img src=x" not in html
