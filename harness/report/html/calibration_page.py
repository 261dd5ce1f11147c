"""The calibration page: a :class:`~harness.calibration.report.CalibrationReport` as one
HTML file, with the judgment records it was computed from for the item-level views.

Every figure with an interval comes from the report itself (the same objects the JSON and
the terminal print), read by its JSON path (``spearman``, ``pass_fail.accuracy``,
``bland_altman.lower`` …), so the page cannot drift from ``--json``. The records add what
the report does not hold: each item's scores for the scatter plot, the pairwise verdict
tables, and the items where the judge and the people disagree most with the judge's
reasoning (:mod:`harness.report.html.calibration_items`). Without records (or for a judge
with none) those parts say they are not available; the rest of the page is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.calibration.datasets import PairwiseDataset, PointwiseDataset
from harness.calibration.judgments import (
    JudgmentSet,
    PairwiseJudgment,
    PointwiseJudgment,
)
from harness.calibration.report import (
    BootstrapEstimate,
    CalibrationReport,
    PairwiseJudgeReport,
    PointwiseJudgeReport,
    ThresholdPoint,
)
from harness.calibration.scale import Scale
from harness.report.calibration_terminal import BRIEF_PAIRWISE, BRIEF_POINTWISE
from harness.report.calibration_verdict import JudgeVerdict, judge_verdict
from harness.report.html.calibration_items import (
    VERDICT_LABELS,
    PairwiseItemView,
    PointwiseItemView,
    largest_differences,
    most_wrong,
    pairwise_items,
    pointwise_items,
    show_rating,
    verdict_tables,
)
from harness.report.html.page import render_page, write_page
from harness.report.html.plots import (
    HeatMap,
    LineChart,
    PixelScale,
    Point,
    Scatter,
    Series,
    heatmap,
    line_chart,
    scatter,
)

REPORT_FILENAME = "report.html"
MAX_LISTED = 25  # disagreement items shown per judge; the count of all is given
MAX_TICKED_POINTS = 11  # a discrete scale with more points gets 5 even ticks instead

Row = tuple[str, str, str]  # (JSON path, name, what it measures)

POINTWISE_GROUPS: list[tuple[str, list[Row]]] = [
    ("Correlation", [
        ("spearman", "Spearman's ρ", "rank correlation of the judge's and the people's "
         "item scores"),
        ("kendall_tau_b", "Kendall's τ-b", "rank agreement over item pairs, ties counted"),
        ("pearson", "Pearson's r", "linear correlation"),
    ]),
    ("Agreement on the scale's points", [
        ("cohen_kappa_unweighted", "Cohen's κ, unweighted", "same point, beyond chance"),
        ("cohen_kappa_linear", "Cohen's κ, linear weights", "near misses count in part"),
        ("cohen_kappa_quadratic", "Cohen's κ, quadratic weights",
         "far misses cost more"),
        ("krippendorff_alpha_nominal", "Krippendorff's α, nominal", "points as categories"),
        ("krippendorff_alpha_ordinal", "Krippendorff's α, ordinal", "points in order"),
        ("krippendorff_alpha_interval", "Krippendorff's α, interval", "scores as numbers"),
    ]),
    ("Bias and error", [
        ("mean_bias", "mean bias", "judge − people, averaged over items; above 0: the "
         "judge is more generous"),
        ("mae", "mean absolute error", "how far apart, averaged over items"),
        ("bland_altman.sd", "SD of the differences", "spread of judge − people"),
        ("bland_altman.lower", "lower limit of agreement", "95% of the differences lie "
         "between the two limits"),
        ("bland_altman.upper", "upper limit of agreement", ""),
    ]),
    ("Pass/fail", [
        ("pass_fail.accuracy", "accuracy", "same pass/fail verdict as the people"),
        ("pass_fail.cohen_kappa", "Cohen's κ", "pass/fail agreement beyond chance"),
        ("pass_fail.coverage", "coverage", "share of the people's failures the judge fails"),
        ("pass_fail.false_failure_rate", "false-failure rate",
         "share of the people's passes the judge fails"),
        ("pass_fail.alignment", "alignment", "harmonic mean of coverage and 1 − "
         "false-failure rate (EvalGen)"),
        ("thresholds.best_threshold", "best threshold", "judge score that best matches the "
         "people's verdicts; its interval is its spread over resamples"),
    ]),
    ("The judge against itself", [
        ("self_consistency.krippendorff_alpha", "Krippendorff's α across samples",
         "1: every sample of an item agrees"),
        ("self_consistency.share_items_disagree", "items whose samples differ", "share"),
        ("self_consistency.mean_sample_sd", "mean SD of the samples", "per item"),
    ]),
    ("Length", [
        ("verbosity.spearman", "residual ~ length, Spearman",
         "above 0: the judge over-scores longer outputs"),
        ("verbosity.pearson", "residual ~ length, Pearson", ""),
    ]),
    ("Beside the people", [
        ("beside_humans.alpha_humans", "α, people only", "agreement among the raters"),
        ("beside_humans.alpha_with_judge", "α, judge added as a rater", ""),
        ("beside_humans.alpha_difference", "α difference", "with judge − people only"),
        ("beside_humans.human_vs_rest_spearman", "a person vs the others, ρ",
         "each rater against the mean of the others"),
        ("beside_humans.judge_vs_rest_spearman", "the judge vs the same others, ρ", ""),
        ("beside_humans.spearman_difference", "ρ difference", "judge − person"),
    ]),
]

PAIRWISE_GROUPS: list[tuple[str, list[Row]]] = [
    ("Accuracy against the gold preference", [
        ("accuracy", "accuracy", "mean of the accuracies in the two orders"),
        ("accuracy_original_order", "accuracy, original order", "A shown first"),
        ("accuracy_swapped_order", "accuracy, swapped order", "B shown first"),
        ("accuracy_both_orders", "correct in both orders", "share of samples"),
    ]),
    ("Position bias", [
        ("position_consistency", "position consistency", "same verdict in both orders"),
        ("order_kappa", "order κ", "Cohen's κ between the verdicts in the two orders"),
        ("first_position_rate", "first-position rate",
         "decisive verdicts naming the output shown first; 0.5: no position bias"),
        ("tie_rate", "tie rate", "share of verdicts that are a tie"),
    ]),
    ("The judge against itself", [
        ("self_consistency.krippendorff_alpha_nominal", "Krippendorff's α across samples",
         "same order, repeated samples"),
        ("self_consistency.share_disagree", "item-orders whose samples differ", "share"),
    ]),
    ("Length", [
        ("length_preference.judge_longer_rate", "judge picks the longer output", "share"),
        ("length_preference.gold_longer_rate", "gold picks the longer output", "share"),
    ]),
    ("Beside the people", [
        ("beside_humans.human_vs_rest_accuracy", "a rater vs the others' majority",
         "accuracy"),
        ("beside_humans.judge_vs_rest_accuracy", "the judge vs the same majority", ""),
        ("beside_humans.accuracy_difference", "accuracy difference", "judge − rater"),
    ]),
]

POSITION_CARDS: list[Row] = [
    ("first_position_rate", "first-position rate", "0.5: no preference for the output "
     "shown first"),
    ("accuracy_original_order", "accuracy, original order", "A shown first"),
    ("accuracy_swapped_order", "accuracy, swapped order", "B shown first"),
    ("tie_rate", "tie rate", "verdicts that are a tie"),
]

NAMES: dict[str, str] = {path: name for _, rows in POINTWISE_GROUPS + PAIRWISE_GROUPS
                         for path, name, _ in rows}
NAMES |= {"cohen_kappa": "Cohen's κ", "krippendorff_alpha": "Krippendorff's α",
          "pass_fail.accuracy": "pass/fail accuracy"}


def estimate_at(judge: PointwiseJudgeReport | PairwiseJudgeReport, path: str
                ) -> BootstrapEstimate | None:
    """The estimate at a JSON path of a judge's report (``None`` when a part is absent,
    e.g. no pass/fail statistics without a threshold)."""
    value: Any = judge
    for part in path.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value if isinstance(value, BootstrapEstimate) else None


@dataclass(frozen=True)
class StatRow:
    path: str
    name: str
    what: str
    estimate: BootstrapEstimate


@dataclass(frozen=True)
class StatGroup:
    title: str
    rows: list[StatRow]


def _rows(judge: PointwiseJudgeReport | PairwiseJudgeReport, rows: Sequence[Row]
          ) -> list[StatRow]:
    found = [(path, name, what, estimate_at(judge, path)) for path, name, what in rows]
    return [StatRow(path, name, what, est) for path, name, what, est in found if est]


def _groups(judge: PointwiseJudgeReport | PairwiseJudgeReport) -> list[StatGroup]:
    catalogue = POINTWISE_GROUPS if isinstance(judge, PointwiseJudgeReport) else PAIRWISE_GROUPS
    groups = [StatGroup(title, _rows(judge, rows)) for title, rows in catalogue]
    return [g for g in groups if g.rows]


def headline_rows(judge: PointwiseJudgeReport | PairwiseJudgeReport) -> list[StatRow]:
    """The statistics the terminal's brief report shows, in its order."""
    if isinstance(judge, PointwiseJudgeReport):
        paths = [*BRIEF_POINTWISE, *(["pass_fail.accuracy"] if judge.pass_fail else [])]
    else:
        paths = list(BRIEF_PAIRWISE)
    return _rows(judge, [(p, NAMES.get(p, p), "") for p in paths])


