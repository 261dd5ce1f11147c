"""The corrected (PPI++) suite figure clustered by scenario: the formula written out again
here, scenario by scenario, the unclustered case against harness.calibration.ppi, and the
edges (too few labels, a constant judge, labels that all agree)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from harness.calibration.ppi import ppi_mean
from harness.stats.corrected import MIN_LABELS, corrected_figure


def _suite(rng: np.random.Generator, epochs: list[int], n_labels: int, bias: float = 0.1):
    """Judge and human values, scenario by scenario, and a random labelled subset."""
    offsets = np.concatenate(([0], np.cumsum(epochs)))
    mu = rng.beta(2, 2, len(epochs))
    human_all = np.clip(np.repeat(mu, epochs) + rng.normal(0, 0.15, offsets[-1]), 0, 1)
    judge = np.clip(human_all + bias + rng.normal(0, 0.1, offsets[-1]), 0, 1)
    labelled = np.sort(rng.choice(offsets[-1], n_labels, replace=False))
    return judge, offsets, labelled, human_all[labelled]


def _by_hand(judge, offsets, labelled, y, lam, confidence, binary=False, folds=None):  # type: ignore[no-untyped-def]
    """The estimator and its interval computed scenario by scenario from the docstring's
    formula, with Python loops instead of bincount. ``lam`` is one lambda or one per label,
    ``folds`` each label's cross-fitting fold (default: one fold)."""
    c, big_n, n = len(offsets) - 1, len(judge), len(labelled)
    lams = [lam] * n if np.isscalar(lam) else list(lam)
    folds = [0] * n if folds is None else list(folds)
    scen = [int(np.searchsorted(offsets, i, side="right")) - 1 for i in labelled]
    g = [judge[offsets[s]:offsets[s + 1]].mean() for s in range(c)]
    u = [big_n / (c * (offsets[s + 1] - offsets[s])) * (yi - li * judge[i])
         for s, i, yi, li in zip(scen, labelled, y, lams, strict=True)]
    lam = sum(lams) / n
    value = lam * sum(g) / c + sum(u) / n
    k = len(set(folds))
    fold_mean = {f: np.mean([ui for ui, fi in zip(u, folds, strict=True) if fi == f])
                 for f in set(folds)}
    a = [0.0] * c
    for s, ui, fi in zip(scen, u, folds, strict=True):
        a[s] += c / n * (ui - fold_mean[fi])
    t_c = [lam * gs + as_ for gs, as_ in zip(g, a, strict=True)]
    total = np.var(t_c, ddof=1) / c
    judge_part = lam**2 * np.var(g, ddof=1) / c
    extra = np.var(a, ddof=1) / c * k / (n - k)
    if binary:
        extra += 2 * 0.5 * (sum(big_n / (c * (offsets[s + 1] - offsets[s])) for s in scen)
                            / n) ** 2 / ((n + 1) * n)
    label_part = max(total - judge_part, 0) + extra
    variance = total + extra
    m = len(set(scen))
    df = (judge_part + label_part) ** 2 / (judge_part**2 / (c - 1) + label_part**2 / (m - 1))
    df = min(max(df, 1), c - 1)
    half = stats.t.ppf(0.5 + confidence / 2, df) * math.sqrt(variance)
    return value, math.sqrt(variance), df, value - half, value + half


def test_fixed_lambda_follows_the_formula_with_unequal_epochs() -> None:
    judge, offsets, labelled, y = _suite(np.random.default_rng(3), [1, 3, 5, 2, 4] * 8, 30)
    got = corrected_figure(judge, offsets, labelled, y, lam=0.7, confidence=0.9)
    value, se, df, low, high = _by_hand(judge, offsets, labelled, y, 0.7, 0.9)
    assert got.value == pytest.approx(value)
    assert got.stderr == pytest.approx(se)
    assert got.df == pytest.approx(df)
    assert (got.ci_low, got.ci_high) == pytest.approx((low, high))
    assert got.lam == 0.7 and got.n_labelled == 30 and got.n_scenarios == 40
    assert "lambda fixed at 0.7;" in got.method and "cross-fitted" not in got.method
    # the judge's own figure is the mean of its scenario means
    means = [judge[a:b].mean() for a, b in itertools.pairwise(offsets)]
    assert got.judge_value == pytest.approx(np.mean(means))


def test_pass_rate_adds_half_a_disagreement_each_way() -> None:
    rng = np.random.default_rng(8)
    offsets = np.arange(0, 301, 3)
    human_all = (rng.random(300) < 0.6).astype(float)
    judge = human_all.copy()  # agrees with people on every sample
    labelled = np.sort(rng.choice(300, 20, replace=False))
    got = corrected_figure(judge, offsets, labelled, human_all[labelled], lam=1.0,
                           target="pass_rate")
    value, se, df, low, high = _by_hand(judge, offsets, labelled, human_all[labelled], 1.0,
                                        0.95, binary=True)
    assert got.value == pytest.approx(value) and got.stderr == pytest.approx(se)
    assert (got.ci_low, got.ci_high) == pytest.approx((max(low, 0), min(high, 1)))
    # without the half disagreements the labels' part would be 0: the interval would be the
    # judge's own, as if it never erred
    judge_only = stats.t.ppf(0.975, df) * np.std(judge.reshape(100, 3).mean(1), ddof=1) / 10
    assert got.ci_high - got.ci_low > 2 * judge_only * 1.05


