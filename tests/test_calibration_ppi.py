"""PPI++ for a mean: the published formula written out independently, lambda=0 = classical,
and a small coverage simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from harness.calibration.bootstrap import UndefinedStatistic
from harness.calibration.ppi import power_tuned_lambda, ppi_mean


def _data(rng: np.random.Generator, n: int, big_n: int, noise: float = 0.5):  # type: ignore[no-untyped-def]
    f_all = rng.normal(3, 1, n + big_n)
    y = f_all[:n] + 0.3 + rng.normal(0, noise, n)  # the judge is biased by −0.3
    return y, f_all[:n], f_all[n:]


def test_estimate_and_interval_follow_the_published_formula() -> None:
    y, f, f_tilde = _data(np.random.default_rng(1), 40, 400)
    n, big_n = len(y), len(f_tilde)
    # PPI++ (Angelopoulos, Duchi, Zrnic 2023), mean estimation, written out directly:
    # lambda* = Cov(Y, f) / ((1 + n/N) Var(f)), theta = mean(Y - lambda f) + lambda mean(f~)
    lam = np.cov(y, f, bias=True)[0, 1] / ((1 + n / big_n) * np.var(np.r_[f, f_tilde], ddof=1))
    theta = np.mean(y - lam * f) + lam * np.mean(f_tilde)
    se = np.sqrt(lam**2 * np.var(f_tilde, ddof=1) / big_n + np.var(y - lam * f, ddof=1) / n)
    z = stats.norm.ppf(0.975)
    result = ppi_mean(y, f, f_tilde, 0.95)
    assert result.lambda_tuned and result.lam == pytest.approx(lam)
    assert result.estimate == pytest.approx(theta)
    assert result.stderr == pytest.approx(se)
    assert (result.ci_low, result.ci_high) == pytest.approx((theta - z * se, theta + z * se))
    classical_se = np.std(y, ddof=1) / np.sqrt(n)
    assert result.classical_ci_high - result.classical_ci_low == pytest.approx(2 * z * classical_se)
    assert result.effective_human_labels == pytest.approx(n * classical_se**2 / se**2)
    # a good judge on 400 extra items is worth more than the 40 human labels alone
    assert result.effective_human_labels > n  # type: ignore[operator]
    assert result.ci_high - result.ci_low < result.classical_ci_high - result.classical_ci_low


def test_lambda_zero_is_the_classical_estimate_and_lambda_one_is_ppi() -> None:
    y, f, f_tilde = _data(np.random.default_rng(2), 30, 300)
    classical = ppi_mean(y, f, f_tilde, 0.9, lam=0.0)
    assert not classical.lambda_tuned
    assert classical.estimate == pytest.approx(classical.classical_estimate)
    assert classical.ci_low == pytest.approx(classical.classical_ci_low)
    assert classical.ci_high == pytest.approx(classical.classical_ci_high)
    assert classical.effective_human_labels == pytest.approx(30)
    original = ppi_mean(y, f, f_tilde, 0.9, lam=1.0)
    assert original.estimate == pytest.approx(np.mean(f_tilde) + np.mean(y - f))


def test_constant_judge_gets_lambda_zero() -> None:
    y = np.array([1.0, 2.0, 3.0])
    assert power_tuned_lambda(y, np.ones(3), np.ones(10)) == 0.0


def test_tuned_lambda_is_clipped_to_the_unit_interval_as_in_ppi_py() -> None:
    rng = np.random.default_rng(5)
    y, f, f_tilde = _data(rng, 50, 500)
    # A judge that disagrees with people: the raw optimum is negative; clipped to classical.
    raw = np.cov(y, -f, bias=True)[0, 1] / ((1 + 50 / 500) * np.var(np.r_[-f, -f_tilde], ddof=1))
    assert raw < -0.5
    assert power_tuned_lambda(y, -f, -f_tilde) == 0.0
    flipped = ppi_mean(y, -f, -f_tilde, 0.95)
    assert flipped.estimate == pytest.approx(flipped.classical_estimate)
    # A judge on a compressed scale: the raw optimum is about 3; clipped to the original PPI.
    raw = np.cov(y, f / 3, bias=True)[0, 1] / ((1 + 50 / 500) * np.var(np.r_[f, f_tilde] / 3,
                                                                        ddof=1))
    assert raw > 2
    assert power_tuned_lambda(y, f / 3, f_tilde / 3) == 1.0
    compressed = ppi_mean(y, f / 3, f_tilde / 3, 0.95)
    assert compressed.estimate == pytest.approx(np.mean(f_tilde / 3) + np.mean(y - f / 3))


def test_needs_labelled_and_unlabelled_items() -> None:
    with pytest.raises(UndefinedStatistic, match="judge-only items"):
        ppi_mean(np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.array([]), 0.95)
    with pytest.raises(UndefinedStatistic, match="at least 2 human-labelled"):
        ppi_mean(np.array([1.0]), np.array([1.0]), np.array([1.0, 2.0]), 0.95)


def test_coverage_simulation() -> None:
    """Over repeated draws the 90% PPI++ interval covers the true mean about 90% of the time."""
    rng = np.random.default_rng(12345)
    true_mean = 3.3  # E[f] + 0.3
    repeats, covered, narrower = 300, 0, 0
    for _ in range(repeats):
        y, f, f_tilde = _data(rng, 60, 600)
        result = ppi_mean(y, f, f_tilde, 0.9)
        covered += result.ci_low <= true_mean <= result.ci_high
        narrower += (result.ci_high - result.ci_low) < (
            result.classical_ci_high - result.classical_ci_low)
    # binomial(300, 0.9) has sd ≈ 0.017: allow about three of them
    assert 0.85 <= covered / repeats <= 0.95
    assert narrower / repeats > 0.9


def test_pass_rate_target_on_binary_labels() -> None:
    rng = np.random.default_rng(5)
    f_all = rng.random(500) < 0.6
    y = np.where(rng.random(50) < 0.85, f_all[:50], ~f_all[:50]).astype(float)
    result = ppi_mean(y, f_all[:50].astype(float), f_all[50:].astype(float), 0.95,
                      target="pass_rate")
    assert result.target == "pass_rate" and 0 <= result.estimate <= 1


# Twelve labelled items and 24 judged only, and what the PPI authors' package gave on them
# (ppi_python 0.2.3: ppi_mean_pointestimate and ppi_mean_ci with alpha=0.05, lam=None and
# lam=0.5), run once outside this suite: it needs numba and downloads its datasets, so it is
# not a test dependency.
PPI_Y = [3.38, 4.14, 2.84, 2.45, 3.01, 2.44, 2.85, 4.78, 3.59, 2.01, 4.32, 3.82]
PPI_F = [3.0, 3.3, 2.73, 2.11, 2.55, 2.01, 3.06, 4.34, 2.51, 2.38, 3.49, 3.36]
PPI_FT = [3.11, 2.07, 2.97, 3.7, 1.66, 2.54, 1.1, 1.71, 1.16, 2.76, 1.73, 3.27, 3.16, 2.81,
          0.48, 2.46, 2.95, 3.11, 1.47, 2.52, 2.02, 2.19, 4.06, 2.19]
PPI_PY = {None: (3.0772228778487767, 2.7140282216142833, 3.44041753408327),
          0.5: (3.0425, 2.684977215413067, 3.400022784586933)}


@pytest.mark.parametrize("lam", [None, 0.5])
def test_the_estimate_and_tuned_lambda_are_the_ppi_authors_packages(lam: float | None) -> None:
    y, f, f_tilde = (np.array(v) for v in (PPI_Y, PPI_F, PPI_FT))
    estimate, low, high = PPI_PY[lam]
    result = ppi_mean(y, f, f_tilde, 0.95, lam=lam)
    assert result.estimate == pytest.approx(estimate, abs=1e-12)
    # the package tunes the same lambda (read back from its estimate)
    tuned = (estimate - y.mean()) / (f_tilde.mean() - f.mean())
    assert result.lam == pytest.approx(tuned if lam is None else lam, abs=1e-12)
    # Its interval takes standard deviations with ddof=0, ours with ddof=1: ours is wider,
    # by at most sqrt(n / (n - 1)) for the 12 labels (less for the judge-only part).
    ratio = (result.ci_high - result.ci_low) / (high - low)
    assert 1.0 < ratio <= np.sqrt(12 / 11)
    assert (result.ci_low + result.ci_high) / 2 == pytest.approx((low + high) / 2, abs=1e-12)
