"""Reviewers' agreement on a run's labels: Krippendorff's alpha per target, cross-checked
against the ``krippendorff`` package, with scipy's percentile bootstrap interval."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats

from harness.calibration import reviewer_agreement
from tests.helpers.labelled_runs import label

CORRECTNESS = "criterion:final_response_quality/correctness"


def _labels(target: str, matrix: list[list[float | None]], *, as_bool: bool = False) -> list:
    """Labels of reviewers r0, r1 … (columns) on samples s0, s1 … (rows)."""
    out = []
    for row, values in enumerate(matrix):
        for col, value in enumerate(values):
            if value is not None:
                out.append(label(scenario_id=f"s{row}", epoch=0, annotator=f"r{col}",
                                 target=target, value=bool(value) if as_bool else value,
                                 random=row % 2 == 0))
    return out


RATINGS = [[1, 1, 2], [2, 2, None], [3, 4, 4], [5, 5, 5], [4, 3, None], [2, None, None],
           [1, 2, 1], [5, 4, 5], [3, 3, 2], [4, 4, 4]]


# scipy warns when some resamples are undefined (all one value); they are compared below.
@pytest.mark.filterwarnings("ignore:The BCa confidence interval cannot be calculated")
@pytest.mark.parametrize(("target", "level", "as_bool", "matrix"), [
    (CORRECTNESS, "ordinal", False, RATINGS),
    ("score", "interval", False, [[None if v is None else v / 5 for v in row]
                                  for row in RATINGS]),
    ("passed", "nominal", True, [[None if v is None else int(v >= 3) for v in row]
                                 for row in RATINGS]),
])
def test_alpha_per_target_matches_the_krippendorff_package(
        target: str, level: str, as_bool: bool, matrix: list[list[float | None]]) -> None:
    found = reviewer_agreement(_labels(target, matrix, as_bool=as_bool), n_resamples=300,
                               seed=7)[target]
    shared = np.array([[np.nan if v is None else v for v in row] for row in matrix
                       if sum(v is not None for v in row) >= 2], dtype=float)
    assert found.level == level
    assert found.n_samples == 9 and found.n_labels == int((~np.isnan(shared)).sum())
    assert found.reviewers == ["r0", "r1", "r2"]
    expected = krippendorff.alpha(reliability_data=shared.T, level_of_measurement=level)
    assert found.alpha.value == pytest.approx(expected, abs=1e-12)
    # The interval: scipy's percentile bootstrap over samples with the same seed, alpha of
    # each resample computed by the krippendorff package.
    def alpha_of(idx: np.ndarray) -> float:
        try:
            return float(krippendorff.alpha(reliability_data=shared[idx.astype(int)].T,
                                            level_of_measurement=level))
        except ValueError:  # a resample with one value: undefined (ours leaves it out)
            return float("nan")

    boot = stats.bootstrap((np.arange(len(shared)),), alpha_of, vectorized=False,
                           n_resamples=300, method="percentile", confidence_level=0.95,
                           rng=np.random.default_rng(7))
    # Resamples where alpha is undefined (one value only) are left out and counted.
    replicates = boot.bootstrap_distribution
    defined = replicates[np.isfinite(replicates)]
    assert found.alpha.resamples_undefined == len(replicates) - len(defined)
    low, high = np.percentile(defined, [2.5, 97.5])
    assert found.alpha.ci_low == pytest.approx(low, abs=1e-9)
    assert found.alpha.ci_high == pytest.approx(high, abs=1e-9)
    if found.alpha.resamples_undefined == 0:
        assert (low, high) == pytest.approx((boot.confidence_interval.low,
                                             boot.confidence_interval.high), abs=1e-9)


def test_the_last_label_of_a_reviewer_counts_and_one_reviewer_gives_no_alpha() -> None:
    early = label(annotator="ana", value=False, labelled_at="2026-11-27T10:00:00Z")
    labels = [early, label(annotator="ana", value=True, labelled_at="2026-11-27T11:00:00Z")]
    alone = reviewer_agreement(labels)["passed"]
    assert alone.n_samples == 0 and alone.alpha.value is None
    assert alone.alpha.undefined is not None and "two reviewers" in alone.alpha.undefined
    both = reviewer_agreement([*labels, label(annotator="bo", value=True)])["passed"]
    assert both.n_samples == 1 and both.n_labels == 2
    assert both.reviewers == ["ana", "bo"]


def test_the_estimate_says_its_level_and_its_defaults_are_2000_resamples_seed_0() -> None:
    labels = _labels(CORRECTNESS, RATINGS)
    found = reviewer_agreement(labels)[CORRECTNESS]
    assert found.alpha.detail == "ordinal level, samples labelled by two or more reviewers"
    explicit = reviewer_agreement(labels, n_resamples=2000, confidence=0.95, seed=0)
    assert found == explicit[CORRECTNESS]
    for other in ({"n_resamples": 2001}, {"seed": 1}):
        moved = reviewer_agreement(labels, **other)[CORRECTNESS].alpha  # type: ignore[arg-type]
        assert (moved.ci_low, moved.ci_high) != (found.alpha.ci_low, found.alpha.ci_high)
    alone = reviewer_agreement([label(value=True)])["passed"].alpha
    assert (alone.n, alone.detail) == (0, "nominal level, samples labelled by two or more "
                                       "reviewers")
    assert alone.undefined == "krippendorff_alpha: no sample has labels of two reviewers yet"
