"""Pointwise calibration of one judge: its scores against the human labels of the same items.

Policies (also written into the report):

- **Consensus.** With several raters the human score of an item is the mean of its ratings;
  with several samples the judge score is the mean of its samples. Correlations, bias, MAE,
  Bland–Altman and interval alpha use these means. Kappa, the confusion matrix and nominal and
  ordinal alpha need categories: the mean is rounded half up to the nearest scale point.
- **Missing labels.** A rating or judge sample off the declared scale is a missing one
  (counted apart as well). An item without any human rating, or without any judge score, is left
  out of the agreement statistics and counted (``n_missing_human``, ``n_missing_judge``); a
  missing score is never imputed. Items with a judge score and no human label are the
  unlabelled items of prediction-powered inference. A missing rating inside a list is counted
  and the item's other ratings are used.
- **Pass/fail.** With boolean labels an item passes for people when at least half its raters
  pass it (for the judge: at least half its samples); with numeric scores it passes when its
  mean is at or above ``pass_threshold``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from harness.calibration import agreement
from harness.calibration.bootstrap import ItemBootstrap, UndefinedStatistic, undefined_estimate
from harness.calibration.judgments import PointwiseJudgment, PointwiseJudgments
from harness.calibration.ppi import ppi_mean
from harness.calibration.reliability import KrippendorffAlpha
from harness.calibration.report import (
    AlphaLevel,
    AnalysisOptions,
    BesideHumans,
    BlandAltman,
    BootstrapEstimate,
    ConfusionMatrix,
    PassFailReport,
    PointwiseJudgeReport,
    PPIReport,
    SelfConsistency,
    ThresholdReport,
    Verbosity,
)
from harness.calibration.scale import BOOLEAN_SCALE, Scale, infer_scale, rating_values
from harness.calibration.thresholds import best_point, best_threshold, threshold_curve

LIMITS_Z = 1.96  # Bland–Altman's 95% limits of agreement


def ratings_matrix(rows: Sequence[list[float | None]]) -> np.ndarray:
    """Items × max-ratings matrix, NaN where an item has fewer ratings or a null one."""
    width = max((len(r) for r in rows), default=0)
    matrix = np.full((len(rows), max(width, 1)), np.nan)
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            if value is not None:
                matrix[i, j] = value
    return matrix


def category_scale(data: PointwiseJudgments) -> Scale | None:
    """The scale whose points are the categories of kappa and nominal/ordinal alpha: the
    declared scale, the 0/1 scale for pass/fail labels, or the integer range of the labels."""
    if data.human_kind == "bool" and data.judge_kind in ("bool", None):
        return BOOLEAN_SCALE
    if data.scale is not None:
        return data.scale if data.scale.discrete else None
    values = [
        v
        for r in data.records
        for v in rating_values(r.human) + rating_values(r.judge)
        if v is not None
    ]
    return infer_scale(values)


def headline_level(options: AnalysisOptions, categories: Scale | None) -> AlphaLevel:
    """The level of the headline ``krippendorff_alpha``: as asked, else ordinal on a discrete
    scale and interval otherwise."""
    if options.alpha_level is not None:
        return options.alpha_level
    return "ordinal" if categories is not None else "interval"


class _Items:
    """The judge's items as arrays: ``scored`` items have both a human label and a judge score
    (their rows in ``human``/``judge``); ``unlabelled`` items have only a judge score."""

    def __init__(self, records: Sequence[PointwiseJudgment]) -> None:
        human_rows = [rating_values(r.human) for r in records]
        judge_rows = [rating_values(r.judge) for r in records]
        has_human = np.array([any(v is not None for v in row) for row in human_rows], dtype=bool)
        has_judge = np.array([any(v is not None for v in row) for row in judge_rows], dtype=bool)
        self.n_records = len(records)
        self.n_missing_human = int((~has_human & has_judge).sum())
        self.n_missing_judge = int((has_human & ~has_judge).sum())
        self.n_missing_both = int((~has_human & ~has_judge).sum())
        self.n_missing_human_ratings = sum(
            row.count(None) for row, ok in zip(human_rows, has_human, strict=True) if ok
        )
        self.n_missing_judge_samples = sum(
            row.count(None) for row, ok in zip(judge_rows, has_judge, strict=True) if ok
        )
        scored = has_human & has_judge
        self.item_ids = [r.item_id for r, ok in zip(records, scored, strict=True) if ok]
        # an item without a cluster is its own (its id is unique among the judge's records)
        self.clusters: list[str] | None = (
            [r.cluster if r.cluster is not None else f"item:{r.item_id}"
             for r, ok in zip(records, scored, strict=True) if ok]
            if any(r.cluster is not None for r in records) else None)
        self.human = ratings_matrix([row for row, ok in zip(human_rows, scored, strict=True) if ok])
        self.judge = ratings_matrix([row for row, ok in zip(judge_rows, scored, strict=True) if ok])
        self.judge_all = ratings_matrix([row for row, ok in zip(judge_rows, has_judge, strict=True)
                                         if ok])
        unlabelled = ~has_human & has_judge
        self.unlabelled_judge = ratings_matrix(
            [row for row, ok in zip(judge_rows, unlabelled, strict=True) if ok]
        )
        self.n_unlabelled = int(unlabelled.sum())
        self.lengths = np.array(
            [_length(r) for r, ok in zip(records, scored, strict=True) if ok], dtype=float
        )
        self.n = len(self.item_ids)
        self.human_mean = _row_means(self.human, self.n)
        self.judge_mean = _row_means(self.judge, self.n)

    def per_item_counts(self, matrix: np.ndarray) -> tuple[int, int]:
        counts = (~np.isnan(matrix)).sum(axis=1) if len(matrix) else np.zeros(1, dtype=int)
        return int(counts.min()), int(counts.max())


def _row_means(matrix: np.ndarray, n: int) -> np.ndarray:
    return np.nanmean(matrix, axis=1) if n else np.zeros(0)


def _length(record: PointwiseJudgment) -> float:
    if record.length is not None:
        return record.length
    if record.output is not None:
        return float(len(record.output.split()))
    return float("nan")


def analyse_pointwise_judge(
    data: PointwiseJudgments,
    records: Sequence[PointwiseJudgment],
    judge_id: str | None,
    options: AnalysisOptions,
) -> PointwiseJudgeReport:
    """Every pointwise statistic for one judge's records (a subset of ``data.records``)."""
    items = _Items(records)
    categories = category_scale(data)
    level = headline_level(options, categories)
    # with no label at all on one side there is nothing to compare, whatever the kinds
    same_kind = None in (data.human_kind, data.judge_kind) or data.human_kind == data.judge_kind
    boot = ItemBootstrap(items.n, options.n_resamples, options.confidence, options.seed,
                         clusters=items.clusters)
    h, j = items.human_mean, items.judge_mean

    def on_means(fn: Callable[[np.ndarray, np.ndarray], float]) -> Callable[[np.ndarray], float]:
        return lambda idx: fn(j[idx], h[idx])

    no_common = (
        None if same_kind else "the human labels are pass/fail and the judge scores numbers (or "
        "the reverse): there is no common scale"
    )

    def common(name: str, fn: Callable[[np.ndarray], float],
               detail: str | None = None) -> BootstrapEstimate:
        if no_common:
            return undefined_estimate(items.n, f"{name}: {no_common}", detail)
        return boot.estimate(fn, detail=detail)

    # categories: consensus rounded to the scale
    if categories is not None and same_kind:
        k = len(categories.points())
        h_code, j_code = categories.codes(h), categories.codes(j)
        no_categories = None
    else:
        k, h_code, j_code = 0, np.zeros(0, int), np.zeros(0, int)
        no_categories = no_common or (
            "the scores are not on a discrete scale; declare one with a step (--scale MIN:MAX:STEP)"
        )

    def kappa(weights: agreement.KappaWeights) -> BootstrapEstimate:
        name = "cohen_kappa" if weights == "unweighted" else f"cohen_kappa_{weights}"
        detail = ("" if weights == "unweighted" else f"{weights} weights; ") + (
            "consensus rounded to the scale")
        if no_categories:
            return undefined_estimate(items.n, f"{name}: {no_categories}", detail)
        return boot.estimate(
            lambda idx: agreement.cohen_kappa(h_code[idx], j_code[idx], k, weights), detail=detail
        )

    def alpha(alpha_level: AlphaLevel) -> BootstrapEstimate:
        name = f"krippendorff_alpha ({alpha_level})"
        if alpha_level == "interval":
            detail = "two coders: human mean, judge mean"
            if no_common:
                return undefined_estimate(items.n, f"{name}: {no_common}", detail)
            stat = KrippendorffAlpha(np.column_stack([h, j]), "interval", name)
        else:
            detail = "two coders: consensus rounded to the scale"
            if no_categories:
                return undefined_estimate(items.n, f"{name}: {no_categories}", detail)
            stat = KrippendorffAlpha(np.column_stack([h_code, j_code]), alpha_level, name)
        return boot.estimate(lambda idx: stat(np.bincount(idx, minlength=items.n)), detail=detail)

    kappas = {w: kappa(w) for w in ("unweighted", "linear", "quadratic")}
    alphas = {lv: alpha(lv) for lv in ("nominal", "ordinal", "interval")}
    headline_kappa = kappas["quadratic"].model_copy(
        update={"detail": "quadratic weights (cohen_kappa_* give all three)"}
    )
    headline_alpha = alphas[level].model_copy(update={"detail": f"{level} level; " + (
        alphas[level].detail or "")})

    def limit(sign: float) -> Callable[[np.ndarray], float]:
        return lambda idx: agreement.mean_bias(j[idx], h[idx]) + sign * LIMITS_Z * (
            agreement.difference_sd(j[idx], h[idx])
        )

    confusion = None
    if not no_categories:
        matrix = agreement.confusion_matrix(h_code, j_code, k)
        confusion = ConfusionMatrix(
            categories=[float(p) for p in categories.points()],  # type: ignore[union-attr]
            counts=matrix.tolist(),
            n=items.n,
        )

    pass_fail, thresholds, human_pass = _pass_fail(data, items, boot, options)
    ours = {r.item_id for r in records}
    return PointwiseJudgeReport(
        judge_id=judge_id,
        n_records=items.n_records,
        n_items=items.n,
        n_missing_human=items.n_missing_human,
        n_missing_judge=items.n_missing_judge,
        n_missing_both=items.n_missing_both,
        n_missing_human_ratings=items.n_missing_human_ratings,
        n_missing_judge_samples=items.n_missing_judge_samples,
        n_off_scale_human_ratings=sum(1 for e in data.off_scale
                                      if e.field == "human" and e.item_id in ours),
        n_off_scale_judge_samples=sum(1 for e in data.off_scale
                                      if e.field == "judge" and e.judge_id == judge_id),
        raters_per_item=items.per_item_counts(items.human),
        samples_per_item=items.per_item_counts(items.judge_all),
        spearman=boot.estimate(on_means(agreement.spearman)),
        kendall_tau_b=boot.estimate(on_means(agreement.kendall_tau_b)),
        pearson=boot.estimate(on_means(agreement.pearson)),
        cohen_kappa=headline_kappa,
        cohen_kappa_unweighted=kappas["unweighted"],
        cohen_kappa_linear=kappas["linear"],
        cohen_kappa_quadratic=kappas["quadratic"],
        krippendorff_alpha=headline_alpha,
        krippendorff_alpha_nominal=alphas["nominal"],
        krippendorff_alpha_ordinal=alphas["ordinal"],
        krippendorff_alpha_interval=alphas["interval"],
        mean_bias=common("mean_bias", on_means(agreement.mean_bias), "judge − human"),
        mae=common("mae", on_means(agreement.mae)),
        bland_altman=BlandAltman(
            bias=common("bland_altman", on_means(agreement.mean_bias), "judge − human"),
            sd=common("bland_altman", on_means(agreement.difference_sd),
                      "SD of judge − human (ddof=1)"),
            lower=common("bland_altman", limit(-1.0), "bias − 1.96 SD"),
            upper=common("bland_altman", limit(+1.0), "bias + 1.96 SD"),
        ),
        confusion_matrix=confusion,
        pass_fail=pass_fail,
        thresholds=thresholds,
        self_consistency=_self_consistency(items, categories, level, options),
        verbosity=_verbosity(data, items, boot, no_common),
        beside_humans=_beside_humans(items, boot, level, categories, no_common),
        ppi=_ppi(data, items, options, human_pass, no_common),
    )


