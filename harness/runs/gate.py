"""The CI gate: does the suite clear the bar the user set?

``--min-pass-rate P`` and ``--min-score S`` compare the suite's pass rate (the mean of the
scenario pass rates) and mean score with the thresholds, on the figure itself
(``--gate-on mean``) or on the lower end of its confidence interval (``--gate-on
lower-bound``, the cautious choice: the suite must clear the bar even allowing for sampling
noise). Both figures lie in [0, 1], and so do the intervals the gate shows: one that reached
past the range is cut at it, and the message says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from harness.choices import GateBasis

if TYPE_CHECKING:
    from harness.stats.summary import SuiteFigures


class GateCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    figure: str
    threshold: float
    basis: GateBasis
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


def evaluate_gate(
    score: SuiteFigures | None,
    *,
    min_pass_rate: float | None = None,
    min_score: float | None = None,
    gate_on: GateBasis = "mean",
) -> GateResult | None:
    """Judge a run's suite figures (its summary's ``score``; ``None`` when nothing was
    scored) against the thresholds; ``None`` when no threshold is set. With no scored
    sample, or no interval when ``lower-bound`` is asked (one scenario), the gate fails and
    says why: an unmeasured suite never passes."""
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
        est = score.pass_rate if figure == "pass rate" else score.mean_estimate
        low, high, clipped = _in_unit_range(est.ci_low, est.ci_high)
        clipped = clipped or est.clipped
        value = est.value if gate_on == "mean" else low
        if value is None:
            checks.append(GateCheck(
                figure=figure, threshold=threshold, basis=gate_on, value=None, passed=False,
                detail="no interval (fewer than 2 scenarios), so the lower bound is unknown"))
            continue
        ok = value >= threshold
        interval = ("" if low is None or high is None
                    else f" (interval {low:.3f}–{high:.3f}"
                    + (", clipped to the range [0, 1]" if clipped else "") + ")")
        checks.append(GateCheck(
            figure=figure, threshold=threshold, basis=gate_on, value=value, passed=ok,
            detail=f"{figure} {'lower bound ' if gate_on == 'lower-bound' else ''}"
            f"{value:.3f} {'>=' if ok else '<'} {threshold:.3f}{interval}",
        ))
    return GateResult(passed=all(c.passed for c in checks), checks=checks)