@dataclass(frozen=True)
class ThresholdView:
    chart: LineChart
    human_rule: str
    criterion: str
    curve: list[ThresholdPoint]
    best: ThresholdPoint | None


@dataclass
class JudgeView:
    """Everything the page shows of one judge."""

    index: int
    name: str
    kind: str
    report: PointwiseJudgeReport | PairwiseJudgeReport
    headline: list[StatRow]
    groups: list[StatGroup]
    has_records: bool
    verdict: JudgeVerdict
    human_bool: bool = False  # pass/fail labels: shown as pass and fail, not 1 and 0
    judge_bool: bool = False
    confusion: HeatMap | None = None
    scatter: Scatter | None = None
    n_plotted: int = 0
    thresholds: ThresholdView | None = None
    position: list[StatRow] = field(default_factory=list)
    by_gold: HeatMap | None = None
    by_order: HeatMap | None = None
    pointwise_listed: list[PointwiseItemView] = field(default_factory=list)
    pairwise_listed: list[PairwiseItemView] = field(default_factory=list)
    n_disagreeing: int = 0


def _category_label(value: float | str, boolean: bool) -> str:
    return value if isinstance(value, str) else show_rating(value, boolean)


def _extent(scale: Scale | None, views: Sequence[PointwiseItemView]
            ) -> tuple[float, float, float | None]:
    """The scale's bounds and step, or (none declared) the range of the item means."""
    if scale is not None:
        return scale.min, scale.max, scale.step
    values = [v for view in views for v in (view.human_mean, view.judge_mean)]
    low, high = min(values), max(values)
    return low, (high if high > low else low + 1), None