def _pass_rule(kind: str | None, who: str, threshold: float | None) -> str | None:
    """How an item passes for ``who`` ("human"/"judge"), or None when it cannot be decided
    (numeric scores and no pass threshold)."""
    if kind == "bool":
        return "at least half the raters pass it" if who == "human" else (
            "at least half the judge samples pass it")
    return f"mean {who} score ≥ {threshold:g}" if threshold is not None else None


def _passes(kind: str | None, means: np.ndarray, threshold: float | None) -> np.ndarray:
    if kind == "bool":
        return means >= 0.5
    assert threshold is not None
    return means >= threshold - 1e-9


def _pass_fail(
    data: PointwiseJudgments, items: _Items, boot: ItemBootstrap, options: AnalysisOptions
) -> tuple[PassFailReport | None, ThresholdReport | None, np.ndarray | None]:
    human_rule = _pass_rule(data.human_kind, "human", options.pass_threshold)
    judge_rule = _pass_rule(data.judge_kind, "judge", options.pass_threshold)
    if human_rule is None:
        return None, None, None
    human_pass = _passes(data.human_kind, items.human_mean, options.pass_threshold)
    report = None
    if judge_rule is not None:
        judge_pass = _passes(data.judge_kind, items.judge_mean, options.pass_threshold)
        both = (human_pass, judge_pass)

        def stat(fn: Callable[[np.ndarray, np.ndarray], float]) -> BootstrapEstimate:
            return boot.estimate(lambda idx: fn(both[0][idx], both[1][idx]))

        report = PassFailReport(
            human_rule=human_rule,
            judge_rule=judge_rule,
            n=items.n,
            human_pass_judge_pass=int((human_pass & judge_pass).sum()),
            human_pass_judge_fail=int((human_pass & ~judge_pass).sum()),
            human_fail_judge_pass=int((~human_pass & judge_pass).sum()),
            human_fail_judge_fail=int((~human_pass & ~judge_pass).sum()),
            accuracy=stat(agreement.accuracy),
            cohen_kappa=stat(agreement.pass_fail_kappa),
            coverage=stat(agreement.coverage),
            false_failure_rate=stat(agreement.false_failure_rate),
            alignment=stat(agreement.alignment),
            sensitivity=stat(agreement.sensitivity),
            specificity=stat(agreement.specificity),
        )
    thresholds = None
    if data.judge_kind == "number" and items.n:
        criterion = options.threshold_criterion
        scores = items.judge_mean
        curve = threshold_curve(scores, human_pass)
        try:
            best = best_point(curve, criterion)
        except UndefinedStatistic:
            best = None
        thresholds = ThresholdReport(
            criterion=criterion,
            human_rule=human_rule,
            best_threshold=boot.estimate(
                lambda idx: best_threshold(scores[idx], human_pass[idx], criterion),
                detail=f"max {criterion}; interval: spread of the chosen threshold over "
                "resamples",
            ),
            best=best,
            curve=curve,
        )
    return report, thresholds, human_pass


