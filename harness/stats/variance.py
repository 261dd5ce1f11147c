"""Variance components: how much of the spread in scores comes from scenarios differing in
difficulty, from the agent answering differently across epochs, and (when transcripts are
judged several times) from the judge.

Model: ``x[c,e,j] = mu + a[c] + b[c,e] + u[c,e,j]`` with scenario effects ``a`` (variance
``scenario``), epoch effects ``b`` (agent noise, ``epoch``) and judge-sample effects ``u``
(judge noise, ``judge``). Without re-judging there is no ``u``: the epoch component is then
all the within-scenario noise, judge noise included.

Estimator: method of moments on unweighted means (Searle, Casella & McCulloch 1992, ch. 5),
unbiased for unequal epoch and judge-sample counts and identical to the classical nested
ANOVA estimator when the design is balanced. It is built on the same scenario means as the
suite estimate, so ``scenario / C + epoch * mean(1/n_c) / C`` (plus the judge term) is an
unbiased split of the squared clustered standard error into its parts. A component whose
moment estimate is negative is reported as 0 (``*_raw`` keeps the estimate) and flagged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.stats.estimate import InsufficientDataError


class VarianceComponents(BaseModel):
    """Between-scenario and within-scenario variance of single-sample scores.

    ``suite_variance_between`` and ``suite_variance_within`` are the two parts of the squared
    standard error of the suite mean (mean of scenario means).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_scenarios: int
    n_samples: int
    between: float
    between_raw: float
    within: float
    intraclass_correlation: float | None
    suite_variance_between: float
    suite_variance_within: float
    truncated: list[str]
    method: str = (
        "method of moments on unweighted scenario means (nested ANOVA when balanced); "
        "negative estimates reported as 0"
    )


