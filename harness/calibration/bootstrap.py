"""Seeded bootstrap intervals over items.

Method: percentile intervals from resamples of the items drawn with numpy's
``default_rng(seed).integers(0, n, (n_resamples, n))``, the same draws
``scipy.stats.bootstrap(..., method="percentile", rng=default_rng(seed))`` makes, so a single
statistic's interval equals scipy's. We resample here rather than call scipy for three reasons:

- one set of resamples is shared by every statistic computed on the same items, so the
  difference of two statistics (two judges, two prompts, judge minus human baseline) is a
  *paired* bootstrap for free;
- a resample on which a statistic is undefined (all-constant scores, no item in both orders)
  is counted and left out, where scipy would return a NaN interval for all of it;
- statistics over clusters (an item's several samples, both orders of a pairwise item) resample
  the item with all its units;
- items that are not independent (the epochs of one scenario of a run) can be resampled by
  cluster: ``clusters`` names each item's cluster, whole clusters are drawn with replacement
  and every item of a drawn cluster enters the resample. Every item its own cluster draws
  exactly the resamples above (so it still equals scipy's).

Percentile rather than BCa: BCa's jackknife costs n extra evaluations per statistic and
misbehaves on the discrete, bounded statistics here (accuracy, kappa near 1).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from harness.calibration.report import BootstrapEstimate

Statistic = Callable[[np.ndarray], float]
"""A statistic of a resample, given the resampled item indices (an array of positions, with
repeats). Raises :class:`UndefinedStatistic` when the resample leaves it undefined."""


class UndefinedStatistic(ValueError):
    """The statistic has no value on these data; the message says why, naming the statistic."""


class ItemBootstrap:
    """Resamples of ``n_items`` items, drawn once from ``seed`` and shared by every statistic
    estimated through this object.

    ``clusters`` (one key per item, default: every item its own) makes each resample a draw
    of whole clusters with replacement, as many as there are clusters, each bringing all its
    items: the interval then holds when items of one cluster are correlated (a scenario's
    epochs). A resample's size varies with the clusters drawn. Raises ``ValueError`` when
    ``clusters`` does not name one cluster per item.
    """

    def __init__(self, n_items: int, n_resamples: int, confidence: float, seed: int,
                 clusters: Sequence[Hashable] | None = None) -> None:
        self.n_items = n_items
        self.confidence = confidence
        rng = np.random.default_rng(seed)
        if clusters is not None and len(clusters) != n_items:
            raise ValueError(f"clusters: expected one per item ({n_items}), got {len(clusters)}")
        codes: dict[Hashable, list[int]] = {}
        for item, key in enumerate(clusters if clusters is not None else range(n_items)):
            codes.setdefault(key, []).append(item)
        self.n_clusters = len(codes)
        size = (n_resamples, self.n_clusters) if self.n_clusters > 0 else (0, 0)
        drawn = rng.integers(0, max(self.n_clusters, 1), size)
        self.indices: np.ndarray | list[np.ndarray]
        if self.n_clusters == n_items:  # every item its own cluster: the draws are the items
            self.indices = drawn
        else:
            members = [np.asarray(items, dtype=np.int64) for items in codes.values()]
            self.indices = [np.concatenate([members[c] for c in row]) for row in drawn]
        self._cache: dict[Statistic, tuple[float | str, np.ndarray]] = {}

    def replicates(self, statistic: Statistic) -> tuple[float | str, np.ndarray]:
        """The statistic on all items (or the reason it is undefined) and on every resample
        (NaN where undefined). Cached per statistic object, so a difference of two statistics
        already estimated costs nothing more."""
        if statistic in self._cache:
            return self._cache[statistic]
        try:
            value: float | str = _finite(statistic(np.arange(self.n_items)))
        except UndefinedStatistic as why:
            value = str(why)
        replicates = np.full(len(self.indices), math.nan)
        if not isinstance(value, str):
            for row, idx in enumerate(self.indices):
                with contextlib.suppress(UndefinedStatistic):  # stays NaN: counted, left out
                    replicates[row] = _finite(statistic(idx))
        self._cache[statistic] = (value, replicates)
        return value, replicates

    def estimate(self, statistic: Statistic, *, detail: str | None = None,
                 n: int | None = None) -> BootstrapEstimate:
        """The statistic on all items, with a percentile interval over the resamples. ``n``
        is the number of items it uses, when that is fewer than all (default: all).

        Never raises for undefined data: the BootstrapEstimate then has ``value=None`` and
        ``undefined`` set to the reason.
        """
        return self._summarise(*self.replicates(statistic), detail, n)

    def difference(
        self, first: Statistic, second: Statistic, *, detail: str | None = None
    ) -> BootstrapEstimate:
        """``first − second`` with a paired interval (the same resamples for both)."""
        value_a, reps_a = self.replicates(first)
        value_b, reps_b = self.replicates(second)
        if isinstance(value_a, str) or isinstance(value_b, str):
            reason = value_a if isinstance(value_a, str) else value_b
            return self._summarise(str(reason), reps_a - reps_b, detail)
        return self._summarise(value_a - value_b, reps_a - reps_b, detail)

    def _summarise(
        self, value: float | str, replicates: np.ndarray, detail: str | None,
        n: int | None = None,
    ) -> BootstrapEstimate:
        n = self.n_items if n is None else n
        if isinstance(value, str):
            return BootstrapEstimate(value=None, n=n, undefined=value, detail=detail)
        defined = replicates[np.isfinite(replicates)]
        low = high = None
        if len(defined):
            tail = (1 - self.confidence) / 2 * 100
            low, high = (float(q) for q in np.percentile(defined, [tail, 100 - tail]))
        return BootstrapEstimate(
            value=value,
            ci_low=low,
            ci_high=high,
            n=n,
            resamples_undefined=int(len(replicates) - len(defined)),
            detail=detail,
        )


def _finite(value: float) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise UndefinedStatistic("the statistic is not a finite number on these data")
    return number


def undefined_estimate(n: int, reason: str, detail: str | None = None) -> BootstrapEstimate:
    """An BootstrapEstimate for a statistic that cannot be computed at all on these data."""
    return BootstrapEstimate(value=None, n=n, undefined=reason, detail=detail)