def test_cross_fitted_lambda_is_tuned_on_the_other_half() -> None:
    judge, offsets, labelled, y = _suite(np.random.default_rng(4), [3] * 60, 40)
    got = corrected_figure(judge, offsets, labelled, y, seed=11)
    fold = np.empty(40, dtype=int)
    fold[np.random.default_rng(11).permutation(40)] = np.arange(40) % 2
    f = judge[labelled]
    var_f = np.var(judge, ddof=1)
    lams = np.empty(40)
    for k in (0, 1):
        train = fold != k
        cov = np.cov(y[train], f[train], bias=True)[0, 1]
        lams[~train] = np.clip(cov / ((1 + 40 / 180) * var_f), 0, 1)
    assert got.lam == pytest.approx(lams.mean())
    # each half corrected with its own lambda: theta = mean_i(lambda_i J + y_i - lambda_i f_i)
    j = judge.reshape(60, 3).mean(1).mean()
    assert got.value == pytest.approx(np.mean(lams * j + y - lams * f))
    assert corrected_figure(judge, offsets, labelled, y, seed=11) == got  # seeded
    # each half's labels are centred on their own mean, the spread scaled by n/(n-2)
    value, se, df, low, high = _by_hand(judge, offsets, labelled, y, lams, 0.95, folds=fold)
    assert got.ci_high == pytest.approx(high)
    assert got.value == pytest.approx(value) and got.stderr == pytest.approx(se)
    assert got.df == pytest.approx(df) and got.ci_low == pytest.approx(low)


def test_labels_only_is_the_clustered_mean_of_the_labels() -> None:
    rng = np.random.default_rng(5)
    judge, offsets, labelled, y = _suite(rng, [1] * 200, 25)
    got = corrected_figure(judge, offsets, labelled, y, lam=0.0)
    assert got.value == pytest.approx(y.mean())
    # one label per scenario: sd/sqrt(n) with the C/(C-1) factor of a clustered error
    assert got.stderr == pytest.approx(np.std(y, ddof=1) / 5 * math.sqrt(200 / 199))
    assert got.labels_only is not None and got.labels_only.value == pytest.approx(y.mean())
    assert got.effective_labels == pytest.approx(25)


def test_unclustered_case_agrees_with_calibration_ppi() -> None:
    """One epoch per scenario and many samples: the plain PPI++ of harness.calibration.ppi
    (labelled and judge-only items apart) and this estimator coincide as n/N -> 0."""
    rng = np.random.default_rng(6)
    big_n, n = 200_000, 60
    judge, offsets, labelled, y = _suite(rng, [1] * big_n, n)
    got = corrected_figure(judge, offsets, labelled, y, lam=0.8)
    rest = np.setdiff1d(np.arange(big_n), labelled)
    plain = ppi_mean(y, judge[labelled], judge[rest], 0.95, lam=0.8)
    assert got.value == pytest.approx(plain.estimate, abs=2e-4)
    # ppi.py's variance has no n/(n-1) factor and uses the normal quantile
    assert got.stderr == pytest.approx(plain.stderr * math.sqrt(n / (n - 1)), rel=0.02)
    tuned = corrected_figure(judge, offsets, labelled, y)
    assert abs(tuned.lam - ppi_mean(y, judge[labelled], judge[rest], 0.95).lam) < 0.3


def test_a_good_judge_is_worth_more_labels_than_it_has() -> None:
    judge, offsets, labelled, y = _suite(np.random.default_rng(7), [2] * 150, 40)
    got = corrected_figure(judge, offsets, labelled, y, half_width=0.05)
    assert got.labels_only is not None and got.effective_labels is not None
    assert got.effective_labels > 40
    assert got.ci_high - got.ci_low < got.labels_only.ci_high - got.labels_only.ci_low
    need = got.labels_needed
    assert need is not None and need.corrected is not None and need.humans_alone is not None
    assert need.corrected < need.humans_alone
    # the label counts reproduce the width they were planned for (normal quantile)
    z = stats.norm.ppf(0.975)
    floor = got.lam**2 * np.var(judge.reshape(150, 2).mean(1), ddof=1) / 150
    label_part = got.stderr**2 - floor
    assert z * math.sqrt(floor + label_part * 40 / need.corrected) <= 0.05 + 1e-12
    assert z * math.sqrt(floor + label_part * 40 / (need.corrected - 1)) > 0.05
    alone = got.labels_only.stderr**2 - floor
    assert z * math.sqrt(floor + alone * 40 / need.humans_alone) <= 0.05 + 1e-12
    assert z * math.sqrt(floor + alone * 40 / (need.humans_alone - 1)) > 0.05
    unreachable = corrected_figure(judge, offsets, labelled, y, half_width=0.001)
    assert unreachable.labels_needed is not None
    assert unreachable.labels_needed.corrected is None
    assert "more scenarios" in (unreachable.labels_needed.note or "")


