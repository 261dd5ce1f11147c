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


def _z(alpha: float = 0.05, power: float = 0.8) -> float:
    return float(sps.norm.ppf(1.0 - alpha / 2.0) + sps.norm.ppf(power))


DESIGN = {"between_variance": 0.04, "within_variance": 0.1}


@pytest.mark.parametrize(("changes", "message"), [
    ({"alpha": 1.0}, "alpha must be strictly between 0 and 1, got 1.0"),
    ({"alpha": 1.5}, "alpha must be strictly between 0 and 1, got 1.5"),
    ({"power": 0.0}, "power must be strictly between 0 and 1, got 0.0"),
    ({"correlation": -1.5}, "correlation must be between -1 and 1, got -1.5"),
    ({"correlation": 1.5}, "correlation must be between -1 and 1, got 1.5"),
    ({"between_variance": -0.1}, "variances must be finite and non-negative"),
    ({"within_variance": -0.1}, "variances must be finite and non-negative"),
    ({"within_variance": float("inf")}, "variances must be finite and non-negative"),
])
def test_every_power_function_checks_its_inputs(changes: dict[str, float], message: str) -> None:
    args = {**DESIGN, **changes}
    with pytest.raises(ValueError, match=f"^{message}$"):
        minimum_detectable_difference(n_scenarios=10, epochs=3, **args)
    with pytest.raises(ValueError, match=f"^{message}$"):
        scenarios_for_target(0.1, epochs=3, **args)
    with pytest.raises(ValueError, match=f"^{message}$"):
        epochs_for_target(0.1, n_scenarios=10, **args)


def test_power_inputs_at_their_limits_are_accepted() -> None:
    # Correlations of exactly -1 and 1, a between variance above 1, and one scenario.
    for rho in (-1.0, 1.0):
        minimum_detectable_difference(n_scenarios=1, epochs=1, correlation=rho, **DESIGN)
        scenarios_for_target(0.1, epochs=1, correlation=rho, **DESIGN)
        epochs_for_target(0.1, n_scenarios=1, correlation=rho, **DESIGN)
    big = {"between_variance": 2.0, "within_variance": 3.0}
    minimum_detectable_difference(n_scenarios=1, epochs=1, **big)
    scenarios_for_target(0.1, epochs=1, **big)
    epochs_for_target(0.1, n_scenarios=1, **big)
    with pytest.raises(ValueError, match="^need at least 1 scenario and a positive number of "
                       "epochs$"):
        minimum_detectable_difference(n_scenarios=0, epochs=1, **DESIGN)
    with pytest.raises(ValueError, match="^need at least 1 scenario and a positive number of "
                       "epochs$"):
        minimum_detectable_difference(n_scenarios=1, epochs=0, **DESIGN)
    for target, epochs in ((0.0, 1), (0.1, 0)):
        with pytest.raises(ValueError, match="^target_difference and epochs must be positive$"):
            scenarios_for_target(target, epochs=epochs, **DESIGN)
    for target, n in ((0.0, 1), (0.1, 0)):
        with pytest.raises(ValueError, match="^target_difference must be positive and "
                           "n_scenarios at least 1$"):
            epochs_for_target(target, n_scenarios=n, **DESIGN)


def test_pairing_and_correlation_by_hand() -> None:
    z = _z(0.1, 0.9)
    paired = minimum_detectable_difference(n_scenarios=20, epochs=4, alpha=0.1, power=0.9,
                                           correlation=0.5, **DESIGN)
    v = 2 * 0.5 * 0.04 + 2 * 0.1 / 4
    assert paired.minimum_detectable_difference == pytest.approx(z * np.sqrt(v / 20))
    assert paired.correlation == 0.5 and paired.paired
    unpaired = minimum_detectable_difference(n_scenarios=20, epochs=4, alpha=0.1, power=0.9,
                                             paired=False, correlation=0.5, **DESIGN)
    v = 2 * 0.04 + 2 * 0.1 / 4
    assert unpaired.minimum_detectable_difference == pytest.approx(z * np.sqrt(v / 20))
    assert unpaired.correlation == 0.0 and unpaired.floor_with_unlimited_epochs == (
        pytest.approx(z * np.sqrt(2 * 0.04 / 20)))
    # Scenarios: paired by default; with a correlation the between part shrinks.
    v = 2 * 0.5 * 0.04 + 2 * 0.1 / 4
    need = scenarios_for_target(0.05, epochs=4, correlation=0.5, **DESIGN)
    assert need.n_scenarios == int(np.ceil(_z() ** 2 * v / 0.05**2))
    assert need.achievable and need.solved_for == "scenarios" and need.epochs == 4


