"""Power formulas against the textbook sample size, statsmodels' normal power solver and a
simulation of paired runs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.power import NormalIndPower

from harness.stats import epochs_for_target, minimum_detectable_difference, scenarios_for_target


def test_textbook_two_sample_size() -> None:
    # Half a standard deviation, alpha 0.05 two-sided, power 0.8: 63 per group by the
    # normal formula 2 (1.96 + 0.8416)^2 / 0.25 = 62.8.
    plan = scenarios_for_target(
        0.5, epochs=1, between_variance=1.0, within_variance=0.0, paired=False
    )
    assert plan.n_scenarios == 63
    assert plan.achieved_difference is not None and plan.achieved_difference <= 0.5


def test_unpaired_mde_matches_statsmodels() -> None:
    between, within, k, c = 0.05, 0.2, 4, 80
    got = minimum_detectable_difference(
        n_scenarios=c, epochs=k, between_variance=between, within_variance=within,
        paired=False,
    )
    sd_one = np.sqrt(between + within / k)  # sd of one scenario mean
    d = NormalIndPower().solve_power(nobs1=c, alpha=0.05, power=0.8, ratio=1.0)
    assert got.minimum_detectable_difference == pytest.approx(d * sd_one, rel=1e-4)


def test_paired_mde_matches_one_sample_statsmodels() -> None:
    between, within, k, c, rho = 0.05, 0.2, 2, 50, 0.7
    got = minimum_detectable_difference(
        n_scenarios=c, epochs=k, between_variance=between, within_variance=within,
        paired=True, correlation=rho, alpha=0.01, power=0.9,
    )
    sd_diff = np.sqrt(2 * (1 - rho) * between + 2 * within / k)
    # ratio=0 is statsmodels' one-sample case: the paired differences.
    d = NormalIndPower().solve_power(nobs1=c, alpha=0.01, power=0.9, ratio=0.0)
    assert got.minimum_detectable_difference == pytest.approx(d * sd_diff, rel=1e-4)
    assert got.floor_with_unlimited_epochs == pytest.approx(
        d * np.sqrt(2 * (1 - rho) * between), rel=1e-4
    )


def test_simulated_power_at_the_mde_is_the_nominal_power() -> None:
    c, k, between, within, rho = 60, 3, 0.04, 0.15, 0.6
    mde = minimum_detectable_difference(
        n_scenarios=c, epochs=k, between_variance=between, within_variance=within,
        paired=True, correlation=rho,
    ).minimum_detectable_difference
    rng = np.random.default_rng(0)
    sims = 6000
    cov = between * np.array([[1, rho], [rho, 1]])
    true = rng.multivariate_normal([0.0, mde], cov, size=(sims, c))  # (sims, c, 2)
    noise = rng.normal(0, np.sqrt(within), size=(sims, c, 2, k)).mean(axis=3)
    means = true + noise
    d = means[..., 1] - means[..., 0]
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(c))
    power = np.mean(np.abs(t) > sps.t.ppf(0.975, c - 1))
    # Normal approximation: the t test on 59 df is a little less powerful than 0.8.
    assert power == pytest.approx(0.8, abs=0.025)


def test_epochs_for_target_is_the_smallest_that_works() -> None:
    kw = {"n_scenarios": 50, "between_variance": 0.02, "within_variance": 0.2,
          "correlation": 0.5}
    plan = epochs_for_target(0.12, **kw)
    assert plan.achievable and plan.epochs is not None
    k = plan.epochs
    at = minimum_detectable_difference(epochs=k, **kw).minimum_detectable_difference
    before = minimum_detectable_difference(epochs=k - 1, **kw).minimum_detectable_difference
    assert at <= 0.12 < before
    assert plan.achieved_difference == pytest.approx(at)


def test_epochs_cannot_beat_the_between_scenario_floor() -> None:
    plan = epochs_for_target(
        0.02, n_scenarios=20, between_variance=0.05, within_variance=0.2
    )
    assert not plan.achievable and plan.epochs is None
    assert plan.reason is not None and "scenarios" in plan.reason
    assert plan.scenarios_needed is not None
    more = scenarios_for_target(
        0.02, epochs=40, between_variance=0.05, within_variance=0.2
    )
    # The hint's epochs keep 2 within / K at a tenth of 2 between: 2*0.2 / (0.1*0.1) = 40.
    assert plan.scenarios_needed == more.n_scenarios


def test_no_within_noise_needs_one_epoch() -> None:
    plan = epochs_for_target(0.5, n_scenarios=30, between_variance=0.1, within_variance=0.0)
    assert plan.achievable and plan.epochs == 1


@pytest.mark.parametrize(
    "kwargs",
    [{"alpha": 0.0}, {"power": 1.0}, {"correlation": 1.5}, {"between_variance": -1.0},
     {"n_scenarios": 0}, {"epochs": 0}],
)
def test_bad_arguments(kwargs: dict[str, float]) -> None:
    args = {"n_scenarios": 10, "epochs": 2, "between_variance": 0.1, "within_variance": 0.1}
    args.update(kwargs)
    with pytest.raises(ValueError):
        minimum_detectable_difference(**args)  # type: ignore[arg-type]
