"""Pairwise calibration of one judge: its verdicts against the gold preferences, in both
presentation orders.

A *unit* is one sample of one item: its verdict with the outputs in the original order
(``swapped: false``) and its verdict with them swapped. The bootstrap resamples items, each
with all its units.

Policies (also written into the report):

- **Missing verdicts** (``verdict: null``, the judge gave none): by default they count as wrong
  and as inconsistent with the other order, exactly as LLMBar's statistics count them;
  ``missing_verdict="exclude"`` leaves that unit-order out of the statistics that need it.
  Either way they are counted (``n_missing_verdicts``). ``order_kappa``, ``first_position_rate``
  and ``tie_rate`` use only verdicts that exist.
- **Gold.** A list of rater preferences gives the majority; no unique majority, or no gold at
  all, leaves the item out of the accuracies (counted) but not out of the consistency
  statistics, which do not need gold.
- **Beside the humans.** With several raters per item, each rater (by position in the
  ``gold`` lists) is scored against the majority of the item's other raters, and the judge
  against that same leave-one-out gold (:class:`PairwiseBesideHumans`).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from harness.calibration import agreement
from harness.calibration.bootstrap import ItemBootstrap, UndefinedStatistic, undefined_estimate
from harness.calibration.judgments import PairwiseJudgment
from harness.calibration.reliability import KrippendorffAlpha
from harness.calibration.report import (
    AnalysisOptions,
    BootstrapEstimate,
    LengthPreference,
    PairwiseBesideHumans,
    PairwiseJudgeReport,
    PairwiseSelfConsistency,
)
from harness.calibration.scale import PREFERENCES, Preference

CODES: dict[str, int] = {p: i for i, p in enumerate(PREFERENCES)}  # A=0, B=1, tie=2
MISSING = -1  # the judge gave no verdict / the item has no gold label
NOT_RUN = -2  # this order was not judged for this unit
NO_MAJORITY = -3  # raters split with no unique majority
A, B, TIE = CODES["A"], CODES["B"], CODES["tie"]


def gold_code(gold: Preference | list[Preference | None] | None) -> int:
    """The gold preference's code: the label itself, or the unique majority of a list of rater
    preferences; MISSING when absent, NO_MAJORITY when the raters split evenly."""
    return majority(rater_codes(gold))


def rater_codes(gold: Preference | list[Preference | None] | None) -> list[int]:
    """One code per rater position of a gold label (MISSING for a rater who gave none)."""
    if gold is None:
        return []
    listed = [gold] if isinstance(gold, str) else gold
    return [MISSING if g is None else CODES[g] for g in listed]


def majority(codes: Sequence[int]) -> int:
    """The unique most common of the given codes; MISSING when none is given, NO_MAJORITY when
    the top two are tied."""
    votes = Counter(int(c) for c in codes if c >= 0)
    if not votes:
        return MISSING
    ranked = votes.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return NO_MAJORITY
    return ranked[0][0]


class PairwiseUnits:
    """One judge's pairwise records as arrays over items and units."""

    def __init__(self, records: Sequence[PairwiseJudgment]) -> None:
        self.item_ids: list[str] = []
        position: dict[str, int] = {}
        gold: list[int] = []
        self.gold_raters: list[list[int]] = []
        lengths: list[tuple[float, float] | None] = []
        cells: dict[tuple[int, int], list[int]] = {}
        for record in records:
            if record.item_id not in position:
                position[record.item_id] = len(self.item_ids)
                self.item_ids.append(record.item_id)
                gold.append(gold_code(record.gold))
                self.gold_raters.append(rater_codes(record.gold))
                lengths.append(None)
            item = position[record.item_id]
            if record.length_a is not None and record.length_b is not None:
                lengths[item] = (record.length_a, record.length_b)
            unit = cells.setdefault((item, record.sample or 0), [NOT_RUN, NOT_RUN])
            unit[int(record.swapped)] = MISSING if record.verdict is None else CODES[record.verdict]
        keys = sorted(cells)
        self.n_items = len(self.item_ids)
        self.n_records = len(records)
        self.n_missing_verdicts = sum(1 for r in records if r.verdict is None)
        self.gold = np.array(gold, dtype=int)
        self.unit_item = np.array([item for item, _ in keys], dtype=int)
        self.first = np.array([cells[key][0] for key in keys], dtype=int)
        self.second = np.array([cells[key][1] for key in keys], dtype=int)
        self.unit_gold = self.gold[self.unit_item] if keys else np.zeros(0, dtype=int)
        self.lengths = lengths

    def with_gold(self, gold: np.ndarray) -> PairwiseUnits:
        """The same units judged against another gold label per item."""
        other = copy.copy(self)
        other.gold = gold
        other.unit_gold = gold[self.unit_item] if len(self.unit_item) else self.unit_gold
        return other

    def weights(self, idx: np.ndarray) -> np.ndarray:
        """Unit weights for an item resample."""
        weights: np.ndarray = np.bincount(idx, minlength=self.n_items)[self.unit_item]
        return weights.astype(float)


