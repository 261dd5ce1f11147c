"""The CI gate: does the suite clear the bar the user set?

``--min-pass-rate P`` and ``--min-score S`` compare the suite's pass rate (the mean of the
scenario pass rates) and mean score with the thresholds, on the figure itself
(``--gate-on mean``) or on the lower end of its confidence interval (``--gate-on
lower-bound``, the cautious choice: the suite must clear the bar even allowing for sampling
noise).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

GateBasis = Literal["mean", "lower-bound"]


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


def evaluate_gate(
    summary: dict[str, Any],
    *,
    min_pass_rate: float | None = None,
    min_score: float | None = None,
    gate_on: GateBasis = "mean",
) -> GateResult | None:
    """Judge a run summary against the thresholds; ``None`` when no threshold is set. With no
    scored sample, or no interval when ``lower-bound`` is asked (one scenario), the gate
    fails and says why: an unmeasured suite never passes."""
    wanted = [("pass rate", min_pass_rate), ("mean score", min_score)]
    if all(t is None for _, t in wanted):
        return None
    score = summary.get("score")
    checks: list[GateCheck] = []
    for figure, threshold in wanted:
        if threshold is None:
            continue
        if score is None:
            checks.append(GateCheck(figure=figure, threshold=threshold, basis=gate_on,
                                    value=None, passed=False,
                                    detail="no scored samples, so nothing clears the bar"))
            continue
        est = score["pass_rate"] if figure == "pass rate" else {
            "value": score["mean"], "ci_low": score["ci_low"], "ci_high": score["ci_high"]}
        value = est["value"] if gate_on == "mean" else est["ci_low"]
        if value is None:
            checks.append(GateCheck(
                figure=figure, threshold=threshold, basis=gate_on, value=None, passed=False,
                detail="no interval (fewer than 2 scenarios), so the lower bound is unknown"))
            continue
        ok = value >= threshold
        interval = ("" if est["ci_low"] is None
                    else f" (interval {est['ci_low']:.3f}–{est['ci_high']:.3f})")
        checks.append(GateCheck(
            figure=figure, threshold=threshold, basis=gate_on, value=value, passed=ok,
            detail=f"{figure} {'lower bound ' if gate_on == 'lower-bound' else ''}"
            f"{value:.3f} {'>=' if ok else '<'} {threshold:.3f}{interval}",
        ))
    return GateResult(passed=all(c.passed for c in checks), checks=checks)
