"""Intervals for averages of figures that live in a known range: pass rates, pass@k and pass^k
(probabilities in [0, 1]) and mean scores (in the score range).

A t interval on per-scenario figures is sound for a mean well inside its range, but collapses
near the ends: with 10 scenarios x 5 epochs from Beta(1, 9), every scenario's pass^5 is
usually 0, so the t interval is [0, 0] and covers the true 0.0005 0.4% of the time
(``benchmarks/interval_coverage.py`` has the figures for every design below). Three rules
replace it:

1. **Probabilities averaged over scenarios** (pass rate, pass@k, pass^k): the Wilson score
   interval on the effective sample size ``n* = p(1-p) / SE^2``, SE being the clustered
   standard error, with the t quantile on C-1 degrees of freedom instead of the normal one
   (the degrees-of-freedom adjustment of Korn & Graubard 1998, for proportions from cluster
   samples). ``n*`` is capped at the number of independent k-attempt trials behind the
   figure (``sum_c floor(n_c / k)``): a tiny spread between scenarios cannot claim more
   information than the attempts hold. In the designs simulated by
   ``benchmarks/interval_coverage.py`` it covers 93.2-99.8%, where the clipped t interval
   covered as little as 0.3%.
2. **No spread**: when every scenario's figure is the same, the data estimate no variance,
   and an interval of zero width would claim a certainty C scenarios do not give. At an end
   of the range the interval is the exact one-sided bound for C units: every scenario at 0
   gives ``[0, 1 - (alpha/2)^(1/C)]``, which holds for *any* figure in [0, 1] with mean
   theta, because such a figure is 0 with probability at most ``1 - theta``, so all C are 0
   with probability at most ``(1 - theta)^C`` (Clopper-Pearson with 0 of C). Inside the range
   it is the Wilson interval for C units, the widest variance ``theta(1 - theta)`` a figure
   in [0, 1] can have.
3. **A t interval that reaches past the range** (a mean score near 0 or 1 with few
   scenarios) is cut at the range, and says so (``clipped``).

Everything here works on numpy arrays (one entry per k, or per scenario) and on the range
[0, 1]; callers scale other score ranges in and out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.stats import lazy_scipy as sps

# How an interval was obtained, per entry of the arrays below.
EFFECTIVE_WILSON = "wilson"
T_INTERVAL = "t"
NO_SPREAD_BOTTOM = "bottom"
NO_SPREAD_TOP = "top"
NO_SPREAD_INSIDE = "inside"
UNDEFINED = "undefined"


def wilson_bounds(p: np.ndarray, n: np.ndarray, quantile: float | np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for proportions ``p`` with (possibly fractional) sample sizes
    ``n`` and a normal or t ``quantile``, clipped to [0, 1] against rounding."""
    q2 = np.asarray(quantile, dtype=float) ** 2
    denom = 1.0 + q2 / n
    centre = (p + q2 / (2.0 * n)) / denom
    half = np.sqrt(q2 * (p * (1.0 - p) / n + q2 / (4.0 * n * n))) / denom
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def extreme_bound(n: np.ndarray | int, confidence: float) -> np.ndarray:
    """``(alpha/2)^(1/n)``: when all ``n`` units sit at the top of [0, 1], the mean is at
    least this with confidence ``1 - alpha/2`` (one minus it bounds an all-zero mean)."""
    return np.asarray((0.5 - confidence / 2.0) ** (1.0 / np.asarray(n, dtype=float)))