def _share(name: str, hits: np.ndarray, eligible: np.ndarray, w: np.ndarray) -> float:
    total = float((w * eligible).sum())
    if total == 0:
        raise UndefinedStatistic(name)
    return float((w * (hits & eligible)).sum()) / total


class PairwiseStatistic(NamedTuple):
    """One pairwise statistic: its function of an item resample, the detail it is reported
    with, and the units it can use on all items (its ``n`` counts their items, so an item
    with no gold label is not counted in an accuracy)."""

    fn: Callable[[np.ndarray], float]
    detail: str | None
    units: np.ndarray

    def n_items(self, unit_item: np.ndarray) -> int:
        """The number of items with at least one unit this statistic uses."""
        return len(np.unique(unit_item[self.units]))


Statistics = dict[str, PairwiseStatistic]


def pairwise_statistics(units: PairwiseUnits, missing_verdict: str) -> Statistics:
    """The pairwise statistics of ``units`` as functions of an item resample, with the detail
    text each is reported with and the units each uses. Keys are the report's field names."""
    exclude = missing_verdict == "exclude"
    gold_known = units.unit_gold >= 0
    first, second = units.first, units.second

    def eligible_in(verdicts: np.ndarray) -> np.ndarray:
        eligible: np.ndarray = (verdicts != NOT_RUN) & gold_known
        if exclude:
            eligible &= verdicts != MISSING
        return eligible

    def in_order(verdicts: np.ndarray, label: str) -> Callable[[np.ndarray], float]:
        eligible, hits = eligible_in(verdicts), verdicts == units.unit_gold
        reason = f"accuracy ({label} order): no unit judged in this order with a gold label"
        return lambda idx: _share(reason, hits, eligible, units.weights(idx))

    both_run = (first != NOT_RUN) & (second != NOT_RUN)
    both_ok = both_run & (first != MISSING) & (second != MISSING)
    first_acc, second_acc = in_order(first, "original"), in_order(second, "swapped")
    orders = [acc for acc, verdicts in ((first_acc, first), (second_acc, second))
              if ((verdicts != NOT_RUN) & gold_known).any()]

    def accuracy(idx: np.ndarray) -> float:
        if not orders:
            raise UndefinedStatistic("accuracy: no unit has a verdict and a gold label")
        return float(np.mean([acc(idx) for acc in orders]))

    pair_eligible = both_ok if exclude else both_run
    both_hits = (first == units.unit_gold) & (second == units.unit_gold)
    consistent = (first == second) & (first != MISSING)
    no_pairs = "no unit was judged in both orders"

    def order_kappa(idx: np.ndarray) -> float:
        w = units.weights(idx) * both_ok
        if w.sum() == 0:
            raise UndefinedStatistic(f"order_kappa: {no_pairs} with both verdicts given")
        matrix = np.zeros((3, 3))
        keep = w > 0
        np.add.at(matrix, (first[keep], second[keep]), w[keep])
        return agreement.kappa_from_confusion(matrix)

    # The output shown first is A in the original order and B when swapped. Only units judged
    # in both orders count: each output is then shown first once, so a judge without position
    # bias names the first output half the time whatever the gold answers are.
    decisive = np.concatenate([np.isin(first, (A, B)) & both_ok, np.isin(second, (A, B)) & both_ok])
    picked_first = np.concatenate([first == A, second == B])
    given = np.concatenate([first >= 0, second >= 0])
    ties = np.concatenate([first == TIE, second == TIE])

    def doubled(idx: np.ndarray) -> np.ndarray:
        w = units.weights(idx)
        return np.concatenate([w, w])

    decisive_units = decisive[: len(first)] | decisive[len(first):]
    return {
        "accuracy": PairwiseStatistic(
            accuracy, "mean of the accuracies in the two orders" if len(orders) == 2
            else "only one order was judged: its accuracy",
            eligible_in(first) | eligible_in(second)),
        "accuracy_original_order": PairwiseStatistic(first_acc, None, eligible_in(first)),
        "accuracy_swapped_order": PairwiseStatistic(second_acc, None, eligible_in(second)),
        "accuracy_both_orders": PairwiseStatistic(
            lambda idx: _share(f"accuracy_both_orders: {no_pairs} with a gold label", both_hits,
                               pair_eligible & gold_known, units.weights(idx)),
            "correct in both orders", pair_eligible & gold_known),
        "position_consistency": PairwiseStatistic(
            lambda idx: _share(f"position_consistency: {no_pairs}", consistent, pair_eligible,
                               units.weights(idx)),
            "same verdict in both orders", pair_eligible),
        "order_kappa": PairwiseStatistic(
            order_kappa, "Cohen's kappa, original-order vs swapped verdicts (given verdicts "
            "only)", both_ok),
        "first_position_rate": PairwiseStatistic(
            lambda idx: _share(f"first_position_rate: {no_pairs} with decisive (A/B) "
                               "verdicts; in one order, position and gold answer are confounded",
                               picked_first, decisive, doubled(idx)),
            "share of A/B verdicts naming the output shown first (units judged in both orders)",
            decisive_units),
        "tie_rate": PairwiseStatistic(
            lambda idx: _share("tie_rate: no verdict given", ties, given, doubled(idx)),
            "share of given verdicts that are tie", (first >= 0) | (second >= 0)),
    }


