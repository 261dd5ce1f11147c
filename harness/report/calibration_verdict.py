"""Whether to trust a judge, in one sentence built from its calibration figures.

A pointwise judge is read by its headline Krippendorff's α against Krippendorff's own bars
(Krippendorff 2004, *Content Analysis*, §11.4.4): α ≥ 0.800 for data to rely on, α ≥ 0.667
for tentative conclusions only, below that not at all. The interval decides as much as the
value: a judge is trusted when α reaches 0.800 *and* its interval stays above 0.667, and
trusted with caution when either holds only in part. The headline Cohen's κ is named beside
it with its band on Landis and Koch's scale (1977: ≤ 0 poor, to 0.20 slight, 0.40 fair,
0.60 moderate, 0.80 substantial, above almost perfect), and the people's own agreement when
several rated each item (a judge is rarely expected to do better than they do).

A pairwise judge has no published band; the rule here is the harness's and the sentence
says so: trusted when its accuracy's interval stays at or above 0.8 and its position
consistency is at least 0.8; not trusted when its accuracy's interval reaches 0.5 (a coin)
or its position consistency is below 0.667; with caution in between.

The verdict is a reading aid next to the figures, never a gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rich.console import Console
from rich.text import Text

from harness.calibration.report import (
    BootstrapEstimate,
    CalibrationReport,
    HumanBaseline,
    PairwiseJudgeReport,
    PointwiseJudgeReport,
)
from harness.safe_text import terminal_text

Trust = Literal["trust", "caution", "distrust", "undecided"]

ALPHA_RELIABLE = 0.800  # Krippendorff: data to rely on
ALPHA_TENTATIVE = 0.667  # Krippendorff: tentative conclusions only
# Landis and Koch (1977): the upper end of each band
KAPPA_BANDS = ((0.0, "poor"), (0.20, "slight"), (0.40, "fair"), (0.60, "moderate"),
               (0.80, "substantial"), (1.0, "almost perfect"))
PAIRWISE_ACCURACY = 0.8
PAIRWISE_CONSISTENCY = 0.8
PAIRWISE_CONSISTENCY_FLOOR = 0.667
CHANCE = 0.5


@dataclass(frozen=True)
class JudgeVerdict:
    """``trust`` is the reading; ``sentence`` says it and why, from the figures."""

    trust: Trust
    sentence: str


def kappa_band(kappa: float) -> str:
    """Landis and Koch's name for the agreement a Cohen's κ shows."""
    for upper, name in KAPPA_BANDS:
        if kappa <= upper:
            return name
    return KAPPA_BANDS[-1][1]


def _with_interval(e: BootstrapEstimate) -> str:
    if e.value is None:
        return "undefined"
    if e.ci_low is None or e.ci_high is None:
        return f"{e.value:.3f} (no interval)"
    return f"{e.value:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"


def _alpha_level(judge: PointwiseJudgeReport) -> str:
    """The level of the headline α (the one of the three it equals), for its name."""
    head = judge.krippendorff_alpha
    for level in ("nominal", "ordinal", "interval"):
        e: BootstrapEstimate = getattr(judge, f"krippendorff_alpha_{level}")
        if (e.value, e.ci_low, e.ci_high) == (head.value, head.ci_low, head.ci_high):
            return f" ({level})"
    return ""


def _alpha_reading(alpha: BootstrapEstimate) -> tuple[Trust, str]:
    value, low, high = alpha.value, alpha.ci_low, alpha.ci_high
    assert value is not None
    if low is None or high is None:
        low = high = value  # no interval: the value alone, said so in the figure
    if value >= ALPHA_RELIABLE and low >= ALPHA_TENTATIVE:
        return "trust", (f"reaches {ALPHA_RELIABLE:.3f}, Krippendorff's bar for data to rely "
                         f"on, and its interval stays above {ALPHA_TENTATIVE:.3f}")
    if value >= ALPHA_RELIABLE:
        return "caution", (f"reaches {ALPHA_RELIABLE:.3f} but its interval reaches below "
                           f"{ALPHA_TENTATIVE:.3f}: too few items to be sure; label more")
    if value >= ALPHA_TENTATIVE:
        return "caution", (f"is between {ALPHA_TENTATIVE:.3f} and {ALPHA_RELIABLE:.3f}, "
                           "enough for tentative conclusions only")
    why = (f"is below {ALPHA_TENTATIVE:.3f}, the least Krippendorff accepts even for "
           "tentative conclusions")
    if high >= ALPHA_RELIABLE:
        why += "; its interval is wide enough to reach 0.800, so more items may change this"
    return "distrust", why


def _baseline_text(baseline: HumanBaseline | None, level: str) -> str:
    if baseline is None:
        return ""
    name = level.strip(" ()") or "nominal"
    e = getattr(baseline, f"krippendorff_alpha_{name}", None) or baseline.krippendorff_alpha_nominal
    if e.value is None:
        return ""
    return f" The people agree among themselves at α {e.value:.3f}."


def pointwise_verdict(judge: PointwiseJudgeReport,
                      baseline: HumanBaseline | None = None) -> JudgeVerdict:
    """The verdict on a pointwise judge (see the module docstring)."""
    alpha = judge.krippendorff_alpha
    level = _alpha_level(judge)
    if alpha.value is None:
        return JudgeVerdict("undecided", f"No verdict: Krippendorff's α{level} is undefined "
                                         f"({alpha.undefined or 'no reason given'}).")
    trust, why = _alpha_reading(alpha)
    lead = {"trust": "Trust this judge", "caution": "Trust this judge with caution",
            "distrust": "Do not trust this judge yet"}[trust]
    kappa = judge.cohen_kappa
    beside = (f"; Cohen's κ {kappa.value:.3f} is {kappa_band(kappa.value)} agreement on "
              "Landis and Koch's scale" if kappa.value is not None else "")
    return JudgeVerdict(trust, f"{lead}: Krippendorff's α{level} {_with_interval(alpha)} "
                               f"over {alpha.n} items {why}{beside}."
                               + _baseline_text(baseline, level))


def pairwise_verdict(judge: PairwiseJudgeReport) -> JudgeVerdict:
    """The verdict on a pairwise judge (see the module docstring)."""
    accuracy, consistency = judge.accuracy, judge.position_consistency
    if accuracy.value is None:
        return JudgeVerdict("undecided", "No verdict: the accuracy against the gold "
                                         f"preference is undefined ({accuracy.undefined}).")
    low = accuracy.ci_low if accuracy.ci_low is not None else accuracy.value
    consistent = consistency.value
    figures = (f"accuracy {_with_interval(accuracy)} over {accuracy.n} samples, position "
               f"consistency {_with_interval(consistency)}")
    if low <= CHANCE or (consistent is not None and consistent < PAIRWISE_CONSISTENCY_FLOOR):
        trust: Trust = "distrust"
        why = ("its accuracy's interval reaches 0.5, a coin's" if low <= CHANCE else
               f"its verdict changes with the order too often (below {PAIRWISE_CONSISTENCY_FLOOR})")
        lead = "Do not trust this judge yet"
    elif low >= PAIRWISE_ACCURACY and (consistent is None or consistent >= PAIRWISE_CONSISTENCY):
        trust, lead = "trust", "Trust this judge"
        why = (f"its accuracy's interval stays at or above {PAIRWISE_ACCURACY} and its verdict "
               "rarely depends on the order")
    else:
        trust, lead = "caution", "Trust this judge with caution"
        why = (f"it beats a coin, but its accuracy's interval goes below {PAIRWISE_ACCURACY} or "
               f"its position consistency is below {PAIRWISE_CONSISTENCY}")
    return JudgeVerdict(trust, f"{lead}: {figures}; {why} (the harness's rule of thumb: "
                               "pairwise agreement has no published bands).")


def judge_verdict(judge: PointwiseJudgeReport | PairwiseJudgeReport,
                  baseline: HumanBaseline | None = None) -> JudgeVerdict:
    """The verdict on one judge of a calibration report."""
    if isinstance(judge, PointwiseJudgeReport):
        return pointwise_verdict(judge, baseline)
    return pairwise_verdict(judge)


def print_verdicts(report: CalibrationReport, console: Console) -> None:
    """One line per judge after the terminal report: ``verdict: <sentence>`` (the judge's
    name first when there are several), the same sentence the HTML page ends with."""
    several = len(report.judges) > 1
    for judge in report.judges:
        who = f"{terminal_text(judge.judge_id or 'judge')}: " if several else ""
        sentence = judge_verdict(judge, report.human_baseline).sentence
        console.print(Text.assemble(("verdict: ", "bold"), who + terminal_text(sentence)))
