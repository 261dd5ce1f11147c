"""Variance components of scores from a crossed design: scenario x simulator, with epochs
repeated in each cell. Method of moments on a balanced two-way ANOVA with replication (the
expected mean squares of the random-effects model), each component cut at 0 and given with
its share of the total. Pure arithmetic on numpy; no I/O."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class CrossedComponents:
    """The variance of one score split into its parts (each at least 0)."""

    scenario: float
    simulator: float
    interaction: float
    residual: float

    @property
    def total(self) -> float:
        return self.scenario + self.simulator + self.interaction + self.residual

    def shares(self) -> dict[str, float]:
        """Each component's share of the total (all 0 when the total is 0)."""
        total = self.total
        parts = {"scenario": self.scenario, "simulator": self.simulator,
                 "interaction": self.interaction, "residual": self.residual}
        return {k: (v / total if total > 0 else 0.0) for k, v in parts.items()}


def crossed_components(scores: ArrayLike) -> CrossedComponents:
    """Components of ``scores``, an array of shape (scenarios, simulators, epochs) with no
    missing cell. With one epoch the interaction cannot be told from the residual: it is 0
    and the residual holds both. Raises :class:`ValueError` for a shape other than 3-D with
    at least 2 scenarios and 2 simulators, or for a missing (NaN) score."""
    y = np.asarray(scores, dtype=float)
    if y.ndim != 3 or y.shape[0] < 2 or y.shape[1] < 2 or y.shape[2] < 1:
        raise ValueError("expected scores of shape (scenarios >= 2, simulators >= 2, "
                         f"epochs >= 1), not {y.shape}")
    if np.isnan(y).any():
        raise ValueError("a cell is missing a score: the decomposition needs balanced data")
    a, b, n = y.shape
    grand = y.mean()
    cell = y.mean(axis=2)
    ms_a = b * n * float(((y.mean(axis=(1, 2)) - grand) ** 2).sum()) / (a - 1)
    ms_b = a * n * float(((y.mean(axis=(0, 2)) - grand) ** 2).sum()) / (b - 1)
    inter = cell - cell.mean(axis=1, keepdims=True) - cell.mean(axis=0, keepdims=True) + grand
    ms_ab = n * float((inter ** 2).sum()) / ((a - 1) * (b - 1))
    if n == 1:  # no replication: the interaction mean square is the residual
        return CrossedComponents(scenario=max((ms_a - ms_ab) / b, 0.0),
                                 simulator=max((ms_b - ms_ab) / a, 0.0),
                                 interaction=0.0, residual=ms_ab)
    ms_e = float(((y - cell[:, :, None]) ** 2).sum()) / (a * b * (n - 1))
    return CrossedComponents(
        scenario=max((ms_a - ms_ab) / (b * n), 0.0),
        simulator=max((ms_b - ms_ab) / (a * n), 0.0),
        interaction=max((ms_ab - ms_e) / n, 0.0),
        residual=ms_e,
    )
