"""The crossed decomposition against statsmodels' two-way ANOVA on the same data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm

from harness.stats.crossed_variance import crossed_components


def _data(seed: int, a: int = 12, b: int = 3, n: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(0, 0.3, (a, 1, 1)) + rng.normal(0, 0.2, (1, b, 1))
            + rng.normal(0, 0.1, (a, b, 1)) + rng.normal(0, 0.15, (a, b, n)))


def test_components_equal_those_from_statsmodels_mean_squares() -> None:
    y = _data(1)
    a, b, n = y.shape
    frame = pd.DataFrame([{"scenario": i, "simulator": j, "score": y[i, j, k]}
                          for i in range(a) for j in range(b) for k in range(n)])
    table = anova_lm(ols("score ~ C(scenario) * C(simulator)", frame).fit())
    ms = table["mean_sq"]
    ms_a, ms_b = ms["C(scenario)"], ms["C(simulator)"]
    ms_ab, ms_e = ms["C(scenario):C(simulator)"], ms["Residual"]
    got = crossed_components(y)
    assert got.residual == pytest.approx(ms_e)
    assert got.interaction == pytest.approx(max((ms_ab - ms_e) / n, 0))
    assert got.scenario == pytest.approx(max((ms_a - ms_ab) / (b * n), 0))
    assert got.simulator == pytest.approx(max((ms_b - ms_ab) / (a * n), 0))
    assert sum(got.shares().values()) == pytest.approx(1)


def test_known_components_are_recovered_on_average() -> None:
    estimates = np.array([[*vars(crossed_components(_data(s, a=30, b=6))).values()]
                          for s in range(200)])
    assert estimates.mean(axis=0) == pytest.approx([0.09, 0.04, 0.01, 0.0225], rel=0.3)


def test_missing_cell_is_refused() -> None:
    y = _data(2)
    y[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="balanced"):
        crossed_components(y)
