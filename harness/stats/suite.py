"""Suite statistics: the mean of scenario means with a clustered interval and a cluster
bootstrap, pass@k and pass^k averaged over scenarios, and the variance components.

Estimand and unequal epoch counts: the suite figure is the mean of per-scenario means, each
scenario counting once however many epochs it got (a scenario that happened to get more
epochs is not more important). Its clustered standard error is the sandwich formula with
weights 1/n_c, which is exactly ``sd(scenario means) / sqrt(C)`` for any epoch counts; with
equal counts the mean of scenario means is also the pooled mean of all samples, and the
formula is Miller's clustered standard error. Under the model where scenarios are drawn
from a population, the scenario means are independent with a common expectation, so this
standard error is unbiased even when some scenarios are noisier (fewer epochs) than others.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import stats as sps

from harness.stats.estimate import (
    Estimate,
    InsufficientDataError,
    check_confidence,
    mean_of_cluster_means,
)
from harness.stats.sampling import ScenarioStats, scenario_stats
from harness.stats.variance import (
    NestedVarianceComponents,
    VarianceComponents,
    nested_variance_components,
    variance_components,
)

BootstrapMethod = Literal["BCa", "percentile", "basic"]


class BootstrapInterval(BaseModel):
    """A cluster bootstrap interval for the mean of scenario means."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ci_low: float
    ci_high: float
    confidence: float
    method: str
    n_resamples: int
    seed: int
    n_clusters: int


