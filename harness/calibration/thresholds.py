"""Threshold calibration for a pass/fail gate built on a judge score: for each candidate
threshold t (every distinct judge score; "score ≥ t passes"), how the gate agrees with the
human pass/fail verdicts, and the threshold that agrees best.

Criterion: the highest Cohen's kappa (default) or the highest EvalGen alignment; ties go to the
higher accuracy, then to the higher (stricter) threshold, so a tie never lets more outputs
through. Kappa corrects for the pass rate, so it does not reward a gate that passes everything
when most outputs are good.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from harness.calibration import agreement
from harness.calibration.bootstrap import UndefinedStatistic
from harness.calibration.report import ThresholdPoint

Criterion = Literal["kappa", "alignment"]


def _optional(fn: object, human_pass: np.ndarray, judge_pass: np.ndarray) -> float | None:
    try:
        return fn(human_pass, judge_pass)  # type: ignore[operator, no-any-return]
    except UndefinedStatistic:
        return None


def threshold_point(
    threshold: float, judge_scores: np.ndarray, human_pass: np.ndarray
) -> ThresholdPoint:
    """How the gate "judge score ≥ threshold passes" agrees with ``human_pass``."""
    judge_pass = judge_scores >= threshold
    return ThresholdPoint(
        threshold=float(threshold),
        judge_pass_rate=float(np.mean(judge_pass)),
        accuracy=agreement.accuracy(human_pass, judge_pass),
        cohen_kappa=_optional(agreement.pass_fail_kappa, human_pass, judge_pass),
        coverage=_optional(agreement.coverage, human_pass, judge_pass),
        false_failure_rate=_optional(agreement.false_failure_rate, human_pass, judge_pass),
        alignment=_optional(agreement.alignment, human_pass, judge_pass),
    )


def threshold_curve(judge_scores: np.ndarray, human_pass: np.ndarray) -> list[ThresholdPoint]:
    """The trade-off curve over every distinct judge score, lowest threshold first. Raises
    UndefinedStatistic when there are no items."""
    if len(judge_scores) == 0:
        raise UndefinedStatistic("thresholds: no items")
    return [threshold_point(t, judge_scores, human_pass) for t in np.unique(judge_scores)]


def best_point(curve: list[ThresholdPoint], criterion: Criterion) -> ThresholdPoint:
    """The curve point that best matches people under ``criterion`` (ties: higher accuracy,
    then higher threshold). Raises UndefinedStatistic when no point has the criterion defined
    (e.g. people passed every output, so coverage is undefined)."""
    # rounded so that floating-point noise (kappa 1e-17 vs 0) never decides a tie
    scored = [
        (round(value, 12), round(point.accuracy, 12), point.threshold, point)
        for point in curve
        if (value := point.cohen_kappa if criterion == "kappa" else point.alignment) is not None
        and math.isfinite(value)
    ]
    if not scored:
        raise UndefinedStatistic(
            f"best threshold: {criterion} is undefined at every threshold (do the human "
            "verdicts include both passes and failures?)"
        )
    return max(scored, key=lambda row: row[:3])[3]


def best_threshold(judge_scores: np.ndarray, human_pass: np.ndarray, criterion: Criterion) -> float:
    """The best threshold on these items (see :func:`best_point`), computed for all thresholds
    at once with numpy: the bootstrap calls it once per resample."""
    thresholds = np.unique(judge_scores)
    if len(thresholds) == 0:
        raise UndefinedStatistic("best threshold: no items")
    judge_pass = judge_scores[None, :] >= thresholds[:, None]  # thresholds × items
    good, n = human_pass.astype(float), float(len(human_pass))
    both_pass = (judge_pass & human_pass).sum(axis=1)
    both_fail = (~judge_pass & ~human_pass).sum(axis=1)
    accuracy = (both_pass + both_fail) / n
    n_good, n_bad = good.sum(), n - good.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        if criterion == "kappa":
            judge_rate = judge_pass.mean(axis=1)
            chance = judge_rate * (n_good / n) + (1 - judge_rate) * (n_bad / n)
            value = np.where(chance < 1, (accuracy - chance) / (1 - chance), np.nan)
        else:
            cov = both_fail / n_bad if n_bad else np.full(len(thresholds), np.nan)
            keep = both_pass / n_good if n_good else np.full(len(thresholds), np.nan)
            value = np.where(cov + keep > 0, 2 * cov * keep / (cov + keep), 0.0)
            value = np.where(np.isnan(cov) | np.isnan(keep), np.nan, value)
    defined = np.isfinite(value)
    if not defined.any():
        raise UndefinedStatistic(
            f"best threshold: {criterion} is undefined at every threshold (do the human "
            "verdicts include both passes and failures?)"
        )
    # highest criterion, then accuracy, then threshold: lexsort's last key is the primary one
    rows = np.flatnonzero(defined)
    keys = (thresholds[rows], np.round(accuracy[rows], 12), np.round(value[rows], 12))
    best = rows[np.lexsort(keys)[-1]]
    return float(thresholds[best])
