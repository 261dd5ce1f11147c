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

from harness.stats import lazy_scipy as sps
from harness.stats.bounded import (
    EFFECTIVE_WILSON,
    NO_SPREAD_BOTTOM,
    NO_SPREAD_INSIDE,
    NO_SPREAD_TOP,
    proportion_mean_intervals,
    rule_text,
)
from harness.stats.columns import UNIT_RANGE, ScoreColumns
from harness.stats.estimate import (
    Estimate,
    InsufficientDataError,
    check_confidence,
    mean_of_cluster_means,
)
from harness.stats.sampling import (
    ScenarioColumns,
    pass_at_k_table,
    pass_hat_k_table,
    scenario_columns,
)
from harness.stats.variance import (
    NestedVarianceComponents,
    VarianceComponents,
    nested_variance_components,
    variance_components_flat,
)

BootstrapMethod = Literal["BCa", "percentile", "basic"]

# Below this many scenarios the cluster bootstrap is not computed: simulated with 5 to 15
# scenarios its 95% BCa interval covered 84-96%, under 93% in 9 of 12 designs (the t interval
# 89-95%); from 20 on it held, 93-95% (benchmarks/interval_coverage.py).
MIN_BOOTSTRAP_SCENARIOS = 20
# Resamples are drawn in batches of about this many scenario draws, so memory stays flat
# however many scenarios there are (the draws, and so the interval, do not change).
BOOTSTRAP_BATCH_DRAWS = 1 << 20


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
    scenario_means: Sequence[float] | np.ndarray,
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
                batch=max(1, BOOTSTRAP_BATCH_DRAWS // c),
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

    ``mean`` is the mean of scenario means with the clustered t interval (cut at
    ``score_range``); ``pass_rate``, ``pass_at_k`` and ``pass_hat_k`` are per-scenario
    figures averaged over scenarios, each with the effective-sample-size Wilson interval of
    :mod:`harness.stats.bounded`; k runs from 1 to the smallest epoch count. ``bootstrap`` is
    ``None`` below :data:`MIN_BOOTSTRAP_SCENARIOS` scenarios; ``variance`` and
    ``judge_variance`` are ``None`` when the data cannot identify them (``notes`` says why).
    ``scenarios`` holds every scenario's figures as columns.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    n_scenarios: int
    n_samples: int
    min_epochs: int
    max_epochs: int
    confidence: float
    score_range: tuple[float, float]
    mean: Estimate
    bootstrap: BootstrapInterval | None
    pass_rate: Estimate
    pass_at_k: dict[int, Estimate]
    pass_hat_k: dict[int, Estimate]
    variance: VarianceComponents | None
    judge_variance: NestedVarianceComponents | None
    scenarios: ScenarioColumns
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
    score_range: tuple[float, float] = UNIT_RANGE,
) -> SuiteStats:
    """Compute the suite statistics from per-scenario, per-epoch ``scores``.

    ``passed`` gives the pass flags per scenario (default: a score passes at the top of
    ``score_range``, ``>= 1 - 1e-6`` on [0, 1]). ``judge_scores`` (scenario -> per epoch ->
    judge-sample scores), when transcripts were judged several times, adds the judge/agent
    noise split. ``seed`` and ``bootstrap_resamples`` drive the cluster bootstrap (0
    resamples skips it).

    Raises :class:`InsufficientDataError` when there are no scenarios, ``ValueError`` on a
    scenario with no epochs, a non-finite score, pass flags that do not line up with the
    scores, or a confidence outside (0, 1).
    """
    check_confidence(confidence)
    if not scores:
        raise InsufficientDataError("no scenarios to summarise")
    columns = ScoreColumns.from_mapping(scores, passed, score_range=score_range)
    return suite_stats_from_columns(
        columns, judge_scores=judge_scores, confidence=confidence, seed=seed,
        bootstrap_resamples=bootstrap_resamples, bootstrap_method=bootstrap_method,
        score_range=score_range)