def _self_consistency(
    items: _Items, categories: Scale | None, level: AlphaLevel, options: AnalysisOptions
) -> SelfConsistency | None:
    samples = items.judge_all
    counts = (~np.isnan(samples)).sum(axis=1) if len(samples) else np.zeros(0, dtype=int)
    repeated = samples[counts >= 2]
    if len(repeated) == 0:
        return None
    repeated_counts = counts[counts >= 2]
    n = len(repeated)
    boot = ItemBootstrap(n, options.n_resamples, options.confidence, options.seed)
    values = repeated
    if level != "interval" and categories is not None:
        codes = categories.codes(np.nan_to_num(repeated))
        values = np.where(np.isnan(repeated), np.nan, codes.astype(float))
    alpha = KrippendorffAlpha(values, level, f"self-consistency alpha ({level})")
    spread = np.nanmax(repeated, axis=1) - np.nanmin(repeated, axis=1)
    sds = np.nanstd(repeated, axis=1, ddof=1)
    return SelfConsistency(
        n_items=n,
        samples_per_item=(int(repeated_counts.min()), int(repeated_counts.max())),
        krippendorff_alpha=boot.estimate(
            lambda idx: alpha(np.bincount(idx, minlength=n)),
            detail=f"{level} level, the judge's samples as coders",
        ),
        share_items_disagree=boot.estimate(
            lambda idx: float(np.mean(spread[idx] > 0)),
            detail="items whose samples are not all equal",
        ),
        mean_sample_sd=boot.estimate(
            lambda idx: float(np.mean(sds[idx])), detail="mean per-item SD of samples (ddof=1)"
        ),
    )


