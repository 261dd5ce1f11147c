"""The gate on a suite of one scenario: no suite interval exists (one scenario says nothing
of the spread between scenarios), so ``--gate-on lower-bound`` uses the scenario's own
interval over its epochs, says so, and says how many epochs would clear the bar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.proportion import proportion_confint

from harness.runs.gate import evaluate_gate
from harness.stats.suite import suite_stats
from harness.stats.summary import stats_summary
from tests.helpers.cli import run_cli as harness


def _one_scenario(scores: list[float], passed: list[bool]):  # type: ignore[no-untyped-def]
    return stats_summary(suite_stats({"only": scores}, {"only": passed},
                                     bootstrap_resamples=0))


def test_one_scenario_gates_on_its_wilson_interval() -> None:
    summary = _one_scenario([1.0] * 4 + [0.0], [True] * 4 + [False])
    assert summary.pass_rate.ci_low is None  # no suite interval from one scenario
    gate = evaluate_gate(summary, min_pass_rate=0.3, gate_on="lower-bound")
    assert gate is not None and gate.passed
    (check,) = gate.checks
    low, high = proportion_confint(4, 5, alpha=0.05, method="wilson")
    assert check.value == pytest.approx(low)
    assert f"{low:.3f}–{high:.3f}" in check.detail
    assert "one scenario: its Wilson interval over 5 epochs" in check.detail
    # 4 of 5 did not all pass: no promise that more epochs would clear the bar
    failed = evaluate_gate(summary, min_pass_rate=0.9, gate_on="lower-bound")
    assert failed is not None and not failed.passed
    assert "would clear" not in failed.checks[0].detail


def test_one_scenario_gates_the_mean_score_on_its_t_interval() -> None:
    scores = [0.9, 0.8, 1.0, 0.7, 0.95]
    summary = _one_scenario(scores, [True] * 5)
    gate = evaluate_gate(summary, min_score=0.5, gate_on="lower-bound")
    assert gate is not None and gate.passed
    sem = scipy_stats.sem(scores)
    low = sum(scores) / 5 - scipy_stats.t.ppf(0.975, 4) * sem
    assert gate.checks[0].value == pytest.approx(low)
    assert "its t interval over 5 epochs" in gate.checks[0].detail


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9])
def test_the_epochs_it_names_clear_the_bar_and_one_fewer_does_not(threshold: float) -> None:
    summary = _one_scenario([1.0] * 3, [True] * 3)
    gate = evaluate_gate(summary, min_pass_rate=threshold, gate_on="lower-bound")
    assert gate is not None and not gate.passed
    detail = gate.checks[0].detail
    needed = int(detail.split("--epochs ")[1].rstrip(")"))
    assert proportion_confint(needed, needed, method="wilson")[0] >= threshold
    assert proportion_confint(needed - 1, needed - 1, method="wilson")[0] < threshold
    more = evaluate_gate(_one_scenario([1.0] * needed, [True] * needed),
                         min_pass_rate=threshold, gate_on="lower-bound")
    assert more is not None and more.passed


def test_one_epoch_of_one_scenario_fails_and_says_what_to_do() -> None:
    summary = _one_scenario([0.9], [True])
    gate = evaluate_gate(summary, min_score=0.5, gate_on="lower-bound")
    assert gate is not None and not gate.passed
    assert gate.checks[0].value is None
    assert "one scenario with one epoch" in gate.checks[0].detail
    assert "--epochs" in gate.checks[0].detail
    on_mean = evaluate_gate(summary, min_score=0.5, gate_on="mean")
    assert on_mean is not None and on_mean.passed


def test_the_tour_gate_on_one_scenario_passes_with_enough_epochs(tmp_path: Path) -> None:
    """The README's step 5 on its one-scenario evals/: 5 epochs all passing cannot reach a
    lower bound of 0.8 (Wilson: 0.566) and the gate says how many can; 16 do."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    after = readme.split("Save this as `evals/paris.yaml`", 1)[1]
    scenario = after.split("```yaml\n", 1)[1].split("```", 1)[0]
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "paris.yaml").write_text(scenario)
    five = harness("run", str(evals), "--offline", "--epochs", "5", "--min-pass-rate", "0.8",
                   "--gate-on", "lower-bound", "--out", str(tmp_path / "five"))
    summary = json.loads((tmp_path / "five" / "summary.json").read_text())
    assert summary["score"]["scenarios"][0]["n_passed"] == 5  # mock:agent is not flaky
    assert five.returncode == 1, five.stdout + five.stderr
    assert "no interval" not in five.stdout
    assert "16 epochs all passing would clear 0.800" in " ".join(five.stdout.split())
    sixteen = harness("run", str(evals), "--offline", "--epochs", "16", "--min-pass-rate",
                      "0.8", "--gate-on", "lower-bound", "--out", str(tmp_path / "sixteen"))
    assert sixteen.returncode == 0, sixteen.stdout + sixteen.stderr
    assert "gate PASS" in sixteen.stdout