def no_spread_intervals(p: np.ndarray, n: np.ndarray | int, confidence: float
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals for means ``p`` in [0, 1] of ``n`` units that all had the same figure
    (rule 2 of the module docstring). Returns ``(low, high, rule)``."""
    p = np.asarray(p, dtype=float)
    n_arr = np.broadcast_to(np.asarray(n, dtype=float), p.shape)
    z = float(sps.norm.ppf(0.5 + confidence / 2.0))
    low, high = wilson_bounds(np.clip(p, 0.0, 1.0), n_arr, z)
    edge = extreme_bound(n_arr, confidence)
    bottom, top = p <= 0.0, p >= 1.0
    low = np.where(bottom, 0.0, np.where(top, edge, low))
    high = np.where(bottom, 1.0 - edge, np.where(top, 1.0, high))
    rule = np.where(bottom, NO_SPREAD_BOTTOM, np.where(top, NO_SPREAD_TOP, NO_SPREAD_INSIDE))
    return low, high, rule


@dataclass(frozen=True)
class BoundedIntervals:
    """Intervals for several figures at once (one entry each). ``rule`` says which rule of
    the module docstring gave each one; ``effective_n`` is the Wilson sample size used
    (NaN where rule 1 did not apply); ``clipped`` marks t intervals cut at the range."""

    low: np.ndarray
    high: np.ndarray
    rule: np.ndarray
    effective_n: np.ndarray
    clipped: np.ndarray


def proportion_mean_intervals(
    mean: np.ndarray, stderr: np.ndarray, spread: np.ndarray, *, n_clusters: int,
    max_trials: np.ndarray, confidence: float,
) -> BoundedIntervals:
    """Intervals for probabilities averaged over ``n_clusters`` scenarios (rules 1 and 2).

    ``mean`` and ``stderr`` are each figure's mean of per-scenario values and its clustered
    standard error; ``spread`` whether the per-scenario values differ at all; ``max_trials``
    caps the effective sample size. Raises ``ValueError`` with fewer than 2 scenarios.
    """
    if n_clusters < 2:
        raise ValueError(f"an interval needs at least 2 scenarios, got {n_clusters}")
    p = np.clip(np.asarray(mean, dtype=float), 0.0, 1.0)
    var = np.asarray(stderr, dtype=float) ** 2
    spread = np.asarray(spread, dtype=bool) & (var > 0) & (p > 0) & (p < 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where(spread, np.minimum(p * (1 - p) / var, max_trials), np.nan)
    t = float(sps.t.ppf(0.5 + confidence / 2.0, n_clusters - 1))
    w_low, w_high = wilson_bounds(p, np.where(spread, n_eff, 1.0), t)
    f_low, f_high, f_rule = no_spread_intervals(p, n_clusters, confidence)
    return BoundedIntervals(
        low=np.where(spread, w_low, f_low),
        high=np.where(spread, w_high, f_high),
        rule=np.where(spread, EFFECTIVE_WILSON, f_rule),
        effective_n=n_eff,
        clipped=np.zeros(p.shape, dtype=bool),
    )


def mean_intervals(
    mean: np.ndarray, stderr: np.ndarray, spread: np.ndarray, n: np.ndarray, *,
    confidence: float, score_range: tuple[float, float] = (0.0, 1.0),
) -> BoundedIntervals:
    """t intervals on ``n - 1`` df for means of ``n`` units in ``score_range`` (rules 2 and
    3): cut at the range, and replaced by the no-spread interval where the units did not
    differ (``spread`` false). ``n < 2`` gives NaN bounds (no interval).
    """
    low_end, high_end = score_range
    width = high_end - low_end
    n_arr = np.asarray(n, dtype=float)
    m = np.asarray(mean, dtype=float)
    se = np.asarray(stderr, dtype=float)
    enough = n_arr >= 2
    df = np.where(enough, n_arr - 1, 1.0)
    half = sps.t.ppf(0.5 + confidence / 2.0, df) * se
    t_low, t_high = m - half, m + half
    clipped = enough & np.asarray(spread, dtype=bool) & ((t_low < low_end) | (t_high > high_end))
    t_low, t_high = np.maximum(t_low, low_end), np.minimum(t_high, high_end)
    f_low, f_high, f_rule = no_spread_intervals((m - low_end) / width, np.maximum(n_arr, 1),
                                                confidence)
    use_t = np.asarray(spread, dtype=bool)
    low = np.where(use_t, t_low, low_end + width * f_low)
    high = np.where(use_t, t_high, low_end + width * f_high)
    rule = np.where(use_t, T_INTERVAL, f_rule)
    return BoundedIntervals(
        low=np.where(enough, low, np.nan),
        high=np.where(enough, high, np.nan),
        rule=np.where(enough, rule, UNDEFINED),
        effective_n=np.full(m.shape, np.nan),
        clipped=clipped,
    )


def rule_text(rule: str, n_units: int, confidence: float) -> str:
    """How an interval from :func:`no_spread_intervals` was obtained, for a ``method``
    string; empty for the ordinary rules."""
    alpha_half = f"{(1 - confidence) / 2:g}"
    if rule == NO_SPREAD_BOTTOM:
        return (f"every one of the {n_units} scenarios at the bottom of the range: exact bound "
                f"1-({alpha_half})^(1/{n_units}) above it (Clopper-Pearson, 0 of {n_units})")
    if rule == NO_SPREAD_TOP:
        return (f"every one of the {n_units} scenarios at the top of the range: exact bound "
                f"({alpha_half})^(1/{n_units}) below it (Clopper-Pearson, {n_units} of "
                f"{n_units})")
    if rule == NO_SPREAD_INSIDE:
        return (f"no spread between the {n_units} scenarios: Wilson interval for {n_units} "
                "units (the largest variance a figure with this mean can have)")
    return ""