def _tick_values(low: float, high: float, step: float | None) -> list[float]:
    """Every point of a short discrete scale, else 5 even steps from ``low`` to ``high``."""
    if step is not None and (high - low) / step < MAX_TICKED_POINTS:
        count = round((high - low) / step) + 1
        return [low + i * step for i in range(count)]
    return [low + i * (high - low) / 4 for i in range(5)]


def _scatter(view: JudgeView, views: Sequence[PointwiseItemView], scale: Scale | None,
             listed: set[int]) -> Scatter | None:
    if not views:
        return None
    low, high, step = _extent(scale, views)
    # half a step of room on a discrete scale, where points are jittered around its points
    pad, jitter = (step / 2, step * 0.12) if step else ((high - low) * 0.03, 0.0)

    def shown(values: list[float | None], boolean: bool) -> str:
        return ", ".join(show_rating(v, boolean) for v in values)

    points = [Point(
        x=v.human_mean, y=v.judge_mean,
        tooltip=(f"{v.item_id}: people {v.human_mean:.2f} ({shown(v.human, view.human_bool)}),"
                 f" judge {v.judge_mean:.2f} ({shown(v.judge, view.judge_bool)})"),
        anchor=f"j{view.index}-item-{v.position}" if v.position in listed else None)
        for v in views]
    return scatter(points, domain=(low - pad, high + pad),
                   tick_values=_tick_values(low, high, step), jitter=jitter, seed=view.index,
                   x_label="people (mean of the ratings)", y_label="judge (mean of its samples)")


def _thresholds(judge: PointwiseJudgeReport, scale: Scale | None) -> ThresholdView | None:
    report = judge.thresholds
    if report is None or not report.curve:
        return None
    curve = report.curve
    xs_data = [p.threshold for p in curve]
    x_domain = (min(xs_data), max(xs_data))
    lines = [("Cohen's κ", "cohen_kappa", "s1"), ("alignment", "alignment", "s2"),
             ("coverage", "coverage", "s3"), ("false-failure rate", "false_failure_rate", "s4")]
    series = []
    lowest = 0.0
    for name, attr, css in lines:
        points = [(p.threshold, getattr(p, attr)) for p in curve
                  if getattr(p, attr) is not None]
        lowest = min([lowest, *(y for _, y in points)])
        series.append(Series(name=name, points=points, css_class=css))
    ticked = [] if scale is None else _tick_values(scale.min, scale.max, scale.step)
    x_ticks = [t for t in ticked if x_domain[0] <= t <= x_domain[1]]
    chart = line_chart(series, x_domain=x_domain, y_domain=(math.floor(lowest * 10) / 10, 1.0),
                       x_label="judge threshold (score ≥ it passes)", y_label="agreement",
                       x_ticks=x_ticks if len(x_ticks) > 1 else None)
    if report.best is not None:
        x = PixelScale(x_domain[0], x_domain[1], chart.left, chart.right)(report.best.threshold)
        chart = replace(chart, extra=[*chart.extra, (x, chart.top, x, chart.bottom)])
    return ThresholdView(chart=chart, human_rule=report.human_rule, criterion=report.criterion,
                         curve=curve, best=report.best)


