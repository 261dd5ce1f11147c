"""Prediction-powered inference for a mean (PPI++; Angelopoulos, Duchi & Zrnic 2023, "PPI++:
Efficient Prediction-Powered Inference"; PPI: Angelopoulos et al., Science 2023).

Data: ``n`` items with a human label Y and a judge prediction f, and ``N`` items with only the
judge prediction f̃. The estimator and its variance:

    θ̂_λ = mean(Y) + λ (mean(f̃) − mean(f))
    σ̂²_λ = λ² var(f̃) / N + var(Y − λ f) / n          (sample variances, ddof = 1)

with the normal interval θ̂_λ ± z σ̂_λ. λ = 0 is the classical estimate from the human labels
alone; λ = 1 is the original PPI. The power-tuned λ minimises the variance:

    λ̂ = Cov(Y, f) / ((1 + n/N) Var(f))

with Cov over the labelled items and Var(f) over all n + N judge predictions, then clipped to
[0, 1] (both as in the authors' ``ppi_py``): the estimate stays between the classical one and
the original PPI, and a judge that disagrees with people (negative covariance) falls back to
the classical estimate instead of being used upside down. It is valid for any λ chosen this way
(asymptotically), and never worse than the classical interval in large samples. The
human-labelled items must be a random sample of all items, or neither interval means anything.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy import stats

from harness.calibration.bootstrap import UndefinedStatistic
from harness.calibration.report import PPIResult
from harness.stats.corrected import power_tuned_lambda as tuned_lambda


def power_tuned_lambda(y: np.ndarray, f_labelled: np.ndarray, f_unlabelled: np.ndarray) -> float:
    """PPI++'s variance-minimising λ for a mean, clipped to [0, 1]; 0 when the judge
    predictions are constant (the formula is :func:`harness.stats.corrected.power_tuned_lambda`,
    here with Var(f) over all n + N judge predictions and n/N the labelled share)."""
    all_f = np.concatenate([f_labelled, f_unlabelled])
    return tuned_lambda(y, f_labelled, float(np.var(all_f, ddof=1)),
                        len(y) / len(f_unlabelled))


def ppi_mean(
    y: np.ndarray,
    f_labelled: np.ndarray,
    f_unlabelled: np.ndarray,
    confidence: float,
    lam: float | None = None,
    target: Literal["mean_score", "pass_rate"] = "mean_score",
) -> PPIResult:
    """The PPI++ estimate of mean(Y) with its interval, beside the classical human-only one.

    ``lam=None`` tunes λ; a number fixes it. Raises UndefinedStatistic with fewer than 2
    labelled items or no unlabelled item.
    """
    y = np.asarray(y, dtype=float)
    f_labelled = np.asarray(f_labelled, dtype=float)
    f_unlabelled = np.asarray(f_unlabelled, dtype=float)
    n, big_n = len(y), len(f_unlabelled)
    if n < 2:
        raise UndefinedStatistic(f"ppi: needs at least 2 human-labelled items, got {n}")
    if big_n < 2:
        raise UndefinedStatistic(
            f"ppi: needs judge-only items (a judge score and human: null), got {big_n}; PPI "
            "adds the many items people did not label to the few they did"
        )
    tuned = lam is None
    chosen = power_tuned_lambda(y, f_labelled, f_unlabelled) if lam is None else float(lam)
    estimate = float(y.mean() + chosen * (f_unlabelled.mean() - f_labelled.mean()))
    variance = (
        chosen**2 * float(np.var(f_unlabelled, ddof=1)) / big_n
        + float(np.var(y - chosen * f_labelled, ddof=1)) / n
    )
    classical_var = float(np.var(y, ddof=1)) / n
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    stderr, classical_stderr = math.sqrt(variance), math.sqrt(classical_var)
    effective = n * classical_var / variance if variance > 0 and classical_var > 0 else None
    return PPIResult(
        target=target,
        n_labelled=n,
        n_unlabelled=big_n,
        lam=chosen,
        lambda_tuned=tuned,
        estimate=estimate,
        ci_low=estimate - z * stderr,
        ci_high=estimate + z * stderr,
        stderr=stderr,
        classical_estimate=float(y.mean()),
        classical_ci_low=float(y.mean()) - z * classical_stderr,
        classical_ci_high=float(y.mean()) + z * classical_stderr,
        classical_stderr=classical_stderr,
        effective_human_labels=effective,
        judge_only_mean=float(np.concatenate([f_labelled, f_unlabelled]).mean()),
    )
