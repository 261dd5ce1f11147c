"""Pointwise agreement statistics between judge and human scores: pure functions on arrays.

Each raises :class:`~harness.calibration.bootstrap.UndefinedStatistic` (with a message naming
the statistic) when the data leave it undefined, never returns NaN. The correlations are
scipy's; the kappas are computed from the confusion matrix (cross-checked against scikit-learn
in the tests).
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
from scipy import stats

from harness.calibration.bootstrap import UndefinedStatistic

KappaWeights = Literal["unweighted", "linear", "quadratic"]


def _require_pairs(name: str, judge: np.ndarray, human: np.ndarray) -> None:
    if len(judge) < 2:
        raise UndefinedStatistic(f"{name}: needs at least 2 items, got {len(judge)}")
    for label, values in (("judge", judge), ("human", human)):
        if np.ptp(values) == 0:
            raise UndefinedStatistic(
                f"{name}: the {label} scores are constant (all {values[0]:g})"
            )


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1…n with ties given their average rank (as scipy.stats.rankdata's default)."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts_group = np.concatenate([[True], ordered[1:] != ordered[:-1]])
    group = np.cumsum(starts_group) - 1
    starts = np.flatnonzero(starts_group)
    ends = np.append(starts[1:], len(values))
    ranks = np.empty(len(values))
    ranks[order] = ((starts + ends - 1) / 2 + 1)[group]
    return ranks


def _correlation(x: np.ndarray, y: np.ndarray) -> float:
    dx, dy = x - x.mean(), y - y.mean()
    r = float(dx @ dy) / float(np.sqrt((dx @ dx) * (dy @ dy)))
    return max(-1.0, min(1.0, r))


# Pearson and Spearman are written with numpy rather than called from scipy: the bootstrap
# evaluates them thousands of times and scipy's per-call overhead (~250 µs) dominated the
# analysis. They equal scipy.stats.pearsonr / spearmanr to 1e-12 (checked in the tests).
def pearson(judge: np.ndarray, human: np.ndarray, name: str = "pearson") -> float:
    """Pearson's r."""
    _require_pairs(name, judge, human)
    return _correlation(np.asarray(judge, float), np.asarray(human, float))


def spearman(judge: np.ndarray, human: np.ndarray, name: str = "spearman") -> float:
    """Spearman's rho: Pearson's r of the average ranks (ties share their mean rank)."""
    _require_pairs(name, judge, human)
    return _correlation(average_ranks(np.asarray(judge)), average_ranks(np.asarray(human)))


def kendall_tau_b(judge: np.ndarray, human: np.ndarray) -> float:
    """Kendall's tau-b, which corrects for ties on either side (scipy.stats.kendalltau)."""
    _require_pairs("kendall_tau_b", judge, human)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.kendalltau(judge, human, variant="b").statistic)


def mean_bias(judge: np.ndarray, human: np.ndarray) -> float:
    """Mean of judge − human: positive when the judge scores higher than people."""
    if len(judge) == 0:
        raise UndefinedStatistic("mean_bias: no items")
    return float(np.mean(judge - human))


def mae(judge: np.ndarray, human: np.ndarray) -> float:
    """Mean absolute error |judge − human|."""
    if len(judge) == 0:
        raise UndefinedStatistic("mae: no items")
    return float(np.mean(np.abs(judge - human)))


def difference_sd(judge: np.ndarray, human: np.ndarray) -> float:
    """Sample standard deviation (ddof=1) of judge − human, as Bland–Altman uses."""
    if len(judge) < 2:
        raise UndefinedStatistic("bland_altman: needs at least 2 items")
    return float(np.std(judge - human, ddof=1))


def confusion_matrix(rows: np.ndarray, columns: np.ndarray, n_categories: int) -> np.ndarray:
    """Counts ``m[i, j]`` of items with row code ``i`` and column code ``j`` (codes 0…k−1)."""
    matrix = np.zeros((n_categories, n_categories), dtype=np.int64)
    np.add.at(matrix, (rows, columns), 1)
    return matrix