def test_epochs_for_target_by_hand_and_its_arguments_passed_on() -> None:
    args = {"alpha": 0.1, "power": 0.9, "paired": True, "correlation": 0.3}
    got = epochs_for_target(0.15, n_scenarios=30, **args, **DESIGN)  # type: ignore[arg-type]
    z = _z(0.1, 0.9)
    room = 0.15**2 * 30 / z**2 - 2 * 0.7 * 0.04
    assert got.epochs == int(np.ceil(2 * 0.1 / room))
    assert got.achieved_difference == minimum_detectable_difference(
        n_scenarios=30, epochs=got.epochs, **args, **DESIGN).minimum_detectable_difference
    # Out of reach by epochs: the scenarios needed, at the same alpha, power and pairing.
    far = epochs_for_target(0.02, n_scenarios=30, **args, **DESIGN)  # type: ignore[arg-type]
    assert not far.achievable and far.epochs is None and far.achieved_difference is None
    k_hint = int(np.ceil(2 * 0.1 / (0.1 * 2 * 0.7 * 0.04)))
    assert far.scenarios_needed == scenarios_for_target(
        0.02, epochs=k_hint, **args, **DESIGN).n_scenarios  # type: ignore[arg-type]
    assert far.reason is not None and far.reason.endswith(
        f"About {far.scenarios_needed} scenarios at {k_hint} epochs would.")
    # A tiny within variance still asks for at least 1 epoch in the hint and the answer.
    tiny = {"between_variance": 0.04, "within_variance": 1e-6}
    assert epochs_for_target(0.5, n_scenarios=30, **tiny).epochs == 1
    hint = epochs_for_target(0.02, n_scenarios=30, **tiny).reason
    assert hint is not None and hint.endswith("scenarios at 1 epochs would.")


def test_epochs_for_target_when_the_room_is_exactly_used_up() -> None:
    # Unpaired, between = d^2 C / (2 z^2): the between part alone is exactly the target.
    z = _z()
    exact = 0.1**2 * 10 / (z * z)
    full = {"between_variance": exact / 2.0, "paired": False}
    assert epochs_for_target(0.1, n_scenarios=10, within_variance=0.0, **full).epochs == 1
    assert not epochs_for_target(0.1, n_scenarios=10, within_variance=0.1, **full).achievable
    # No between variance and within = 2 * room: exactly 4 epochs, not 5.
    assert epochs_for_target(0.1, n_scenarios=10, between_variance=0.0,
                             within_variance=2.0 * exact).epochs == 4
    # Within variance 1 is not the "no within variance" case.
    assert epochs_for_target(0.1, n_scenarios=10, between_variance=0.0,
                             within_variance=1.0).epochs == int(np.ceil(2.0 / exact))


def test_design_for_target_passes_the_whole_design_on() -> None:
    from harness.stats.power import design_for_target

    analysis = minimum_detectable_difference(n_scenarios=25, epochs=3, alpha=0.1, power=0.9,
                                             paired=False, correlation=0.4, **DESIGN)
    design = design_for_target(analysis, 0.07)
    assert design is not None and design.target_source == "given"
    same = {"alpha": 0.1, "power": 0.9, "paired": False, "correlation": 0.0}
    assert design.epochs_with_current_scenarios == epochs_for_target(
        0.07, n_scenarios=25, **same, **DESIGN)  # type: ignore[arg-type]
    assert design.scenarios_with_current_epochs == scenarios_for_target(
        0.07, epochs=3, **same, **DESIGN)  # type: ignore[arg-type]
    paired = minimum_detectable_difference(n_scenarios=25, epochs=3, correlation=0.4,
                                           **DESIGN)
    again = design_for_target(paired, 0.07)
    assert again is not None
    assert again.epochs_with_current_scenarios == epochs_for_target(
        0.07, n_scenarios=25, correlation=0.4, **DESIGN)
    assert again.scenarios_with_current_epochs == scenarios_for_target(
        0.07, epochs=3, correlation=0.4, **DESIGN)
    for bad in (0.0, -0.1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="^the target difference must be a positive "
                           "number, got "):
            design_for_target(analysis, bad)
