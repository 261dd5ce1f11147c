"""Intervals near the ends of the range (issue 11): pass@k, pass^k and the pass rate get the
Wilson interval on the effective sample size, checked against statsmodels' Wilson interval
with the Korn-Graubard degrees-of-freedom adjustment; when every scenario agrees the interval
is the exact Clopper-Pearson bound for C scenarios (statsmodels' "beta"), never a point; the
mean's t interval is cut at the score range; the vectorised pass@k / pass^k tables equal the
exact binomial ratios."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from harness.stats import pass_at_k, pass_hat_k, scenario_stats, suite_stats
from harness.stats.bounded import (
    mean_intervals,
    proportion_mean_intervals,
    rule_text,
    wilson_bounds,
)
from harness.stats.sampling import pass_at_k_table, pass_hat_k_table
from harness.stats.summary import design_power, stats_summary


def _suite(rng: np.random.Generator, n_scenarios: int, epochs: int, a: float, b: float
           ) -> dict[str, list[float]]:
    p = rng.beta(a, b, n_scenarios)
    return {f"s{i}": [float(x) for x in rng.random(epochs) < p[i]] for i in range(n_scenarios)}


def _counts(scores: dict[str, list[float]]) -> list[tuple[int, int]]:
    return [(len(v), int(sum(v))) for v in scores.values()]


@pytest.mark.parametrize(("seed", "n_scenarios", "epochs", "confidence"),
                         [(0, 12, 5, 0.95), (1, 40, 6, 0.9), (2, 5, 20, 0.95)])
def test_pass_k_intervals_are_wilson_on_the_effective_sample_size(
        seed: int, n_scenarios: int, epochs: int, confidence: float) -> None:
    scores = _suite(np.random.default_rng(seed), n_scenarios, epochs, 1.0, 1.5)
    suite = suite_stats(scores, confidence=confidence, bootstrap_resamples=0)
    counts = _counts(scores)
    z = sps.norm.ppf(0.5 + confidence / 2)
    t = sps.t.ppf(0.5 + confidence / 2, n_scenarios - 1)
    checked = 0
    for k in range(1, epochs + 1):
        for figure, per in ((suite.pass_at_k[k], [pass_at_k(n, c, k) for n, c in counts]),
                            (suite.pass_hat_k[k], [pass_hat_k(n, c, k) for n, c in counts])):
            y = np.array(per)
            if np.ptp(y) == 0:
                continue
            p = y.mean()
            se = y.std(ddof=1) / math.sqrt(n_scenarios)
            n_eff = min(p * (1 - p) / se**2, sum(n // k for n, _ in counts))
            # Korn & Graubard: the t quantile enters as an effective sample size scaled by
            # (z/t)^2, after which it is statsmodels' ordinary Wilson interval.
            n_adj = n_eff * (z / t) ** 2
            want = proportion_confint(p * n_adj, n_adj, alpha=1 - confidence, method="wilson")
            assert figure.value == pytest.approx(p, abs=1e-12)
            assert figure.stderr == pytest.approx(se, rel=1e-9)
            assert (figure.ci_low, figure.ci_high) == pytest.approx(want, abs=1e-9)
            assert "Wilson score interval on the effective sample size" in figure.method
            checked += 1
    assert checked >= epochs  # the comparison ran, it was not skipped for every k


def test_pass_rate_interval_is_the_same_rule() -> None:
    scores = _suite(np.random.default_rng(4), 15, 4, 2.0, 2.0)
    suite = suite_stats(scores, bootstrap_resamples=0)
    assert (suite.pass_rate.ci_low, suite.pass_rate.ci_high) == (
        suite.pass_hat_k[1].ci_low, suite.pass_hat_k[1].ci_high)
    assert suite.pass_rate.value == suite.pass_at_k[1].value
    assert "pass rate" in suite.pass_rate.method and "Wilson" in suite.pass_rate.method


def test_all_zero_pass_hat_k_is_the_exact_bound_not_a_point() -> None:
    # The case: a pass rate above 0, yet every scenario's pass^5 is 0, and the old
    # interval was [0, 0] with no note. Here half the scenarios pass one epoch in five.
    scores = {f"s{i}": [float(i % 2 == 0 and e == i % 5) for e in range(5)]
              for i in range(10)}
    suite = suite_stats(scores, bootstrap_resamples=0)
    assert suite.pass_rate.value == pytest.approx(0.1)
    hat = suite.pass_hat_k[5]
    assert hat.value == 0.0
    _, upper = proportion_confint(0, 10, alpha=0.05, method="beta")  # Clopper-Pearson
    assert hat.ci_low == 0.0 and hat.ci_high == pytest.approx(upper, abs=1e-12)
    assert hat.ci_high == pytest.approx(1 - 0.025 ** (1 / 10))
    assert "exact bound" in hat.method
    assert any("pass^2-5" in n and "exact bound for 10 scenarios" in n for n in suite.notes)


@pytest.mark.parametrize(("value", "n_scenarios"), [(1.0, 5), (0.0, 50), (1.0, 50)])
def test_all_pass_and_all_fail_suites_get_the_exact_bound(value: float, n_scenarios: int
                                                          ) -> None:
    scores = {f"s{i}": [value] * 5 for i in range(n_scenarios)}
    suite = suite_stats(scores, bootstrap_resamples=0)
    want = proportion_confint(value * n_scenarios, n_scenarios, alpha=0.05, method="beta")
    # The upper end of an all-pass suite (and the lower end of an all-fail one) is the
    # range's end itself; the other end is Clopper-Pearson's.
    for est in (suite.mean, suite.pass_rate, suite.pass_at_k[3], suite.pass_hat_k[5]):
        assert est.value == value and est.stderr == 0.0
        assert (est.ci_low, est.ci_high) == pytest.approx(want, abs=1e-12)
        assert est.ci_high - est.ci_low > 0.05
    edge = "top" if value else "bottom"
    assert any(f"every scenario at the {edge} of the range for the mean score, pass rate"
               in n for n in suite.notes)
    assert suite.bootstrap is None


def test_no_spread_inside_the_range_is_the_wilson_interval_for_c_scenarios() -> None:
    # Every scenario passes 3 of 5: pass rate 0.6 everywhere, pass^2 0.3 everywhere.
    scores = {f"s{i}": [1.0, 0.0, 1.0, 0.0, 1.0] for i in range(8)}
    suite = suite_stats(scores, bootstrap_resamples=0)
    for est, p in ((suite.pass_rate, 0.6), (suite.pass_hat_k[2], 0.3)):
        want = proportion_confint(p * 8, 8, alpha=0.05, method="wilson")
        assert (est.ci_low, est.ci_high) == pytest.approx(want, abs=1e-12)
        assert "no spread between the 8 scenarios" in est.method


def test_effective_sample_size_is_capped_at_the_trials() -> None:
    # 49 scenarios at 3/5 and one at 4/5: a tiny spread whose p(1-p)/SE^2 would claim
    # 15,000 samples; the figure rests on 250 single attempts (pass rate) at most.
    scores = {f"s{i}": [1.0, 1.0, 1.0, 0.0, 0.0] for i in range(49)}
    scores["s49"] = [1.0, 1.0, 1.0, 1.0, 0.0]
    suite = suite_stats(scores, bootstrap_resamples=0)
    pr = suite.pass_rate
    assert "at most 250 trials" in pr.method and "= 250.0" in pr.method
    z, t = sps.norm.ppf(0.975), sps.t.ppf(0.975, 49)
    n_adj = 250 * (z / t) ** 2
    want = proportion_confint(pr.value * n_adj, n_adj, alpha=0.05, method="wilson")
    assert (pr.ci_low, pr.ci_high) == pytest.approx(want, abs=1e-12)
    # pass^2 rests on floor(5/2) = 2 two-attempt trials per scenario.
    assert "at most 100 trials" in suite.pass_hat_k[2].method


def test_one_epoch_binary_mean_interval_is_cut_at_the_range() -> None:
    # The example: the t interval was [-0.046, 1.546] while the pass rate's was
    # inside [0, 1].
    scores = {"a": [1.0], "b": [1.0], "c": [1.0], "d": [0.0]}
    suite = suite_stats(scores, bootstrap_resamples=0)
    low, high = sps.t.interval(0.95, 3, loc=0.75, scale=0.25)
    assert (round(low, 3), round(high, 3)) == (-0.046, 1.546)
    assert (suite.mean.ci_low, suite.mean.ci_high) == (0.0, 1.0)
    assert suite.mean.clipped and "clipped to the range [0, 1]" in suite.mean.method
    assert any("cut at it" in n for n in suite.notes)
    assert 0.0 < suite.pass_rate.ci_low < suite.pass_rate.ci_high < 1.0


def test_a_declared_score_range_cuts_and_bounds_on_that_range() -> None:
    scores = {"a": [10.0, 10.0], "b": [10.0, 10.0], "c": [10.0, 10.0]}
    suite = suite_stats(scores, bootstrap_resamples=0, score_range=(0.0, 10.0))
    # Every scenario at the top of [0, 10]: the exact bound, scaled to the range; and the
    # default pass rule is the top of the declared range.
    assert suite.mean.ci_low == pytest.approx(10 * 0.025 ** (1 / 3))
    assert suite.mean.ci_high == 10.0
    assert suite.pass_rate.value == 1.0
    interior = suite_stats({"a": [9.0, 2.0], "b": [8.0, 9.5]}, bootstrap_resamples=0,
                           score_range=(0.0, 10.0))
    assert interior.mean.clipped and interior.mean.ci_high == 10.0
    assert interior.pass_rate.value == 0.0


def test_identical_scores_give_no_intraclass_correlation() -> None:
    # Before: the between-scenario variance was rounding noise (~1e-32) over a within
    # variance of 0, so the intraclass correlation came out as 1.0.
    scores = {f"s{i}": [0.7] * (3 + i % 4) for i in range(7)}
    suite = suite_stats(scores, bootstrap_resamples=0)
    assert suite.variance is not None
    assert suite.variance.between == 0.0 and suite.variance.between_raw == 0.0
    assert suite.variance.within == 0.0
    assert suite.variance.intraclass_correlation is None
    assert any("intraclass correlation and design power undefined" in n for n in suite.notes)
    # Nor is there a smallest detectable difference of 0.
    assert design_power(suite) is None
    assert stats_summary(suite, power=design_power(suite)).power is None


def test_a_scenario_whose_epochs_agree_gets_a_bound_not_a_point() -> None:
    s = scenario_stats("s", [1.0] * 5)
    want = proportion_confint(5, 5, alpha=0.05, method="beta")
    assert (s.mean_ci_low, s.mean_ci_high) == pytest.approx(want, abs=1e-12)
    assert s.sd == 0.0
    spread = scenario_stats("s", [1.0, 0.0])
    assert (spread.mean_ci_low, spread.mean_ci_high) == (0.0, 1.0)  # t on 1 df, cut


def test_pass_k_tables_equal_the_exact_binomial_ratios() -> None:
    for n in (1, 2, 5, 13, 60):
        c = np.arange(n + 1)
        at = pass_at_k_table(np.full(c.shape, n), c, n)
        hat = pass_hat_k_table(np.full(c.shape, n), c, n)
        for ci in range(n + 1):
            for k in range(1, n + 1):
                exact_hat = Fraction(math.comb(ci, k), math.comb(n, k))
                assert hat[ci, k - 1] == pytest.approx(float(exact_hat), rel=1e-12, abs=1e-300)
                assert at[ci, k - 1] == pytest.approx(
                    float(1 - Fraction(math.comb(n - ci, k), math.comb(n, k))), rel=1e-12)
    # Far beyond float range for the binomials themselves.
    at = pass_at_k_table(np.array([2000]), np.array([3]), 1000)
    assert at[0, 999] == pytest.approx(pass_at_k(2000, 3, 1000), rel=1e-12)
    hat = pass_hat_k_table(np.array([2000]), np.array([1500]), 1000)
    assert hat[0, 9] == pytest.approx(pass_hat_k(2000, 1500, 10), rel=1e-12)
    assert hat[0, 999] == pytest.approx(pass_hat_k(2000, 1500, 1000), rel=1e-9)


def test_wilson_bounds_at_zero_and_all_successes_stay_in_the_unit_range() -> None:
    # 0 of 5 and 5 of 5: the formula's ends are 0 and 1 up to rounding (here -2.8e-17 for
    # the lower end), and are clipped to them exactly.
    z = sps.norm.ppf(0.975)
    low, high = wilson_bounds(np.array([0.0, 1.0]), np.array([5.0, 5.0]), z)
    assert low[0] == 0.0 and high[1] == 1.0
    want = [proportion_confint(c, 5, alpha=0.05, method="wilson") for c in (0, 5)]
    assert (low[1], high[0]) == pytest.approx((want[1][0], want[0][1]), abs=1e-12)


def test_mean_intervals_entry_by_entry_on_a_declared_range() -> None:
    # Range [2, 10] (width 8): t intervals inside, cut below and above, the no-spread rules
    # at both ends and inside, and one unit (no interval).
    tq = sps.t.ppf(0.975, 2)  # n = 3
    mean = np.array([6.0, 2.5, 9.5, 2.0, 10.0, 6.0, 5.0])
    stderr = np.array([0.5, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0])
    spread = np.array([True, True, True, False, False, False, True])
    n = np.array([3, 3, 3, 3, 3, 3, 1])
    got = mean_intervals(mean, stderr, spread, n, confidence=0.95, score_range=(2.0, 10.0))
    t_lo, t_hi = sps.t.interval(0.95, 2, loc=mean[:3], scale=stderr[:3])
    edge = 0.025 ** (1 / 3)
    wilson = proportion_confint(0.5 * 3, 3, alpha=0.05, method="wilson")
    assert got.low[:3] == pytest.approx([t_lo[0], 2.0, t_lo[2]], abs=1e-12)
    assert got.high[:3] == pytest.approx([t_hi[0], t_hi[1], 10.0], abs=1e-12)
    assert got.low[3:6] == pytest.approx([2.0, 2.0 + 8 * edge, 2.0 + 8 * wilson[0]])
    assert got.high[3:6] == pytest.approx([10.0 - 8 * edge, 10.0, 2.0 + 8 * wilson[1]])
    assert np.isnan(got.low[6]) and np.isnan(got.high[6])
    assert got.rule.tolist() == ["t", "t", "t", "bottom", "top", "inside", "undefined"]
    assert got.clipped.tolist() == [False, True, True, False, False, False, False]
    assert got.effective_n.dtype == float and np.isnan(got.effective_n).all()
    # t intervals that end exactly on the range's ends are not cut.
    edges = mean_intervals(np.array([-10.0 + tq, 10.0 - tq]), np.ones(2), np.ones(2, bool),
                           np.array([3, 3]), confidence=0.95, score_range=(-10.0, 10.0))
    assert (edges.low[0], edges.high[1]) == (-10.0, 10.0)
    assert edges.clipped.tolist() == [False, False]


def test_proportion_mean_intervals_fall_back_to_the_no_spread_rule() -> None:
    # Rule 1 needs a spread, a positive stderr and a mean strictly inside (0, 1); any entry
    # missing one gets rule 2, without a division warning for its zero stderr.
    mean = np.array([0.5, 0.5, 0.5, 0.0, 1.0])
    stderr = np.array([0.1, 0.1, 0.0, 0.1, 0.1])
    spread = np.array([True, False, True, True, True])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = proportion_mean_intervals(mean, stderr, spread, n_clusters=4,
                                        max_trials=np.full(5, 100), confidence=0.95)
    assert got.rule.tolist() == ["wilson", "inside", "inside", "bottom", "top"]
    assert got.effective_n[0] == pytest.approx(25.0) and np.isnan(got.effective_n[1:]).all()
    inside = proportion_confint(2, 4, alpha=0.05, method="wilson")
    assert (got.low[1], got.high[1]) == pytest.approx(inside, abs=1e-12)
    assert got.clipped.dtype == bool and not got.clipped.any()
    with pytest.raises(ValueError, match="^an interval needs at least 2 scenarios, got 1$"):
        proportion_mean_intervals(mean, stderr, spread, n_clusters=1,
                                  max_trials=np.full(5, 100), confidence=0.95)


def test_rule_texts_word_for_word() -> None:
    assert rule_text("bottom", 7, 0.9) == (
        "every one of the 7 scenarios at the bottom of the range: exact bound "
        "1-(0.05)^(1/7) above it (Clopper-Pearson, 0 of 7)")
    assert rule_text("top", 7, 0.9) == (
        "every one of the 7 scenarios at the top of the range: exact bound (0.05)^(1/7) "
        "below it (Clopper-Pearson, 7 of 7)")
    assert rule_text("inside", 7, 0.9) == (
        "no spread between the 7 scenarios: Wilson interval for 7 units (the largest "
        "variance a figure with this mean can have)")
    assert rule_text("t", 7, 0.9) == "" and rule_text("wilson", 7, 0.9) == ""
