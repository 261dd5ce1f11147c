"""Per-scenario intervals of a difference between two runs (``harness compare``) and of a
scenario's pairwise win rate: MOVER with Wilson intervals is Newcombe's method 10 (checked
against statsmodels and Newcombe's published figures), with t intervals it combines scipy's
t intervals, and with no spread it uses the exact Clopper-Pearson bounds (scipy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from harness.runs.pairwise_runs_report import scenario_win_rate_interval
from harness.stats import compare_runs
from harness.stats.compare import difference_interval


def wilson(k: int, n: int) -> tuple[float, float, float]:
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return k / n, float(ci.low), float(ci.high)


def t_interval(x: list[float]) -> tuple[float, float, float]:
    """The mean and its 95% t interval (scipy), cut at [0, 1] as a run's scenario means are."""
    mean = float(np.mean(x))
    low, high = sps.t.interval(0.95, len(x) - 1, loc=mean, scale=sps.sem(x))
    return mean, max(float(low), 0.0), min(float(high), 1.0)


@pytest.mark.parametrize(("x1", "n1", "x2", "n2"), [
    (56, 70, 48, 80), (9, 10, 3, 10), (6, 7, 2, 7), (5, 56, 0, 29), (0, 10, 0, 20), (10, 10, 3, 9),
])
def test_mover_with_wilson_intervals_is_newcombes_method_10(x1: int, n1: int, x2: int,
                                                             n2: int) -> None:
    a, b = wilson(x2, n2), wilson(x1, n1)  # the interval is for b - a = p1 - p2
    low, high = difference_interval(*a, *b)
    expected = confint_proportions_2indep(x1, n1, x2, n2, method="newcomb", compare="diff")
    assert (low, high) == pytest.approx(tuple(float(v) for v in expected), abs=1e-9)


def test_newcombes_published_examples() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10.
    assert difference_interval(*wilson(48, 80), *wilson(56, 70)) == pytest.approx(
        (0.0524, 0.3339), abs=5e-5)
    assert difference_interval(*wilson(3, 10), *wilson(9, 10)) == pytest.approx(
        (0.1705, 0.8090), abs=5e-5)


def test_compare_gives_each_scenario_the_mover_interval_of_its_t_intervals() -> None:
    base = {"s1": [0.2, 0.6, 0.9, 0.5], "s2": [0.4, 0.5, 0.45]}
    cand = {"s1": [0.8, 1.0, 0.7], "s2": [0.3, 0.35, 0.6, 0.5]}  # s1's t interval is cut at 1
    res = compare_runs(base, cand)
    for row in res.scenarios:
        ma, la, ua = t_interval(base[row.scenario_id])
        mb, lb, ub = t_interval(cand[row.scenario_id])
        d = mb - ma
        assert row.difference == pytest.approx(d)
        assert row.ci_low == pytest.approx(d - math.hypot(mb - lb, ua - ma))
        assert row.ci_high == pytest.approx(d + math.hypot(ub - mb, ma - la))
    assert "MOVER" in res.scenario_interval_method


def test_scenarios_without_spread_use_the_exact_bounds() -> None:
    base = {"s1": [1.0] * 5, "s2": [0.5, 1.0]}
    cand = {"s1": [0.0] * 5, "s2": [0.5, 1.0]}
    row = compare_runs(base, cand).scenarios[0]
    # Clopper-Pearson for 5 of 5 and 0 of 5 (scipy): the no-spread bounds at the range's ends.
    top = sps.binomtest(5, 5).proportion_ci(confidence_level=0.95, method="exact").low
    bottom = sps.binomtest(0, 5).proportion_ci(confidence_level=0.95, method="exact").high
    assert row.difference == -1.0
    assert row.ci_low == -1.0  # never past the widest difference scores in [0, 1] can have
    assert row.ci_high == pytest.approx(-1.0 + math.hypot(bottom, 1.0 - top))
    assert row.ci_high < 0  # five epochs each way are enough to call it


def test_interval_level_follows_alpha_and_a_single_epoch_has_none() -> None:
    base = {"s1": [0.2, 0.6, 0.9], "s2": [0.4], "s3": [0.1, 0.3]}
    cand = {"s1": [0.8, 1.0, 0.7], "s2": [0.5, 0.6], "s3": [0.2, 0.2]}
    wide = compare_runs(base, cand, alpha=0.01).scenarios[0]
    narrow = compare_runs(base, cand, alpha=0.2).scenarios[0]
    assert wide.ci_low is not None and narrow.ci_low is not None
    assert wide.ci_low < narrow.ci_low and narrow.ci_high < wide.ci_high  # type: ignore[operator]
    single = compare_runs(base, cand).scenarios[1]
    assert (single.ci_low, single.ci_high) == (None, None)


@pytest.mark.parametrize("scores", [[1.0, 0.5, 1.0, 0.0], [0.5, 1.0, 1.0]])
def test_scenario_win_rate_interval_with_spread_is_scipys_t_interval(
        scores: list[float]) -> None:
    _, low, high = t_interval(scores)
    assert scenario_win_rate_interval(scores) == pytest.approx((low, high))


def test_scenario_win_rate_interval_without_spread() -> None:
    exact = sps.binomtest(3, 3).proportion_ci(confidence_level=0.95, method="exact")
    assert scenario_win_rate_interval([1.0, 1.0, 1.0]) == pytest.approx((exact.low, 1.0))
    # All ties: the Wilson interval for 2 units at 0.5 (statsmodels).
    assert scenario_win_rate_interval([0.5, 0.5]) == pytest.approx(
        proportion_confint(1, 2, alpha=0.05, method="wilson"))
    assert scenario_win_rate_interval([1.0]) is None
