"""The calibration study's entry point: :func:`analyse` turns judgment records (read from a
file, or produced by running judges on a dataset) into a :class:`CalibrationReport`.

Records are grouped by ``judge_id`` (in order of first appearance); each judge is analysed on
its own, the human baseline once, and every pair of judges is compared on the items both
judged, with a paired bootstrap (the same item resamples for both judges).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import TypeVar

import numpy as np

from harness.calibration import agreement
from harness.calibration.baseline import pairwise_baseline, pointwise_baseline
from harness.calibration.bootstrap import ItemBootstrap, UndefinedStatistic
from harness.calibration.judgments import (
    JudgmentSet,
    PairwiseJudgment,
    PairwiseJudgments,
    PointwiseJudgment,
    PointwiseJudgments,
    build_pointwise,
    restore_off_scale,
)
from harness.calibration.pairwise_agreement import (
    PairwiseUnits,
    analyse_pairwise_judge,
    pairwise_statistics,
)
from harness.calibration.pointwise import analyse_pointwise_judge, category_scale
from harness.calibration.report import (
    AnalysisOptions,
    CalibrationReport,
    Comparison,
    OffScaleLabel,
)
from harness.calibration.scale import Scale, rating_values
from harness.wording import plural

POINTWISE_POLICIES = [
    "missing labels: an item without a human label or without a judge score is left out of the "
    "agreement statistics and counted (n_missing_human, n_missing_judge); scores are never "
    "imputed; judge-only items feed prediction-powered inference",
    "several raters or samples: the item's score is their mean; kappa, the confusion matrix and "
    "nominal/ordinal alpha round that mean half up to the nearest scale point",
    "pass/fail with boolean labels: an item passes when at least half its raters (or judge "
    "samples) pass it; with scores: when its mean is at or above the pass threshold",
    "labels off the declared scale: a human rating or judge sample off it is a missing one "
    "(also in the n_missing_* counts), counted in n_off_scale_labels and each judge's "
    "n_off_scale_* counts and named in off_scale_labels and the notes",
]
MAX_NAMED = 20  # off-scale labels named one by one in the notes; all are in off_scale_labels
PAIRWISE_POLICIES = [
    "several gold raters: the unique majority preference; an item without one is left out of "
    "the accuracies and counted",
]


def _bootstrap_policy(options: AnalysisOptions, clustered: bool = False) -> str:
    over = ("over clusters (records with the same cluster, such as a scenario's epochs, are "
            "resampled together; the human baseline, self-consistency and comparisons of "
            "judges over items)" if clustered else "over items")
    return (
        f"intervals: {options.confidence:.0%} percentile bootstrap {over}, "
        f"{options.n_resamples} resamples, seed {options.seed}; resamples on which a statistic "
        "is undefined are left out and counted (resamples_undefined)"
    )


R = TypeVar("R", PointwiseJudgment, PairwiseJudgment)


def _groups(records: Sequence[R], key: Callable[[R], str | None]) -> dict[str | None, list[R]]:
    groups: dict[str | None, list[R]] = {}
    for record in records:
        groups.setdefault(key(record), []).append(record)
    return groups


def analyse(judgments: JudgmentSet, options: AnalysisOptions | None = None) -> CalibrationReport:
    """Analyse judgment records: per-judge agreement with every statistic and its interval, the
    human–human baseline, and pairwise comparisons of judges.

    Never raises for undefined statistics (they are reported with the reason) or for labels
    off the scale (they are missing labels, counted and named in the report).
    """
    options = options or AnalysisOptions()
    if isinstance(judgments, PointwiseJudgments):
        return _analyse_pointwise(judgments, options)
    return _analyse_pairwise(judgments, options)


def _analyse_pointwise(data: PointwiseJudgments, options: AnalysisOptions) -> CalibrationReport:
    if options.scale is not None and options.scale != data.scale:
        data = build_pointwise(restore_off_scale(data), data.source, data.lines or None,
                               scale=options.scale)
    groups = _groups(data.records, lambda r: r.judge_id)
    judges = [analyse_pointwise_judge(data, recs, jid, options) for jid, recs in groups.items()]
    notes = []
    if any(j.ppi is not None for j in judges):
        notes.append("prediction-powered inference assumes the human-labelled items are a "
                     "random sample of all items")
    if any(j.thresholds is not None for j in judges):
        notes.append("the best threshold's figures are in-sample and so optimistic; check the "
                     "threshold on held-out items before gating on it")
    lacking = {
        r.item_id for r in data.records
        if all(v is None for v in rating_values(r.human))
        or all(v is None for v in rating_values(r.judge))
    }
    if lacking:
        notes.append(f"{plural(len(lacking), 'item')} "
                     f"{'lacks' if len(lacking) == 1 else 'lack'} a human label or a judge "
                     "score (see each "
                     "judge's n_missing_* counts)")
    notes += off_scale_notes(data.off_scale)
    return CalibrationReport(
        kind="pointwise",
        source=data.source,
        options=options,
        scale=data.scale or category_scale(data),
        policies=[*POINTWISE_POLICIES, _bootstrap_policy(
            options, any(r.cluster is not None for r in data.records))],
        human_baseline=pointwise_baseline(data, options),
        judges=judges,
        comparisons=_pointwise_comparisons(data, groups, options),
        n_off_scale_labels=len(data.off_scale),
        off_scale_labels=data.off_scale,
        notes=notes,
    )


def off_scale_notes(entries: Sequence[OffScaleLabel]) -> list[str]:
    """One note per label off the scale (the first MAX_NAMED), then how many more."""
    notes = [entry.describe() for entry in entries[:MAX_NAMED]]
    if len(entries) > MAX_NAMED:
        notes.append(f"… and {len(entries) - MAX_NAMED} more label(s) off the declared scale, "
                     "counted as missing (all are listed in off_scale_labels)")
    return notes


def _analyse_pairwise(data: PairwiseJudgments, options: AnalysisOptions) -> CalibrationReport:
    groups = _groups(data.records, lambda r: r.judge_id)
    judges = [analyse_pairwise_judge(recs, jid, options) for jid, recs in groups.items()]
    missing_policy = (
        "missing verdicts: counted as wrong and as inconsistent with the other order (as LLMBar "
        "counts them)" if options.missing_verdict == "wrong"
        else "missing verdicts: that item-order is left out of the statistics that need it"
    ) + "; order_kappa, first_position_rate and tie_rate use given verdicts only"
    notes = []
    missing = sum(j.n_missing_verdicts for j in judges)
    if missing:
        notes.append(f"{plural(missing, 'verdict')} missing (the judge gave none or one that "
                     "is not A, B or tie); see the policy")
    notes += off_scale_notes(data.off_scale)
    return CalibrationReport(
        kind="pairwise",
        source=data.source,
        options=options,
        policies=[missing_policy, *PAIRWISE_POLICIES, _bootstrap_policy(options)],
        human_baseline=pairwise_baseline(data, options),
        judges=judges,
        comparisons=_pairwise_comparisons(groups, options),
        n_off_scale_labels=len(data.off_scale),
        off_scale_labels=data.off_scale,
        notes=notes,
    )


def _label(judge_id: str | None) -> str:
    return judge_id if judge_id is not None else "(no judge_id)"


def _mean_scores(records: list[PointwiseJudgment]) -> dict[str, tuple[float, float]]:
    """Item id → (human mean, judge mean) for the items with both."""
    out = {}
    for r in records:
        human = [v for v in rating_values(r.human) if v is not None]
        judge = [v for v in rating_values(r.judge) if v is not None]
        if human and judge:
            out[r.item_id] = (float(np.mean(human)), float(np.mean(judge)))
    return out


def _compare(
    id_a: str | None,
    id_b: str | None,
    name: str,
    boot: ItemBootstrap,
    first: Callable[[np.ndarray], float],
    second: Callable[[np.ndarray], float],
) -> Comparison:
    return Comparison(
        judge_a=_label(id_a), judge_b=_label(id_b), statistic=name, n_items=boot.n_items,
        a=boot.estimate(first), b=boot.estimate(second),
        difference=boot.difference(first, second,
                                   detail="a − b, paired bootstrap over common items"),
    )


def _pointwise_comparisons(
    data: PointwiseJudgments,
    groups: dict[str | None, list[PointwiseJudgment]],
    options: AnalysisOptions,
) -> list[Comparison]:
    same_kind = None in (data.human_kind, data.judge_kind) or data.human_kind == data.judge_kind
    categories = category_scale(data) if same_kind else None
    comparisons = []
    for (id_a, recs_a), (id_b, recs_b) in combinations(groups.items(), 2):
        a, b = _mean_scores(recs_a), _mean_scores(recs_b)
        common = [item for item in a if item in b]
        human = np.array([a[i][0] for i in common])
        judges = (np.array([a[i][1] for i in common]), np.array([b[i][1] for i in common]))
        boot = ItemBootstrap(len(common), options.n_resamples, options.confidence, options.seed)
        first, second = (_spearman_of(judge, human) for judge in judges)
        comparisons.append(_compare(id_a, id_b, "spearman", boot, first, second))
        if categories is not None:
            first, second = (_kappa_of(judge, human, categories) for judge in judges)
            comparisons.append(_compare(id_a, id_b, "cohen_kappa", boot, first, second))
    return comparisons


def _spearman_of(judge: np.ndarray, human: np.ndarray) -> Callable[[np.ndarray], float]:
    return lambda idx: agreement.spearman(judge[idx], human[idx])


def _kappa_of(judge: np.ndarray, human: np.ndarray, categories: Scale) -> Callable[
    [np.ndarray], float
]:
    k = len(categories.points())
    human_codes, judge_codes = categories.codes(human), categories.codes(judge)
    return lambda idx: agreement.cohen_kappa(human_codes[idx], judge_codes[idx], k, "quadratic")


def _restricted(records: list[PairwiseJudgment], order: dict[str, int]) -> PairwiseUnits:
    """The units of ``records`` on the items in ``order``, items in that order."""
    kept = sorted((r for r in records if r.item_id in order), key=lambda r: order[r.item_id])
    return PairwiseUnits(kept)


def _pairwise_comparisons(
    groups: dict[str | None, list[PairwiseJudgment]], options: AnalysisOptions
) -> list[Comparison]:
    comparisons = []
    for (id_a, recs_a), (id_b, recs_b) in combinations(groups.items(), 2):
        in_b = {r.item_id for r in recs_b}
        common = list(dict.fromkeys(r.item_id for r in recs_a if r.item_id in in_b))
        order = {item: i for i, item in enumerate(common)}
        stats_a = pairwise_statistics(_restricted(recs_a, order), options.missing_verdict)
        stats_b = pairwise_statistics(_restricted(recs_b, order), options.missing_verdict)
        boot = ItemBootstrap(len(common), options.n_resamples, options.confidence, options.seed)
        for name in ("accuracy", "accuracy_both_orders", "position_consistency"):
            comparisons.append(
                _compare(id_a, id_b, name, boot, stats_a[name].fn, stats_b[name].fn)
            )
    return comparisons


__all__ = ["UndefinedStatistic", "analyse"]