def _pointwise_view(view: JudgeView, judge: PointwiseJudgeReport,
                    records: Sequence[PointwiseJudgment], report: CalibrationReport,
                    dataset: PointwiseDataset | None) -> None:
    cm = judge.confusion_matrix
    if cm is not None:
        labels = [_category_label(c, view.human_bool) for c in cm.categories]
        view.confusion = heatmap(cm.counts, labels, labels, row_title="people",
                                 col_title="judge")
    view.thresholds = _thresholds(judge, report.scale)
    if not records:
        return
    items = {i.item_id: i for i in dataset.items} if dataset is not None else None
    views = pointwise_items(records, items)
    listed = largest_differences(views, MAX_LISTED)
    view.pointwise_listed = listed
    view.n_disagreeing = len(largest_differences(views, len(views)))
    view.n_plotted = len(views)
    view.scatter = _scatter(view, views, report.scale, {v.position for v in listed})


def _pairwise_view(view: JudgeView, judge: PairwiseJudgeReport,
                   records: Sequence[PairwiseJudgment], dataset: PairwiseDataset | None) -> None:
    view.position = _rows(judge, POSITION_CARDS)
    if not records:
        return
    by_gold, by_order = verdict_tables(records)
    labels = list(VERDICT_LABELS)
    view.by_gold = heatmap(by_gold, labels[:-1], labels, row_title="gold",
                           col_title="verdict", not_agreement=["none"])
    if any(sum(row) for row in by_order):
        view.by_order = heatmap(by_order, labels, labels, row_title="original order",
                                col_title="swapped order", not_agreement=["none"])
    items = {i.item_id: i for i in dataset.items} if dataset is not None else None
    views = pairwise_items(records, items)
    view.pairwise_listed = most_wrong(views, MAX_LISTED)
    view.n_disagreeing = len(most_wrong(views, len(views)))


def judge_views(report: CalibrationReport, judgments: JudgmentSet | None = None,
                dataset: PointwiseDataset | PairwiseDataset | None = None) -> list[JudgeView]:
    """One :class:`JudgeView` per judge of ``report``, in its order. ``judgments`` are the
    records the report was computed from (grouped by ``judge_id``); ``dataset`` the study's
    labelled items, for the request and the judged texts."""
    by_judge: dict[str | None, list[Any]] = {}
    for record in judgments.records if judgments is not None else []:
        by_judge.setdefault(record.judge_id, []).append(record)
    judges: Sequence[PointwiseJudgeReport | PairwiseJudgeReport] = report.judges
    views = []
    for index, judge in enumerate(judges):
        records = by_judge.get(judge.judge_id, [])
        view = JudgeView(index=index, name=judge.judge_id or "judge", kind=report.kind,
                         report=judge, headline=headline_rows(judge), groups=_groups(judge),
                         has_records=bool(records),
                         verdict=judge_verdict(judge, report.human_baseline))
        if isinstance(judge, PointwiseJudgeReport):
            if judgments is not None and judgments.kind == "pointwise":
                view.human_bool = judgments.human_kind == "bool"
                view.judge_bool = judgments.judge_kind == "bool"
            _pointwise_view(view, judge, records, report,
                            dataset if isinstance(dataset, PointwiseDataset) else None)
        else:
            _pairwise_view(view, judge, records,
                           dataset if isinstance(dataset, PairwiseDataset) else None)
        views.append(view)
    return views


def count_range(span: tuple[int, int], noun: str) -> str:
    """``3 judge samples`` when every item has as many, else ``2–3 raters``."""
    low, high = span
    return f"{low} {noun}" if low == high else f"{low}–{high} {noun}"


def calibration_page(report: CalibrationReport, judgments: JudgmentSet | None = None,
                     dataset: PointwiseDataset | PairwiseDataset | None = None, *,
                     title: str | None = None) -> str:
    """The HTML page of a calibration report (see the module docstring). ``title`` defaults
    to the report's source file name."""
    offline = [n for n in report.notes if n.startswith("OFFLINE")]
    return render_page(
        "calibration.html.j2",
        title=title or f"Judge calibration: {Path(report.source).name}",
        report=report, judges=judge_views(report, judgments, dataset),
        offline=offline, notes=[n for n in report.notes if n not in offline],
        level=f"{report.options.confidence:.0%}", max_listed=MAX_LISTED,
        show_rating=show_rating, count_range=count_range,
    )


def write_calibration_page(path: Path, report: CalibrationReport,
                           judgments: JudgmentSet | None = None,
                           dataset: PointwiseDataset | PairwiseDataset | None = None) -> Path:
    """Write :func:`calibration_page` to ``path`` in one step (a failure leaves no
    half-written file) and return it. Raises :class:`~harness.errors.InputError` naming the
    file when it cannot be written."""
    return write_page(path, calibration_page(report, judgments, dataset))
