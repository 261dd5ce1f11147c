"""Power analysis for comparing two runs (Miller 2024, "Adding Error Bars to Evals", §5).

Each run's scenario mean has variance ``between + within / K`` (K epochs). The difference of
two runs on the same C scenarios (paired) has per-scenario variance
``2 (1 - rho) between + 2 within / K``, where rho is the correlation of the two models' true
scenario means (how much they find the same scenarios hard); on two independent scenario
sets of C each (unpaired) it is ``2 between + 2 within / K``. With ``SE = sqrt(v / C)`` the
minimum detectable difference at a two-sided level ``alpha`` and the given power is
``(z_{1-alpha/2} + z_{power}) * SE``. Both runs are assumed to have the same variance
components. The normal approximation (Miller's) is slightly optimistic with very few
scenarios, where the test itself uses a t distribution.

Epochs only shrink the within part: with ``between > 0`` there is a floor that no number of
epochs crosses, and then more scenarios are the only way to a smaller difference.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from harness.stats import lazy_scipy as sps


class PowerAnalysis(BaseModel):
    """The minimum detectable difference of a design, and the inputs it came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    minimum_detectable_difference: float
    stderr_of_difference: float
    floor_with_unlimited_epochs: float
    n_scenarios: int
    epochs: float
    between_variance: float
    within_variance: float
    alpha: float
    power: float
    paired: bool
    correlation: float
    method: str = (
        "Miller 2024: MDE = (z_{1-alpha/2} + z_power) * sqrt(v / C), "
        "v = 2(1-rho) between + 2 within / K (paired; rho = 0 when unpaired)"
    )


