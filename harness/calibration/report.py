"""The calibration report: pydantic models only, so the same object renders to JSON (contract 3
key names), to the terminal and later to HTML.

Every statistic is a :class:`BootstrapEstimate`: its value, a bootstrap interval over items, the
number of items behind it, and, when the data leave it undefined (a constant judge, no item
judged in both orders…), ``value: null`` with ``undefined`` saying why. The other statistics are
still reported.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.calibration.scale import Scale

AlphaLevel = Literal["nominal", "ordinal", "interval"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BootstrapEstimate(_Model):
    """A statistic with its percentile bootstrap interval.

    ``n`` counts the items it was computed on. ``resamples_undefined`` counts bootstrap
    resamples on which it was undefined (e.g. a resample with one distinct value); they are left
    out of the interval. ``detail`` says how it was computed when the key alone does not.
    """

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int
    undefined: str | None = None
    resamples_undefined: int = 0
    detail: str | None = None


class AnalysisOptions(_Model):
    """How the analysis is run. Recorded in the report so its numbers can be reproduced."""

    n_resamples: int = Field(default=2000, ge=0, description="bootstrap resamples; 0: no CIs")
    confidence: float = Field(default=0.95, gt=0, lt=1)
    seed: int = 0
    scale: Scale | None = Field(default=None, description="overrides the scale in the file")
    pass_threshold: float | None = Field(
        default=None, description="a score at or above it passes (human and judge)"
    )
    threshold_criterion: Literal["kappa", "alignment"] = "kappa"
    alpha_level: AlphaLevel | None = Field(
        default=None,
        description="level of the headline krippendorff_alpha; default ordinal on a discrete "
        "scale, interval otherwise",
    )
    missing_verdict: Literal["wrong", "exclude"] = Field(
        default="wrong",
        description="pairwise: a missing verdict counts as wrong (and inconsistent), or the "
        "item-order is left out of the statistics that need it",
    )
    ppi_lambda: float | None = Field(
        default=None, description="PPI++ lambda; None: power-tuned; 0: classical; 1: PPI"
    )


class OffScaleLabel(_Model):
    """A label off the declared scale: not an error, but a missing rating (or judge sample) of
    its item, counted and named in the report. ``position`` is its index in a list of ratings
    or samples (``None`` for a single value); ``line`` is its line in ``source`` (for records
    built in Python, the record's position, 1-based)."""

    source: str
    line: int
    item_id: str
    field: Literal["human", "judge", "gold", "verdict"]
    judge_id: str | None = None
    position: int | None = None
    value: float | str
    expected: str

    def describe(self) -> str:
        """One line naming where the label is, what it is and what was expected."""
        where = f"item {self.item_id!r}" + (
            f", judge {self.judge_id!r}" if self.judge_id is not None else "")
        shown = f"{self.value:g}" if isinstance(self.value, float) else repr(self.value)
        return (f"{self.source}:{self.line}: {self.field}: {shown} is off the declared "
                f"scale; expected {self.expected} ({where}); counted as missing")


class ConfusionMatrix(_Model):
    """Counts of (human consensus, judge consensus) categories: ``counts[i][j]`` is the number
    of items the humans put in ``categories[i]`` and the judge in ``categories[j]``."""

    categories: list[float | str]
    counts: list[list[int]]
    n: int


class BlandAltman(_Model):
    """Mean difference (judge − human) and the 95% limits of agreement, bias ± 1.96 SD of the
    per-item differences (Bland & Altman 1986)."""

    bias: BootstrapEstimate
    sd: BootstrapEstimate
    lower: BootstrapEstimate
    upper: BootstrapEstimate


class PassFailReport(_Model):
    """Pass/fail agreement. *Coverage* is the share of outputs the humans fail that the judge
    also fails; the *false-failure rate* is the share of outputs the humans pass that the judge
    fails; *alignment* is the harmonic mean of coverage and 1 − false-failure rate (Shankar et
    al. 2024, EvalGen). With pass as the positive class, *sensitivity* is the share of outputs
    the humans pass that the judge passes (1 − false-failure rate) and *specificity* the share
    the humans fail that the judge fails (the same figure as coverage): the names a reader of
    diagnostic tests knows, given beside EvalGen's. ``None`` in reports written before them."""

    human_rule: str
    judge_rule: str
    n: int
    human_pass_judge_pass: int
    human_pass_judge_fail: int
    human_fail_judge_pass: int
    human_fail_judge_fail: int
    accuracy: BootstrapEstimate
    cohen_kappa: BootstrapEstimate
    coverage: BootstrapEstimate
    false_failure_rate: BootstrapEstimate
    alignment: BootstrapEstimate
    sensitivity: BootstrapEstimate | None = None
    specificity: BootstrapEstimate | None = None


class ThresholdPoint(_Model):
    """The judge gate "score ≥ threshold passes" compared with the human verdicts."""

    threshold: float
    judge_pass_rate: float
    accuracy: float
    cohen_kappa: float | None
    coverage: float | None
    false_failure_rate: float | None
    alignment: float | None


class ThresholdReport(_Model):
    """The judge threshold that best matches the human pass/fail verdicts, and the trade-off
    curve. ``best_threshold``'s interval is the spread of the chosen threshold over bootstrap
    resamples; the best point's own figures are in-sample (optimistic)."""

    criterion: Literal["kappa", "alignment"]
    human_rule: str
    best_threshold: BootstrapEstimate
    best: ThresholdPoint | None
    curve: list[ThresholdPoint]


class SelfConsistency(_Model):
    """Agreement of the judge with itself across its samples of the same item."""

    n_items: int
    samples_per_item: tuple[int, int]
    krippendorff_alpha: BootstrapEstimate
    share_items_disagree: BootstrapEstimate
    mean_sample_sd: BootstrapEstimate


class Verbosity(_Model):
    """Length bias: rank correlation between the residual (judge − human) and the length of the
    judged output. Positive: the judge over-scores longer answers."""

    length_source: Literal["length", "words"]
    spearman: BootstrapEstimate
    pearson: BootstrapEstimate


class BesideHumans(_Model):
    """Is the judge as good as another person? Krippendorff's alpha of the human raters alone
    and with the judge added as one more rater; and each human's Spearman correlation with the
    mean of the other humans, next to the judge's correlation with that same leave-one-out
    mean (averaged over rater positions)."""

    alpha_humans: BootstrapEstimate
    alpha_with_judge: BootstrapEstimate
    alpha_difference: BootstrapEstimate
    human_vs_rest_spearman: BootstrapEstimate
    judge_vs_rest_spearman: BootstrapEstimate
    spearman_difference: BootstrapEstimate


class PPIResult(_Model):
    """Prediction-powered estimate of a human-label mean (PPI++, Angelopoulos et al. 2023)
    from ``n_labelled`` items with human and judge labels and ``n_unlabelled`` judge-only
    items, next to the classical estimate from the human labels alone. Both intervals are
    normal (Wald) intervals. ``effective_human_labels`` is how many human labels alone would
    give the same interval width: n · var(classical) / var(PPI)."""

    target: Literal["mean_score", "pass_rate"]
    n_labelled: int
    n_unlabelled: int
    lam: float
    lambda_tuned: bool
    estimate: float
    ci_low: float
    ci_high: float
    stderr: float
    classical_estimate: float
    classical_ci_low: float
    classical_ci_high: float
    classical_stderr: float
    effective_human_labels: float | None
    judge_only_mean: float


class PPIReport(_Model):
    mean_score: PPIResult | None = None
    pass_rate: PPIResult | None = None
    undefined: str | None = None


class PointwiseJudgeReport(_Model):
    """Agreement of one judge with the human labels on pointwise items."""

    judge_id: str | None
    n_records: int
    n_items: int = Field(description="items with a human label and a judge score")
    n_missing_human: int
    n_missing_judge: int
    n_missing_both: int
    n_missing_human_ratings: int
    n_missing_judge_samples: int
    n_off_scale_human_ratings: int = Field(
        default=0, description="human ratings of these items off the declared scale (counted "
        "as missing, so also in the n_missing_* counts)")
    n_off_scale_judge_samples: int = Field(
        default=0, description="judge samples off the declared scale (counted as missing)")
    raters_per_item: tuple[int, int]
    samples_per_item: tuple[int, int]
    spearman: BootstrapEstimate
    kendall_tau_b: BootstrapEstimate
    pearson: BootstrapEstimate
    cohen_kappa: BootstrapEstimate
    cohen_kappa_unweighted: BootstrapEstimate
    cohen_kappa_linear: BootstrapEstimate
    cohen_kappa_quadratic: BootstrapEstimate
    krippendorff_alpha: BootstrapEstimate
    krippendorff_alpha_nominal: BootstrapEstimate
    krippendorff_alpha_ordinal: BootstrapEstimate
    krippendorff_alpha_interval: BootstrapEstimate
    mean_bias: BootstrapEstimate
    mae: BootstrapEstimate
    bland_altman: BlandAltman
    confusion_matrix: ConfusionMatrix | None
    pass_fail: PassFailReport | None = None
    thresholds: ThresholdReport | None = None
    self_consistency: SelfConsistency | None = None
    verbosity: Verbosity | None = None
    beside_humans: BesideHumans | None = None
    ppi: PPIReport | None = None


class PairwiseSelfConsistency(_Model):
    """Agreement of the judge with itself across repeated samples in the same order."""

    n_item_orders: int
    krippendorff_alpha_nominal: BootstrapEstimate
    share_disagree: BootstrapEstimate


class LengthPreference(_Model):
    """Among decisive verdicts (A or B) on items whose outputs differ in length, the share
    picking the longer output, next to the same share for the gold labels."""

    judge_longer_rate: BootstrapEstimate
    gold_longer_rate: BootstrapEstimate


class PairwiseBesideHumans(_Model):
    """Is the judge as good as another rater? For each rater position, that rater's preference
    is scored against the majority of the item's other raters (leave-one-out gold), and the
    judge's verdicts against that same gold (``accuracy``'s rule: the mean of the two orders);
    both are averaged over the rater positions where both are defined. An item whose other
    raters have no unique majority is left out for that position. The difference (judge −
    human) has a paired bootstrap interval over items."""

    n_items: int = Field(description="items where at least one rater can be left out")
    raters_per_item: tuple[int, int]
    human_vs_rest_accuracy: BootstrapEstimate
    judge_vs_rest_accuracy: BootstrapEstimate
    accuracy_difference: BootstrapEstimate


class PairwiseJudgeReport(_Model):
    """Agreement of one judge with the gold preferences on pairwise items.

    A *unit* is one sample of one item (an item judged K times in each order has K units).
    ``accuracy`` is the mean of the accuracies in the two orders (original, swapped);
    ``accuracy_both_orders`` counts a unit correct only if both orders are; ``position_
    consistency`` is the share of units with the same verdict in both orders; ``order_kappa``
    is Cohen's kappa between the verdicts in the two orders; ``first_position_rate`` is the
    share of decisive verdicts naming the output shown first (0.5: no position bias).
    """

    judge_id: str | None
    n_records: int
    n_items: int
    n_units: int
    n_units_both_orders: int
    n_missing_verdicts: int
    n_missing_gold: int
    n_gold_without_majority: int
    accuracy: BootstrapEstimate
    accuracy_original_order: BootstrapEstimate
    accuracy_swapped_order: BootstrapEstimate
    accuracy_both_orders: BootstrapEstimate
    position_consistency: BootstrapEstimate
    order_kappa: BootstrapEstimate
    first_position_rate: BootstrapEstimate
    tie_rate: BootstrapEstimate
    self_consistency: PairwiseSelfConsistency | None = None
    length_preference: LengthPreference | None = None
    beside_humans: PairwiseBesideHumans | None = None


class HumanBaseline(_Model):
    """Agreement among the human raters themselves (items with two or more ratings)."""

    n_items: int
    raters_per_item: tuple[int, int]
    krippendorff_alpha_nominal: BootstrapEstimate
    krippendorff_alpha_ordinal: BootstrapEstimate | None = None
    krippendorff_alpha_interval: BootstrapEstimate | None = None
    fleiss_kappa: BootstrapEstimate


class Comparison(_Model):
    """Two judges (or prompts) on their common items: ``difference = a − b`` with a paired
    bootstrap interval (items resampled jointly for both)."""

    judge_a: str
    judge_b: str
    statistic: str
    n_items: int
    a: BootstrapEstimate
    b: BootstrapEstimate
    difference: BootstrapEstimate


class CalibrationReport(_Model):
    """The whole study: per-judge agreement, the human baseline, judge comparisons, and the
    policies used (missing labels, consensus rules, bootstrap)."""

    kind: Literal["pointwise", "pairwise"]
    source: str
    options: AnalysisOptions
    scale: Scale | None = None
    policies: list[str]
    human_baseline: HumanBaseline | None = None
    judges: list[PointwiseJudgeReport] | list[PairwiseJudgeReport]
    comparisons: list[Comparison] = Field(default_factory=list)
    n_off_scale_labels: int = Field(
        default=0, description="labels (human ratings, judge samples) off the declared scale, "
        "treated as missing; each is in off_scale_labels")
    off_scale_labels: list[OffScaleLabel] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON form of contract 3. With one judge, its statistics sit at the top level
        (``report["spearman"]``, ``report["accuracy"]``…); with several, each is in
        ``judges`` and the top level holds the comparisons."""
        data = self.model_dump(mode="json")
        if len(self.judges) == 1:
            judge = data.pop("judges")[0]
            return {**{k: data[k] for k in ("kind", "source")}, **judge,
                    **{k: v for k, v in data.items() if k not in ("kind", "source")}}
        return data
