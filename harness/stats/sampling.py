"""Statistics of one scenario over its epochs: mean, sd, pass rate with a Wilson interval,
pass@k, pass^k and the flaky flag."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import stats as sps

from harness.stats.estimate import check_confidence, t_interval

# A score counts as a pass when no ``passed`` flag is given and it reaches the top of the
# [0, 1] scale, allowing for float rounding (contract 2).
PASS_TOLERANCE = 1e-6


def default_passed(score: float) -> bool:
    """The pass rule used when a sample has no ``passed`` flag: ``score >= 1 - 1e-6``."""
    return score >= 1.0 - PASS_TOLERANCE


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
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


class ScenarioStats(BaseModel):
    """One scenario summarised over its epochs.

    ``sd`` is the sample standard deviation (ddof=1) and ``stderr`` is ``sd/sqrt(n)``;
    ``mean_ci_low``/``mean_ci_high`` the t interval of the mean on n-1 df (a point when every
    epoch scored the same: a few epochs cannot show noise they did not produce). All four are
    ``None`` with a single epoch. ``pass_at_k`` and ``pass_hat_k`` are keyed by k = 1 .. n.
    ``flaky`` means the scenario both passed and failed.
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
    pass_at_k: dict[int, float]
    pass_hat_k: dict[int, float]
    flaky: bool
    method: str = (
        "mean and sd (ddof=1) over epochs, t interval of the mean on n-1 df; Wilson interval "
        "for the pass rate; pass@k = 1 - C(n-c,k)/C(n,k) (Chen et al. 2021); "
        "pass^k = C(c,k)/C(n,k) (tau-bench)"
    )


def scenario_stats(
    scenario_id: str,
    scores: Sequence[float],
    passed: Sequence[bool] | None = None,
    *,
    confidence: float = 0.95,
) -> ScenarioStats:
    """Summarise one scenario from its per-epoch ``scores`` and optional ``passed`` flags
    (default: :func:`default_passed` of each score).

    Raises ``ValueError`` on no epochs, a non-finite score or flags of another length.
    """
    x = np.asarray(scores, dtype=float)
    n = int(x.size)
    if n == 0:
        raise ValueError(f"scenario {scenario_id!r} has no epochs")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"scenario {scenario_id!r} has a non-finite score")
    flags = [default_passed(float(s)) for s in x] if passed is None else [bool(p) for p in passed]
    if len(flags) != n:
        raise ValueError(
            f"scenario {scenario_id!r}: {len(flags)} passed flags for {n} scores"
        )
    c = sum(flags)
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else None
    stderr = sd / math.sqrt(n) if sd is not None else None
    mean_ci = (None, None) if stderr is None else t_interval(mean, stderr, n - 1, confidence)
    low, high = wilson_interval(c, n, confidence)
    return ScenarioStats(
        scenario_id=scenario_id,
        n_epochs=n,
        mean=mean,
        sd=sd,
        stderr=stderr,
        mean_ci_low=mean_ci[0],
        mean_ci_high=mean_ci[1],
        n_passed=c,
        pass_rate=c / n,
        pass_rate_ci_low=low,
        pass_rate_ci_high=high,
        confidence=confidence,
        pass_at_k={k: pass_at_k(n, c, k) for k in range(1, n + 1)},
        pass_hat_k={k: pass_hat_k(n, c, k) for k in range(1, n + 1)},
        flaky=0 < c < n,
    )