def analyse_pairwise_judge(
    records: Sequence[PairwiseJudgment], judge_id: str | None, options: AnalysisOptions
) -> PairwiseJudgeReport:
    """Every pairwise statistic for one judge's records."""
    units = PairwiseUnits(records)
    boot = ItemBootstrap(units.n_items, options.n_resamples, options.confidence, options.seed)
    estimates: dict[str, BootstrapEstimate] = {
        name: boot.estimate(stat.fn, detail=stat.detail, n=stat.n_items(units.unit_item))
        for name, stat in pairwise_statistics(units, options.missing_verdict).items()
    }
    both_run = (units.first != NOT_RUN) & (units.second != NOT_RUN)
    return PairwiseJudgeReport(
        judge_id=judge_id,
        n_records=units.n_records,
        n_items=units.n_items,
        n_units=len(units.unit_item),
        n_units_both_orders=int(both_run.sum()),
        n_missing_verdicts=units.n_missing_verdicts,
        n_missing_gold=int((units.gold == MISSING).sum()),
        n_gold_without_majority=int((units.gold == NO_MAJORITY).sum()),
        **estimates,
        self_consistency=_self_consistency(records, units, options),
        length_preference=_length_preference(units, boot),
        beside_humans=_beside_humans(units, boot, options.missing_verdict),
    )


def _beside_humans(
    units: PairwiseUnits, boot: ItemBootstrap, missing_verdict: str
) -> PairwiseBesideHumans | None:
    counts = [sum(c >= 0 for c in row) for row in units.gold_raters]
    if not counts or max(counts) < 2:
        return None
    width = max(len(row) for row in units.gold_raters)
    raters = np.full((units.n_items, width), MISSING, dtype=np.int64)
    for item, row in enumerate(units.gold_raters):
        raters[item, : len(row)] = row
    # per rater position: the items where it and a majority of the others both exist, whether
    # it agrees with that majority, and the judge's accuracy against the same gold
    positions: list[tuple[np.ndarray, np.ndarray, Callable[[np.ndarray], float]]] = []
    eligible = np.zeros(units.n_items, dtype=bool)
    for r in range(width):
        rest = np.array([majority(np.delete(row, r).tolist()) for row in raters],
                        dtype=np.int64)
        keep = (raters[:, r] >= 0) & (rest >= 0)
        if not keep.any():
            continue
        eligible |= keep
        gold = np.where(keep, rest, MISSING)
        accuracy = pairwise_statistics(units.with_gold(gold), missing_verdict)["accuracy"].fn
        positions.append((keep, raters[:, r] == rest, accuracy))
    if not positions:
        return None

    # The human and judge figures (and their difference) are read from the same resamples
    # in separate passes: compute each resample's pair once.
    computed: dict[bytes, tuple[float, float]] = {}

    def both(idx: np.ndarray) -> tuple[float, float]:
        key = idx.tobytes()
        if key not in computed:
            computed[key] = _both(idx)
        return computed[key]

    def _both(idx: np.ndarray) -> tuple[float, float]:
        w = np.bincount(idx, minlength=units.n_items).astype(float)
        humans, judges = [], []
        for keep, hits, accuracy in positions:
            total = float((w * keep).sum())
            if total == 0:
                continue
            try:
                judges.append(accuracy(idx))
            except UndefinedStatistic:
                continue
            humans.append(float((w * (hits & keep)).sum()) / total)
        if not humans:
            raise UndefinedStatistic("beside_humans: no rater position with a leave-one-out "
                                     "majority and a judge verdict")
        return float(np.mean(humans)), float(np.mean(judges))

    def human(idx: np.ndarray) -> float:
        return both(idx)[0]

    def judge(idx: np.ndarray) -> float:
        return both(idx)[1]

    rated = [c for c in counts if c >= 2]
    return PairwiseBesideHumans(
        n_items=int(eligible.sum()),
        raters_per_item=(min(rated), max(rated)),
        human_vs_rest_accuracy=boot.estimate(
            human, detail="each rater vs the majority of the other raters, averaged over rater "
            "positions"),
        judge_vs_rest_accuracy=boot.estimate(
            judge, detail="judge vs the same leave-one-out majorities (mean of the two orders)"),
        accuracy_difference=boot.difference(judge, human, detail="judge − human (paired)"),
    )


