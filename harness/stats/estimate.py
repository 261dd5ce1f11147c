"""An estimate with its interval, the t interval, and the standard error of a mean clustered
by scenario (Miller 2024, "Adding Error Bars to Evals").

Samples of one scenario are not independent (a hard scenario fails in every epoch), so the
unit of replication is the scenario: standard errors here are clustered by scenario and
intervals use a t distribution on C - 1 degrees of freedom, C being the number of scenarios.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.errors import HarnessError
from harness.stats import lazy_scipy as sps
from harness.stats.bounded import T_INTERVAL, mean_intervals, rule_text


class InsufficientDataError(HarnessError, ValueError):
    """The data cannot support the statistic asked for (e.g. an interval from one scenario,
    a paired comparison with no common scenario). The message says what is missing."""


class Estimate(BaseModel):
    """A number with its standard error and interval, and how they were computed.

    ``n`` counts the observations behind the value (samples, or scenarios when the value is
    an average of per-scenario figures); ``n_clusters`` is the number of scenarios. The
    interval fields are ``None`` when they cannot be computed (fewer than two scenarios).
    ``clipped`` is true when the interval reached past the figure's range and was cut at it
    (the ``method`` says so too).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    stderr: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    df: int | None
    n: int
    n_clusters: int
    method: str
    clipped: bool = False


def check_confidence(confidence: float) -> None:
    """Raise ``ValueError`` unless ``0 < confidence < 1``."""
    if not (0.0 < confidence < 1.0) or math.isnan(confidence):
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")


def t_interval(
    value: float, stderr: float, df: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Two-sided t interval ``value ± t_{df, (1+confidence)/2} * stderr``.

    Raises ``ValueError`` for ``df < 1`` or a confidence outside (0, 1).
    """
    check_confidence(confidence)
    if df < 1:
        raise ValueError(f"a t interval needs at least 1 degree of freedom, got {df}")
    half = float(sps.t.ppf(0.5 + confidence / 2.0, df)) * stderr
    return value - half, value + half


def clustered_stderr(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    weights: Sequence[float] | None = None,
) -> float:
    """Cluster-robust (sandwich) standard error of the weighted mean of ``values``.

    With ``xbar = sum(w x) / sum(w)`` the variance is
    ``C/(C-1) * sum_c (sum_{i in c} w_i (x_i - xbar))^2 / (sum w)^2``. Unit weights give
    Miller's (2024) clustered standard error of the pooled mean; weights ``1/n_c`` give the
    standard error of the mean of scenario means, which equals ``sd(scenario means)/sqrt(C)``.
    The ``C/(C-1)`` factor is the usual small-sample correction: without it the estimate is
    biased low by that factor when scenarios are few (statsmodels applies the same factor to
    an intercept-only model, whose ``(N-1)/(N-K)`` factor is 1).

    Raises ``ValueError`` on mismatched lengths, non-positive weights or fewer than two
    clusters.
    """
    x = np.asarray(values, dtype=float)
    if len(clusters) != x.size:
        raise ValueError("values and clusters must have the same length")
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != x.shape:
        raise ValueError("values and weights must have the same length")
    if np.any(w <= 0) or not np.all(np.isfinite(w)):
        raise ValueError("weights must be positive and finite")
    codes: dict[Hashable, int] = {}
    cluster_index = np.array([codes.setdefault(c, len(codes)) for c in clusters], dtype=int)
    n_clusters = len(codes)
    if n_clusters < 2:
        raise InsufficientDataError(
            f"a clustered standard error needs at least 2 scenarios, got {n_clusters}"
        )
    xbar = float(np.sum(w * x) / np.sum(w))
    # Score of each cluster: its weighted sum of residuals.
    cluster_scores = np.bincount(cluster_index, weights=w * (x - xbar), minlength=n_clusters)
    variance = (
        n_clusters / (n_clusters - 1) * float(np.sum(cluster_scores**2)) / float(np.sum(w)) ** 2
    )
    return math.sqrt(variance)


def mean_of_cluster_means(
    cluster_means: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n: int | None = None,
    method: str = "mean of scenario means; clustered SE; t interval on C-1 df",
    bounds: tuple[float, float] | None = None,
) -> Estimate:
    """Mean of per-scenario figures with its clustered standard error and t interval.

    Each scenario counts once, so the clustered standard error is ``sd(means)/sqrt(C)``
    (the sandwich formula with weights ``1/n_c``, see :func:`clustered_stderr`). ``n`` is the
    number of samples behind the figures (defaults to C). ``bounds`` is the figures' known
    range (e.g. [0, 1] for probabilities): the interval is cut at it (``clipped``), and when
    every scenario has the same figure it is the no-spread interval of
    :mod:`harness.stats.bounded` (an exact bound at an end of the range, else the Wilson
    interval for C units) instead of a zero-width one. With one scenario the interval is
    ``None``.

    Raises ``ValueError`` on no scenarios or a bad confidence.
    """
    check_confidence(confidence)
    m = np.asarray(cluster_means, dtype=float)
    if m.size == 0:
        raise InsufficientDataError("no scenarios to average")
    c = int(m.size)
    value = float(m.mean())
    if c < 2:
        return Estimate(
            value=value, stderr=None, ci_low=None, ci_high=None, confidence=confidence,
            df=None, n=n if n is not None else c, n_clusters=c,
            method=method + " (no interval: needs at least 2 scenarios)",
        )
    stderr = float(m.std(ddof=1)) / math.sqrt(c)
    clipped = False
    if bounds is None:
        low, high = t_interval(value, stderr, c - 1, confidence)
    else:
        spread = bool(np.ptp(m) > 0)
        if not spread:
            value, stderr = float(m[0]), 0.0  # exactly, not the rounding noise of a mean
        got = mean_intervals(np.array(value), np.array(stderr), np.array(spread),
                             np.array(c), confidence=confidence, score_range=bounds)
        low, high = float(got.low), float(got.high)
        clipped = bool(got.clipped)
        if clipped:
            method += f"; clipped to the range [{bounds[0]:g}, {bounds[1]:g}]"
        rule = str(got.rule)
        if rule != T_INTERVAL:
            method += "; " + rule_text(rule, c, confidence)
    return Estimate(
        value=value, stderr=stderr, ci_low=low, ci_high=high, confidence=confidence,
        df=c - 1, n=n if n is not None else c, n_clusters=c, method=method, clipped=clipped,
    )
