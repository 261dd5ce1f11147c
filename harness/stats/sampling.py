"""Statistics of each scenario over its epochs: mean, sd, the mean's interval, pass rate with
a Wilson interval, pass@k, pass^k and the flaky flag. One scenario at a time
(:func:`scenario_stats`), or every scenario at once as columns (:func:`scenario_columns`),
which is how a suite is summarised."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from harness.stats import lazy_scipy as sps
from harness.stats.bounded import mean_intervals, wilson_bounds
from harness.stats.columns import UNIT_RANGE, ScoreColumns, default_passed
from harness.stats.estimate import check_confidence

__all__ = ["ScenarioColumns", "ScenarioStats", "default_passed", "pass_at_k",
           "pass_at_k_table", "pass_hat_k", "pass_hat_k_table", "scenario_columns",
           "scenario_stats", "wilson_interval"]


def _check_counts(n: int, c: int, k: int) -> None:
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}, got {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chen et al. (2021) unbiased estimate of P(at least one of k attempts passes):
    ``1 - C(n-c, k) / C(n, k)`` from ``c`` passes in ``n`` attempts.

    Raises ``ValueError`` unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check_counts(n, c, k)
    # math.comb is exact on integers; Python's int / int division rounds correctly even when
    # the binomials are far beyond float range.
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """tau-bench's pass^k, the unbiased estimate of P(all k attempts pass):
    ``C(c, k) / C(n, k)``.

    Raises ``ValueError`` unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Preferred to the normal (Wald) interval because it stays inside [0, 1] and keeps its
    coverage near 0 and 1 and for small n, which is where per-scenario pass rates live.
    Raises ``ValueError`` for ``n < 1``, successes outside [0, n] or a bad confidence.
    """
    check_confidence(confidence)
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need n >= 1 and 0 <= successes <= n, got {successes}/{n}")
    z = float(sps.norm.ppf(0.5 + confidence / 2.0))
    low, high = wilson_bounds(np.array(successes / n), np.array(float(n)), z)
    return float(low), float(high)


def pass_hat_k_table(n: np.ndarray, c: np.ndarray, k_max: int) -> np.ndarray:
    """pass^k for k = 1 .. ``k_max`` of scenarios with ``n`` attempts and ``c`` passes (one
    row each): ``C(c, k) / C(n, k) = prod_{i<k} (c - i) / (n - i)`` as a running product, so
    every k costs one multiplication and nothing overflows. ``k_max`` must not exceed any n.
    """
    i = np.arange(k_max, dtype=float)
    n_ = np.asarray(n, dtype=float)[:, None]
    c_ = np.asarray(c, dtype=float)[:, None]
    # Once i reaches c a factor is 0 and the product stays 0 (clipped: never -0.0).
    return np.cumprod(np.clip(c_ - i, 0.0, None) / (n_ - i), axis=1)


def pass_at_k_table(n: np.ndarray, c: np.ndarray, k_max: int) -> np.ndarray:
    """pass@k for k = 1 .. ``k_max`` (one row per scenario): ``1 - C(n - c, k) / C(n, k)``,
    the running product of :func:`pass_hat_k_table` over the failures."""
    n_ = np.asarray(n)
    return 1.0 - pass_hat_k_table(n_, n_ - np.asarray(c), k_max)


SCENARIO_METHOD = (
    "mean and sd (ddof=1) over epochs; t interval of the mean on n-1 df, cut at the score "
    "range, and when every epoch scored the same the no-spread interval for n epochs (exact "
    "bound at an end of the range, else Wilson); Wilson interval for the pass rate; "
    "pass@k = 1 - C(n-c,k)/C(n,k) (Chen et al. 2021); pass^k = C(c,k)/C(n,k) (tau-bench)"
)


class ScenarioStats(BaseModel):
    """One scenario summarised over its epochs.

    ``sd`` is the sample standard deviation (ddof=1) and ``stderr`` is ``sd/sqrt(n)``;
    ``mean_ci_low``/``mean_ci_high`` the t interval of the mean on n-1 df, cut at the score
    range; when every epoch scored the same it is the no-spread interval for n epochs (see
    :mod:`harness.stats.bounded`), never a point. All four are ``None`` with a single
    epoch. ``pass_at_k`` and ``pass_hat_k`` are keyed by k = 1 .. n. ``flaky`` means the
    scenario both passed and failed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_id: str
    n_epochs: int
    mean: float
    sd: float | None
    stderr: float | None
    mean_ci_low: float | None = None
    mean_ci_high: float | None = None
    n_passed: int
    pass_rate: float
    pass_rate_ci_low: float
    pass_rate_ci_high: float
    confidence: float
    # k = 1 is always there (a scenario has at least one epoch); readers rely on it.
    pass_at_k: Annotated[dict[int, float], Field(min_length=1)]
    pass_hat_k: Annotated[dict[int, float], Field(min_length=1)]
    flaky: bool
    method: str = SCENARIO_METHOD


def _none_if_nan(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(v) else v for v in values.tolist()]