def _self_consistency(
    records: Sequence[PairwiseJudgment], units: PairwiseUnits, options: AnalysisOptions
) -> PairwiseSelfConsistency | None:
    position = {item: i for i, item in enumerate(units.item_ids)}
    cells: dict[tuple[int, bool], list[float]] = {}
    for record in records:
        if record.verdict is not None:
            cells.setdefault((position[record.item_id], record.swapped), []).append(
                float(CODES[record.verdict])
            )
    repeated = {key: v for key, v in cells.items() if len(v) >= 2}
    if not repeated:
        return None
    keys = sorted(repeated)
    width = max(len(v) for v in repeated.values())
    matrix = np.full((len(keys), width), np.nan)
    for row, key in enumerate(keys):
        matrix[row, : len(repeated[key])] = repeated[key]
    cell_item = np.array([item for item, _ in keys])
    disagree = np.array([len(set(repeated[key])) > 1 for key in keys])
    alpha = KrippendorffAlpha(matrix, "nominal", "self-consistency alpha")
    boot = ItemBootstrap(units.n_items, options.n_resamples, options.confidence, options.seed)

    def weights(idx: np.ndarray) -> np.ndarray:
        per_cell: np.ndarray = np.bincount(idx, minlength=units.n_items)[cell_item]
        return per_cell.astype(float)

    return PairwiseSelfConsistency(
        n_item_orders=len(keys),
        krippendorff_alpha_nominal=boot.estimate(
            lambda idx: alpha(weights(idx)), detail="samples of one item and order as coders"
        ),
        share_disagree=boot.estimate(
            lambda idx: _share("share_disagree: no repeated item", disagree,
                               np.ones_like(disagree), weights(idx)),
            detail="item-orders whose samples do not all agree",
        ),
    )


def _length_preference(units: PairwiseUnits, boot: ItemBootstrap) -> LengthPreference | None:
    if all(length is None for length in units.lengths):
        return None
    longer = np.array(
        [MISSING if ln is None or ln[0] == ln[1] else (A if ln[0] > ln[1] else B)
         for ln in units.lengths],
        dtype=int,
    )
    unit_longer = longer[units.unit_item]
    differs = unit_longer >= 0
    verdicts = np.concatenate([units.first, units.second])
    decisive = np.concatenate([differs, differs]) & np.isin(verdicts, (A, B))
    picks_longer = verdicts == np.concatenate([unit_longer, unit_longer])
    gold_decisive = (longer >= 0) & np.isin(units.gold, (A, B))

    def judge(idx: np.ndarray) -> float:
        w = units.weights(idx)
        return _share("length preference: no decisive verdict on items of different lengths",
                      picks_longer, decisive, np.concatenate([w, w]))

    def gold(idx: np.ndarray) -> float:
        return _share("length preference: no decisive gold label on items of different lengths",
                      units.gold == longer, gold_decisive,
                      np.bincount(idx, minlength=units.n_items).astype(float))

    if not decisive.any():
        reason = "length preference: no decisive verdict on items of different lengths"
        return LengthPreference(judge_longer_rate=undefined_estimate(units.n_items, reason),
                                gold_longer_rate=boot.estimate(gold))
    return LengthPreference(
        judge_longer_rate=boot.estimate(judge, detail="A/B verdicts picking the longer output"),
        gold_longer_rate=boot.estimate(gold, detail="gold labels picking the longer output"),
    )
