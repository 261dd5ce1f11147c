"""`harness run`, `report` and `compare` from the command line: the gate's exit codes,
paired comparison, and clear errors for bad run directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.runs.gate import evaluate_gate
from harness.runs.store import STORE_FILENAME
from harness.stats.summary import SuiteFigures
from tests.helpers.cli import CliResult, run_cli
from tests.helpers.figures import gate_figures

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "scenarios" / "weather.yaml"


def harness(*args: str, cwd: Path | None = None) -> CliResult:
    return run_cli(*args, cwd=cwd)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A perfect offline agent and a flaky one on the same scenarios."""
    base = tmp_path_factory.mktemp("runs")
    good, flaky = base / "good", base / "flaky"
    for agent, out in (("mock:agent", good), ("mock:agent-flaky", flaky)):
        done = harness("run", str(WEATHER), "--offline", "--agent", agent, "--epochs", "4",
                       "--cache-mode", "off", "--out", str(out), "--json")
        assert done.returncode == 0, done.stderr
    return good, flaky


def test_run_json_output_is_the_summary_file(two_runs: tuple[Path, Path]) -> None:
    good, _ = two_runs
    summary = json.loads((good / "summary.json").read_text())
    assert summary["schema"] == "agent-eval-harness/run-summary"
    assert summary["counts"]["samples"] == 4 * summary["counts"]["scenarios"]
    report = harness("report", str(good), "--json")
    assert json.loads(report.stdout)["score"] == summary["score"]
    text = harness("report", str(good))
    assert "OFFLINE" in text.stdout and "Suite" in text.stdout


@pytest.mark.parametrize(("threshold", "basis", "code"), [
    ("0.0", "mean", 0), ("1.01", "mean", 1), ("0.0", "lower-bound", 0),
])
def test_the_gate_sets_the_exit_code(tmp_path: Path, threshold: str, basis: str,
                                     code: int) -> None:
    done = harness("run", str(WEATHER), "--offline", "--epochs", "2", "--cache-mode", "off",
                   "--out", str(tmp_path / "r"), "--min-score", threshold, "--gate-on", basis)
    assert done.returncode == code, done.stdout + done.stderr
    assert ("gate PASS" if code == 0 else "gate FAIL") in done.stdout
    gate = json.loads((tmp_path / "r" / "summary.json").read_text())["gate"]
    assert gate["passed"] is (code == 0)


def _figures(mean: float, low: float | None, pass_rate: float) -> SuiteFigures:
    return gate_figures(mean=mean, ci_low=low, ci_high=None if low is None else 1.0,
                        pass_rate=pass_rate, pass_rate_ci=(low, 1.0))


def test_gate_on_the_lower_bound_is_stricter_than_on_the_mean() -> None:
    figures = _figures(0.9, 0.7, 0.85)
    on_mean = evaluate_gate(figures, min_score=0.8, min_pass_rate=0.8, gate_on="mean")
    on_low = evaluate_gate(figures, min_score=0.8, min_pass_rate=0.8, gate_on="lower-bound")
    assert on_mean is not None and on_mean.passed
    assert on_low is not None and not on_low.passed
    assert [c.value for c in on_low.checks] == [0.7, 0.7]
    assert evaluate_gate(figures) is None


def test_gate_fails_when_nothing_was_measured() -> None:
    result = evaluate_gate(None, min_pass_rate=0.5)
    assert result is not None and not result.passed
    assert "no scored samples" in result.checks[0].detail
    one_scenario = evaluate_gate(_figures(0.9, None, 1.0), min_score=0.5,
                                 gate_on="lower-bound")
    assert one_scenario is not None and not one_scenario.passed


def test_compare_two_runs(two_runs: tuple[Path, Path]) -> None:
    good, flaky = two_runs
    done = harness("compare", str(good), str(flaky), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    good_s = json.loads((good / "summary.json").read_text())["score"]
    flaky_s = json.loads((flaky / "summary.json").read_text())["score"]
    assert result["baseline_mean"] == pytest.approx(good_s["mean"])
    assert result["candidate_mean"] == pytest.approx(flaky_s["mean"])
    assert result["difference"]["value"] == pytest.approx(flaky_s["mean"] - good_s["mean"])
    gate = harness("compare", str(good), str(flaky), "--fail-on-regression")
    assert gate.returncode == (1 if result["significant_regression"] else 0)
    assert "Paired comparison" in gate.stdout
    same = harness("compare", str(good), str(good), "--fail-on-regression")
    assert same.returncode == 0 and "no significant difference" in same.stdout


def test_resume_of_a_corrupted_store_is_a_clear_error_and_changes_nothing(
        tmp_path: Path) -> None:
    (tmp_path / STORE_FILENAME).write_bytes(b"\x00garbage" * 64)
    before = (tmp_path / STORE_FILENAME).read_bytes()
    done = harness("run", "--resume", str(tmp_path))
    assert done.returncode == 2
    assert "not a readable run store" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / STORE_FILENAME).read_bytes() == before


def test_a_new_run_refuses_an_existing_run_directory(two_runs: tuple[Path, Path]) -> None:
    good, _ = two_runs
    done = harness("run", str(WEATHER), "--offline", "--out", str(good))
    assert done.returncode == 2 and "already holds a run" in done.stderr


def test_bad_options_are_named(tmp_path: Path) -> None:
    done = harness("run", str(WEATHER), "--offline", "--epochs", "0", "--out",
                   str(tmp_path / "x"))
    assert done.returncode == 2 and "--epochs" in done.stderr and "Traceback" not in done.stderr


def test_episode_timeout_turns_a_hung_sync_agent_into_an_error_and_the_cli_exits(
        tmp_path: Path) -> None:
    (tmp_path / "stuck_agent_cli.py").write_text(
        "import threading\n"
        "def answer(messages, toolbox):\n"
        "    threading.Event().wait()  # never returns\n"
    )
    (tmp_path / "s.yaml").write_text(
        "id: stuck\nuser: {goal: g, script: [hello]}\nagent: {callable: stuck_agent_cli:answer}\n"
    )
    done = harness("run", str(tmp_path / "s.yaml"), "--episode-timeout", "0.3", "--epochs", "2",
                   "--cache-mode", "off", "--out", str(tmp_path / "run"), "--json")
    assert done.returncode == 4, done.stderr  # every sample errored: nothing was measured
    summary = json.loads(done.stdout)
    assert summary["counts"]["errored"] == 2 and summary["score"] is None  # nothing scored
    bad = harness("run", str(tmp_path / "s.yaml"), "--episode-timeout", "0",
                  "--out", str(tmp_path / "other"))
    assert bad.returncode == 2 and "--episode-timeout" in bad.stderr