def cluster_bootstrap_interval(
    scenario_means: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    method: BootstrapMethod = "BCa",
) -> BootstrapInterval:
    """Bootstrap interval for the mean of scenario means, resampling whole scenarios.

    Resampling scenarios (with all their epochs) is the cluster bootstrap; because the
    statistic is the mean of scenario means, it is the same as resampling the scenario means,
    which is what is passed to ``scipy.stats.bootstrap``. Seeded: the same inputs and seed
    give the same interval. When every scenario has the same mean the interval is that
    single value. If BCa cannot be computed (a degenerate jackknife) the percentile interval
    is used and the method says so.

    Raises :class:`InsufficientDataError` with fewer than 2 scenarios, ``ValueError`` on a
    bad confidence or ``n_resamples < 1``.
    """
    check_confidence(confidence)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    m = np.asarray(scenario_means, dtype=float)
    c = int(m.size)
    if c < 2:
        raise InsufficientDataError(f"a cluster bootstrap needs at least 2 scenarios, got {c}")
    label = f"cluster bootstrap over scenarios ({method}, scipy.stats.bootstrap)"
    if np.ptp(m) == 0.0:
        value = float(m[0])
        return BootstrapInterval(
            ci_low=value, ci_high=value, confidence=confidence,
            method=label + "; all scenario means equal, interval is a point",
            n_resamples=n_resamples, seed=seed, n_clusters=c,
        )

    def run(how: BootstrapMethod) -> tuple[float, float]:
        with warnings.catch_warnings():
            # A degenerate BCa shows up as NaN bounds, handled below.
            warnings.simplefilter("ignore", sps.DegenerateDataWarning)
            res = sps.bootstrap(
                (m,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
                method=how, rng=np.random.default_rng(seed), vectorized=True,
            )
        return float(res.confidence_interval.low), float(res.confidence_interval.high)

    low, high = run(method)
    if not (math.isfinite(low) and math.isfinite(high)) and method != "percentile":
        low, high = run("percentile")
        label += f"; {method} undefined for these data, percentile used"
    return BootstrapInterval(
        ci_low=low, ci_high=high, confidence=confidence, method=label,
        n_resamples=n_resamples, seed=seed, n_clusters=c,
    )


class SuiteStats(BaseModel):
    """Everything computed for a suite, with how it was computed.

    ``mean`` is the mean of scenario means with the clustered t interval; ``pass_rate``,
    ``pass_at_k`` and ``pass_hat_k`` are per-scenario figures averaged over scenarios, each
    with its clustered interval (clipped to [0, 1]); k runs from 1 to the smallest epoch
    count. ``variance`` and ``judge_variance`` are ``None`` when the data cannot identify
    them (``notes`` says why).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_scenarios: int
    n_samples: int
    min_epochs: int
    max_epochs: int
    confidence: float
    mean: Estimate
    bootstrap: BootstrapInterval | None
    pass_rate: Estimate
    pass_at_k: dict[int, Estimate]
    pass_hat_k: dict[int, Estimate]
    variance: VarianceComponents | None
    judge_variance: NestedVarianceComponents | None
    scenarios: list[ScenarioStats]
    flaky_scenarios: list[str]
    notes: list[str]


def suite_stats(
    scores: Mapping[str, Sequence[float]],
    passed: Mapping[str, Sequence[bool]] | None = None,
    *,
    judge_scores: Mapping[str, Sequence[Sequence[float]]] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    bootstrap_resamples: int = 9999,
    bootstrap_method: BootstrapMethod = "BCa",
) -> SuiteStats:
    """Compute the suite statistics from per-scenario, per-epoch ``scores``.

    ``passed`` gives the pass flags per scenario (default: score >= 1 - 1e-6 per sample).
    ``judge_scores`` (scenario -> per epoch -> judge-sample scores), when transcripts were
    judged several times, adds the judge/agent noise split. ``seed`` and
    ``bootstrap_resamples`` drive the cluster bootstrap (0 resamples skips it).

    Raises :class:`InsufficientDataError` when there are no scenarios, ``ValueError`` on a
    scenario with no epochs, a non-finite score, pass flags that do not line up with the
    scores, or a confidence outside (0, 1).
    """
    check_confidence(confidence)
    if not scores:
        raise InsufficientDataError("no scenarios to summarise")
    if passed is not None and set(passed) != set(scores):
        raise ValueError("passed must have the same scenarios as scores")
    per_scenario = [
        scenario_stats(
            sid, xs, None if passed is None else passed[sid], confidence=confidence
        )
        for sid, xs in scores.items()
    ]
    c = len(per_scenario)
    n_samples = sum(s.n_epochs for s in per_scenario)
    min_epochs = min(s.n_epochs for s in per_scenario)
    max_epochs = max(s.n_epochs for s in per_scenario)
    notes: list[str] = []
    if c < 2:
        notes.append("one scenario: no standard error or interval can be computed")
    if min_epochs != max_epochs:
        notes.append(
            f"unequal epoch counts ({min_epochs}..{max_epochs}): each scenario counts once "
            "(mean of scenario means); pass@k and pass^k reported for k <= "
            f"{min_epochs}, the smallest count"
        )

    mean = mean_of_cluster_means(
        [s.mean for s in per_scenario], confidence=confidence, n=n_samples,
        method="mean of scenario means; SE clustered by scenario (Miller 2024, C/(C-1) "
        "factor) = sd(scenario means)/sqrt(C); t interval on C-1 df",
    )
    unit = (0.0, 1.0)
    per_k = "per-scenario {} averaged over scenarios; SE sd/sqrt(C); t interval on C-1 df, " \
        "clipped to [0, 1]"
    pass_rate = mean_of_cluster_means(
        [s.pass_rate for s in per_scenario], confidence=confidence, n=n_samples,
        method=per_k.format("pass rate"), bounds=unit,
    )
    pass_at = {
        k: mean_of_cluster_means(
            [s.pass_at_k[k] for s in per_scenario], confidence=confidence, n=n_samples,
            method=per_k.format("pass@k (Chen et al. 2021)"), bounds=unit,
        )
        for k in range(1, min_epochs + 1)
    }
    pass_hat = {
        k: mean_of_cluster_means(
            [s.pass_hat_k[k] for s in per_scenario], confidence=confidence, n=n_samples,
            method=per_k.format("pass^k (tau-bench)"), bounds=unit,
        )
        for k in range(1, min_epochs + 1)
    }

    bootstrap = None
    if c >= 2 and bootstrap_resamples > 0:
        bootstrap = cluster_bootstrap_interval(
            [s.mean for s in per_scenario], confidence=confidence,
            n_resamples=bootstrap_resamples, seed=seed, method=bootstrap_method,
        )

    variance = None
    try:
        variance = variance_components(scores)
    except InsufficientDataError as err:
        notes.append(f"variance components not computed: {err}")
    judge_variance = None
    if judge_scores is not None:
        if set(judge_scores) != set(scores):
            raise ValueError("judge_scores must have the same scenarios as scores")
        try:
            judge_variance = nested_variance_components(judge_scores)
        except InsufficientDataError as err:
            notes.append(f"judge noise not separated: {err}")

    return SuiteStats(
        n_scenarios=c,
        n_samples=n_samples,
        min_epochs=min_epochs,
        max_epochs=max_epochs,
        confidence=confidence,
        mean=mean,
        bootstrap=bootstrap,
        pass_rate=pass_rate,
        pass_at_k=pass_at,
        pass_hat_k=pass_hat,
        variance=variance,
        judge_variance=judge_variance,
        scenarios=per_scenario,
        flaky_scenarios=[s.scenario_id for s in per_scenario if s.flaky],
        notes=notes,
    )