@dataclass(frozen=True)
class ScenarioColumns:
    """Every scenario's figures (one entry per scenario, in the order of ``ids``); the
    per-k figures (one per sample) are computed by :meth:`rows` when asked for. NaN marks a
    figure that cannot be computed (one epoch: no sd, stderr or interval)."""

    ids: list[str]
    n_epochs: np.ndarray
    n_passed: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    stderr: np.ndarray
    mean_ci_low: np.ndarray
    mean_ci_high: np.ndarray
    pass_rate: np.ndarray
    pass_rate_ci_low: np.ndarray
    pass_rate_ci_high: np.ndarray
    confidence: float

    @property
    def flaky(self) -> np.ndarray:
        """Scenarios that both passed and failed."""
        return (self.n_passed > 0) & (self.n_passed < self.n_epochs)

    def rows(self) -> Iterator[dict[str, Any]]:
        """One JSON-ready dict per scenario, in order, with the fields of
        :class:`ScenarioStats` (pass@k and pass^k keyed by k as a string, k = 1 .. n; NaN as
        ``None``). Scenarios with the same epoch count get their per-k figures in one
        vectorised step."""
        # Scenarios grouped by epoch count: each group's per-k tables are made once, when its
        # first scenario comes (all of them together hold one value per sample and k-type).
        order = np.argsort(self.n_epochs, kind="stable")
        counts = self.n_epochs[order]
        first = np.flatnonzero(np.r_[True, counts[1:] != counts[:-1]])
        sizes = np.diff(np.r_[first, counts.size])
        row_in_group = np.empty(counts.size, dtype=np.int64)
        row_in_group[order] = np.arange(counts.size) - np.repeat(first, sizes)
        group_of = {int(counts[f]): (int(f), int(f + z)) for f, z in zip(first, sizes,
                                                                           strict=True)}
        tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        keys = [str(k) for k in range(1, int(self.n_epochs.max()) + 1)]
        columns = {name: _none_if_nan(getattr(self, name)) for name in (
            "mean", "sd", "stderr", "mean_ci_low", "mean_ci_high", "pass_rate",
            "pass_rate_ci_low", "pass_rate_ci_high")}
        n_list, c_list = self.n_epochs.tolist(), self.n_passed.tolist()
        for i, sid in enumerate(self.ids):
            n = n_list[i]
            if n not in tables:
                a, b = group_of[n]
                c = self.n_passed[order[a:b]]
                tables[n] = (pass_at_k_table(np.full(c.shape, n), c, n),
                             pass_hat_k_table(np.full(c.shape, n), c, n))
            at, hat = tables[n]
            r = int(row_in_group[i])
            yield {
                "scenario_id": sid,
                "n_epochs": n,
                "mean": columns["mean"][i],
                "sd": columns["sd"][i],
                "stderr": columns["stderr"][i],
                "mean_ci_low": columns["mean_ci_low"][i],
                "mean_ci_high": columns["mean_ci_high"][i],
                "n_passed": c_list[i],
                "pass_rate": columns["pass_rate"][i],
                "pass_rate_ci_low": columns["pass_rate_ci_low"][i],
                "pass_rate_ci_high": columns["pass_rate_ci_high"][i],
                "confidence": self.confidence,
                "pass_at_k": dict(zip(keys[:n], at[r].tolist(), strict=True)),
                "pass_hat_k": dict(zip(keys[:n], hat[r].tolist(), strict=True)),
                "flaky": 0 < c_list[i] < n,
                "method": SCENARIO_METHOD,
            }


def segment_means(columns: ScoreColumns) -> tuple[np.ndarray, np.ndarray]:
    """Each scenario's mean score and whether its scores differ at all. A scenario whose
    scores are all equal gets exactly that score as its mean, not the rounding noise of a
    sum, so identical data give identical means (and a spread of exactly zero)."""
    starts = columns.offsets[:-1]
    n = np.diff(columns.offsets)
    x = columns.scores
    spread = np.maximum.reduceat(x, starts) > np.minimum.reduceat(x, starts)
    mean = np.where(spread, np.add.reduceat(x, starts) / n, x[starts])
    return mean, spread


def scenario_columns(
    columns: ScoreColumns, *, confidence: float = 0.95,
    score_range: tuple[float, float] = UNIT_RANGE,
) -> ScenarioColumns:
    """Every scenario's figures from the sample columns (see :class:`ScenarioColumns`).

    Raises ``ValueError`` on a confidence outside (0, 1).
    """
    check_confidence(confidence)
    starts = columns.offsets[:-1]
    n = np.diff(columns.offsets)
    mean, spread = segment_means(columns)
    resid = columns.scores - np.repeat(mean, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.where(n > 1, np.sqrt(np.add.reduceat(resid * resid, starts) / (n - 1)), np.nan)
    sd = np.where(spread, sd, np.where(n > 1, 0.0, np.nan))
    stderr = sd / np.sqrt(n)
    interval = mean_intervals(mean, np.nan_to_num(stderr), spread, n, confidence=confidence,
                              score_range=score_range)
    c = np.add.reduceat(columns.passed.astype(np.int64), starts)
    z = float(sps.norm.ppf(0.5 + confidence / 2.0))
    pr_low, pr_high = wilson_bounds(c / n, n.astype(float), z)
    return ScenarioColumns(
        ids=columns.ids, n_epochs=n, n_passed=c, mean=mean, sd=sd, stderr=stderr,
        mean_ci_low=interval.low, mean_ci_high=interval.high, pass_rate=c / n,
        pass_rate_ci_low=pr_low, pass_rate_ci_high=pr_high, confidence=confidence,
    )


def scenario_stats(
    scenario_id: str,
    scores: Sequence[float],
    passed: Sequence[bool] | None = None,
    *,
    confidence: float = 0.95,
    score_range: tuple[float, float] = UNIT_RANGE,
) -> ScenarioStats:
    """Summarise one scenario from its per-epoch ``scores`` and optional ``passed`` flags
    (default: a score passes at the top of ``score_range``, ``>= 1 - 1e-6`` on [0, 1]).

    Raises ``ValueError`` on no epochs, a non-finite score, flags of another length or a
    bad confidence.
    """
    columns = ScoreColumns.from_mapping(
        {scenario_id: scores}, None if passed is None else {scenario_id: passed},
        score_range=score_range)
    row = next(scenario_columns(columns, confidence=confidence, score_range=score_range).rows())
    return ScenarioStats.model_validate(row)
