"""Multi-rater reliability: Krippendorff's alpha (nominal, ordinal, interval) and Fleiss' kappa.

Own implementations, cross-checked in the tests against the ``krippendorff`` package and
``statsmodels.stats.inter_rater.fleiss_kappa``. Both are written as sums over units so that a
bootstrap resample is just a vector of unit weights (how often each unit was drawn): the
statistics of a resample are exact, not approximations, and cost one matrix product.

Krippendorff (2011, "Computing Krippendorff's alpha-reliability"): alpha = 1 − D_o / D_e, with
the coincidence matrix o_ck = Σ_u (number of c–k pairs in unit u) / (m_u − 1) over units with
m_u ≥ 2 values, marginals n_c, n = Σ n_c, D_o = Σ o_ck δ²_ck / n and
D_e = Σ n_c n_k δ²_ck / (n (n − 1)). Metrics: nominal δ² = [c ≠ k]; ordinal
δ² = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²; interval δ² = (c − k)².
"""

from __future__ import annotations

import numpy as np

from harness.calibration.bootstrap import UndefinedStatistic
from harness.calibration.report import AlphaLevel


class KrippendorffAlpha:
    """Krippendorff's alpha of one reliability matrix, evaluable for any unit weighting.

    ``ratings`` is units × coders with NaN for a missing rating (coders need not be the same
    people across units). Values are compared as numbers; for nominal and ordinal data the
    distinct values are the categories, in numeric order.
    """

    def __init__(self, ratings: np.ndarray, level: AlphaLevel, name: str = "krippendorff_alpha"):
        data = np.asarray(ratings, dtype=float)
        if data.ndim != 2:
            raise ValueError("ratings must be a units × coders matrix")
        self.level = level
        self.name = name
        present = ~np.isnan(data)
        self.m = present.sum(axis=1).astype(float)
        self.pairable = self.m >= 2
        if level == "interval":
            filled = np.where(present, data, 0.0)
            self.sum1 = filled.sum(axis=1)
            self.sum2 = (filled**2).sum(axis=1)
        else:
            self.values = np.unique(data[present])
            counts = np.zeros((data.shape[0], len(self.values)))
            rows, cols = np.nonzero(present)
            np.add.at(counts, (rows, np.searchsorted(self.values, data[rows, cols])), 1)
            self.counts = counts

    @property
    def n_units(self) -> int:
        return len(self.m)

    def __call__(self, weights: np.ndarray | None = None) -> float:
        """Alpha with unit ``u`` counted ``weights[u]`` times (default: once each).

        Raises UndefinedStatistic when no unit has two ratings or all pairable ratings are one
        value (D_e = 0)."""
        w = np.ones(self.n_units) if weights is None else np.asarray(weights, dtype=float)
        w = np.where(self.pairable, w, 0.0)
        if w.sum() == 0:
            raise UndefinedStatistic(f"{self.name}: no item has two or more ratings to compare")
        per_pair = w / np.where(self.pairable, self.m - 1, 1.0)
        if self.level == "interval":
            return self._interval(w, per_pair)
        return self._categorical(per_pair)

    def _interval(self, w: np.ndarray, per_pair: np.ndarray) -> float:
        # Σ_{i≠j} (v_i − v_j)² within a unit is 2 (m Σv² − (Σv)²): no V×V matrix needed, so
        # continuous scores with hundreds of distinct values stay cheap.
        within = 2 * (self.m * self.sum2 - self.sum1**2)
        n = float((w * self.m).sum())
        observed = float((per_pair * within).sum()) / n
        total1 = float((w * self.sum1).sum())
        total2 = float((w * self.sum2).sum())
        expected = 2 * (n * total2 - total1**2) / (n * (n - 1))
        return self._ratio(observed, expected)

    def _categorical(self, per_pair: np.ndarray) -> float:
        weighted = self.counts * per_pair[:, None]
        coincidence = self.counts.T @ weighted - np.diag(weighted.sum(axis=0))
        marginals = coincidence.sum(axis=1)
        n = float(marginals.sum())
        delta = self._delta(marginals)
        observed = float((coincidence * delta).sum()) / n
        expected = float((np.outer(marginals, marginals) * delta).sum()) / (n * (n - 1))
        return self._ratio(observed, expected)

    def _delta(self, marginals: np.ndarray) -> np.ndarray:
        k = len(self.values)
        if self.level == "nominal":
            return 1.0 - np.eye(k)
        cumulative = np.concatenate([[0.0], np.cumsum(marginals)])
        low = np.minimum.outer(np.arange(k), np.arange(k))
        high = np.maximum.outer(np.arange(k), np.arange(k))
        between = cumulative[high + 1] - cumulative[low]
        delta: np.ndarray = (between - (marginals[low] + marginals[high]) / 2) ** 2
        return delta

    def _ratio(self, observed: float, expected: float) -> float:
        if expected <= 1e-15:
            raise UndefinedStatistic(
                f"{self.name}: every compared rating has the same value, so expected "
                "disagreement is 0"
            )
        return 1.0 - observed / expected


def krippendorff_alpha(ratings: np.ndarray, level: AlphaLevel) -> float:
    """Krippendorff's alpha of a units × coders matrix (NaN = missing) at ``level``."""
    return KrippendorffAlpha(ratings, level)()


class FleissKappa:
    """Fleiss' kappa (Fleiss 1971) from an items × categories count table, evaluable for any
    item weighting. Every item must have the same number of ratings."""

    def __init__(self, table: np.ndarray, name: str = "fleiss_kappa") -> None:
        counts = np.asarray(table, dtype=float)
        self.name = name
        raters = counts.sum(axis=1)
        self.undefined: str | None = None
        if counts.shape[0] == 0:
            self.undefined = f"{name}: no items"
        elif np.ptp(raters) != 0:
            self.undefined = (
                f"{name}: needs the same number of raters on every item (found "
                f"{int(raters.min())} to {int(raters.max())}); Krippendorff's alpha allows it"
            )
        elif raters[0] < 2:
            self.undefined = f"{name}: needs at least 2 raters per item"
        self.counts = counts
        self.raters = float(raters[0]) if len(raters) else 0.0
        if self.undefined is None:
            r = self.raters
            self.item_agreement = ((counts**2).sum(axis=1) - r) / (r * (r - 1))

    def __call__(self, weights: np.ndarray | None = None) -> float:
        if self.undefined is not None:
            raise UndefinedStatistic(self.undefined)
        w = np.ones(len(self.counts)) if weights is None else np.asarray(weights, dtype=float)
        total = w.sum()
        observed = float((w * self.item_agreement).sum() / total)
        shares = (w[:, None] * self.counts).sum(axis=0) / (self.raters * total)
        chance = float((shares**2).sum())
        if chance >= 1 - 1e-15:
            raise UndefinedStatistic(
                f"{self.name}: every rating is in one category, so chance agreement is 1"
            )
        return (observed - chance) / (1 - chance)


def fleiss_kappa(table: np.ndarray) -> float:
    """Fleiss' kappa of an items × categories count table."""
    return FleissKappa(table)()


def category_table(codes: np.ndarray, n_categories: int) -> np.ndarray:
    """Items × categories counts from an items × raters matrix of codes (−1 = missing)."""
    table = np.zeros((codes.shape[0], n_categories), dtype=np.int64)
    rows, cols = np.nonzero(codes >= 0)
    np.add.at(table, (rows, codes[rows, cols]), 1)
    return table