def test_too_few_labels_withhold_the_figure_and_say_how_many_more() -> None:
    judge, offsets, labelled, y = _suite(np.random.default_rng(9), [2] * 30, MIN_LABELS - 1)
    got = corrected_figure(judge, offsets, labelled, y)
    assert got.value is None and got.ci_low is None
    assert got.withheld is not None and "1 more" in got.withheld
    one = corrected_figure(judge, offsets, labelled[:1], y[:1])
    assert one.withheld is not None and f"{MIN_LABELS - 1} more" in one.withheld


def test_labels_in_one_scenario_are_withheld() -> None:
    judge = np.linspace(0, 1, 40)
    offsets = np.array([0, 20, 40])
    got = corrected_figure(judge, offsets, np.arange(12), np.full(12, 0.5))
    assert got.withheld is not None and "at least 2 scenarios" in got.withheld


def test_constant_judge_and_equal_labels_give_a_figure_with_a_note() -> None:
    rng = np.random.default_rng(10)
    offsets = np.arange(0, 101, 2)
    labelled = np.sort(rng.choice(100, 20, replace=False))
    y = rng.random(20)
    flat = corrected_figure(np.full(100, 0.5), offsets, labelled, y)
    assert flat.lam == 0 and flat.value == pytest.approx(y.mean())
    assert any("same value: it carries no information" in note for note in flat.notes)
    agree = corrected_figure(rng.random(100), offsets, labelled, np.ones(20),
                             target="pass_rate")
    assert agree.value is not None and agree.ci_low is not None and agree.ci_high is not None
    assert agree.ci_low < agree.value <= agree.ci_high <= 1
    assert any("every label has the same value" in note for note in agree.notes)


@pytest.mark.parametrize("bad", [
    {"labelled": np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 8])},
    {"labelled": np.arange(10) + 95},
    {"human": np.full(9, 0.5)},
])
def test_inputs_that_do_not_line_up_are_refused(bad: dict[str, np.ndarray]) -> None:
    args = {"judge": np.linspace(0, 1, 100), "offsets": np.arange(0, 101, 5),
            "labelled": np.arange(10), "human": np.full(10, 0.5)} | bad
    with pytest.raises(ValueError):
        corrected_figure(**args)


def test_coverage_with_scenario_effects_and_twenty_labels() -> None:
    """A lenient judge with a scenario-level error, 20 random labels: the 95% interval covers
    the human figure in about 95% of draws (benchmarks/ppi_coverage.py has the full study)."""
    rng = np.random.default_rng(2026)
    runs, hits = 300, 0
    for _ in range(runs):
        mu = rng.beta(1, 1, 50)
        human_all = rng.binomial(4, np.repeat(mu, 4)) / 4
        judge = np.clip(human_all + 0.15 + np.repeat(rng.normal(0, 0.1, 50), 4)
                        + rng.normal(0, 0.1, 200), 0, 1)
        labelled = rng.choice(200, 20, replace=False)
        got = corrected_figure(judge, np.arange(0, 201, 4), labelled, human_all[labelled])
        hits += got.ci_low <= 0.5 <= got.ci_high  # type: ignore[operator]
    assert 0.91 <= hits / runs <= 0.99


def test_labels_only_matches_statsmodels_cluster_robust_mean() -> None:
    """lambda = 0 with several labels in a scenario: the cluster-robust standard error of the
    labels' mean (statsmodels, intercept-only OLS clustered by scenario), up to the two
    factors the harness applies: C/(C-1) over every scenario of the suite (statsmodels counts
    the labelled ones, m/(m-1)) and n/(n-1) for the mean the labels are centred on."""
    import statsmodels.api as sm

    rng = np.random.default_rng(12)
    judge, offsets, labelled, y = _suite(rng, [6] * 30, 45)
    got = corrected_figure(judge, offsets, labelled, y, lam=0.0)
    groups = labelled // 6
    fit = sm.OLS(y, np.ones(45)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    c, m, n = 30, len(set(groups.tolist())), 45
    assert m < c  # some scenarios have no label: the two factors differ
    expected = fit.bse[0] ** 2 * (c / (c - 1)) / (m / (m - 1)) * n / (n - 1)
    assert got.value == pytest.approx(fit.params[0])
    assert got.stderr == pytest.approx(math.sqrt(expected))