def _verbosity(
    data: PointwiseJudgments, items: _Items, boot: ItemBootstrap, no_common: str | None
) -> Verbosity | None:
    if data.length_source == "none":
        return None
    known = ~np.isnan(items.lengths)
    residual = items.judge_mean - items.human_mean
    lengths = items.lengths

    def corr(fn: Callable[..., float], name: str) -> BootstrapEstimate:
        detail = f"{name} of (judge − human) with length; {int(known.sum())} items with a length"
        if no_common:
            return undefined_estimate(items.n, f"verbosity: {no_common}", detail)

        def stat(idx: np.ndarray) -> float:
            keep = idx[known[idx]]
            return fn(residual[keep], lengths[keep])

        return boot.estimate(stat, detail=detail)

    return Verbosity(
        length_source=data.length_source,
        spearman=corr(lambda a, b: agreement.spearman(a, b, "verbosity spearman"), "Spearman"),
        pearson=corr(agreement.pearson, "Pearson"),
    )


def _beside_humans(
    items: _Items,
    boot: ItemBootstrap,
    level: AlphaLevel,
    categories: Scale | None,
    no_common: str | None,
) -> BesideHumans | None:
    human = items.human
    counts = (~np.isnan(human)).sum(axis=1) if items.n else np.zeros(0, dtype=int)
    if items.n == 0 or counts.max() < 2:
        return None
    judge = items.judge_mean
    if level != "interval" and categories is not None:
        human = np.where(np.isnan(human), np.nan, categories.codes(np.nan_to_num(human)))
        judge = categories.codes(judge).astype(float)
    alpha_h = KrippendorffAlpha(human, level, "alpha among humans")
    alpha_hj = KrippendorffAlpha(np.column_stack([human, judge]), level, "alpha with the judge")

    def weights(idx: np.ndarray) -> np.ndarray:
        return np.bincount(idx, minlength=items.n)

    # leave-one-out: for each rater position, that rater's rating and the mean of the others
    # (fixed per item, so a resample only re-ranks)
    positions = []
    for r in range(items.human.shape[1]):
        others = np.delete(items.human, r, axis=1)
        keep = ~np.isnan(items.human[:, r]) & (~np.isnan(others)).any(axis=1)
        rest = np.full(items.n, np.nan)
        rest[keep] = np.nanmean(others[keep], axis=1)
        positions.append((keep, items.human[:, r], rest))

    def rest_corr(of_judge: bool) -> Callable[[np.ndarray], float]:
        def stat(idx: np.ndarray) -> float:
            values = []
            for keep, rater, rest in positions:
                chosen = idx[keep[idx]]
                target = items.judge_mean[chosen] if of_judge else rater[chosen]
                try:
                    values.append(agreement.spearman(target, rest[chosen], "leave-one-out"))
                except UndefinedStatistic:
                    continue
            if not values:
                raise UndefinedStatistic("leave-one-out spearman: undefined for every rater")
            return float(np.mean(values))

        return stat

    judge_rest, human_rest = rest_corr(True), rest_corr(False)

    def with_judge(idx: np.ndarray) -> float:
        return alpha_hj(weights(idx))

    def humans_only(idx: np.ndarray) -> float:
        return alpha_h(weights(idx))

    alpha_detail = f"{level} level"
    alpha_undefined = no_common is not None
    return BesideHumans(
        alpha_humans=boot.estimate(humans_only, detail=alpha_detail),
        alpha_with_judge=(
            undefined_estimate(items.n, f"alpha with the judge: {no_common}")
            if alpha_undefined else
            boot.estimate(with_judge,
                          detail=alpha_detail + "; the judge's mean as one more rater")
        ),
        alpha_difference=(
            undefined_estimate(items.n, f"alpha difference: {no_common}")
            if alpha_undefined else
            boot.difference(with_judge, humans_only, detail="with judge − humans alone (paired)")
        ),
        human_vs_rest_spearman=boot.estimate(
            human_rest, detail="each rater vs the mean of the others, averaged"
        ),
        judge_vs_rest_spearman=boot.estimate(
            judge_rest, detail="judge vs the same leave-one-out means, averaged"
        ),
        spearman_difference=boot.difference(
            judge_rest, human_rest, detail="judge − human (paired)"
        ),
    )