class DesignRequirement(BaseModel):
    """How many epochs (for fixed scenarios) or scenarios (for fixed epochs) reach a target
    minimum detectable difference. ``achievable`` is false when epochs cannot get there
    (the between-scenario floor); ``reason`` then says so and ``scenarios_needed`` gives
    the way out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_difference: float
    solved_for: Literal["epochs", "scenarios"]
    achievable: bool
    epochs: int | None
    n_scenarios: int
    achieved_difference: float | None
    scenarios_needed: int | None = None
    reason: str | None = None


def _check(alpha: float, power: float, correlation: float, *variances: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be strictly between 0 and 1, got {power!r}")
    if not -1.0 <= correlation <= 1.0:
        raise ValueError(f"correlation must be between -1 and 1, got {correlation!r}")
    if any(v < 0 or not math.isfinite(v) for v in variances):
        raise ValueError("variances must be finite and non-negative")


def _z_sum(alpha: float, power: float) -> float:
    return float(sps.norm.ppf(1.0 - alpha / 2.0) + sps.norm.ppf(power))


def _between_term(between: float, paired: bool, correlation: float) -> float:
    return 2.0 * (1.0 - correlation) * between if paired else 2.0 * between


def minimum_detectable_difference(
    *,
    n_scenarios: int,
    epochs: float,
    between_variance: float,
    within_variance: float,
    alpha: float = 0.05,
    power: float = 0.8,
    paired: bool = True,
    correlation: float = 0.0,
) -> PowerAnalysis:
    """Smallest true difference in suite means that a two-sided test at ``alpha`` detects
    with probability ``power``, for C scenarios and K epochs per scenario (K may be the
    harmonic mean of unequal counts). ``correlation`` is used only when ``paired``; 0 is the
    cautious choice when it is unknown (models usually agree on which scenarios are hard).

    Raises ``ValueError`` on ``n_scenarios < 1``, ``epochs <= 0``, a negative variance or
    ``alpha``, ``power``, ``correlation`` out of range.
    """
    _check(alpha, power, correlation, between_variance, within_variance)
    if n_scenarios < 1 or epochs <= 0:
        raise ValueError("need at least 1 scenario and a positive number of epochs")
    rho = correlation if paired else 0.0
    b = _between_term(between_variance, paired, rho)
    v = b + 2.0 * within_variance / epochs
    se = math.sqrt(v / n_scenarios)
    z = _z_sum(alpha, power)
    return PowerAnalysis(
        minimum_detectable_difference=z * se,
        stderr_of_difference=se,
        floor_with_unlimited_epochs=z * math.sqrt(b / n_scenarios),
        n_scenarios=n_scenarios,
        epochs=epochs,
        between_variance=between_variance,
        within_variance=within_variance,
        alpha=alpha,
        power=power,
        paired=paired,
        correlation=rho,
    )


def scenarios_for_target(
    target_difference: float,
    *,
    epochs: float,
    between_variance: float,
    within_variance: float,
    alpha: float = 0.05,
    power: float = 0.8,
    paired: bool = True,
    correlation: float = 0.0,
) -> DesignRequirement:
    """Number of scenarios (at least 2) needed so the minimum detectable difference is at
    most ``target_difference`` with K = ``epochs`` per scenario: ``ceil(z^2 v / d^2)``.

    Raises ``ValueError`` on a non-positive target or epochs, or inputs out of range.
    """
    _check(alpha, power, correlation, between_variance, within_variance)
    if target_difference <= 0 or epochs <= 0:
        raise ValueError("target_difference and epochs must be positive")
    rho = correlation if paired else 0.0
    v = _between_term(between_variance, paired, rho) + 2.0 * within_variance / epochs
    z = _z_sum(alpha, power)
    c = max(2, math.ceil(z * z * v / target_difference**2 - 1e-9))
    return DesignRequirement(
        target_difference=target_difference, solved_for="scenarios", achievable=True,
        # A harmonic mean of equal counts can land a hair above the integer.
        epochs=math.ceil(epochs - 1e-9), n_scenarios=c,
        achieved_difference=z * math.sqrt(v / c),
    )


def epochs_for_target(
    target_difference: float,
    *,
    n_scenarios: int,
    between_variance: float,
    within_variance: float,
    alpha: float = 0.05,
    power: float = 0.8,
    paired: bool = True,
    correlation: float = 0.0,
) -> DesignRequirement:
    """Epochs per scenario needed so the minimum detectable difference with ``n_scenarios``
    is at most ``target_difference``. When the between-scenario floor is already above the
    target, ``achievable`` is false and ``scenarios_needed`` says how many scenarios would
    reach it, at the number of epochs that keeps the within part at most a tenth of the
    between part (more epochs would hardly help).

    Raises ``ValueError`` on a non-positive target, ``n_scenarios < 1`` or inputs out of
    range.
    """
    _check(alpha, power, correlation, between_variance, within_variance)
    if target_difference <= 0 or n_scenarios < 1:
        raise ValueError("target_difference must be positive and n_scenarios at least 1")
    rho = correlation if paired else 0.0
    b = _between_term(between_variance, paired, rho)
    z = _z_sum(alpha, power)
    room = target_difference**2 * n_scenarios / (z * z) - b  # what is left for 2 within / K
    if within_variance == 0.0 and room >= 0:
        k = 1
    elif room <= 0:
        k_hint = max(1, math.ceil(2.0 * within_variance / max(0.1 * b, 1e-12)))
        need = scenarios_for_target(
            target_difference, epochs=k_hint, between_variance=between_variance,
            within_variance=within_variance, alpha=alpha, power=power, paired=paired,
            correlation=rho,
        )
        return DesignRequirement(
            target_difference=target_difference, solved_for="epochs", achievable=False,
            epochs=None, n_scenarios=n_scenarios, achieved_difference=None,
            scenarios_needed=need.n_scenarios,
            reason=(
                f"between-scenario variance alone gives a detectable difference of "
                f"{z * math.sqrt(b / n_scenarios):.4g} with {n_scenarios} scenarios; no "
                f"number of epochs reaches {target_difference:.4g}. About "
                f"{need.n_scenarios} scenarios at {k_hint} epochs would."
            ),
        )
    else:
        k = max(1, math.ceil(2.0 * within_variance / room - 1e-9))
    achieved = minimum_detectable_difference(
        n_scenarios=n_scenarios, epochs=k, between_variance=between_variance,
        within_variance=within_variance, alpha=alpha, power=power, paired=paired,
        correlation=rho,
    ).minimum_detectable_difference
    return DesignRequirement(
        target_difference=target_difference, solved_for="epochs", achievable=True,
        epochs=k, n_scenarios=n_scenarios, achieved_difference=achieved,
    )


class TargetDesign(BaseModel):
    """What a design needs to detect ``target_difference``: the epochs per scenario with its
    scenarios (``epochs_with_current_scenarios``), and the scenarios at its epochs
    (``scenarios_with_current_epochs``), at the same alpha, power and variance split."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_difference: float
    target_source: Literal["given", "half the current minimum detectable difference"]
    current_difference: float
    alpha: float
    power: float
    correlation: float
    epochs_with_current_scenarios: DesignRequirement
    scenarios_with_current_epochs: DesignRequirement
    method: str = (
        "Miller 2024 with this design's between/within variance split: epochs K solve "
        "(z_{1-alpha/2} + z_power)^2 (2(1-rho) between + 2 within / K) / C <= d^2 at the "
        "current C; scenarios C solve it at the current K (rounded up)"
    )


