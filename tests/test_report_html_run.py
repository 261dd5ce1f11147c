"""The run's HTML report without a browser: what `run` and `report --html` write, the figures
and samples it holds, how outside text is embedded, the plot geometry, and bad input."""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from harness.report.html import page
from harness.report.html.plots import (
    ForestPoint,
    PixelScale,
    Series,
    forest,
    line_chart,
    shares_bar,
)
from harness.report.html.run_page import REPORT_FILENAME, write_run_report
from tests.helpers.cli import run_cli
from tests.helpers.hostile import HOSTILE, hostile_run

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html") / "run"
    done = run_cli("run", SCENARIOS, "--offline", "--agent", "mock:agent-flaky", "--epochs",
                   "3", "--cache-mode", "off", "--out", out)
    assert done.returncode == 0, done.stderr
    return out


def _embedded(text: str, element_id: str) -> Any:
    match = re.search(rf'<script type="application/json" id="{element_id}"'
                      r'( data-encoding="gzip-base64")?>(.*?)</script>', text, flags=re.S)
    assert match is not None
    payload = json.loads(match.group(2))
    if match.group(1):
        payload = json.loads(gzip.decompress(base64.b64decode(payload)))
    return payload


def test_run_writes_report_html_beside_the_summary(offline_run: Path) -> None:
    text = (offline_run / REPORT_FILENAME).read_text(encoding="utf-8")
    summary = json.loads((offline_run / "summary.json").read_text())
    score = summary["score"]
    figure = dict(re.findall(r'data-figure="([a-z-]+)">([^<]*)<', text))
    assert figure["mean"] == f"{score['mean']:.3f}"
    assert figure["mean-ci"] == f"[{score['ci_low']:.3f}, {score['ci_high']:.3f}]"
    assert figure["pass-rate"] == f"{score['pass_rate']['value']:.3f}"
    assert figure["samples"] == str(summary["counts"]["samples"])
    # every scenario is in the forest plot and the table, every sample in the drill-down data
    for s in score["scenarios"]:
        assert f'id="scenario-{s["scenario_id"]}"' in text
    samples = _embedded(text, "samples-data")
    assert len(samples) == summary["counts"]["samples"]
    assert text.count('<tr id="row-') == len(samples)
    assert "OFFLINE" in text and summary["notice"][:40] in html.unescape(text)
    # nothing is fetched: the only URL-like attributes are in-page anchors
    assert not re.search(r'(src|href)="(?!#)', text)


def test_a_sample_carries_its_conversation_tool_calls_checks_and_judges(
        offline_run: Path) -> None:
    samples = _embedded((offline_run / REPORT_FILENAME).read_text(), "samples-data")
    cancel = next(s for s in samples if s["scenario_id"] == "support-cancel-pending-order")
    calls = [c for m in cancel["messages"] for c in m["tool_calls"]]
    assert calls[0]["name"] == "get_order" and calls[0]["arguments"] == {"order_id": "A-1001"}
    assert calls[0]["result"]["status"] == "pending"
    assert [m["role"] for m in cancel["messages"]][:2] == ["user", "assistant"]
    assert cancel["trajectory"]["reference"][0]["name"] == "get_order"
    assert {c["name"] for c in cancel["checks"]} >= {"trajectory_exact_match",
                                                     "final_state_match"}
    verdict = cancel["judgments"][0]["samples"][0]["verdicts"][0]
    assert verdict["reasoning"] and isinstance(verdict["evidence"], list)
    assert cancel["tags"], "scenario tags are kept with the sample"


def test_report_html_writes_the_same_page_again_and_to_a_chosen_file(
        offline_run: Path, tmp_path: Path) -> None:
    first = (offline_run / REPORT_FILENAME).read_text()
    done = run_cli("report", offline_run, "--html")
    assert done.returncode == 0, done.stderr
    assert (offline_run / REPORT_FILENAME).read_text() == first
    chosen = tmp_path / "r.html"
    done = run_cli("report", offline_run, "--html", chosen, "--json")
    assert done.returncode == 0 and chosen.read_text() == first
    assert done.stdout == ""  # --html writes the page instead of printing