def _k_ranges(ks: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1-3, 5"``."""
    runs: list[list[int]] = []
    for k in ks:
        if runs and k == runs[-1][-1] + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _proportion_estimates(
    label: str, values: np.ndarray, trials: np.ndarray, *, confidence: float, n: int,
) -> tuple[list[Estimate], dict[str, list[int]]]:
    """Estimates for the columns of ``values`` (scenarios x figures, each in [0, 1]): the
    mean over scenarios with the rules of :mod:`harness.stats.bounded`. Also returns, for
    each no-spread rule that applied, the (1-based) columns it applied to."""
    c, k = values.shape
    mean = values.mean(axis=0)
    base = f"mean over scenarios of per-scenario {label}; SE sd/sqrt(C); "
    if c < 2:
        return [Estimate(value=float(mean[i]), stderr=None, ci_low=None, ci_high=None,
                         confidence=confidence, df=None, n=n, n_clusters=c,
                         method=base + "no interval: needs at least 2 scenarios")
                for i in range(k)], {}
    spread = np.ptp(values, axis=0) > 0
    stderr = np.where(spread, values.std(axis=0, ddof=1) / math.sqrt(c), 0.0)
    got = proportion_mean_intervals(mean, stderr, spread, n_clusters=c, max_trials=trials,
                                    confidence=confidence)
    out = []
    agreed: dict[str, list[int]] = {}
    for i in range(k):
        rule = str(got.rule[i])
        if rule == EFFECTIVE_WILSON:
            how = (f"Wilson score interval on the effective sample size p(1-p)/SE^2 = "
                   f"{got.effective_n[i]:.1f} (at most {int(trials[i])} trials), t quantile "
                   "on C-1 df (Korn & Graubard 1998)")
        else:
            how = rule_text(rule, c, confidence)
            agreed.setdefault(rule, []).append(i + 1)
        out.append(Estimate(
            value=float(mean[i]), stderr=float(stderr[i]), ci_low=float(got.low[i]),
            ci_high=float(got.high[i]), confidence=confidence, df=c - 1, n=n, n_clusters=c,
            method=base + how))
    return out, agreed


def _agreement_notes(figures: dict[str, list[str]], c: int) -> list[str]:
    """One note per no-spread rule, naming the figures it gave intervals to."""
    what = {NO_SPREAD_BOTTOM: "every scenario at the bottom of the range",
            NO_SPREAD_TOP: "every scenario at the top of the range",
            NO_SPREAD_INSIDE: "every scenario with the same value"}
    how = {NO_SPREAD_BOTTOM: f"the exact bound for {c} scenarios (Clopper-Pearson, 0 of {c})",
           NO_SPREAD_TOP: f"the exact bound for {c} scenarios (Clopper-Pearson, {c} of {c})",
           NO_SPREAD_INSIDE: f"the Wilson interval for {c} units"}
    return [f"{what[rule]} for {', '.join(names)}: the interval is {how[rule]}, not a point, "
            f"which would claim a certainty {c} scenarios do not give"
            for rule, names in figures.items() if names]


def suite_stats_from_columns(
    columns: ScoreColumns,
    *,
    judge_scores: Mapping[str, Sequence[Sequence[float]]] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    bootstrap_resamples: int = 9999,
    bootstrap_method: BootstrapMethod = "BCa",
    score_range: tuple[float, float] = UNIT_RANGE,
) -> SuiteStats:
    """:func:`suite_stats` from sample columns (how ``harness stats`` reads a file), with
    the same arguments.

    Raises as :func:`suite_stats` does.
    """
    check_confidence(confidence)
    c = len(columns.ids)
    if c == 0:
        raise InsufficientDataError("no scenarios to summarise")
    per = scenario_columns(columns, confidence=confidence, score_range=score_range)
    n_samples = int(columns.offsets[-1])
    min_epochs, max_epochs = int(per.n_epochs.min()), int(per.n_epochs.max())
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
        per.mean, confidence=confidence, n=n_samples, bounds=score_range,
        method="mean of scenario means; SE clustered by scenario (Miller 2024, C/(C-1) "
        "factor) = sd(scenario means)/sqrt(C); t interval on C-1 df",
    )
    agreed: dict[str, list[str]] = {NO_SPREAD_BOTTOM: [], NO_SPREAD_TOP: [],
                                    NO_SPREAD_INSIDE: []}
    if mean.clipped:
        notes.append(f"mean: the t interval reached past the score range [{score_range[0]:g}, "
                     f"{score_range[1]:g}] and is cut at it")
    elif c >= 2 and mean.stderr == 0.0:
        edge = (NO_SPREAD_BOTTOM if mean.value <= score_range[0] else
                NO_SPREAD_TOP if mean.value >= score_range[1] else NO_SPREAD_INSIDE)
        agreed[edge].append("the mean score")

    # Per-scenario pass@k / pass^k for k <= the smallest epoch count: C x K <= the samples.
    ks = np.arange(1, min_epochs + 1)
    at = pass_at_k_table(per.n_epochs, per.n_passed, min_epochs)
    at[:, 0] = per.pass_rate  # pass@1 is the pass rate, to the last bit
    hat = pass_hat_k_table(per.n_epochs, per.n_passed, min_epochs)
    # Independent k-attempt trials behind each figure: the cap on its effective sample size.
    trials = (per.n_epochs[:, None] // ks[None, :]).sum(axis=0)
    figures = {}
    for name, label, values in (("pass rate", "pass rate", per.pass_rate[:, None]),
                                ("pass@", "pass@k (Chen et al. 2021)", at),
                                ("pass^", "pass^k (tau-bench)", hat)):
        estimates, rules = _proportion_estimates(label, values, trials[:values.shape[1]],
                                                 confidence=confidence, n=n_samples)
        figures[name] = estimates
        for rule, which in rules.items():
            agreed[rule].append(name if name == "pass rate" else name + _k_ranges(which))
    [pass_rate] = figures["pass rate"]
    pass_at, pass_hat = figures["pass@"], figures["pass^"]
    notes += _agreement_notes(agreed, c)

    bootstrap = None
    if bootstrap_resamples > 0 and c >= 2:
        if c < MIN_BOOTSTRAP_SCENARIOS:
            notes.append(
                f"cluster bootstrap not computed: with {c} scenarios (fewer than "
                f"{MIN_BOOTSTRAP_SCENARIOS}) it covers too little (as little as 84% for 95% "
                "in benchmarks/interval_coverage.py); use the t interval")
        elif mean.stderr == 0.0:
            notes.append("cluster bootstrap not computed: every scenario has the same mean, "
                         "so every resample has it too")
        else:
            bootstrap = cluster_bootstrap_interval(
                per.mean, confidence=confidence, n_resamples=bootstrap_resamples, seed=seed,
                method=bootstrap_method)

    variance = None
    try:
        variance = variance_components_flat(columns.scores, per.n_epochs)
    except InsufficientDataError as err:
        notes.append(f"variance components not computed: {err}")
    if variance is not None and variance.intraclass_correlation is None:
        notes.append("intraclass correlation and design power undefined: every score is the "
                     "same")
    judge_variance = None
    if judge_scores is not None:
        if set(judge_scores) != set(columns.ids):
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
        score_range=score_range,
        mean=mean,
        bootstrap=bootstrap,
        pass_rate=pass_rate,
        pass_at_k=dict(zip(ks.tolist(), pass_at, strict=True)),
        pass_hat_k=dict(zip(ks.tolist(), pass_hat, strict=True)),
        variance=variance,
        judge_variance=judge_variance,
        scenarios=per,
        flaky_scenarios=[sid for sid, f in zip(per.ids, per.flaky.tolist(), strict=True) if f],
        notes=notes,
    )