def _ppi(
    data: PointwiseJudgments,
    items: _Items,
    options: AnalysisOptions,
    human_pass: np.ndarray | None,
    no_common: str | None,
) -> PPIReport | None:
    if items.n_unlabelled == 0:
        return None
    f_unlabelled = _row_means(items.unlabelled_judge, items.n_unlabelled)
    report = PPIReport()
    reasons = []
    if no_common is None:
        try:
            report.mean_score = ppi_mean(items.human_mean, items.judge_mean, f_unlabelled,
                                         options.confidence, options.ppi_lambda, "mean_score")
        except UndefinedStatistic as why:
            reasons.append(str(why))
    if human_pass is not None and (data.judge_kind == "bool" or options.pass_threshold is not None):
        judge_pass = _passes(data.judge_kind, items.judge_mean, options.pass_threshold)
        unlabelled_pass = _passes(data.judge_kind, f_unlabelled, options.pass_threshold)
        try:
            report.pass_rate = ppi_mean(
                human_pass.astype(float), judge_pass.astype(float),
                unlabelled_pass.astype(float), options.confidence, options.ppi_lambda,
                "pass_rate",
            )
        except UndefinedStatistic as why:
            reasons.append(str(why))
    if report.mean_score is None and report.pass_rate is None:
        report.undefined = "; ".join(reasons) or f"ppi: {no_common}"
    return report
