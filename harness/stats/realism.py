"""How far simulated users are from real ones: per feature, the distance between the two
distributions with a bootstrap interval, and one realism score.

The input is, for each set, one mapping per conversation from a feature's name to its values
(:func:`harness.stats.user_turn_features.conversation_features`). Per feature:

- ``ks``: the two-sample Kolmogorov–Smirnov statistic, the largest gap between the two
  empirical cumulative distributions, in [0, 1] whatever the feature's unit (for a 0/1
  feature it is the difference of the two shares);
- ``wasserstein``: the first Wasserstein (earth mover's) distance, in the feature's own unit
  (how far, on average, the simulated values would have to move to match the real ones);
- each with a percentile bootstrap interval: conversations are drawn with replacement within
  each set (a conversation brings all its turns), ``resamples`` times, from ``seed``.

The **realism score** is 1 minus the mean of the features' KS statistics: 1 when every
feature's simulated distribution matches the real one, 0 when none overlaps at all. A score of
0.7 says that, averaged over the features, the largest gap between the share of real and the
share of simulated values below some threshold is 30 percentage points. Its interval is the
percentile interval of the score recomputed on each resample. A feature that one set has no
value for (e.g. no user turn after an agent turn, so no correction can be counted) is left out
of the score and named in ``features_left_out``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.stats import lazy_scipy as sps
from harness.stats.user_turn_features import FEATURES, FeatureInfo, FeatureLevel

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
MIN_CONVERSATIONS = 2
"""Conversations each set needs: a distance between distributions needs two in each."""

FloatArray = np.ndarray


class Figure(BaseModel):
    """A figure and its bootstrap interval."""

    model_config = ConfigDict(extra="forbid")

    value: float
    ci_low: float
    ci_high: float


class FeatureComparison(BaseModel):
    """One feature of real and simulated users: how many values each set has, their means,
    and the two distances (``None`` when a set has no value of this feature)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    level: FeatureLevel
    unit: str
    n_real: int
    n_simulated: int
    real_mean: float | None
    simulated_mean: float | None
    ks: Figure | None
    wasserstein: Figure | None


class RealismComparison(BaseModel):
    """Every feature compared, and the realism score (``None`` when no feature could be
    compared). ``method`` says in words how the figures were computed."""

    model_config = ConfigDict(extra="forbid")

    n_real_conversations: int
    n_simulated_conversations: int
    features: list[FeatureComparison]
    score: Figure | None
    features_left_out: list[str]
    resamples: int
    seed: int
    confidence: float
    method: str


METHOD = ("per feature: the two-sample Kolmogorov-Smirnov statistic (ks) and the first "
          "Wasserstein distance in the feature's unit (wasserstein); score = 1 - mean ks over "
          "the features both sets have; intervals: percentile bootstrap, conversations "
          "resampled with replacement within each set")


def ks_statistic(a: FloatArray, b: FloatArray) -> float:
    """The two-sample Kolmogorov–Smirnov statistic of ``a`` and ``b`` (both non-empty): the
    largest absolute difference of their empirical distribution functions."""
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    gap = (np.searchsorted(a, grid, side="right") / a.size
           - np.searchsorted(b, grid, side="right") / b.size)
    return float(np.max(np.abs(gap)))


def wasserstein(a: FloatArray, b: FloatArray) -> float:
    """The first Wasserstein distance of the empirical distributions of ``a`` and ``b``."""
    return float(sps.wasserstein_distance(a, b))


class _FeatureValues:
    """One set's values of one feature, flat, with where each conversation's values start,
    so that a resample of conversations gathers its values without a Python loop."""

    def __init__(self, per_conversation: Sequence[Sequence[float]]) -> None:
        self.lengths = np.array([len(v) for v in per_conversation], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)
        self.flat = np.array([x for v in per_conversation for x in v], dtype=float)

    def resample(self, picked: np.ndarray) -> FloatArray:
        lengths = self.lengths[picked]
        total = int(lengths.sum())
        # Index of each gathered value: its conversation's start plus its place in it.
        offsets = np.repeat(self.starts[picked] - np.cumsum(lengths) + lengths, lengths)
        return self.flat[offsets + np.arange(total)]


