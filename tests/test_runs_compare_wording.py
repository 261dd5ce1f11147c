"""The words ``harness compare`` prints as its conclusion, pinned in full: the suite test's
name, its p-value (cross-checked against scipy's paired t test on the scenario means), alpha,
the confidence level, how many scenarios moved beyond their own interval, and the sentence
that reconciles the two levels; and the one offline notice made from two runs' notices.

A user reads these lines to decide whether a change regressed: a wrong direction word, p,
level or count is a wrong decision."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from harness.runs.comparison import _notice_parts, comparison_notice, comparison_verdict
from harness.stats.compare import compare_runs

# Eleven scenarios, each a little lower in the candidate: the suite test sees the shift,
# no scenario's own interval (five epochs a run) does.
HIGH = {f"s{i}": [0.9, 0.8, 0.85, 0.95, 0.9] for i in range(11)}
LOW = {f"s{i}": [0.85 - 0.01 * (i % 3), 0.75, 0.8, 0.9, 0.85] for i in range(11)}

BOTH_HOLD = ("Both hold: the suite test pools every scenario's difference, so small changes "
             "in the same direction add up; a scenario's own interval rests on its epochs "
             "alone and is far wider.")


def _verdict(baseline: dict[str, list[float]], candidate: dict[str, list[float]],
             **options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    data = compare_runs(baseline, candidate, **options).model_dump(mode="json")
    return data, comparison_verdict(data)


def _scipy_p(baseline: dict[str, list[float]], candidate: dict[str, list[float]]) -> float:
    ids = sorted(baseline)
    return float(stats.ttest_rel([np.mean(candidate[s]) for s in ids],
                                 [np.mean(baseline[s]) for s in ids]).pvalue)


def _p_text(p: float) -> str:
    return "<0.001" if p < 0.0005 else f"{p:.3f}"


def test_a_small_shared_drop_is_a_regression_with_scipys_p_and_both_levels_reconciled(
) -> None:
    data, verdict = _verdict(HIGH, LOW)
    p = _scipy_p(HIGH, LOW)
    assert data["t_test"]["p_value"] == pytest.approx(p, rel=1e-9)
    assert verdict == {
        "outcome": "regression",
        "headline": ("significant regression: the candidate's mean over 11 scenarios is "
                     f"lower (paired t test, p = {_p_text(p)} < alpha = 0.05)"),
        "scenarios": ("Per scenario, 0 regressed and 0 improved beyond their own 95% "
                      "interval (of 11 scenarios with one)."),
        "reconcile": BOTH_HOLD,
    }


def test_the_same_shift_the_other_way_is_an_improvement() -> None:
    _, verdict = _verdict(LOW, HIGH)
    p = _scipy_p(LOW, HIGH)
    assert verdict["outcome"] == "improvement"
    assert verdict["headline"] == (
        "significant improvement: the candidate's mean over 11 scenarios is higher "
        f"(paired t test, p = {_p_text(p)} < alpha = 0.05)")
    assert verdict["reconcile"] == BOTH_HOLD


def test_a_regression_the_scenarios_show_on_their_own_needs_no_reconciling() -> None:
    # Epochs that agree closely: each scenario's own interval is narrow enough to see its drop.
    base = {f"s{i}": [0.9, 0.95, 0.9, 0.95, 0.9] for i in range(20)}
    cand = {sid: [x - 0.05 - 0.01 * (i % 3) for x in xs]
            for i, (sid, xs) in enumerate(base.items())}
    cand["s0"] = [x - 0.5 for x in base["s0"]]
    data, verdict = _verdict(base, cand)
    assert verdict["outcome"] == "regression"
    assert all(r["ci_high"] < 0 for r in data["scenarios"])
    assert verdict["scenarios"] == ("Per scenario, 20 regressed and 0 improved beyond their "
                                    "own 95% interval (of 20 scenarios with one).")
    assert verdict["reconcile"] is None


def test_scenarios_that_moved_without_a_suite_change_name_chance_with_its_count() -> None:
    baseline = {f"s{i}": [0.5, 0.6, 0.5, 0.6, 0.5] for i in range(6)}
    candidate = dict(baseline)
    candidate["s0"] = [0.0, 0.05, 0.0, 0.05, 0.0]
    candidate["s1"] = [0.7, 0.75, 0.7, 0.8, 0.7]
    candidate["s2"] = [0.7, 0.75, 0.7, 0.8, 0.7]
    _, verdict = _verdict(baseline, candidate)
    p = _scipy_p(baseline, candidate)
    assert p > 0.05
    assert verdict == {
        "outcome": "none",
        "headline": ("no significant difference in the mean over 6 scenarios (paired t "
                     f"test, p = {_p_text(p)}, alpha = 0.05)"),
        "scenarios": ("Per scenario, 1 regressed and 2 improved beyond their own 95% "
                      "interval (of 6 scenarios with one)."),
        "reconcile": ("The suite's mean did not change significantly; at 95% for each of 6 "
                      "scenarios about 0.3 would lie beyond 0 by chance alone (the "
                      "per-scenario intervals are not adjusted for multiplicity): read those "
                      "scenarios' transcripts before trusting them."),
    }


def test_alpha_sets_the_level_the_chance_count_and_the_verdict() -> None:
    baseline = {f"s{i}": [0.5, 0.6, 0.5, 0.6, 0.5] for i in range(6)}
    candidate = dict(baseline)
    candidate["s0"] = [0.0, 0.05, 0.0, 0.05, 0.0]
    _, verdict = _verdict(baseline, candidate, alpha=0.2)
    p = _scipy_p(baseline, candidate)
    assert p >= 0.2  # one scenario of six: the suite mean does not move at alpha 0.2
    assert verdict["headline"].endswith(f"(paired t test, p = {_p_text(p)}, alpha = 0.2)")
    assert "beyond their own 80% interval" in verdict["scenarios"]
    assert "at 80% for each of 6 scenarios about 1.2 would lie" in verdict["reconcile"]


def test_a_tiny_p_reads_below_a_thousandth() -> None:
    base = {f"s{i}": [0.9 + 0.01 * (i % 4)] * 3 for i in range(30)}
    cand = {sid: [x - 0.3 - 0.001 * (i % 5) for x in xs]
            for i, (sid, xs) in enumerate(base.items())}
    _, verdict = _verdict(base, cand)
    assert _scipy_p(base, cand) < 0.0005
    assert "(paired t test, p = <0.001 < alpha = 0.05)" in verdict["headline"]


def test_the_permutation_test_decides_when_asked_and_is_named() -> None:
    data, verdict = _verdict(HIGH, LOW, test="permutation")
    p = data["permutation_test"]["p_value"]
    assert p != data["t_test"]["p_value"]
    assert verdict["headline"].endswith(
        f"lower (paired permutation test, p = {_p_text(p)} < alpha = 0.05)")


def test_single_epoch_runs_have_no_scenario_interval_and_say_so() -> None:
    base = {f"s{i}": [0.9] for i in range(8)}
    cand = {f"s{i}": [0.5 + 0.01 * i] for i in range(8)}
    _, verdict = _verdict(base, cand)
    assert verdict["outcome"] == "regression"
    assert verdict["scenarios"] == (
        "Per scenario, no interval (a run with a single epoch), so no scenario is called a "
        "regression or an improvement on its own.")
    assert verdict["reconcile"] is None


NOTICE = ("OFFLINE roles: agent ({agent}), simulator (mock:simulator); no real model was "
          "called by the harness. Figures that depend on an offline role come from a mock "
          "model, not a real one.")


def test_a_notice_splits_into_its_clauses_without_their_full_stops() -> None:
    assert _notice_parts(NOTICE.format(agent="mock:agent")) == [
        "OFFLINE roles: agent (mock:agent), simulator (mock:simulator)",
        "no real model was called by the harness",
        "Figures that depend on an offline role come from a mock model, not a real one",
    ]
    assert _notice_parts("a. b.; c") == ["a", "b", "c"]


def test_two_different_notices_say_what_differs_per_run_and_what_is_shared_once() -> None:
    notice = comparison_notice({"baseline": NOTICE.format(agent="mock:agent"),
                                "candidate": NOTICE.format(agent="mock:agent-flaky")})
    assert notice == (
        "OFFLINE models in both runs. "
        "baseline: OFFLINE roles: agent (mock:agent), simulator (mock:simulator); "
        "candidate: OFFLINE roles: agent (mock:agent-flaky), simulator (mock:simulator). "
        "No real model was called by the harness. "
        "Figures that depend on an offline role come from a mock model, not a real one.")


def test_one_offline_run_is_named_and_keeps_its_whole_notice() -> None:
    notice = NOTICE.format(agent="mock:agent")
    assert comparison_notice({"baseline": notice, "candidate": None}) == (
        "OFFLINE models in the baseline only. baseline: OFFLINE roles: agent (mock:agent), "
        "simulator (mock:simulator); no real model was called by the harness; Figures that "
        "depend on an offline role come from a mock model, not a real one.")
    assert comparison_notice({"baseline": "", "candidate": None}) is None
    assert comparison_notice({"baseline": notice, "candidate": notice}) == notice


def test_as_many_scenarios_up_as_down_without_a_suite_change_still_name_chance() -> None:
    baseline = {f"s{i}": [0.5, 0.6, 0.5, 0.6, 0.5] for i in range(6)}
    candidate = dict(baseline)
    candidate["s0"] = [0.0, 0.05, 0.0, 0.05, 0.0]
    candidate["s1"] = [1.0, 0.95, 1.0, 0.95, 1.0]
    _, verdict = _verdict(baseline, candidate)
    assert verdict["outcome"] == "none"
    assert verdict["scenarios"].startswith("Per scenario, 1 regressed and 1 improved")
    assert verdict["reconcile"] is not None
    assert "about 0.3 would lie beyond 0 by chance alone" in verdict["reconcile"]
