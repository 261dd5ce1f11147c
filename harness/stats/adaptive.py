"""Adaptive sampling planner (pure logic; the runner drives it).

After a pilot of a few epochs per scenario, further epochs go where they shrink the suite
interval most: Neyman allocation, epochs in proportion to each scenario's standard
deviation. The suite mean is the mean of scenario means, so its variance given the scenarios
is ``sum_c var_c / n_c / C^2``; adding epochs one at a time to the scenario with the largest
reduction ``var_c / (n_c (n_c + 1))`` minimises it, which is Neyman allocation in whole
epochs, counting the epochs a scenario already has.

Small-sample variances. A scenario's variance from 3 pilot epochs is very noisy: 0 for a
scenario that happened to agree with itself (it would never get another epoch) and huge for
one that happened to split (it would take everything). Each scenario's variance is therefore
shrunk towards the pooled within-scenario variance with ``prior_df`` pseudo-degrees of
freedom: ``((n-1) s^2 + prior_df * pooled) / (n - 1 + prior_df)``.

Scenarios that always passed or always failed (with the same score every time) get no more
epochs (``freeze_unanimous``); their observed variance, 0, is kept in the width. The risk:
a scenario that passes with probability 0.8 passes all of a 3-epoch pilot 51% of the time
(0.8^3); it is then frozen, its pass rate reads 1.0 and its noise is missing from the
interval, so the suite interval is too narrow and slightly biased. A longer pilot lowers
the risk (0.8^5 = 33%); ``freeze_unanimous=False`` removes it at the cost of spending epochs
on stable scenarios.

Width. ``clustered`` is the interval the reports show (t on C-1 df around
``sd(scenario means)/sqrt(C)``); it contains the between-scenario variance, which no number
of epochs removes: when that floor alone is wider than the target the planner stops with
``needs_more_scenarios``. ``fixed_scenarios`` is the interval for these scenarios only
(normal, ``sqrt(sum var_c / n_c) / C``), the one epochs fully control. The stop rule uses
the larger of the observed width and the model width (the same formula with the shrunk
variances), so a pilot whose scenario means happen to coincide does not end the run; the
allocations use projected model widths.

Counts here are samples (episodes); multiply by model calls per episode for calls.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from harness.stats import lazy_scipy as sps
from harness.stats.estimate import InsufficientDataError, check_confidence
from harness.stats.sampling import default_passed

WidthBasis = Literal["clustered", "fixed_scenarios"]
StopReason = Literal[
    "pilot", "continue", "target_reached", "budget_exhausted", "needs_more_scenarios",
    "nothing_to_sample",
]


class AdaptiveConfig(BaseModel):
    """Settings of the planner. ``max_samples`` is the total budget in samples, pilot
    included (``None``: no budget). ``max_round_size`` caps the epochs handed out per round
    (``None``: as many as the projection says are needed)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_width: float = Field(gt=0)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    pilot_epochs: int = Field(default=3, ge=2)
    max_samples: int | None = Field(default=None, ge=1)
    max_round_size: int | None = Field(default=None, ge=1)
    max_epochs_per_scenario: int | None = Field(default=None, ge=2)
    prior_df: float = Field(default=4.0, ge=0)
    freeze_unanimous: bool = True
    width_basis: WidthBasis = "clustered"


