"""Suite statistics: clustered SE and t interval against statsmodels, bootstrap
reproducibility and an independent cluster-resampling implementation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from harness.stats import (
    InsufficientDataError,
    cluster_bootstrap_interval,
    clustered_stderr,
    pass_at_k,
    suite_stats,
    t_interval,
)
from harness.stats.columns import ScoreColumns
from harness.stats.suite import suite_stats_from_columns


def _random_suite(
    rng: np.random.Generator, n_scenarios: int, epochs: list[int] | int
) -> dict[str, list[float]]:
    counts = epochs if isinstance(epochs, list) else [epochs] * n_scenarios
    out = {}
    for c in range(n_scenarios):
        p = rng.beta(0.7, 0.7)
        out[f"s{c}"] = [float(rng.random() < p) for _ in range(counts[c])]
    return out


def _flatten(scores: dict[str, list[float]]) -> tuple[np.ndarray, np.ndarray]:
    y = np.array([x for xs in scores.values() for x in xs])
    g = np.array([i for i, xs in enumerate(scores.values()) for _ in xs])
    return y, g


def test_equal_epochs_clustered_se_is_sd_of_means_over_sqrt_c() -> None:
    scores = _random_suite(np.random.default_rng(1), 12, 4)
    means = np.array([np.mean(x) for x in scores.values()])
    suite = suite_stats(scores, bootstrap_resamples=0)
    expected = means.std(ddof=1) / math.sqrt(12)
    assert suite.mean.stderr == pytest.approx(expected, rel=1e-12)
    y, g = _flatten(scores)
    # Miller's sandwich formula on the raw samples (unit weights) gives the same number.
    assert clustered_stderr(y, g) == pytest.approx(expected, rel=1e-12)
    assert suite.mean.value == pytest.approx(y.mean())


def test_unequal_epochs_match_statsmodels_cluster_robust() -> None:
    rng = np.random.default_rng(7)
    scores = _random_suite(rng, 9, [1, 2, 5, 3, 8, 2, 4, 6, 1])
    y, g = _flatten(scores)
    x = np.ones((y.size, 1))
    # Unit weights: the pooled mean. statsmodels' CRV1 factor is G/(G-1) * (N-1)/(N-K) and
    # K = 1 here, so it is exactly the C/(C-1) factor.
    ols = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True)
    assert clustered_stderr(y, g) == pytest.approx(ols.bse[0], rel=1e-10)
    # Weights 1/n_c: the mean of scenario means, the suite estimand.
    n_c = np.bincount(g)
    wls = sm.WLS(y, x, weights=1.0 / n_c[g]).fit(
        cov_type="cluster", cov_kwds={"groups": g}, use_t=True
    )
    suite = suite_stats(scores, bootstrap_resamples=0)
    assert suite.mean.value == pytest.approx(wls.params[0], rel=1e-12)
    assert suite.mean.stderr == pytest.approx(wls.bse[0], rel=1e-10)
    assert clustered_stderr(y, g, 1.0 / n_c[g]) == pytest.approx(wls.bse[0], rel=1e-10)
    # Same t interval on C-1 degrees of freedom, cut at the score range [0, 1].
    assert wls.df_resid_inference == 8 and suite.mean.df == 8
    low, high = wls.conf_int(alpha=0.05)[0]
    assert high > 1 and suite.mean.clipped and "clipped to the range [0, 1]" in suite.mean.method
    assert (suite.mean.ci_low, suite.mean.ci_high) == pytest.approx((low, 1.0), rel=1e-10)
    assert suite.min_epochs == 1 and suite.max_epochs == 8
    assert any("unequal epoch counts" in n for n in suite.notes)


def test_t_interval_against_scipy() -> None:
    low, high = t_interval(0.5, 0.1, 4, 0.9)
    ref = sps.t.interval(0.9, 4, loc=0.5, scale=0.1)
    assert (low, high) == pytest.approx(ref)
    with pytest.raises(ValueError):
        t_interval(0.5, 0.1, 0)


def test_clustered_stderr_needs_two_clusters() -> None:
    with pytest.raises(InsufficientDataError,
                       match=r"^a clustered standard error needs at least 2 scenarios, got 1$"):
        clustered_stderr([1.0, 0.0], ["a", "a"])
    with pytest.raises(ValueError, match="^values and clusters must have the same length$"):
        clustered_stderr([1.0, 0.0], ["a"])
    # Two clusters are enough: C/(C-1) = 2 times the squared cluster scores over (sum w)^2.
    assert clustered_stderr([1.0, 0.0, 0.0], ["a", "b", "b"]) == pytest.approx(
        math.sqrt(2 * ((1 - 1 / 3) ** 2 + (2 * -1 / 3) ** 2) / 9))


@pytest.mark.parametrize("weights", [[1.0, 0.0], [1.0, -0.5], [1.0, math.inf], [1.0, math.nan]])
def test_clustered_stderr_needs_positive_finite_weights(weights: list[float]) -> None:
    with pytest.raises(ValueError, match="^weights must be positive and finite$"):
        clustered_stderr([1.0, 0.0], ["a", "b"], weights)
    with pytest.raises(ValueError, match="^values and weights must have the same length$"):
        clustered_stderr([1.0, 0.0], ["a", "b"], [1.0])


def test_pass_at_k_averaged_over_scenarios_up_to_smallest_epoch_count() -> None:
    scores = {"a": [1.0, 0.0, 1.0], "b": [0.0, 0.0, 0.0, 1.0], "c": [1.0, 1.0, 1.0]}
    suite = suite_stats(scores, bootstrap_resamples=0)
    assert sorted(suite.pass_at_k) == [1, 2, 3]
    per = [pass_at_k(3, 2, 2), pass_at_k(4, 1, 2), pass_at_k(3, 3, 2)]
    assert suite.pass_at_k[2].value == pytest.approx(np.mean(per))
    assert suite.pass_at_k[2].stderr == pytest.approx(np.std(per, ddof=1) / math.sqrt(3))
    assert suite.pass_hat_k[3].value == pytest.approx((0 + 0 + 1) / 3)
    # Probabilities: the interval is clipped to [0, 1].
    for est in [*suite.pass_at_k.values(), *suite.pass_hat_k.values()]:
        assert 0.0 <= est.ci_low <= est.value <= est.ci_high <= 1.0
    assert suite.flaky_scenarios == ["a", "b"]


def test_explicit_pass_flags_drive_pass_rate_not_mean() -> None:
    scores = {"a": [0.8, 0.9], "b": [0.2, 0.3]}
    suite = suite_stats(scores, {"a": [True, True], "b": [False, True]}, bootstrap_resamples=0)
    assert suite.pass_rate.value == pytest.approx(0.75)
    assert suite.mean.value == pytest.approx(0.55)


def test_one_scenario_has_no_interval_but_says_why() -> None:
    suite = suite_stats({"only": [1.0, 0.0, 1.0]})
    assert suite.mean.value == pytest.approx(2 / 3)
    assert suite.mean.stderr is None and suite.mean.ci_low is None
    assert suite.bootstrap is None and suite.variance is None
    assert any("one scenario" in n for n in suite.notes)


def test_bad_inputs_raise() -> None:
    with pytest.raises(InsufficientDataError):
        suite_stats({})
    with pytest.raises(ValueError):
        suite_stats({"a": [1.0]}, confidence=1.5)
    with pytest.raises(ValueError):
        suite_stats({"a": [1.0]}, {"b": [True]})


def test_bootstrap_is_seeded_and_reproducible() -> None:
    means = np.random.default_rng(3).random(15)
    a = cluster_bootstrap_interval(means, seed=11, n_resamples=2000)
    b = cluster_bootstrap_interval(means, seed=11, n_resamples=2000)
    c = cluster_bootstrap_interval(means, seed=12, n_resamples=2000)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    assert a.seed == 11 and a.n_clusters == 15 and "BCa" in a.method


def test_bootstrap_matches_independent_cluster_resampling() -> None:
    # Resample whole scenarios (with all their epochs) by hand and take percentiles; scipy's
    # percentile bootstrap over scenario means must agree within Monte Carlo error.
    rng = np.random.default_rng(5)
    scores = _random_suite(rng, 25, [int(k) for k in rng.integers(2, 7, 25)])
    ids = list(scores)
    draws = np.random.default_rng(99).integers(0, len(ids), size=(4000, len(ids)))
    stats = [np.mean([np.mean(scores[ids[i]]) for i in row]) for row in draws]
    ref_low, ref_high = np.percentile(stats, [2.5, 97.5])
    got = cluster_bootstrap_interval(
        [np.mean(x) for x in scores.values()], method="percentile", n_resamples=20000, seed=1
    )
    assert got.ci_low == pytest.approx(ref_low, abs=0.015)
    assert got.ci_high == pytest.approx(ref_high, abs=0.015)


def test_bootstrap_degenerate_inputs() -> None:
    point = cluster_bootstrap_interval([0.5, 0.5, 0.5])
    assert (point.ci_low, point.ci_high) == (0.5, 0.5)
    assert "point" in point.method
    with pytest.raises(InsufficientDataError):
        cluster_bootstrap_interval([0.5])


def test_suite_bootstrap_uses_seed() -> None:
    scores = _random_suite(np.random.default_rng(2), 20, 3)
    a = suite_stats(scores, seed=4, bootstrap_resamples=999)
    b = suite_stats(scores, seed=4, bootstrap_resamples=999)
    assert a.bootstrap == b.bootstrap
    assert a.bootstrap is not None and a.bootstrap.n_resamples == 999


def test_every_suite_figure_uses_the_confidence_and_counts_all_samples() -> None:
    scores = {"a": [1.0, 1.0, 1.0], "b": [1.0, 1.0, 1.0, 1.0], "c": [1.0, 1.0, 1.0],
              "d": [1.0, 0.0, 1.0, 0.0]}
    suite = suite_stats(scores, confidence=0.8, bootstrap_resamples=0)
    t = sps.t.ppf(0.9, 3)
    means = [1.0, 1.0, 1.0, 0.5]
    se = float(np.std(means, ddof=1)) / 2.0
    half = t * se
    # The mean's t interval reaches past 1: it is cut there and flagged.
    assert (suite.mean.ci_low, suite.mean.ci_high) == pytest.approx((0.875 - half, 1.0))
    assert suite.mean.clipped
    # The pass rate's is Wilson's score interval on the effective sample size p(1-p)/SE^2,
    # with the t quantile on C-1 df (Korn & Graubard 1998), from the published formula.
    p, n = 0.875, 0.875 * 0.125 / se**2
    centre = (p + t * t / (2 * n)) / (1 + t * t / n)
    spread = t * np.sqrt(p * (1 - p) / n + t * t / (4 * n * n)) / (1 + t * t / n)
    assert (suite.pass_rate.ci_low, suite.pass_rate.ci_high) == pytest.approx(
        (centre - spread, centre + spread))
    for estimates in (suite.pass_at_k, suite.pass_hat_k):
        assert sorted(estimates) == [1, 2, 3]
        for k, est in estimates.items():
            assert est.confidence == 0.8 and est.n == 14 and est.n_clusters == 4, k
            assert est.ci_high is not None and est.ci_high <= 1.0
    assert suite.mean.n == suite.pass_rate.n == 14
    d = list(suite.scenarios.rows())[3]
    assert (d["mean_ci_low"], d["mean_ci_high"]) == pytest.approx(sps.t.interval(
        0.8, 3, loc=0.5, scale=np.std([1, 0, 1, 0], ddof=1) / 2))
    assert suite.notes[:2] == ["unequal epoch counts (3..4): each scenario counts once (mean of "
                               "scenario means); pass@k and pass^k reported for k <= 3, the "
                               "smallest count",
                               "mean: the t interval reached past the score range [0, 1] and is "
                               "cut at it"]


# One bootstrap resample is degenerate on purpose (scipy warns about its spread).
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_two_scenarios_get_an_interval_and_twenty_a_bootstrap_with_default_settings() -> None:
    two = suite_stats({"a": [1.0, 0.0, 1.0], "b": [0.0, 0.0, 1.0]}, bootstrap_resamples=1)
    assert two.mean.ci_low is not None and two.mean.df == 1
    assert two.bootstrap is None  # below 20 scenarios BCa covers too little: the t interval
    assert any(n.startswith("cluster bootstrap not computed: with 2 scenarios") for n in two.notes)
    rows = [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.5, 1.0, 1.0]]
    scores = {f"s{i}": rows[i % 4] for i in range(20)}
    means = [float(np.mean(scores[f"s{i}"])) for i in range(20)]
    default = suite_stats(scores)
    assert default.bootstrap == cluster_bootstrap_interval(
        means, n_resamples=9999, seed=0, method="BCa")
    assert suite_stats(scores, bootstrap_resamples=0).bootstrap is None
    assert suite_stats(scores, confidence=0.8, bootstrap_resamples=500).bootstrap == (
        cluster_bootstrap_interval(means, confidence=0.8, n_resamples=500))
    assert suite_stats(scores, seed=4, bootstrap_resamples=500).bootstrap == (
        cluster_bootstrap_interval(means, n_resamples=500, seed=4))


def test_suite_input_errors_are_precise() -> None:
    with pytest.raises(InsufficientDataError, match="^no scenarios to summarise$"):
        suite_stats({})
    with pytest.raises(ValueError, match="^passed must have the same scenarios as scores$"):
        suite_stats({"a": [1.0], "b": [0.0]}, {"a": [True]})
    with pytest.raises(ValueError, match="^judge_scores must have the same scenarios as "
                       "scores$"):
        suite_stats({"a": [1.0], "b": [0.0]}, judge_scores={"a": [[1.0]]},
                    bootstrap_resamples=0)
    # Pass flags are passed on per scenario.
    flagged = suite_stats({"a": [0.5, 0.5], "b": [0.0, 1.0]},
                          {"a": [True, True], "b": [False, False]}, bootstrap_resamples=0)
    assert [s["pass_rate"] for s in flagged.scenarios.rows()] == [1.0, 0.0]
    one = suite_stats({"a": [1.0, 0.0]}, bootstrap_resamples=0)
    assert one.notes[0] == "one scenario: no standard error or interval can be computed"
    assert one.mean.n == 2 and one.mean.ci_low is None


def test_mean_of_cluster_means_and_t_interval_details() -> None:
    from harness.stats.estimate import check_confidence, mean_of_cluster_means

    est = mean_of_cluster_means([0.2, 0.4, 0.9], confidence=0.9)
    assert est.n == 3 and est.df == 2 and est.confidence == 0.9
    assert est.method == "mean of scenario means; clustered SE; t interval on C-1 df"
    assert (est.ci_low, est.ci_high) == pytest.approx(sps.t.interval(
        0.9, 2, loc=0.5, scale=np.std([0.2, 0.4, 0.9], ddof=1) / np.sqrt(3)))
    assert mean_of_cluster_means([0.2, 0.4], n=7).n == 7
    alone = mean_of_cluster_means([0.3], n=4, method="m")
    assert (alone.n, alone.df, alone.stderr) == (4, None, None)
    assert alone.method == "m (no interval: needs at least 2 scenarios)"
    assert mean_of_cluster_means([0.3]).n == 1
    with pytest.raises(InsufficientDataError, match="^no scenarios to average$"):
        mean_of_cluster_means([])
    assert t_interval(0.0, 1.0, 3) == pytest.approx(sps.t.interval(0.95, 3))
    for bad in (0.0, 1.0, float("nan")):
        with pytest.raises(ValueError, match="^confidence must be strictly between 0 and 1, "):
            check_confidence(bad)
    with pytest.raises(ValueError, match="^a t interval needs at least 1 degree of freedom, "
                       "got 0$"):
        t_interval(0.5, 0.1, 0)


def _note(what: str, names: str, how: str, c: int) -> str:
    return (f"{what} for {names}: the interval is {how}, not a point, which would claim a "
            f"certainty {c} scenarios do not give")


FEW_FOR_BOOTSTRAP = ("cluster bootstrap not computed: with {c} scenarios (fewer than 20) it "
                     "covers too little (as little as 84% for 95% in "
                     "benchmarks/interval_coverage.py); use the t interval")
MEAN_METHOD = ("mean of scenario means; SE clustered by scenario (Miller 2024, C/(C-1) factor) "
               "= sd(scenario means)/sqrt(C); t interval on C-1 df")


def test_methods_and_notes_word_for_word_when_scenarios_differ() -> None:
    # Pass rates 0.2 and 0.4 twice over: pass@5 is 1 and pass^3-5 is 0 in every scenario;
    # the mean's t interval stays inside [0, 1]. The effective sample sizes p(1-p)/SE^2 (63,
    # 33 and 57) are above the trials (4x5, 4x2, 4x2), which cap them.
    scores = {"a": [1.0, 0, 0, 0, 0], "b": [1.0, 1, 0, 0, 0], "c": [0, 0, 0, 0, 1.0],
              "d": [0, 1.0, 1, 0, 0]}
    suite = suite_stats(scores)
    assert suite.mean.method == MEAN_METHOD and not suite.mean.clipped
    assert suite.notes == [
        _note("every scenario at the bottom of the range", "pass^3-5",
              "the exact bound for 4 scenarios (Clopper-Pearson, 0 of 4)", 4),
        _note("every scenario at the top of the range", "pass@5",
              "the exact bound for 4 scenarios (Clopper-Pearson, 4 of 4)", 4),
        FEW_FOR_BOOTSTRAP.format(c=4)]
    wilson = ("SE sd/sqrt(C); Wilson score interval on the effective sample size p(1-p)/SE^2 "
              "= {n} (at most {trials} trials), t quantile on C-1 df (Korn & Graubard 1998)")
    per = "mean over scenarios of per-scenario "
    assert suite.pass_rate.method == per + "pass rate; " + wilson.format(n="20.0", trials=20)
    assert suite.pass_at_k[2].method == (per + "pass@k (Chen et al. 2021); "
                                         + wilson.format(n="8.0", trials=8))
    assert suite.pass_hat_k[2].method == (per + "pass^k (tau-bench); "
                                          + wilson.format(n="8.0", trials=8))
    for est in (suite.pass_rate, suite.pass_at_k[5], suite.pass_hat_k[4]):
        assert est.df == 3 and est.n_clusters == 4


def test_two_scenarios_that_agree_inside_the_range() -> None:
    suite = suite_stats({"a": [1.0, 0, 1, 0, 1], "b": [1.0, 0, 1, 0, 1]})
    assert suite.notes == [
        _note("every scenario at the bottom of the range", "pass^4-5",
              "the exact bound for 2 scenarios (Clopper-Pearson, 0 of 2)", 2),
        _note("every scenario at the top of the range", "pass@3-5",
              "the exact bound for 2 scenarios (Clopper-Pearson, 2 of 2)", 2),
        _note("every scenario with the same value", "the mean score, pass rate, pass@1-2, "
              "pass^1-3", "the Wilson interval for 2 units", 2),
        FEW_FOR_BOOTSTRAP.format(c=2)]
    # Two scenarios are enough for every interval (one is not).
    assert suite.pass_rate.df == 1 and suite.pass_rate.ci_low is not None
    assert suite.pass_rate.ci_low == pytest.approx(
        proportion_confint(1.2, 2, alpha=0.05, method="wilson")[0], abs=1e-12)
    one = suite_stats({"a": [1.0, 0.0]})
    assert one.pass_rate.method == ("mean over scenarios of per-scenario pass rate; SE "
                                    "sd/sqrt(C); no interval: needs at least 2 scenarios")
    assert (one.pass_rate.ci_low, one.pass_rate.df) == (None, None)


def test_k_ranges_read_as_runs() -> None:
    from harness.stats.suite import _k_ranges

    assert _k_ranges([1, 2, 3, 5]) == "1-3, 5"
    assert _k_ranges([4]) == "4" and _k_ranges([2, 3]) == "2-3" and _k_ranges([]) == ""


def test_twenty_scenarios_with_one_mean_get_no_bootstrap_and_say_why() -> None:
    scores = {f"s{i}": [1.0, 0.0] for i in range(20)}
    suite = suite_stats(scores)
    assert suite.bootstrap is None
    assert "cluster bootstrap not computed: every scenario has the same mean, so every " \
           "resample has it too" in suite.notes
    assert "intraclass correlation and design power undefined: every score is the same" \
        not in suite.notes
    same = suite_stats({f"s{i}": [0.5, 0.5] for i in range(3)})
    assert same.notes[-1] == ("intraclass correlation and design power undefined: every "
                              "score is the same")


def test_suite_stats_from_columns_defaults_and_options() -> None:
    rows = [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.5, 1.0, 1.0]]
    scores = {f"s{i}": rows[i % 4] for i in range(20)}
    columns = ScoreColumns.from_mapping(scores, None)
    suite = suite_stats_from_columns(columns)
    means = [float(np.mean(v)) for v in scores.values()]
    assert suite.confidence == 0.95 and suite.mean.confidence == 0.95
    assert suite.bootstrap == cluster_bootstrap_interval(means, n_resamples=9999, seed=0,
                                                         method="BCa")
    assert suite.bootstrap.n_resamples == 9999 and suite.bootstrap.seed == 0
    with pytest.raises(InsufficientDataError, match="^no scenarios to summarise$"):
        suite_stats_from_columns(ScoreColumns.from_mapping({}, None))
    # The bootstrap method reaches the bootstrap, from both entry points.
    want = sps.bootstrap((np.array(means),), np.mean, n_resamples=300, method="percentile",
                         rng=np.random.default_rng(0)).confidence_interval
    for got in (suite_stats(scores, bootstrap_resamples=300, bootstrap_method="percentile"),
                suite_stats_from_columns(columns, bootstrap_resamples=300,
                                         bootstrap_method="percentile")):
        assert got.bootstrap is not None and "(percentile, " in got.bootstrap.method
        assert (got.bootstrap.ci_low, got.bootstrap.ci_high) == pytest.approx(
            (want.low, want.high), abs=1e-12)


def test_a_declared_score_range_reaches_the_scenario_intervals() -> None:
    columns = ScoreColumns.from_mapping({"a": [10.0, 10.0, 10.0], "b": [4.0, 6.0, 8.0]}, None,
                                        score_range=(0.0, 10.0))
    suite = suite_stats_from_columns(columns, score_range=(0.0, 10.0), bootstrap_resamples=0)
    # Every epoch of "a" at the top of [0, 10]: the exact bound for 3 units, scaled.
    assert suite.scenarios.mean_ci_low[0] == pytest.approx(10 * 0.025 ** (1 / 3))
    assert suite.scenarios.mean_ci_high[0] == 10.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # one resample: scipy's BCa is NaN
def test_cluster_bootstrap_arguments_and_messages() -> None:
    means = [0.0, 1.0, 2.0]
    label = "cluster bootstrap over scenarios (BCa, scipy.stats.bootstrap)"
    assert cluster_bootstrap_interval(means).n_resamples == 9999
    with pytest.raises(ValueError, match="^n_resamples must be at least 1, got 0$"):
        cluster_bootstrap_interval(means, n_resamples=0)
    with pytest.raises(InsufficientDataError,
                       match="^a cluster bootstrap needs at least 2 scenarios, got 1$"):
        cluster_bootstrap_interval([0.5])
    two = cluster_bootstrap_interval([0.0, 1.0], n_resamples=200, method="percentile")
    want = sps.bootstrap((np.array([0.0, 1.0]),), np.mean, n_resamples=200,
                         method="percentile", rng=np.random.default_rng(0)).confidence_interval
    assert (two.ci_low, two.ci_high) == (want.low, want.high) and two.n_clusters == 2
    assert cluster_bootstrap_interval([0.5, 0.5, 0.5]).method == (
        label + "; all scenario means equal, interval is a point")
    # One resample leaves BCa undefined (NaN bounds): the percentile interval of the same
    # draw is used, and the method says so.
    one = cluster_bootstrap_interval(means, n_resamples=1)
    assert one.method == label + "; BCa undefined for these data, percentile used"
    draw = sps.bootstrap((np.array(means),), np.mean, n_resamples=1, method="percentile",
                         rng=np.random.default_rng(0)).confidence_interval
    assert (one.ci_low, one.ci_high) == (draw.low, draw.high)


def test_mean_of_cluster_means_says_when_it_cut_or_bounded_the_interval() -> None:
    from harness.stats.bounded import rule_text
    from harness.stats.estimate import mean_of_cluster_means

    assert mean_of_cluster_means([0.2, 0.4, 0.9]).clipped is False
    cut = mean_of_cluster_means([0.0, 1.0, 1.0, 1.0], method="m", bounds=(0.0, 1.0))
    assert cut.clipped and cut.method == "m; clipped to the range [0, 1]"
    top = mean_of_cluster_means([1.0, 1.0, 1.0], method="m", bounds=(0.0, 1.0))
    assert top.method == "m; " + rule_text("top", 3, 0.95) and not top.clipped