@pytest.mark.parametrize("damage", ["not-a-run", "truncated", "other-version", "no-store"])
def test_report_html_refuses_what_is_not_a_readable_run(
        offline_run: Path, tmp_path: Path, damage: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    if damage != "not-a-run":
        for name in ("summary.json", "run.sqlite"):
            (run / name).write_bytes((offline_run / name).read_bytes())
    store = run / "run.sqlite"
    if damage == "truncated":
        store.write_bytes(store.read_bytes()[:8192])
    elif damage == "other-version":
        with sqlite3.connect(store) as db:
            db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    elif damage == "no-store":
        store.unlink()
    done = run_cli("report", run, "--html")
    assert done.returncode == 2
    assert done.stderr.startswith("error:") and len(done.stderr.strip().splitlines()) == 1
    named = "summary.json" if damage == "not-a-run" else "run.sqlite"
    assert named in done.stderr
    assert not [p.name for p in run.iterdir() if p.name.startswith("report")]


def test_hostile_text_is_escaped_and_embedded_as_data(tmp_path: Path) -> None:
    run = hostile_run(tmp_path / "run")
    text = write_run_report(run).read_text(encoding="utf-8")
    # markup from outside never appears as markup, in the page or in the embedded data
    assert "<script>alert" not in text and "<img src=x" not in text
    assert "</textarea>" not in text and 'href="javascript' not in text
    assert text.count("</script>") == text.count("<script")
    assert str(escape(HOSTILE["scenario"])) in text  # shown as text in the tables
    samples = _embedded(text, "samples-data")
    # the data parses back to exactly what was stored
    message = samples[0]["messages"][0]["content"]
    assert message == HOSTILE["user"]
    assert samples[0]["messages"][1]["tool_calls"][0]["result"] == {"note": HOSTILE["tool"]}


def test_no_key_reaches_the_page(tmp_path: Path) -> None:
    run = hostile_run(tmp_path / "run")
    keys = {"OPENAI_API_KEY": "sk-test-SECRET-1", "ANTHROPIC_API_KEY": "sk-ant-SECRET-2"}
    done = run_cli("report", run, "--html", env=keys)
    assert done.returncode == 0, done.stderr
    text = (run / REPORT_FILENAME).read_text(encoding="utf-8")
    assert "SECRET" not in text


def test_the_csp_allows_exactly_the_inlined_script(offline_run: Path) -> None:
    text = (offline_run / REPORT_FILENAME).read_text()
    scripts = re.findall(r"<script>(.*?)</script>", text, flags=re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert csp is not None
    policy = html.unescape(csp.group(1))  # as the browser reads the attribute
    assert "default-src 'none'" in policy
    assert f"script-src 'sha256-{digest}';" in policy


# ---- pieces ----

def test_json_for_script_cannot_close_its_block() -> None:
    data = {"a": "</script><script>alert(1)</script>", "b": "&amp; \u2028 <!--"}
    text = str(page.json_for_script(data))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == data


def test_large_data_is_gzipped_and_reads_back(monkeypatch: pytest.MonkeyPatch) -> None:
    data = [{"text": "x" * 100, "i": i} for i in range(50)]
    monkeypatch.setattr(page, "COMPRESS_ABOVE_BYTES", 1000)
    block = str(page.embedded_data("d", data))
    assert 'data-encoding="gzip-base64"' in block
    packed = json.loads(block.split(">", 1)[1].rsplit("<", 1)[0])
    assert json.loads(gzip.decompress(base64.b64decode(packed))) == data
    monkeypatch.setattr(page, "COMPRESS_ABOVE_BYTES", 10**9)
    assert "data-encoding" not in str(page.embedded_data("d", data))


def test_scale_maps_and_clamps() -> None:
    scale = PixelScale(0.0, 1.0, 100.0, 300.0)
    assert (scale(0.0), scale(0.25), scale(1.0)) == (100.0, 150.0, 300.0)
    assert scale(-3) == 100.0 and scale(7) == 300.0
    assert PixelScale(-1, 1, 0, 200)(0) == 100.0


def test_forest_rows_keep_order_and_missing_intervals() -> None:
    plot = forest([ForestPoint("a", 0.5, 0.25, 0.75),
                   ForestPoint("b", 0.9, None, None, marked=True)], (0.0, 1.0), reference=0.7)
    a, b = plot.rows
    assert a.label == "a" and b.label == "b" and a.y < b.y
    assert a.low is not None and a.x is not None and a.high is not None
    assert a.low < a.x < a.high
    assert b.low is None and b.marked
    assert plot.reference_x == pytest.approx(plot.plot_left + 0.7 * (plot.plot_right
                                                                       - plot.plot_left))


def test_line_chart_band_is_a_closed_outline() -> None:
    chart = line_chart([Series("p", [(1, 0.5), (2, 0.6)], band=[(1, 0.4, 0.6), (2, 0.5, 0.7)])],
                       x_domain=(1, 2))
    points = chart.series[0].band.split()
    assert len(points) == 4  # upper edge left to right, then lower edge right to left
    xs = [float(p.split(",")[0]) for p in points]
    assert xs == [chart.left, chart.right, chart.right, chart.left]


def test_shares_bar_splits_the_width_by_share() -> None:
    bar = shares_bar([("a", 3.0), ("b", 1.0), ("c", 0.0)], width=400)
    assert [(s.label, s.width) for s in bar] == [("a", 300.0), ("b", 100.0)]
    assert bar[1].x == 300.0
    assert shares_bar([("a", 0.0)]) == []


def test_the_forest_plot_keeps_the_lowest_scenarios_of_a_large_suite(
        offline_run: Path) -> None:
    from harness.report.html.run_page import MAX_FOREST_ROWS, _scenario_forest
    from harness.runs.summary import read_summary

    score = read_summary(offline_run).score
    assert score is not None
    template = score.scenarios[0]
    many = [template.model_copy(update={"scenario_id": f"s{i:04d}",
                                        "mean": (i * 7919 % 1000) / 1000})
            for i in range(MAX_FOREST_ROWS + 50)]
    plot = _scenario_forest(score.model_copy(update={"scenarios": many}))
    lowest = sorted(many, key=lambda r: r.mean)[:MAX_FOREST_ROWS]
    assert [r.label for r in plot.rows] == [r.scenario_id for r in lowest]