def design_for_target(
    analysis: PowerAnalysis, target_difference: float | None = None
) -> TargetDesign | None:
    """Epochs or scenarios needed to detect ``target_difference`` with the design behind
    ``analysis`` (its scenarios, epochs, variance components, alpha, power, correlation).
    Without a target, half the current minimum detectable difference is used; ``None`` then
    when that is 0 (no variance: any difference is already detectable).

    Raises ``ValueError`` on a target that is not a positive finite number.
    """
    if target_difference is None:
        source: Literal["given", "half the current minimum detectable difference"] = (
            "half the current minimum detectable difference")
        target = analysis.minimum_detectable_difference / 2.0
        if not target > 0.0:
            return None
    else:
        source = "given"
        target = target_difference
        if not (math.isfinite(target) and target > 0.0):
            raise ValueError(f"the target difference must be a positive number, got {target!r}")
    a = analysis
    return TargetDesign(
        target_difference=target, target_source=source,
        current_difference=analysis.minimum_detectable_difference, alpha=analysis.alpha,
        power=analysis.power, correlation=analysis.correlation,
        epochs_with_current_scenarios=epochs_for_target(
            target, n_scenarios=a.n_scenarios, between_variance=a.between_variance,
            within_variance=a.within_variance, alpha=a.alpha, power=a.power, paired=a.paired,
            correlation=a.correlation),
        scenarios_with_current_epochs=scenarios_for_target(
            target, epochs=a.epochs, between_variance=a.between_variance,
            within_variance=a.within_variance, alpha=a.alpha, power=a.power, paired=a.paired,
            correlation=a.correlation),
    )


def epochs_for_margin(
    margin: float,
    *,
    n_scenarios: int,
    between_variance: float,
    within_variance: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> DesignRequirement:
    """Epochs per scenario for one run's interval to keep a bound ``margin`` away from its
    mean with probability ``power``: the gate ``lower bound >= threshold`` passes that often
    when the true mean is ``margin`` above the threshold. One run's mean has variance
    ``(between + within / K) / C``, so ``K = within / (C (margin / z)^2 - between)`` with
    ``z = z_{1-alpha/2} + z_power``; when the between part alone is too wide, ``achievable``
    is false and ``scenarios_needed`` says how many scenarios (at the epochs that keep the
    within part a tenth of it) would do. A ``margin`` of 0 or less is never achievable: the
    mean itself is at or below the threshold.

    Raises ``ValueError`` on ``n_scenarios < 1`` or inputs out of range.
    """
    _check(alpha, power, 0.0, between_variance, within_variance)
    if n_scenarios < 1:
        raise ValueError("n_scenarios must be at least 1")
    z = _z_sum(alpha, power)
    base = dict(target_difference=margin, solved_for="epochs", n_scenarios=n_scenarios)
    if margin <= 0:
        return DesignRequirement(**base, achievable=False, epochs=None,
                                 achieved_difference=None,
                                 reason=f"the measured mean is {-margin:.3g} below the "
                                        "threshold (or at it): more samples make the gate "
                                        "fail more surely, not pass")
    room = n_scenarios * (margin / z) ** 2 - between_variance
    if room <= 0 or (within_variance > 0 and room <= 1e-15):
        k_hint = max(1, math.ceil(within_variance / max(0.1 * between_variance, 1e-12)))
        needed = math.ceil(z * z * (between_variance + within_variance / k_hint)
                           / margin**2 - 1e-9)
        return DesignRequirement(
            **base, achievable=False, epochs=None, achieved_difference=None,
            scenarios_needed=max(needed, n_scenarios + 1),
            reason=(f"the spread between scenarios alone keeps the bound "
                    f"{z * math.sqrt(between_variance / n_scenarios):.3g} from the mean with "
                    f"{n_scenarios} scenarios, more than the margin {margin:.3g}: about "
                    f"{max(needed, n_scenarios + 1)} scenarios at {k_hint} epochs would do"))
    k = 1 if within_variance == 0 else max(1, math.ceil(within_variance / room - 1e-9))
    achieved = z * math.sqrt((between_variance + within_variance / k) / n_scenarios)
    return DesignRequirement(**base, achievable=True, epochs=k, achieved_difference=achieved)
