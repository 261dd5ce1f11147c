"""PPI++ at its edges: the fewest items it takes (two labelled, two judge-only), labels given
as Python booleans or integers, and no effective sample size when there is no variance to
compare; the estimate and interval against the formula written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from harness.calibration.bootstrap import UndefinedStatistic
from harness.calibration.ppi import ppi_mean


def _by_hand(y: list[float], f: list[float], f_tilde: list[float], lam: float,
             confidence: float) -> tuple[float, float, float]:
    n, big_n = len(y), len(f_tilde)
    estimate = np.mean(y) + lam * (np.mean(f_tilde) - np.mean(f))
    variance = (lam**2 * np.var(f_tilde, ddof=1) / big_n
                + np.var(np.subtract(y, np.multiply(lam, f)), ddof=1) / n)
    z = stats.norm.ppf(0.5 + confidence / 2)
    return float(estimate), float(estimate - z * math.sqrt(variance)), \
        float(estimate + z * math.sqrt(variance))


def test_two_labelled_and_two_judge_only_items_are_enough() -> None:
    result = ppi_mean([1.0, 3.0], [2.0, 3.0], [4.0, 1.0], 0.9, lam=0.5)
    assert (result.estimate, result.ci_low, result.ci_high) == pytest.approx(
        _by_hand([1.0, 3.0], [2.0, 3.0], [4.0, 1.0], 0.5, 0.9))
    with pytest.raises(UndefinedStatistic) as info:
        ppi_mean([1.0, 3.0], [2.0, 3.0], [4.0], 0.9)
    assert str(info.value) == (
        "ppi: needs judge-only items (a judge score and human: null), got 1; PPI adds the many "
        "items people did not label to the few they did")


def test_labels_given_as_booleans_and_integers() -> None:
    y, f, f_tilde = [True, False, True, True], [True, False, False, True], [True, False, True]
    result = ppi_mean(y, f, f_tilde, 0.95, lam=1.0, target="pass_rate")  # type: ignore[arg-type]
    expected = _by_hand([1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 1.0], 1.0, 0.95)
    assert (result.estimate, result.ci_low, result.ci_high) == pytest.approx(expected)
    tuned = ppi_mean([3, 1, 2, 5], [3, 2, 2, 4], [1, 5, 4], 0.95)  # type: ignore[arg-type]
    floats = ppi_mean([3.0, 1.0, 2.0, 5.0], [3.0, 2.0, 2.0, 4.0], [1.0, 5.0, 4.0], 0.95)
    assert tuned == floats


def test_no_effective_sample_size_without_variance() -> None:
    # every label alike: the classical variance is zero, so no ratio of variances exists
    flat = ppi_mean([2.0, 2.0, 2.0], [1.0, 2.0, 3.0], [1.0, 3.0], 0.95, lam=0.0)
    assert flat.stderr == 0.0 and flat.effective_human_labels is None
    spread = ppi_mean([1.0, 2.0, 4.0], [1.0, 2.0, 4.0], [1.0, 3.0, 2.0], 0.95, lam=0.0)
    assert spread.effective_human_labels == pytest.approx(3.0)  # lambda 0: the human labels


def test_no_effective_sample_size_when_the_human_labels_are_all_alike() -> None:
    # the PPI variance is not zero (the judge varies), the classical one is: no ratio
    alike = ppi_mean([3.0, 3.0, 3.0], [1.0, 2.0, 4.0], [2.0, 5.0, 1.0], 0.95, lam=0.5)
    assert alike.stderr > 0 and alike.classical_stderr == 0.0
    assert alike.effective_human_labels is None
    # and none when the PPI variance is zero (a judge off by a constant, judge-only items alike)
    exact = ppi_mean([1.0, 2.0, 4.0], [2.0, 3.0, 5.0], [3.0, 3.0], 0.95, lam=1.0)
    assert exact.stderr == 0.0 and exact.classical_stderr > 0
    assert exact.effective_human_labels is None
