"""The CI gate: does the suite clear the bar the user set?

``--min-pass-rate P`` and ``--min-score S`` compare the suite's pass rate (the mean of the
scenario pass rates) and mean score with the thresholds, on the figure itself
(``--gate-on mean``) or on the lower end of its confidence interval (``--gate-on
lower-bound``, the cautious choice: the suite must clear the bar even allowing for sampling
noise). Both figures lie in [0, 1], and so do the intervals the gate shows: one that reached
past the range is cut at it, and the message says so.

A suite of one scenario has no suite interval (the spread between scenarios cannot be
measured from one), but its scenario has its own, over its epochs: Wilson's for the pass
rate, t on n-1 df for the mean score. The gate on the lower bound then uses that interval and
says so, as the pytest plugin's per-scenario items do; it fails for want of an interval only
when there is none at all (one scenario with one epoch), and says what would give one.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from harness.choices import RunGateBasis
from harness.wording import plural

if TYPE_CHECKING:
    from harness.stats.corrected import CorrectedEstimate, CorrectedFigures
    from harness.stats.sampling import ScenarioStats
    from harness.stats.summary import SuiteFigures


class GateCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    figure: str
    threshold: float
    basis: RunGateBasis
    value: float | None
    passed: bool
    detail: str


class GateResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    passed: bool
    checks: list[GateCheck]


def _in_unit_range(low: float | None, high: float | None
                   ) -> tuple[float | None, float | None, bool]:
    """An interval of a figure in [0, 1] cut at that range, and whether it had to be (a
    summary written before intervals were cut can hold a negative lower bound)."""
    if low is None or high is None:
        return low, high, False
    cut_low, cut_high = min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0)
    return cut_low, cut_high, (cut_low, cut_high) != (low, high)


def _one_scenario(score: SuiteFigures) -> ScenarioStats | None:
    """The only scenario of a one-scenario suite, when the figures carry it (a run summary's
    ``score`` does; bare suite figures do not)."""
    scenarios = getattr(score, "scenarios", None)
    return scenarios[0] if scenarios is not None and len(scenarios) == 1 else None


def _scenario_interval(scenario: ScenarioStats, figure: str
                       ) -> tuple[float | None, float | None, str]:
    """The interval of one scenario's pass rate or mean score over its epochs, and the
    words that say which interval it is."""
    epochs = plural(scenario.n_epochs, "epoch")
    if figure == "pass rate":
        return (scenario.pass_rate_ci_low, scenario.pass_rate_ci_high,
                f"one scenario: its Wilson interval over {epochs}")
    return (scenario.mean_ci_low, scenario.mean_ci_high,
            f"one scenario: its t interval over {epochs}")


def evaluate_gate(
    score: SuiteFigures | None,
    *,
    min_pass_rate: float | None = None,
    min_score: float | None = None,
    gate_on: RunGateBasis = "mean",
    corrected: CorrectedFigures | None = None,
    labels_option: str = "--labels FILE",
) -> GateResult | None:
    """Judge a run's suite figures (its summary's ``score``; ``None`` when nothing was
    scored) against the thresholds; ``None`` when no threshold is set. With no scored
    sample, or no interval at all when ``lower-bound`` is asked, the gate fails and says
    why: an unmeasured suite never passes. One scenario is gated on its own interval (see
    the module's text). ``corrected-lower-bound`` gates on the lower end of the figures
    ``corrected`` by the run's random human labels; without enough of them it fails and
    says how many more labels it needs (and to give labels with ``labels_option``, as the
    caller names its labels file)."""
    wanted = [("pass rate", min_pass_rate), ("mean score", min_score)]
    if all(t is None for _, t in wanted):
        return None
    checks: list[GateCheck] = []
    for figure, threshold in wanted:
        if threshold is None:
            continue
        if score is None:
            checks.append(GateCheck(figure=figure, threshold=threshold, basis=gate_on,
                                    value=None, passed=False,
                                    detail="no scored samples, so nothing clears the bar"))
            continue
        if gate_on == "corrected-lower-bound":
            by_labels = None if corrected is None else (
                corrected.pass_rate if figure == "pass rate" else corrected.mean)
            checks.append(_corrected_check(figure, threshold, by_labels, labels_option))
            continue
        est = score.pass_rate if figure == "pass rate" else score.mean_estimate
        low, high, which = est.ci_low, est.ci_high, ""
        only = _one_scenario(score)
        if low is None and only is not None:
            low, high, which = _scenario_interval(only, figure)
        low, high, clipped = _in_unit_range(low, high)
        clipped = clipped or est.clipped
        value = est.value if gate_on == "mean" else low
        if value is None:
            checks.append(GateCheck(
                figure=figure, threshold=threshold, basis=gate_on, value=None, passed=False,
                detail=_no_interval(score, only)))
            continue
        ok = value >= threshold
        interval = ("" if low is None or high is None
                    else f" (interval {low:.3f}–{high:.3f}"
                    + (f", {which}" if which else "")
                    + (", clipped to the range [0, 1]" if clipped else "") + ")")
        hint = ""
        if which and not ok and figure == "pass rate" and only is not None:
            hint = _epochs_hint(only, threshold)
        checks.append(GateCheck(
            figure=figure, threshold=threshold, basis=gate_on, value=value, passed=ok,
            detail=f"{figure} {'lower bound ' if gate_on == 'lower-bound' else ''}"
            f"{value:.3f} {'>=' if ok else '<'} {threshold:.3f}{interval}{hint}",
        ))
    return GateResult(passed=all(c.passed for c in checks), checks=checks)


def _corrected_check(figure: str, threshold: float, est: CorrectedEstimate | None,
                     labels_option: str = "--labels FILE") -> GateCheck:
    """The gate on the lower end of the human-corrected figure; without one, a failure that
    says how many more random labels it needs."""
    target = "passed" if figure == "pass rate" else "score"
    if est is None or est.value is None or est.ci_low is None or est.ci_high is None:
        from harness.stats.corrected import MIN_LABELS

        why = (f"no random labels of {target!r}: needs at least {MIN_LABELS}" if est is None
               else str(est.withheld))
        return GateCheck(
            figure=figure, threshold=threshold, basis="corrected-lower-bound", value=None,
            passed=False,
            detail=f"{figure}: no corrected figure ({why}); label samples from harness view's "
            f"random queue, or give {labels_option}")
    ok = est.ci_low >= threshold
    return GateCheck(
        figure=figure, threshold=threshold, basis="corrected-lower-bound", value=est.ci_low,
        passed=ok,
        detail=f"{figure} corrected lower bound {est.ci_low:.3f} {'>=' if ok else '<'} "
        f"{threshold:.3f} (corrected with {plural(est.n_labelled, 'human label')}: "
        f"{est.value:.3f}, interval {est.ci_low:.3f}–{est.ci_high:.3f}; the judge's "
        f"{est.judge_value:.3f})")


def _no_interval(score: SuiteFigures, only: ScenarioStats | None) -> str:
    """Why the lower bound is unknown, and what would give one."""
    if only is not None:
        return ("no interval: one scenario with one epoch, so the lower bound is unknown; "
                "run more epochs (--epochs 5) or gate on the mean (--gate-on mean)")
    return (f"no interval ({plural(score.n_scenarios, 'scenario')} and no scenario figures to "
            "fall back on), so the lower bound is unknown; "
            "gate on the mean (--gate-on mean) or add scenarios")


def _epochs_hint(scenario: ScenarioStats, threshold: float) -> str:
    """When one scenario passed every epoch and its Wilson lower bound is still under
    ``threshold``: how many epochs, all passing, would clear it. The Wilson lower bound of n
    passes in n is n / (n + z^2), at least ``threshold`` from n = z^2 t / (1 - t) on."""
    if scenario.n_passed != scenario.n_epochs or threshold >= 1.0:
        return ""
    z = NormalDist().inv_cdf(0.5 + scenario.confidence / 2)
    needed = math.ceil(z * z * threshold / (1.0 - threshold) - 1e-9)
    return (f"; every epoch passed, and {needed} epochs all passing would clear "
            f"{threshold:.3f} (--epochs {needed})")
