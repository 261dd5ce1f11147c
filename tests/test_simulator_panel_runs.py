"""The simulator panel end to end, offline: ``harness run --simulator mock:simulator
--simulator mock:simulator-faulty`` on the example suite writes one ordinary run per
simulator and ``simulator_panel.json``, whose paired difference is ``harness compare``'s on
the two sub-runs and whose variance components are ``crossed_components`` on the scores of
the sub-runs' ``samples.jsonl``; the gate, the flip line, resuming, the terminal at 80
columns, the page, ``harness report`` on a panel, one simulator unchanged, and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.report.html.panel_page import panel_page
from harness.runs.simulator_panel import (
    FLIP_LEAD,
    PANEL_FILENAME,
    PLAN_FILENAME,
    SimulatorPanel,
    read_panel,
)
from harness.stats.crossed_variance import crossed_components
from tests.helpers.cli import CliResult, run_cli
from tests.helpers.hostile import HOSTILE, PWN

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "scenarios"
SIMULATORS = ("mock:simulator", "mock:simulator-faulty")
SLUGS = ("mock-simulator", "mock-simulator-faulty")
EPOCHS = 2
RUN_FILES = {"run.sqlite", "summary.json", "samples.jsonl", "report.html"}


def _panel(out: Path, *more: str) -> CliResult:
    args: list[str] = [str(SUITE), "--offline", "--epochs", str(EPOCHS), "--out", str(out)]
    for model in SIMULATORS:
        args += ["--simulator", model]
    return run_cli("run", *args, *more, cwd=out.parent)


@pytest.fixture(scope="module")
def panel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("panel") / "run"
    result = _panel(out)
    assert result.returncode == 0, result.stderr
    return out


def _summary(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "summary.json").read_text("utf-8"))
    return data


def _scores(run_dir: Path) -> dict[tuple[str, int], float]:
    """(scenario, epoch) -> score of the scored samples, read from samples.jsonl alone."""
    lines = [json.loads(line) for line in
             (run_dir / "samples.jsonl").read_text("utf-8").splitlines() if line]
    return {(x["scenario_id"], x["epoch"]): x["score"] for x in lines
            if x["status"] == "scored" and x["score"] is not None}


def test_each_simulator_has_a_complete_ordinary_run(panel_dir: Path) -> None:
    panel = read_panel(panel_dir)
    assert [m.simulator for m in panel.members] == list(SIMULATORS)
    first = _summary(panel_dir / "simulators" / SLUGS[0])
    for member, slug, model in zip(panel.members, SLUGS, SIMULATORS, strict=True):
        sub = panel_dir / "simulators" / slug
        assert {p.name for p in sub.iterdir()} >= RUN_FILES
        summary = _summary(sub)
        config = summary["config"]  # stored flat: the design's and the execution's keys
        assert config["simulator"] == model
        # everything else the runs share
        assert {k: v for k, v in config.items() if k != "simulator"} == {
            k: v for k, v in first["config"].items() if k != "simulator"}
        assert summary["counts"]["samples"] == summary["counts"]["samples_planned"]
        assert member.mean is not None and member.pass_rate is not None
        assert member.mean.value == summary["score"]["mean"]
        assert member.mean.ci_low == summary["score"]["ci_low"]
        assert member.pass_rate.model_dump(mode="json") == summary["score"]["pass_rate"]
    assert (panel_dir / PLAN_FILENAME).is_file()
    assert not (panel_dir / "run.sqlite").exists()


def test_the_paired_difference_is_harness_compares(panel_dir: Path) -> None:
    base, cand = (panel_dir / "simulators" / slug for slug in SLUGS)
    compared = run_cli("compare", base, cand, "--json")
    assert compared.returncode == 0, compared.stderr
    expected = json.loads(compared.stdout)
    (difference,) = read_panel(panel_dir).differences
    assert difference.simulator == SIMULATORS[1] and difference.baseline == SIMULATORS[0]
    assert difference.difference is not None
    assert difference.difference.model_dump(mode="json") == expected["difference"]
    assert difference.p_value == expected["t_test"]["p_value"]
    assert difference.n_scenarios == expected["n_scenarios"]


def test_the_variance_components_are_those_of_the_stored_scores(panel_dir: Path) -> None:
    cells = [_scores(panel_dir / "simulators" / slug) for slug in SLUGS]
    assert set(cells[0]) == set(cells[1])
    scenarios = sorted({sid for sid, _ in cells[0]})
    y = np.array([[[c[(sid, e)] for e in range(EPOCHS)] for c in cells]
                  for sid in scenarios])
    expected = crossed_components(y)
    variance = read_panel(panel_dir).variance
    assert variance is not None
    assert (variance.n_scenarios, variance.n_simulators, variance.n_epochs) == y.shape
    for part in ("scenario", "simulator", "interaction", "residual"):
        assert getattr(variance, part) == pytest.approx(getattr(expected, part), abs=1e-12)
    assert variance.shares == pytest.approx(expected.shares())
    assert sum(variance.shares.values()) == pytest.approx(1)


def test_scripted_users_are_noted_and_play_the_same_under_every_simulator(
        panel_dir: Path) -> None:
    panel = read_panel(panel_dir)
    assert panel.scripted_scenarios == ["weather-python-agent"]
    assert any("weather-python-agent" in note and "same under every simulator" in note
               for note in panel.notes)
    cells = [_scores(panel_dir / "simulators" / slug) for slug in SLUGS]
    scripted = {k: v for k, v in cells[0].items() if k[0] == "weather-python-agent"}
    assert scripted and all(cells[1][k] == v for k, v in scripted.items())


def _copy(panel_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(panel_dir, copy)
    return copy


def _pass_rates(run_dir: Path) -> list[float]:
    return [m.pass_rate.value for m in read_panel(run_dir).members if m.pass_rate]


def test_a_gate_between_the_pass_rates_flips_and_fails(panel_dir: Path,
                                                       tmp_path: Path) -> None:
    rates = _pass_rates(panel_dir)
    assert rates[0] != rates[1]  # mock:simulator-faulty's odd epochs cost the agent passes
    run_dir = _copy(panel_dir, tmp_path)
    result = run_cli("run", "--resume", run_dir, "--min-pass-rate", f"{sum(rates) / 2:.6f}")
    assert result.returncode == 1, result.stderr
    panel = read_panel(run_dir)
    better, worse = (SIMULATORS if rates[0] > rates[1] else SIMULATORS[::-1])
    assert panel.gate is not None and panel.gate.failed_under == [worse]
    line = f"{FLIP_LEAD}: gate PASS under {better}, FAIL under {worse}"
    assert panel.flip == line
    assert " ".join(result.stdout.split()).count(line) == 1
    assert "flips with the simulator" in (run_dir / "report.html").read_text("utf-8")
    # each sub-run's summary.json holds its own gate
    for member, slug in zip(panel.members, SLUGS, strict=True):
        gate = _summary(run_dir / "simulators" / slug)["gate"]
        assert gate["passed"] is (member.simulator == better)


@pytest.mark.parametrize(("where", "code"), [("below", 0), ("above", 1)])
def test_a_gate_passed_or_failed_under_both_does_not_flip(
        panel_dir: Path, tmp_path: Path, where: str, code: int) -> None:
    rates = _pass_rates(panel_dir)
    bar = min(rates) - 0.01 if where == "below" else min(max(rates) + 0.01, 1.0)
    run_dir = _copy(panel_dir, tmp_path)
    result = run_cli("run", "--resume", run_dir, "--min-pass-rate", f"{bar:.6f}")
    assert result.returncode == code, result.stderr
    panel = read_panel(run_dir)
    assert panel.flip is None
    assert FLIP_LEAD not in result.stdout
    assert panel.gate is not None and panel.gate.passed is (code == 0)


def test_without_a_gate_the_flip_follows_the_differences_interval(panel_dir: Path) -> None:
    panel = read_panel(panel_dir)
    (d,) = panel.differences
    assert d.difference is not None
    excludes = d.difference.ci_low > 0 or d.difference.ci_high < 0  # type: ignore[operator]
    assert (panel.flip is not None) is excludes
    assert panel.gate is None


def test_resume_runs_a_sub_run_that_never_started(panel_dir: Path, tmp_path: Path) -> None:
    run_dir = _copy(panel_dir, tmp_path)
    before = read_panel(run_dir)
    shutil.rmtree(run_dir / "simulators" / SLUGS[1])
    (run_dir / PANEL_FILENAME).unlink()
    refused = run_cli("report", run_dir)
    assert refused.returncode == 2 and "--resume" in refused.stderr
    result = run_cli("run", "--resume", run_dir)
    assert result.returncode == 0, result.stderr
    assert {p.name for p in (run_dir / "simulators" / SLUGS[1]).iterdir()} >= RUN_FILES
    after = read_panel(run_dir)
    assert after.differences == before.differences
    assert after.variance == before.variance


def test_the_terminal_table_fits_80_columns_with_whole_names(panel_dir: Path) -> None:
    result = run_cli("report", panel_dir, columns=80)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    rows = [line.split()[0] for line in lines if line.split()[:1] in ([m] for m in SIMULATORS)]
    assert rows == list(SIMULATORS)  # one row each, its name whole on its first line
    assert any(line.startswith("Variance of a sample's score: scenario ") for line in lines)


def test_report_json_and_html_of_a_panel(panel_dir: Path, tmp_path: Path) -> None:
    shown = run_cli("report", panel_dir, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == json.loads(
        (panel_dir / PANEL_FILENAME).read_text("utf-8"))
    out = tmp_path / "elsewhere" / "panel.html"
    out.parent.mkdir()
    written = run_cli("report", panel_dir, "--html", out)
    assert written.returncode == 0, written.stderr
    page = out.read_text("utf-8")
    for slug in SLUGS:  # links to the sub-runs' pages, relative to where the page is
        href = f"../../{panel_dir.parent.name}/run/simulators/{slug}/report.html"
        assert f'href="{href}"' in page
        assert (out.parent / href).resolve().is_file()
    refused = run_cli("report", panel_dir, "--tag", "refusal")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "simulator panel" in refused.stderr


def test_the_page_escapes_what_comes_from_outside(panel_dir: Path) -> None:
    panel = read_panel(panel_dir)
    members = [panel.members[0].model_copy(update={"simulator": HOSTILE["scenario"]}),
               *panel.members[1:]]
    hostile = SimulatorPanel.model_validate({
        **panel.model_dump(mode="json", by_alias=True),
        "members": [m.model_dump(mode="json") for m in members],
        "notes": [HOSTILE["user"]], "flip": HOSTILE["tool"]})
    html = panel_page(hostile, {m.slug: "x.html" for m in members})
    for text in (HOSTILE["scenario"], HOSTILE["user"], HOSTILE["tool"]):
        assert text not in html
    assert "&lt;img src=x onerror=" in html and "&lt;script&gt;" in html
    assert "<img" not in html and html.count("<script") == 1  # ours alone
    assert PWN in html  # shown, as text


def test_one_simulator_is_an_ordinary_run(panel_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "one"
    result = run_cli("run", SUITE, "--offline", "--epochs", str(EPOCHS), "--simulator",
                     SIMULATORS[1], "--out", out, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {p.name for p in out.iterdir()} >= RUN_FILES
    assert not (out / "simulators").exists() and not (out / PANEL_FILENAME).exists()
    assert not (out / PLAN_FILENAME).exists()
    assert "Simulator panel" not in result.stdout and "Model usage" in result.stdout
    # the panel's sub-run is this very run (offline models answer the same every time)
    alone, sub = _summary(out), _summary(panel_dir / "simulators" / SLUGS[1])
    assert alone["config"]["simulator"] == SIMULATORS[1]
    assert alone["score"] == sub["score"]


def _refused(tmp_path: Path, *args: str) -> str:
    out = tmp_path / "bad"
    result = run_cli("run", SUITE, "--offline", "--epochs", "1", "--out", out, *args,
                     cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr  # one line, no traceback
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not out.exists()
    return result.stderr


def test_a_simulator_given_twice_is_refused(tmp_path: Path) -> None:
    err = _refused(tmp_path, "--simulator", "mock:simulator", "--simulator", "mock:simulator")
    assert "--simulator" in err and "given twice" in err


def test_an_unknown_simulator_stops_the_panel_before_any_run(tmp_path: Path) -> None:
    err = _refused(tmp_path, "--simulator", "mock:simulator", "--simulator", "mock:nonesuch")
    assert "unknown mock model 'nonesuch'" in err


@pytest.mark.parametrize(("option", "values"), [
    ("--shard", ["1/2"]), ("--target-ci-width", ["0.1"]),
    ("--labels", ["labels.jsonl", "--gate-on", "corrected-lower-bound",
                  "--min-pass-rate", "0.5"])])
def test_options_a_panel_cannot_combine_with(tmp_path: Path, option: str,
                                             values: list[str]) -> None:
    err = _refused(tmp_path, "--simulator", SIMULATORS[0], "--simulator", SIMULATORS[1],
                   option, *values)
    assert f"{option} cannot be combined with a simulator panel" in err


def test_a_panel_is_not_started_over_an_existing_run(panel_dir: Path, tmp_path: Path) -> None:
    run_dir = _copy(panel_dir, tmp_path)
    result = _panel(run_dir)
    assert result.returncode == 2
    assert "already holds a run" in result.stderr and "--resume" in result.stderr
