"""The gate's lines a user acts on: what to run when there is no lower bound (word for word,
with the options named), and the number of epochs that would clear the bar, checked against
statsmodels' Wilson interval at the exact boundary, where one epoch more or fewer is wrong."""

from __future__ import annotations

from statistics import NormalDist

import pytest
from statsmodels.stats.proportion import proportion_confint

from harness.runs.gate import _no_interval, evaluate_gate
from harness.stats.suite import suite_stats
from harness.stats.summary import stats_summary


def _summary(scores: dict[str, list[float]]):  # type: ignore[no-untyped-def]
    return stats_summary(suite_stats(scores, {s: [x >= 1.0 for x in xs]
                                              for s, xs in scores.items()},
                                     bootstrap_resamples=0))


def test_one_scenario_one_epoch_names_the_options_that_give_a_bound() -> None:
    gate = evaluate_gate(_summary({"only": [0.8]}), min_score=0.5, gate_on="lower-bound")
    assert gate is not None and not gate.passed
    assert gate.checks[0].value is None
    assert gate.checks[0].detail == (
        "no interval: one scenario with one epoch, so the lower bound is unknown; run more "
        "epochs (--epochs 5) or gate on the mean (--gate-on mean)")


def test_several_scenarios_without_an_interval_say_how_many_and_what_to_do() -> None:
    summary = _summary({"a": [1.0], "b": [0.0], "c": [1.0]})
    assert _no_interval(summary, None) == (
        "no interval (3 scenarios and no scenario figures to fall back on), so the lower "
        "bound is unknown; gate on the mean (--gate-on mean) or add scenarios")


def test_the_epochs_hint_at_an_exact_boundary_names_the_first_count_that_clears() -> None:
    # A threshold equal to the Wilson lower bound of 10 passes in 10: 10 epochs clear it
    # (>=), 9 do not; rounding must not push the hint to 11.
    z2 = NormalDist().inv_cdf(0.975) ** 2
    threshold = 10 / (10 + z2)
    assert proportion_confint(10, 10, method="wilson")[0] == pytest.approx(threshold)
    assert proportion_confint(9, 9, method="wilson")[0] < threshold
    gate = evaluate_gate(_summary({"only": [1.0] * 3}), min_pass_rate=threshold,
                         gate_on="lower-bound")
    assert gate is not None
    assert gate.checks[0].detail.endswith(
        f"; every epoch passed, and 10 epochs all passing would clear {threshold:.3f} "
        "(--epochs 10)")


def test_no_epochs_hint_when_an_epoch_failed_or_the_bar_is_one() -> None:
    failed = evaluate_gate(_summary({"only": [1.0] * 4 + [0.0]}), min_pass_rate=0.9,
                           gate_on="lower-bound")
    assert failed is not None
    low, high = proportion_confint(4, 5, method="wilson")
    assert failed.checks[0].detail == (
        f"pass rate lower bound {low:.3f} < 0.900 (interval {low:.3f}–{high:.3f}, one "
        "scenario: its Wilson interval over 5 epochs)")
    # No number of epochs brings a Wilson lower bound to 1: no hint, and no error.
    at_one = evaluate_gate(_summary({"only": [1.0] * 4}), min_pass_rate=1.0,
                           gate_on="lower-bound")
    assert at_one is not None and not at_one.passed
    assert at_one.checks[0].detail.endswith("its Wilson interval over 4 epochs)")


def _with_interval(low: float, high: float):  # type: ignore[no-untyped-def]
    """Suite figures whose mean carries [low, high], as a summary written before intervals
    were cut at [0, 1] can."""
    summary = _summary({"a": [1.0, 0.0], "b": [0.0, 0.5], "c": [1.0, 1.0]})
    return summary.model_copy(update={"ci_low": low, "ci_high": high, "ci_clipped": False})


def test_an_interval_beyond_zero_and_one_is_cut_and_says_so() -> None:
    gate = evaluate_gate(_with_interval(-0.1, 1.3), min_score=0.05, gate_on="lower-bound")
    assert gate is not None and not gate.passed
    assert gate.checks[0].value == 0.0
    assert gate.checks[0].detail == ("mean score lower bound 0.000 < 0.050 (interval "
                                     "0.000–1.000, clipped to the range [0, 1])")


def test_an_interval_inside_zero_and_one_is_not_called_clipped() -> None:
    gate = evaluate_gate(_with_interval(0.2, 0.9), min_score=0.1, gate_on="lower-bound")
    assert gate is not None and gate.passed
    assert gate.checks[0].detail == ("mean score lower bound 0.200 >= 0.100 (interval "
                                     "0.200–0.900)")
