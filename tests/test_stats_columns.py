"""Score columns and per-scenario figures in detail: the default pass rule on a declared
range, which scenario a bad score is blamed on, and per-scenario edge cases (two equal
epochs, one pass in three, pass^k past the passes, a declared range)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from harness.stats import scenario_stats
from harness.stats.columns import ScoreColumns, pass_threshold
from harness.stats.sampling import pass_hat_k_table, scenario_columns


def test_the_pass_threshold_is_the_top_less_a_millionth_of_the_width() -> None:
    assert pass_threshold() == 1.0 - 1e-6
    assert pass_threshold((2.0, 10.0)) == 10.0 - 8e-6
    # A score exactly on the threshold passes; one just below does not.
    columns = ScoreColumns.from_mapping({"a": [10.0 - 8e-6, 9.99999, 9.999995]},
                                        score_range=(2.0, 10.0))
    assert columns.passed.tolist() == [True, False, True]


def test_a_non_finite_score_names_its_scenario() -> None:
    # The bad score opens the second scenario: the message must not blame the first.
    for bad, where in (([[1.0], [math.nan, 1.0], [1.0]], "b"),
                       ([[1.0, 0.5], [1.0], [0.0, math.inf]], "c")):
        scores = dict(zip("abc", bad, strict=True))
        with pytest.raises(ValueError, match=f"^scenario '{where}' has a non-finite score$"):
            ScoreColumns.from_mapping(scores)
    with pytest.raises(ValueError, match="^scenario 'a': 1 passed flags for 2 scores$"):
        ScoreColumns.from_mapping({"a": [1.0, 0.0]}, {"a": [True]})


def test_per_scenario_edge_cases() -> None:
    columns = ScoreColumns.from_mapping({"same": [1.0, 1.0], "once": [1.0, 0.0, 0.0],
                                         "one": [0.5]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one epoch: NaN figures without a numpy warning
        per = scenario_columns(columns)
    assert per.confidence == 0.95
    rows = {row["scenario_id"]: row for row in per.rows()}
    assert rows["same"]["sd"] == 0.0 and rows["one"]["sd"] is None
    assert rows["once"]["flaky"] and not rows["same"]["flaky"]
    assert type(rows["once"]["n_passed"]) is int
    assert rows["once"]["pass_rate_ci_low"] == pytest.approx(
        proportion_confint(1, 3, alpha=0.05, method="wilson")[0], abs=1e-12)


def test_pass_hat_k_past_the_passes_is_plus_zero() -> None:
    hat = pass_hat_k_table(np.array([3, 5]), np.array([1, 2]), 3)
    assert hat.ravel().tolist() == pytest.approx([1 / 3, 0.0, 0.0, 0.4, 0.1, 0.0])
    assert not np.signbit(hat).any()  # never -0.0, which JSON would print as -0.0


def test_scenario_stats_on_a_declared_range() -> None:
    s = scenario_stats("s", [10.0, 10.0, 10.0], score_range=(0.0, 10.0))
    assert s.mean_ci_low == pytest.approx(10 * 0.025 ** (1 / 3)) and s.mean_ci_high == 10.0
    # 5 of 10 would pass on [0, 1]; on [0, 10] only the top passes.
    assert scenario_stats("s", [5.0, 10.0], score_range=(0.0, 10.0)).pass_rate == 0.5