class NestedVarianceComponents(BaseModel):
    """Scenario, epoch (agent noise) and judge-sample (judge noise) variance components."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_scenarios: int
    n_transcripts: int
    n_judgments: int
    scenario: float
    scenario_raw: float
    epoch: float
    epoch_raw: float
    judge: float
    judge_share_of_within: float | None
    suite_variance_scenario: float
    suite_variance_epoch: float
    suite_variance_judge: float
    truncated: list[str]
    method: str = (
        "nested method of moments on unweighted means (scenario / epoch / judge sample); "
        "negative estimates reported as 0"
    )


@dataclass(frozen=True)
class _Moments:
    n_scenarios: int
    n_transcripts: int
    n_judgments: int
    scenario: float
    epoch: float
    judge: float
    mean_inv_epochs: float  # mean over scenarios of 1/n_c
    mean_judge_coef: float  # mean over scenarios of sum_e(1/J_ce) / n_c^2


def _nested_moments(
    data: Mapping[str, Sequence[Sequence[float]]], *, need_judge_df: bool
) -> _Moments:
    c = len(data)
    if c < 2:
        raise InsufficientDataError(f"variance components need at least 2 scenarios, got {c}")
    # Flatten to arrays with group codes so the sums are vectorised (runs can be large).
    values: list[float] = []
    judge_counts: list[int] = []
    epoch_counts: list[int] = []
    for sid, epochs in data.items():
        if not epochs or any(len(t) == 0 for t in epochs):
            raise ValueError(f"scenario {sid!r} has an epoch with no scores")
        for t in epochs:
            values.extend(t)
            judge_counts.append(len(t))
        epoch_counts.append(len(epochs))
    return _array_moments(np.asarray(values, dtype=float), np.asarray(judge_counts),
                          np.asarray(epoch_counts), need_judge_df=need_judge_df)


def _array_moments(
    values: np.ndarray, judge_counts: np.ndarray, epoch_counts: np.ndarray, *,
    need_judge_df: bool,
) -> _Moments:
    """The moments from flat arrays: ``values`` in transcript order, ``judge_counts`` the
    judge samples of each transcript, ``epoch_counts`` the transcripts of each scenario
    (scenarios contiguous, in order)."""
    c = int(epoch_counts.size)
    if c < 2:
        raise InsufficientDataError(f"variance components need at least 2 scenarios, got {c}")
    if not np.all(np.isfinite(values)):
        raise ValueError("variance components need finite scores")
    # Centred on one of the scores (variances do not change): identical scores then give
    # sums of squares of exactly 0 rather than rounding noise such as 1e-32, which would
    # make the intraclass correlation look like 1.
    x = values - values[0]
    j = judge_counts.astype(float)
    t_of_x = np.repeat(np.arange(j.size), judge_counts)
    s_of_t = np.repeat(np.arange(c), epoch_counts)
    # Judge noise: pooled variance of judge samples around their transcript's mean.
    t_mean = np.bincount(t_of_x, weights=x) / j
    judge_df = float(np.sum(j - 1))
    if need_judge_df and judge_df == 0:
        raise InsufficientDataError("judge noise needs at least one transcript judged twice")
    judge = float(np.sum((x - t_mean[t_of_x]) ** 2)) / judge_df if judge_df else 0.0

    # Agent noise: pooled spread of transcript means within a scenario, less the judge noise
    # those means still carry: E[S_c] = (n_c-1) epoch + judge (n_c-1)/n_c sum_e 1/J_ce.
    n_c = np.bincount(s_of_t).astype(float)
    s_mean = np.bincount(s_of_t, weights=t_mean) / n_c
    inv_j = np.bincount(s_of_t, weights=1.0 / j)
    epoch_df = float(np.sum(n_c - 1))
    if epoch_df == 0:
        raise InsufficientDataError(
            "within-scenario variance needs at least one scenario with 2 or more epochs"
        )
    epoch_ss = float(np.sum((t_mean - s_mean[s_of_t]) ** 2))
    epoch = (epoch_ss - judge * float(np.sum((n_c - 1) / n_c * inv_j))) / epoch_df

    # Scenario differences: E[var(scenario means)] = scenario + mean_c(epoch/n_c + judge q_c)
    # with q_c = sum_e(1/J_ce)/n_c^2. Raw (possibly negative) lower-level estimates are used
    # so the result stays unbiased.
    mean_inv = float(np.mean(1.0 / n_c))
    mean_q = float(np.mean(inv_j / n_c**2))
    scenario = float(np.var(s_mean, ddof=1)) - epoch * mean_inv - judge * mean_q
    return _Moments(
        n_scenarios=c,
        n_transcripts=int(j.size),
        n_judgments=int(x.size),
        scenario=scenario,
        epoch=epoch,
        judge=judge,
        mean_inv_epochs=mean_inv,
        mean_judge_coef=mean_q,
    )


def variance_components(scores: Mapping[str, Sequence[float]]) -> VarianceComponents:
    """Split the variance of per-sample ``scores`` (scenario id -> per-epoch scores) into a
    between-scenario and a within-scenario part.

    Raises :class:`InsufficientDataError` with fewer than 2 scenarios or when no scenario has
    2 epochs; ``ValueError`` on an empty scenario or a non-finite score.
    """
    for sid, xs in scores.items():
        if len(xs) == 0:
            raise ValueError(f"scenario {sid!r} has an epoch with no scores")
    values = np.fromiter((x for xs in scores.values() for x in xs), dtype=float)
    counts = np.fromiter((len(xs) for xs in scores.values()), dtype=np.int64)
    return variance_components_flat(values, counts)


def variance_components_flat(values: np.ndarray, epoch_counts: np.ndarray) -> VarianceComponents:
    """:func:`variance_components` from flat arrays: ``values`` scenario by scenario (each
    scenario's scores contiguous) and ``epoch_counts`` the number of scores of each.

    Raises as :func:`variance_components` does.
    """
    m = _array_moments(np.asarray(values, dtype=float), np.ones(len(values), dtype=np.int64),
                       np.asarray(epoch_counts), need_judge_df=False)
    between = max(m.scenario, 0.0)
    within = max(m.epoch, 0.0)  # a pooled sum of squares: never negative without a judge term
    total = between + within
    return VarianceComponents(
        n_scenarios=m.n_scenarios,
        n_samples=m.n_transcripts,
        between=between,
        between_raw=m.scenario,
        within=within,
        intraclass_correlation=between / total if total > 0 else None,
        suite_variance_between=between / m.n_scenarios,
        suite_variance_within=within * m.mean_inv_epochs / m.n_scenarios,
        truncated=["between"] if m.scenario < 0 else [],
    )


def nested_variance_components(
    judge_scores: Mapping[str, Sequence[Sequence[float]]],
) -> NestedVarianceComponents:
    """Separate judge noise from agent noise when transcripts were judged several times.

    ``judge_scores`` maps scenario id -> one list per epoch (transcript) of the scores its
    judge samples gave. Counts may differ between scenarios and transcripts.

    Raises :class:`InsufficientDataError` with fewer than 2 scenarios, no scenario with 2
    epochs or no transcript judged twice; ``ValueError`` on an empty list or non-finite score.
    """
    m = _nested_moments(judge_scores, need_judge_df=True)
    scenario = max(m.scenario, 0.0)
    epoch = max(m.epoch, 0.0)
    judge = m.judge
    within = epoch + judge
    truncated = [name for name, raw in (("scenario", m.scenario), ("epoch", m.epoch)) if raw < 0]
    return NestedVarianceComponents(
        n_scenarios=m.n_scenarios,
        n_transcripts=m.n_transcripts,
        n_judgments=m.n_judgments,
        scenario=scenario,
        scenario_raw=m.scenario,
        epoch=epoch,
        epoch_raw=m.epoch,
        judge=judge,
        judge_share_of_within=judge / within if within > 0 else None,
        suite_variance_scenario=scenario / m.n_scenarios,
        suite_variance_epoch=epoch * m.mean_inv_epochs / m.n_scenarios,
        suite_variance_judge=judge * m.mean_judge_coef / m.n_scenarios,
        truncated=truncated,
    )
