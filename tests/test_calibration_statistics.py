"""Agreement statistics against independent implementations (scipy, scikit-learn,
krippendorff, statsmodels) and known answers."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from harness.calibration import agreement
from harness.calibration.bootstrap import ItemBootstrap, UndefinedStatistic
from harness.calibration.reliability import (
    FleissKappa,
    KrippendorffAlpha,
    category_table,
    fleiss_kappa,
    krippendorff_alpha,
)
from harness.calibration.thresholds import best_point, best_threshold, threshold_curve

RNG = np.random.default_rng(20240601)


def _ordinal_pair(n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    human = RNG.integers(1, 6, n).astype(float)
    judge = np.clip(np.round(human + RNG.normal(0, noise, n)), 1, 5)
    return judge, human


@pytest.mark.parametrize("noise", [0.3, 1.0, 3.0])
def test_correlations_equal_scipy(noise: float) -> None:
    judge, human = _ordinal_pair(200, noise)
    assert agreement.pearson(judge, human) == pytest.approx(stats.pearsonr(judge, human)[0],
                                                            abs=1e-12)
    assert agreement.spearman(judge, human) == pytest.approx(
        stats.spearmanr(judge, human)[0], abs=1e-12)
    assert agreement.kendall_tau_b(judge, human) == pytest.approx(
        stats.kendalltau(judge, human, variant="b")[0], abs=1e-12)


def test_average_ranks_equal_scipy_rankdata_with_ties() -> None:
    values = RNG.integers(0, 7, 300).astype(float)
    np.testing.assert_allclose(agreement.average_ranks(values), stats.rankdata(values))


@pytest.mark.parametrize("weights", ["unweighted", "linear", "quadratic"])
def test_cohen_kappa_equals_sklearn(weights: str) -> None:
    judge, human = _ordinal_pair(150, 1.0)
    codes_j, codes_h = judge.astype(int) - 1, human.astype(int) - 1
    expected = cohen_kappa_score(codes_h, codes_j, labels=list(range(5)),
                                 weights=None if weights == "unweighted" else weights)
    assert agreement.cohen_kappa(codes_h, codes_j, 5, weights) == pytest.approx(expected)  # type: ignore[arg-type]


def test_perfect_agreement_gives_one_everywhere() -> None:
    human = np.array([1, 2, 3, 4, 5, 3, 2.0])
    codes = human.astype(int) - 1
    assert agreement.spearman(human, human) == pytest.approx(1)
    assert agreement.kendall_tau_b(human, human) == pytest.approx(1)
    for w in ("unweighted", "linear", "quadratic"):
        assert agreement.cohen_kappa(codes, codes, 5, w) == pytest.approx(1)  # type: ignore[arg-type]
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha(np.column_stack([human, human]), level) == pytest.approx(1)  # type: ignore[arg-type]
    assert agreement.mae(human, human) == 0
    assert agreement.mean_bias(human, human) == 0


def test_constant_judge_makes_correlation_undefined_naming_it() -> None:
    human = np.array([1, 2, 3, 4, 5.0])
    judge = np.full(5, 3.0)
    with pytest.raises(UndefinedStatistic, match="spearman: the judge scores are constant"):
        agreement.spearman(judge, human)
    with pytest.raises(UndefinedStatistic, match="pearson"):
        agreement.pearson(judge, human)
    # bias and MAE still exist: 3 − mean(1..5) = 0, |3 − x| averages 1.2
    assert agreement.mean_bias(judge, human) == 0
    assert agreement.mae(judge, human) == pytest.approx(1.2)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_alpha_equals_package_with_missing_values(level: str) -> None:
    data = RNG.integers(1, 6, (60, 4)).astype(float)
    data[:, 1] = np.clip(data[:, 0] + RNG.integers(-1, 2, 60), 1, 5)
    data[RNG.random((60, 4)) < 0.2] = np.nan
    expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-12)  # type: ignore[arg-type]


def test_krippendorff_alpha_interval_on_continuous_means_equals_package() -> None:
    data = RNG.normal(3, 1, (80, 3))
    data[:, 2] = data[:, 0] + RNG.normal(0, 0.3, 80)
    expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement="interval")
    assert krippendorff_alpha(data, "interval") == pytest.approx(expected, abs=1e-12)


def test_krippendorff_alpha_weights_equal_duplicated_units() -> None:
    """A bootstrap resample as unit weights gives exactly alpha of the duplicated data."""
    data = RNG.integers(1, 6, (30, 3)).astype(float)
    idx = RNG.integers(0, 30, 30)
    for level in ("nominal", "ordinal", "interval"):
        weighted = KrippendorffAlpha(data, level)(np.bincount(idx, minlength=30))  # type: ignore[arg-type]
        direct = krippendorff.alpha(reliability_data=data[idx].T, level_of_measurement=level)
        assert weighted == pytest.approx(direct, abs=1e-12)


def test_krippendorff_alpha_undefined_cases() -> None:
    with pytest.raises(UndefinedStatistic, match="same value"):
        krippendorff_alpha(np.full((5, 2), 3.0), "interval")
    with pytest.raises(UndefinedStatistic, match="two or more ratings"):
        krippendorff_alpha(np.array([[1.0, np.nan], [np.nan, 2.0]]), "nominal")


def test_fleiss_kappa_equals_statsmodels() -> None:
    codes = RNG.integers(0, 5, (100, 3))
    codes[:, 1] = np.where(RNG.random(100) < 0.6, codes[:, 0], codes[:, 1])
    table = category_table(codes, 5)
    assert fleiss_kappa(table) == pytest.approx(sm_fleiss_kappa(table, method="fleiss"), abs=1e-12)
    idx = RNG.integers(0, 100, 100)
    weighted = FleissKappa(table)(np.bincount(idx, minlength=100))
    assert weighted == pytest.approx(sm_fleiss_kappa(table[idx], method="fleiss"), abs=1e-12)


def test_fleiss_kappa_refuses_unequal_rater_counts() -> None:
    table = np.array([[2, 1], [1, 1]])
    with pytest.raises(UndefinedStatistic, match="same number of raters"):
        fleiss_kappa(table)


def test_pass_fail_statistics_by_hand() -> None:
    # 4 good outputs (human pass), 6 bad; the judge fails 1 good and 4 bad
    human_pass = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
    judge_pass = np.array([1, 1, 1, 0, 0, 0, 0, 0, 1, 1], dtype=bool)
    assert agreement.coverage(human_pass, judge_pass) == pytest.approx(4 / 6)
    assert agreement.false_failure_rate(human_pass, judge_pass) == pytest.approx(1 / 4)
    # EvalGen alignment: harmonic mean of coverage and 1 − FFR
    cov, keep = 4 / 6, 3 / 4
    expected = 2 * cov * keep / (cov + keep)
    assert agreement.alignment(human_pass, judge_pass) == pytest.approx(expected)
    assert agreement.accuracy(human_pass, judge_pass) == pytest.approx(0.7)
    assert agreement.pass_fail_kappa(human_pass, judge_pass) == pytest.approx(
        cohen_kappa_score(human_pass, judge_pass))
    with pytest.raises(UndefinedStatistic, match="coverage: the humans failed no output"):
        agreement.coverage(np.ones(3, dtype=bool), np.ones(3, dtype=bool))


def test_threshold_curve_and_best_threshold() -> None:
    scores = np.array([1, 2, 3, 4, 5, 6, 7, 8.0])
    human_pass = scores >= 5  # the judge separates perfectly at 5
    curve = threshold_curve(scores, human_pass)
    assert [p.threshold for p in curve] == list(scores)
    best = best_point(curve, "kappa")
    assert best.threshold == 5 and best.cohen_kappa == pytest.approx(1) and best.accuracy == 1
    assert best_point(curve, "alignment").threshold == 5
    assert curve[0].judge_pass_rate == 1 and curve[0].coverage == 0
    for criterion in ("kappa", "alignment"):
        assert best_threshold(scores, human_pass, criterion) == 5  # type: ignore[arg-type]


def test_vectorised_best_threshold_matches_the_curve_on_random_data() -> None:
    for _ in range(300):
        n = int(RNG.integers(2, 30))
        scores = RNG.integers(1, 8, n).astype(float)
        human_pass = RNG.random(n) < RNG.random()
        for criterion in ("kappa", "alignment"):
            try:
                fast: float | str = best_threshold(scores, human_pass, criterion)  # type: ignore[arg-type]
            except UndefinedStatistic:
                fast = "undefined"
            try:
                slow: float | str = best_point(threshold_curve(scores, human_pass),
                                               criterion).threshold  # type: ignore[arg-type]
            except UndefinedStatistic:
                slow = "undefined"
            assert fast == slow


def test_bootstrap_interval_equals_scipy_percentile_bootstrap() -> None:
    judge, human = _ordinal_pair(60, 1.0)
    boot = ItemBootstrap(60, 999, 0.9, seed=7)
    ours = boot.estimate(lambda idx: agreement.mae(judge[idx], human[idx]))
    ref = stats.bootstrap((judge, human), lambda j, h: np.mean(np.abs(j - h)), paired=True,
                          n_resamples=999, confidence_level=0.9, method="percentile",
                          rng=np.random.default_rng(7), vectorized=False)
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high)


def test_bootstrap_is_reproducible_and_counts_undefined_resamples() -> None:
    judge = np.array([3.0] * 9 + [4.0])  # most resamples miss the one 4: constant judge
    human = np.arange(10.0)
    first = ItemBootstrap(10, 300, 0.95, seed=1).estimate(
        lambda idx: agreement.spearman(judge[idx], human[idx]))
    again = ItemBootstrap(10, 300, 0.95, seed=1).estimate(
        lambda idx: agreement.spearman(judge[idx], human[idx]))
    assert first == again
    assert first.value is not None and 0 < first.resamples_undefined < 300
    other = ItemBootstrap(10, 300, 0.95, seed=2).estimate(
        lambda idx: agreement.spearman(judge[idx], human[idx]))
    assert other.ci_low != first.ci_low or other.resamples_undefined != first.resamples_undefined


def test_paired_difference_uses_the_same_resamples() -> None:
    judge, human = _ordinal_pair(80, 1.0)
    boot = ItemBootstrap(80, 200, 0.95, seed=3)

    def a(idx: np.ndarray) -> float:
        return agreement.spearman(judge[idx], human[idx])

    def b(idx: np.ndarray) -> float:
        return agreement.spearman(judge[idx], human[idx]) - 0.1

    diff = boot.difference(a, b)
    # paired: every resample differs by exactly 0.1, so the interval collapses
    assert diff.value == pytest.approx(0.1)
    assert diff.ci_low == pytest.approx(0.1) and diff.ci_high == pytest.approx(0.1)
