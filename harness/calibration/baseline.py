"""The human–human baseline: how well the people who labelled the items agree with each other
(Krippendorff's alpha, Fleiss' kappa) on items with two or more ratings. A judge that agrees
with people about as well as people agree with each other is doing as well as can be measured.
"""

from __future__ import annotations

import numpy as np

from harness.calibration.bootstrap import ItemBootstrap, undefined_estimate
from harness.calibration.judgments import PairwiseJudgments, PointwiseJudgments
from harness.calibration.pairwise_agreement import CODES
from harness.calibration.pointwise import category_scale, ratings_matrix
from harness.calibration.reliability import FleissKappa, KrippendorffAlpha, category_table
from harness.calibration.report import AlphaLevel, AnalysisOptions, BootstrapEstimate, HumanBaseline
from harness.calibration.scale import Preference, rating_values
from harness.wording import plural


def _unique_items(ids: list[str], rows: list[list[float | None]]) -> list[list[float | None]]:
    seen: set[str] = set()
    kept = []
    for item_id, row in zip(ids, rows, strict=True):
        if item_id not in seen:
            seen.add(item_id)
            kept.append(row)
    return kept


def _baseline(
    ratings: np.ndarray,
    codes: np.ndarray | None,
    n_categories: int,
    levels: tuple[AlphaLevel, ...],
    options: AnalysisOptions,
    no_categories: str,
) -> HumanBaseline | None:
    counts = (~np.isnan(ratings)).sum(axis=1)
    multi = counts >= 2
    if not multi.any():
        return None
    ratings = ratings[multi]
    n = len(ratings)
    boot = ItemBootstrap(n, options.n_resamples, options.confidence, options.seed)

    def alpha(level: AlphaLevel) -> BootstrapEstimate:
        stat = KrippendorffAlpha(ratings, level, f"human krippendorff_alpha ({level})")
        return boot.estimate(lambda idx: stat(np.bincount(idx, minlength=n)),
                             detail=f"{level} level, every human rating")

    if codes is None:
        fleiss = undefined_estimate(n, f"fleiss_kappa: {no_categories}")
    else:
        fleiss = _fleiss(codes[multi], counts[multi], n_categories, options)
    alphas = {level: alpha(level) for level in levels}
    return HumanBaseline(
        n_items=n,
        raters_per_item=(int(counts[multi].min()), int(counts[multi].max())),
        krippendorff_alpha_nominal=alphas["nominal"],
        krippendorff_alpha_ordinal=alphas.get("ordinal"),
        krippendorff_alpha_interval=alphas.get("interval"),
        fleiss_kappa=fleiss,
    )


def _fleiss(
    codes: np.ndarray, counts: np.ndarray, n_categories: int, options: AnalysisOptions
) -> BootstrapEstimate:
    """Fleiss' kappa needs the same number of raters on every item: it is computed on the items
    with the most common count (ties: the larger count), and the detail says how many were
    left out."""
    values, freq = np.unique(counts, return_counts=True)
    modal = int(values[freq == freq.max()].max())
    keep = counts == modal
    n = int(keep.sum())
    detail = f"{plural(n, 'item')} with {plural(modal, 'rater')}"
    if n < len(counts):
        detail += (f"; {plural(len(counts) - n, 'item')} with another number of ratings "
                   "left out")
    stat = FleissKappa(category_table(codes[keep], n_categories))
    boot = ItemBootstrap(n, options.n_resamples, options.confidence, options.seed)
    return boot.estimate(lambda idx: stat(np.bincount(idx, minlength=n)), detail=detail)


def pointwise_baseline(data: PointwiseJudgments, options: AnalysisOptions) -> HumanBaseline | None:
    """Agreement among human raters over the distinct items of a pointwise judgment set, or
    ``None`` when no item has two ratings."""
    rows = _unique_items([r.item_id for r in data.records],
                         [rating_values(r.human) for r in data.records])
    ratings = ratings_matrix(rows)
    categories = category_scale(data) if data.human_kind == "number" else None
    codes = None
    n_categories = 2
    if data.human_kind == "bool":
        codes = np.where(np.isnan(ratings), -1, np.nan_to_num(ratings)).astype(int)
    elif categories is not None:
        codes = np.where(np.isnan(ratings), -1, categories.codes(np.nan_to_num(ratings)))
        n_categories = len(categories.points())
    levels: tuple[AlphaLevel, ...] = (
        ("nominal",) if data.human_kind == "bool" else ("nominal", "ordinal", "interval")
    )
    return _baseline(ratings, codes, n_categories, levels, options,
                     "the ratings are not on a discrete scale (declare one with a step)")


def pairwise_baseline(data: PairwiseJudgments, options: AnalysisOptions) -> HumanBaseline | None:
    """Agreement among the raters whose preferences make up list-valued ``gold`` labels, or
    ``None`` when no item has two rater preferences."""
    golds: dict[str, Preference | list[Preference | None] | None] = {}
    for record in data.records:
        golds.setdefault(record.item_id, record.gold)
    rows: list[list[float | None]] = []
    for gold in golds.values():
        listed = gold if isinstance(gold, list) else [gold]
        rows.append([None if g is None else float(CODES[g]) for g in listed])
    ratings = ratings_matrix(rows)
    codes = np.where(np.isnan(ratings), -1, np.nan_to_num(ratings)).astype(int)
    return _baseline(ratings, codes, 3, ("nominal",), options, "")