class AdaptiveDecision(BaseModel):
    """What to run next. ``allocations`` maps scenario id -> further epochs this round
    (empty when ``stop``). Widths are full interval widths (high - low): ``current_width``
    observed, ``model_width`` from the shrunk variances, ``projected_width`` the model width
    after this round, ``floor_width`` the model width with unlimited epochs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stop: bool
    reason: StopReason
    allocations: dict[str, int]
    samples_used: int
    current_width: float | None
    model_width: float | None
    projected_width: float | None
    floor_width: float | None
    frozen: list[str]
    sd_estimates: dict[str, float]
    width_basis: WidthBasis
    confidence: float
    method: str = (
        "Neyman allocation by greedy marginal variance reduction; per-scenario variances "
        "shrunk towards the pooled within-scenario variance; unanimous scenarios frozen"
    )


class FixedDesignEstimate(BaseModel):
    """Samples a fixed-epochs design would need to reach the same width, from the same
    variance estimates (no scenario frozen, every scenario the same number of epochs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_width: float
    achievable: bool
    epochs_per_scenario: int | None
    samples: int | None
    projected_width: float | None
    width_basis: WidthBasis


def interval_width(
    scores: Mapping[str, Sequence[float]],
    *,
    basis: WidthBasis = "clustered",
    confidence: float = 0.95,
) -> float:
    """Observed full width of the suite interval from per-scenario scores.

    ``clustered``: ``2 t_{C-1} sd(scenario means) / sqrt(C)``. ``fixed_scenarios``:
    ``2 z sqrt(sum_c s_c^2 / n_c) / C`` (a scenario with one epoch counts as variance 0).
    Raises :class:`InsufficientDataError` with fewer than 2 scenarios.
    """
    check_confidence(confidence)
    c = len(scores)
    if c < 2:
        raise InsufficientDataError(f"an interval width needs at least 2 scenarios, got {c}")
    if basis == "clustered":
        means = [float(np.mean(x)) for x in scores.values()]
        t = float(sps.t.ppf(0.5 + confidence / 2, c - 1))
        return 2 * t * float(np.std(means, ddof=1)) / math.sqrt(c)
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    var_sum = sum(float(np.var(x, ddof=1)) / len(x) for x in scores.values() if len(x) > 1)
    return 2 * z * math.sqrt(var_sum) / c


def _unanimous(xs: Sequence[float], flags: Sequence[bool] | None) -> bool:
    # Always passed or always failed, with the same score every time: a continuous score
    # that never reaches the pass mark but still varies is not settled.
    f = [default_passed(float(s)) for s in xs] if flags is None else list(flags)
    return (all(f) or not any(f)) and float(np.ptp(np.asarray(xs, dtype=float))) == 0.0


def _frozen(
    scores: Mapping[str, Sequence[float]], passed: Mapping[str, Sequence[bool]] | None
) -> set[str]:
    return {
        sid for sid, x in scores.items() if _unanimous(x, None if passed is None else passed[sid])
    }


def _variances(
    scores: Mapping[str, Sequence[float]], frozen: set[str], prior_df: float
) -> dict[str, float]:
    """Shrunk variances for sampled scenarios, observed variance for frozen ones."""
    ss = {sid: float(np.var(x, ddof=0)) * len(x) for sid, x in scores.items()}
    # Pool over the scenarios still sampled: the settled ones would drag the prior to 0.
    pool = [sid for sid in scores if sid not in frozen]
    df = sum(len(scores[sid]) - 1 for sid in pool)
    pooled = sum(ss[sid] for sid in pool) / df if df > 0 else 0.0
    out = {}
    for sid, x in scores.items():
        n = len(x)
        if sid in frozen:
            out[sid] = ss[sid] / (n - 1) if n > 1 else 0.0
        else:
            denom = n - 1 + prior_df
            out[sid] = (ss[sid] + prior_df * pooled) / denom if denom > 0 else pooled
    return out


def _quantile(basis: WidthBasis, confidence: float, c: int) -> float:
    if basis == "clustered":
        return float(sps.t.ppf(0.5 + confidence / 2, c - 1))
    return float(sps.norm.ppf(0.5 + confidence / 2))


def _projected_width(
    var: Mapping[str, float], n: Mapping[str, float], basis: WidthBasis, confidence: float,
    between: float,
) -> float:
    c = len(var)
    q = _quantile(basis, confidence, c)
    within = sum(var[s] / n[s] for s in var)
    if basis == "clustered":
        return 2 * q * math.sqrt((between + within / c) / c)
    return 2 * q * math.sqrt(within) / c


def _between(scores: Mapping[str, Sequence[float]], var: dict[str, float]) -> float:
    # Between-scenario variance by moments: var(scenario means) less their epoch noise.
    means = [float(np.mean(x)) for x in scores.values()]
    noise = float(np.mean([var[s] / len(x) for s, x in scores.items()]))
    return max(0.0, float(np.var(means, ddof=1)) - noise)


def plan_next_round(
    scores: Mapping[str, Sequence[float]],
    passed: Mapping[str, Sequence[bool]] | None = None,
    *,
    config: AdaptiveConfig,
) -> AdaptiveDecision:
    """Decide the next round from the samples so far (scenario id -> per-epoch scores, and
    optional pass flags; default score >= 1 - 1e-6).

    First brings every scenario up to ``pilot_epochs`` (reason ``pilot``). Then stops when the
    observed width is at most the target, the budget is spent, the target is below the
    between-scenario floor (clustered basis) or no scenario may be sampled; otherwise hands
    out epochs by Neyman allocation until the projected width reaches the target or the
    round/budget cap is hit (reason ``continue``).

    Raises :class:`InsufficientDataError` with fewer than 2 scenarios, ``ValueError`` when
    pass flags do not line up with the scores.
    """
    c = len(scores)
    if c < 2:
        raise InsufficientDataError(f"adaptive sampling needs at least 2 scenarios, got {c}")
    if passed is not None and any(
        sid not in passed or len(passed[sid]) != len(x) for sid, x in scores.items()
    ):
        raise ValueError("pass flags must line up with the scores of every scenario")
    n = {sid: len(x) for sid, x in scores.items()}
    used = sum(n.values())
    budget = None if config.max_samples is None else max(0, config.max_samples - used)
    common = {"samples_used": used, "width_basis": config.width_basis,
              "confidence": config.confidence}

    short = {sid: config.pilot_epochs - k for sid, k in n.items() if k < config.pilot_epochs}
    if short:
        alloc: dict[str, int] = {}
        left = budget
        for sid, k in short.items():
            give = k if left is None else min(k, left)
            if give > 0:
                alloc[sid] = give
                left = None if left is None else left - give
        stop = not alloc
        return AdaptiveDecision(
            stop=stop, reason="budget_exhausted" if stop else "pilot", allocations=alloc,
            current_width=None, model_width=None, projected_width=None, floor_width=None,
            frozen=[],
            sd_estimates={}, **common,
        )

    frozen = _frozen(scores, passed) if config.freeze_unanimous else set()
    if config.max_epochs_per_scenario is not None:
        capped = {sid for sid, k in n.items() if k >= config.max_epochs_per_scenario}
    else:
        capped = set()
    var = _variances(scores, frozen, config.prior_df)
    between = _between(scores, var) if config.width_basis == "clustered" else 0.0
    current = interval_width(scores, basis=config.width_basis, confidence=config.confidence)
    active = [s for s in scores if s not in frozen and s not in capped and var[s] > 0]
    # The width if every active scenario got infinitely many epochs.
    floor_n = {s: (math.inf if s in active else float(n[s])) for s in scores}
    floor = _projected_width(var, floor_n, config.width_basis, config.confidence, between)
    model = _projected_width(var, n, config.width_basis, config.confidence, between)
    info = {"current_width": current, "model_width": model, "floor_width": floor,
            "frozen": sorted(frozen),
            "sd_estimates": {s: math.sqrt(v) for s, v in var.items()}, **common}

    def done(reason: StopReason) -> AdaptiveDecision:
        return AdaptiveDecision(stop=True, reason=reason, allocations={},
                                projected_width=model, **info)

    if max(current, model) <= config.target_width:
        return done("target_reached")
    if budget == 0:
        return done("budget_exhausted")
    if not active:
        return done("nothing_to_sample")
    if config.width_basis == "clustered" and floor >= config.target_width:
        return done("needs_more_scenarios")

    cap = budget
    if config.max_round_size is not None:
        cap = config.max_round_size if cap is None else min(cap, config.max_round_size)
    n_new = dict(n)
    alloc = {}
    heap = [(-var[s] / (n[s] * (n[s] + 1)), s) for s in active]
    heapq.heapify(heap)
    projected = model
    given = 0
    # Hand out at least one epoch, then keep going while the projection is above target.
    while heap and (given == 0 or projected > config.target_width) and (
        cap is None or given < cap
    ):
        _, s = heapq.heappop(heap)
        n_new[s] += 1
        alloc[s] = alloc.get(s, 0) + 1
        given += 1
        if config.max_epochs_per_scenario is None or n_new[s] < config.max_epochs_per_scenario:
            heapq.heappush(heap, (-var[s] / (n_new[s] * (n_new[s] + 1)), s))
        projected = _projected_width(var, n_new, config.width_basis, config.confidence,
                                     between)
    return AdaptiveDecision(
        stop=False, reason="continue", allocations=alloc, projected_width=projected, **info
    )


def fixed_epochs_for_width(
    scores: Mapping[str, Sequence[float]],
    passed: Mapping[str, Sequence[bool]] | None = None,
    *,
    target_width: float,
    confidence: float = 0.95,
    basis: WidthBasis = "clustered",
    prior_df: float = 4.0,
    freeze_unanimous: bool = True,
    max_epochs: int = 100_000,
) -> FixedDesignEstimate:
    """How many samples a design giving every scenario the same number of epochs would need
    to reach ``target_width``, with the variance estimates the planner uses (unanimous
    scenarios at their observed variance, the others shrunk), so the comparison with the
    adaptive run is like for like and the saving is not inflated. Not achievable when even
    ``max_epochs`` per scenario (or the between-scenario floor) keeps the width above the
    target.

    Raises :class:`InsufficientDataError` with fewer than 2 scenarios, ``ValueError`` on a
    non-positive target.
    """
    check_confidence(confidence)
    if target_width <= 0:
        raise ValueError(f"target_width must be positive, got {target_width!r}")
    if len(scores) < 2:
        raise InsufficientDataError("a fixed design needs at least 2 scenarios")
    var = _variances(scores, _frozen(scores, passed) if freeze_unanimous else set(), prior_df)
    between = _between(scores, var) if basis == "clustered" else 0.0

    def width(k: int) -> float:
        return _projected_width(var, dict.fromkeys(scores, k), basis, confidence, between)

    if width(max_epochs) > target_width:
        return FixedDesignEstimate(
            target_width=target_width, achievable=False, epochs_per_scenario=None,
            samples=None, projected_width=None, width_basis=basis,
        )
    lo, hi = 1, max_epochs  # smallest k with width(k) <= target; width falls with k
    while lo < hi:
        mid = (lo + hi) // 2
        if width(mid) <= target_width:
            hi = mid
        else:
            lo = mid + 1
    return FixedDesignEstimate(
        target_width=target_width, achievable=True, epochs_per_scenario=lo,
        samples=lo * len(scores), projected_width=width(lo), width_basis=basis,
    )


class AdaptiveSavings(BaseModel):
    """Samples the adaptive run used against a fixed-epochs design for the same width."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    adaptive_samples: int
    fixed_samples: int | None
    saved_samples: int | None
    saved_fraction: float | None
    fixed_epochs_per_scenario: int | None
    target_width: float


def adaptive_savings(adaptive_samples: int, fixed: FixedDesignEstimate) -> AdaptiveSavings:
    """Compare the samples an adaptive run used with :func:`fixed_epochs_for_width`'s
    estimate (negative savings are reported as they are). Raises ``ValueError`` on a
    negative sample count."""
    if adaptive_samples < 0:
        raise ValueError("adaptive_samples must be non-negative")
    saved = None if fixed.samples is None else fixed.samples - adaptive_samples
    return AdaptiveSavings(
        adaptive_samples=adaptive_samples,
        fixed_samples=fixed.samples,
        saved_samples=saved,
        saved_fraction=None if saved is None or not fixed.samples else saved / fixed.samples,
        fixed_epochs_per_scenario=fixed.epochs_per_scenario,
        target_width=fixed.target_width,
    )