def kappa_from_confusion(matrix: np.ndarray, weights: KappaWeights = "unweighted") -> float:
    """Cohen's kappa (Cohen 1960; weighted, Cohen 1968) from a k×k confusion matrix whose
    categories are equally spaced and ordered: 1 − Σ w·observed / Σ w·expected with disagreement
    weights 0/1, |i−j| or (i−j)². Raises UndefinedStatistic when chance disagreement is zero
    (both raters always use one and the same category)."""
    counts = np.asarray(matrix, dtype=float)
    total = counts.sum()
    name = "cohen_kappa" if weights == "unweighted" else f"cohen_kappa ({weights})"
    if total == 0:
        raise UndefinedStatistic(f"{name}: no items")
    k = counts.shape[0]
    i, j = np.indices((k, k))
    if weights == "unweighted":
        disagreement = (i != j).astype(float)
    elif weights == "linear":
        disagreement = np.abs(i - j).astype(float)
    else:
        disagreement = ((i - j) ** 2).astype(float)
    expected = np.outer(counts.sum(axis=1), counts.sum(axis=0)) / total
    chance = float((disagreement * expected).sum())
    if chance <= 0:
        raise UndefinedStatistic(
            f"{name}: both raters put every item in the same category, so chance agreement is "
            "perfect and kappa is 0/0"
        )
    return 1.0 - float((disagreement * counts).sum()) / chance


def cohen_kappa(
    first: np.ndarray, second: np.ndarray, n_categories: int, weights: KappaWeights = "unweighted"
) -> float:
    """Cohen's kappa between two raters' category codes (0…k−1)."""
    return kappa_from_confusion(confusion_matrix(first, second, n_categories), weights)


def accuracy(human_pass: np.ndarray, judge_pass: np.ndarray) -> float:
    """Share of items where the judge's pass/fail matches the humans'."""
    if len(human_pass) == 0:
        raise UndefinedStatistic("accuracy: no items")
    return float(np.mean(human_pass == judge_pass))


def coverage(human_pass: np.ndarray, judge_pass: np.ndarray) -> float:
    """Share of the outputs people fail that the judge fails too (EvalGen's coverage)."""
    bad = ~human_pass
    if not bad.any():
        raise UndefinedStatistic("coverage: the humans failed no output")
    return float(np.mean(~judge_pass[bad]))


def false_failure_rate(human_pass: np.ndarray, judge_pass: np.ndarray) -> float:
    """Share of the outputs people pass that the judge fails (EvalGen's false failure rate)."""
    if not human_pass.any():
        raise UndefinedStatistic("false_failure_rate: the humans passed no output")
    return float(np.mean(~judge_pass[human_pass]))


def sensitivity(human_pass: np.ndarray, judge_pass: np.ndarray) -> float:
    """Share of the outputs people pass that the judge passes too, pass being the positive
    class (scikit-learn's ``recall_score(human, judge, pos_label=True)``). It is
    1 − :func:`false_failure_rate`."""
    if not human_pass.any():
        raise UndefinedStatistic("sensitivity: the humans passed no output")
    return float(np.mean(judge_pass[human_pass]))


def specificity(human_pass: np.ndarray, judge_pass: np.ndarray) -> float:
    """Share of the outputs people fail that the judge fails too
    (``recall_score(human, judge, pos_label=False)``): the same figure as EvalGen's
    :func:`coverage`, under the name a reader of diagnostic tests knows."""
    bad = ~human_pass
    if not bad.any():
        raise UndefinedStatistic("specificity: the humans failed no output")
    return float(np.mean(~judge_pass[bad]))


def alignment(human_pass: np.ndarray, judge_pass: np.ndarray) -> float:
    """EvalGen's alignment (Shankar et al. 2024): the harmonic mean of coverage and
    1 − false-failure rate; 0 when either is 0."""
    cov = coverage(human_pass, judge_pass)
    keep = 1.0 - false_failure_rate(human_pass, judge_pass)
    if cov + keep == 0:
        return 0.0
    return 2 * cov * keep / (cov + keep)


def pass_fail_kappa(human_pass: np.ndarray, judge_pass: np.ndarray) -> float:
    """Cohen's kappa between pass/fail verdicts."""
    return cohen_kappa(human_pass.astype(int), judge_pass.astype(int), 2)