def _interval(values: FloatArray, point: float, confidence: float) -> Figure:
    kept = values[~np.isnan(values)]
    if not kept.size:
        return Figure(value=point, ci_low=point, ci_high=point)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(kept, [tail, 100 - tail])
    return Figure(value=point, ci_low=float(low), ci_high=float(high))


def _compare_feature(
    info: FeatureInfo, real: Sequence[Mapping[str, Sequence[float]]],
    simulated: Sequence[Mapping[str, Sequence[float]]],
    picks: Sequence[tuple[np.ndarray, np.ndarray]], confidence: float,
) -> tuple[FeatureComparison, FloatArray | None]:
    """One feature compared, and its KS statistic on each resample (``None`` when a set has
    no value of it; ``nan`` for a resample that drew no value)."""
    sets = (_FeatureValues([c[info.name] for c in real]),
            _FeatureValues([c[info.name] for c in simulated]))
    a, b = sets[0].flat, sets[1].flat
    entry = FeatureComparison(
        name=info.name, level=info.level, unit=info.unit, n_real=int(a.size),
        n_simulated=int(b.size), real_mean=float(a.mean()) if a.size else None,
        simulated_mean=float(b.mean()) if b.size else None, ks=None, wasserstein=None)
    if not a.size or not b.size:
        return entry, None
    ks = np.full(len(picks), np.nan)
    w1 = np.full(len(picks), np.nan)
    for i, (pick_real, pick_sim) in enumerate(picks):
        ra, rb = sets[0].resample(pick_real), sets[1].resample(pick_sim)
        if ra.size and rb.size:  # a resample may draw only conversations without a value
            ks[i], w1[i] = ks_statistic(ra, rb), wasserstein(ra, rb)
    entry.ks = _interval(ks, ks_statistic(a, b), confidence)
    entry.wasserstein = _interval(w1, wasserstein(a, b), confidence)
    return entry, ks


def compare_users(
    real: Sequence[Mapping[str, Sequence[float]]],
    simulated: Sequence[Mapping[str, Sequence[float]]],
    *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> RealismComparison:
    """Compare real and simulated users feature by feature (see the module docstring).

    ``real`` and ``simulated`` hold one mapping per conversation from each name of
    :data:`~harness.stats.user_turn_features.FEATURES` to that conversation's values. Raises
    ``ValueError`` when a set has fewer than :data:`MIN_CONVERSATIONS` conversations or
    ``resamples`` is below 1."""
    for name, conversations in (("real", real), ("simulated", simulated)):
        if len(conversations) < MIN_CONVERSATIONS:
            raise ValueError(f"the {name} set has {len(conversations)} conversation(s); a "
                             f"distance between distributions needs at least "
                             f"{MIN_CONVERSATIONS} in each set")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1 (got {resamples})")
    rng = np.random.default_rng(seed)
    # The same draws of conversations for every feature, so the score's draws are coherent.
    picks = [(rng.integers(0, len(real), len(real)),
              rng.integers(0, len(simulated), len(simulated))) for _ in range(resamples)]
    features: list[FeatureComparison] = []
    ks_draws: list[FloatArray] = []
    for info in FEATURES:
        entry, draws = _compare_feature(info, real, simulated, picks, confidence)
        features.append(entry)
        if draws is not None:
            ks_draws.append(draws)
    score = None
    if ks_draws:
        point = 1 - float(np.mean([f.ks.value for f in features if f.ks is not None]))
        with warnings.catch_warnings():  # a resample with no value of any feature: nan
            warnings.simplefilter("ignore", RuntimeWarning)
            score_draws = 1 - np.nanmean(np.vstack(ks_draws), axis=0)
        score = _interval(score_draws, point, confidence)
    return RealismComparison(
        n_real_conversations=len(real), n_simulated_conversations=len(simulated),
        features=features, score=score,
        features_left_out=[f.name for f in features if f.ks is None], resamples=resamples,
        seed=seed, confidence=confidence, method=METHOD)
