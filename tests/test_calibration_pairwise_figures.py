"""Every figure of a pairwise judge report against a reference written from the policies in
harness.calibration.pairwise_agreement's docstring: plain loops over the records, Cohen's kappa
from scikit-learn and Krippendorff's alpha from the ``krippendorff`` package, on the point
estimate and on the bootstrap interval (the same item resamples, drawn from the same seed).

The records hold every case the policies name: missing verdicts, units judged in one order
only, items without gold and with a split vote, ties, repeated samples, lengths that differ,
tie and are missing."""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from harness.calibration.bootstrap import ItemBootstrap
from harness.calibration.judgments import PairwiseJudgment
from harness.calibration.pairwise_agreement import analyse_pairwise_judge
from harness.calibration.report import AnalysisOptions, BootstrapEstimate

PREFS = ("A", "B", "tie")
RESAMPLES = 60
Units = dict[tuple[str, int], dict[bool, str | None]]


class Undefined(Exception):
    pass


def _records(seed: int) -> list[PairwiseJudgment]:
    rng = random.Random(seed)
    records: list[PairwiseJudgment] = []
    for i in range(14):
        item = f"item-{i}"
        gold: Any = rng.choice([
            rng.choice(PREFS), None,
            [rng.choice([*PREFS, None]) for _ in range(rng.choice([2, 3, 3, 4]))]])
        length_a, length_b = rng.choice([(10.0, 20.0), (30.0, 5.0), (7.0, 7.0), (None, None),
                                         (12.0, None)])
        for sample in range(rng.choice([1, 2, 3])):
            for swapped in (False, True):
                if rng.random() < 0.15:
                    continue  # this order not judged for this unit
                verdict = rng.choice([*PREFS, "A", "B", None])
                records.append(PairwiseJudgment(
                    item_id=item, gold=gold, verdict=verdict, swapped=swapped, sample=sample,
                    length_a=length_a, length_b=length_b))
    return records


def _majority(labels: Sequence[str | None]) -> str | None:
    votes = Counter(label for label in labels if label is not None).most_common()
    if not votes or (len(votes) > 1 and votes[0][1] == votes[1][1]):
        return None
    return votes[0][0]


def _gold(gold: Any) -> str | None:
    return _majority([gold] if isinstance(gold, str) or gold is None else gold)


class Reference:
    """The report's figures for ``records`` with the items weighted by ``weight``."""

    def __init__(self, records: list[PairwiseJudgment], weight: dict[str, float],
                 exclude: bool, gold: dict[str, str | None] | None = None) -> None:
        self.records, self.weight, self.exclude = records, weight, exclude
        self.gold = gold if gold is not None else {r.item_id: _gold(r.gold) for r in records}
        self.units: Units = {}
        for r in records:
            self.units.setdefault((r.item_id, r.sample or 0), {})[r.swapped] = r.verdict

    def _share(self, rows: list[tuple[str, bool]]) -> float:
        total = sum(self.weight[item] for item, _ in rows)
        if total == 0:
            raise Undefined
        return sum(self.weight[item] for item, hit in rows if hit) / total

    def _usable(self, unit: dict[bool, str | None], order: bool) -> bool:
        return order in unit and not (self.exclude and unit[order] is None)

    def accuracy_in(self, order: bool) -> float:
        return self._share([(item, unit[order] == self.gold[item])
                            for (item, _), unit in self.units.items()
                            if self.gold[item] is not None and self._usable(unit, order)])

    def accuracy(self) -> float:
        orders = [o for o in (False, True)
                  if any(o in unit and self.gold[item] is not None
                         for (item, _), unit in self.units.items())]
        if not orders:
            raise Undefined
        return float(np.mean([self.accuracy_in(o) for o in orders]))

    def _pairs(self) -> list[tuple[str, str | None, str | None]]:
        return [(item, unit[False], unit[True]) for (item, _), unit in self.units.items()
                if len(unit) == 2 and not (self.exclude and None in unit.values())]

    def accuracy_both_orders(self) -> float:
        return self._share([(item, first == second == self.gold[item])
                            for item, first, second in self._pairs()
                            if self.gold[item] is not None])

    def position_consistency(self) -> float:
        return self._share([(item, first == second is not None)
                            for item, first, second in self._pairs()])

    def order_kappa(self) -> float:
        given = [(item, f, s) for (item, _), unit in self.units.items() if len(unit) == 2
                 for f, s in [(unit[False], unit[True])] if f is not None and s is not None]
        weights = [self.weight[item] for item, _, _ in given]
        if sum(weights) == 0:
            raise Undefined
        return float(cohen_kappa_score([f for _, f, _ in given], [s for _, _, s in given],
                                       labels=list(PREFS), sample_weight=weights))

    def first_position_rate(self) -> float:
        rows = []
        for (item, _), unit in self.units.items():
            if len(unit) == 2 and None not in unit.values():
                rows += [(item, unit[False] == "A")] if unit[False] in ("A", "B") else []
                rows += [(item, unit[True] == "B")] if unit[True] in ("A", "B") else []
        return self._share(rows)

    def tie_rate(self) -> float:
        return self._share([(item, verdict == "tie") for (item, _), unit in self.units.items()
                            for verdict in unit.values() if verdict is not None])

    def items_with(self, statistic: str) -> int:
        """The ``n`` of a statistic: items with at least one unit it uses."""
        def uses(item: str, unit: dict[bool, str | None]) -> bool:
            gold = self.gold[item] is not None
            pair = len(unit) == 2 and not (self.exclude and None in unit.values())
            given = [v for v in unit.values() if v is not None]
            return {
                "accuracy": gold and (self._usable(unit, False) or self._usable(unit, True)),
                "accuracy_original_order": gold and self._usable(unit, False),
                "accuracy_swapped_order": gold and self._usable(unit, True),
                "accuracy_both_orders": gold and pair,
                "position_consistency": pair,
                "order_kappa": len(given) == 2,
                "first_position_rate": len(given) == 2 and any(v in ("A", "B") for v in given),
                "tie_rate": bool(given),
            }[statistic]
        return len({item for (item, _), unit in self.units.items() if uses(item, unit)})


FIGURES: dict[str, Callable[[Reference], float]] = {
    "accuracy": Reference.accuracy,
    "accuracy_original_order": lambda ref: ref.accuracy_in(False),
    "accuracy_swapped_order": lambda ref: ref.accuracy_in(True),
    "accuracy_both_orders": Reference.accuracy_both_orders,
    "position_consistency": Reference.position_consistency,
    "order_kappa": Reference.order_kappa,
    "first_position_rate": Reference.first_position_rate,
    "tie_rate": Reference.tie_rate,
}


def _item_weights(items: list[str], idx: np.ndarray) -> dict[str, float]:
    counts = np.bincount(idx, minlength=len(items))
    return {item: float(c) for item, c in zip(items, counts, strict=True)}


def _expected(items: list[str], options: AnalysisOptions,
              figure: Callable[[dict[str, float]], float]) -> tuple[float | None, float | None,
                                                                    float | None]:
    """(value, ci_low, ci_high) of ``figure`` over the report's item resamples."""
    boot = ItemBootstrap(len(items), options.n_resamples, options.confidence, options.seed)
    try:
        value = figure(_item_weights(items, np.arange(len(items))))
    except Undefined:
        return None, None, None
    reps = []
    for idx in boot.indices:
        with contextlib.suppress(Undefined):
            reps.append(figure(_item_weights(items, idx)))
    low, high = np.percentile(reps, [2.5, 97.5]) if reps else (None, None)
    return value, low, high


def _check(estimate: BootstrapEstimate, expected: tuple[float | None, ...]) -> None:
    value, low, high = expected
    if value is None:
        assert estimate.value is None and estimate.undefined
        return
    assert estimate.value == pytest.approx(value, abs=1e-12)
    assert estimate.ci_low == pytest.approx(low, abs=1e-12)
    assert estimate.ci_high == pytest.approx(high, abs=1e-12)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("missing", ["wrong", "exclude"])
def test_every_pairwise_figure_and_interval_equals_the_reference(seed: int, missing: str) -> None:
    records = _records(seed)
    options = AnalysisOptions(n_resamples=RESAMPLES, seed=seed, missing_verdict=missing)  # type: ignore[arg-type]
    report = analyse_pairwise_judge(records, "j", options)
    items = list(dict.fromkeys(r.item_id for r in records))
    exclude = missing == "exclude"
    whole = Reference(records, dict.fromkeys(items, 1.0), exclude)
    for name, figure in FIGURES.items():
        estimate = getattr(report, name)
        _check(estimate, _expected(items, options,
                                   lambda w, f=figure: f(Reference(records, w, exclude))))
        assert estimate.n == whole.items_with(name), name
    units = whole.units
    assert report.n_units == len(units)
    assert report.n_units_both_orders == sum(len(u) == 2 for u in units.values())
    assert report.n_missing_verdicts == sum(r.verdict is None for r in records)
    golds = {r.item_id: r.gold for r in records}
    assert report.n_missing_gold == sum(
        g is None or (isinstance(g, list) and all(x is None for x in g)) for g in golds.values())
    assert report.n_gold_without_majority == sum(
        whole.gold[i] is None for i in items) - report.n_missing_gold


def test_the_accuracy_says_whether_it_is_the_mean_of_two_orders() -> None:
    both = [PairwiseJudgment(item_id=f"i{k}", gold="A", verdict="A", swapped=s)
            for k in range(3) for s in (False, True)]
    one = [r for r in both if not r.swapped]
    options = AnalysisOptions(n_resamples=0)
    assert analyse_pairwise_judge(both, None, options).accuracy.detail == (
        "mean of the accuracies in the two orders")
    only = analyse_pairwise_judge(one, None, options)
    assert only.accuracy.detail == "only one order was judged: its accuracy"
    assert only.accuracy.value == 1.0


def test_undefined_figures_name_their_statistic() -> None:
    # one order only and no gold: nothing needing gold or both orders is defined
    records = [PairwiseJudgment(item_id=f"i{k}", gold=None, verdict=None, swapped=False)
               for k in range(3)]
    report = analyse_pairwise_judge(records, None, AnalysisOptions(n_resamples=0))
    for name in FIGURES:
        estimate = getattr(report, name)
        assert estimate.value is None, name
        # the reason opens with the statistic's name, as the report prints it
        prefix = {"accuracy_original_order": "accuracy (original order)",
                  "accuracy_swapped_order": "accuracy (swapped order)"}.get(name, name)
        assert estimate.undefined is not None
        assert estimate.undefined.startswith(prefix + ": "), estimate.undefined
    assert report.accuracy_original_order.undefined == (
        "accuracy (original order): no unit judged in this order with a gold label")
    assert report.order_kappa.undefined == (
        "order_kappa: no unit was judged in both orders with both verdicts given")
    assert report.tie_rate.undefined == "tie_rate: no verdict given"


def _leave_one_out(records: list[PairwiseJudgment], weight: dict[str, float],
                   exclude: bool) -> tuple[float, float]:
    """(human, judge) beside the humans: per rater position, that rater against the majority
    of the others, and the judge's accuracy against the same gold; averaged over positions."""
    raters = {r.item_id: (r.gold if isinstance(r.gold, list) else [r.gold]) for r in records}
    width = max(len(g) for g in raters.values())
    humans, judges = [], []
    for position in range(width):
        gold: dict[str, str | None] = {}
        hits = []
        for item, labels in raters.items():
            own = labels[position] if position < len(labels) else None
            rest = _majority([g for k, g in enumerate(labels) if k != position])
            gold[item] = rest if own is not None else None
            if own is not None and rest is not None:
                hits.append((item, own == rest))
        if not hits or sum(weight[item] for item, _ in hits) == 0:
            continue
        ref = Reference(records, weight, exclude, gold)
        try:
            judges.append(ref.accuracy())
        except Undefined:
            continue
        humans.append(ref._share(hits))
    if not humans:
        raise Undefined
    return float(np.mean(humans)), float(np.mean(judges))


@pytest.mark.parametrize("seed", [5, 6, 7])
@pytest.mark.parametrize("missing", ["wrong", "exclude"])
def test_beside_the_humans_equals_the_leave_one_out_reference(seed: int, missing: str) -> None:
    rng = random.Random(seed)
    records = []
    for i in range(12):
        gold = [rng.choice(["A", "A", "B", "tie", None]) for _ in range(rng.choice([1, 2, 3, 4]))]
        for swapped in (False, True):
            if rng.random() < 0.9:
                records.append(PairwiseJudgment(
                    item_id=f"i{i}", gold=gold, swapped=swapped,
                    verdict=rng.choice(["A", "A", "B", "tie", None])))
    options = AnalysisOptions(n_resamples=RESAMPLES, seed=seed, missing_verdict=missing)  # type: ignore[arg-type]
    beside = analyse_pairwise_judge(records, None, options).beside_humans
    assert beside is not None
    items = list(dict.fromkeys(r.item_id for r in records))
    exclude = missing == "exclude"
    _check(beside.human_vs_rest_accuracy,
           _expected(items, options, lambda w: _leave_one_out(records, w, exclude)[0]))
    _check(beside.judge_vs_rest_accuracy,
           _expected(items, options, lambda w: _leave_one_out(records, w, exclude)[1]))
    _check(beside.accuracy_difference, _expected(
        items, options, lambda w: (lambda h, j: j - h)(*_leave_one_out(records, w, exclude))))
    golds = {r.item_id: r.gold for r in records}
    counts = [sum(g is not None for g in gold) for gold in golds.values()]
    rated = [c for c in counts if c >= 2]
    assert beside.raters_per_item == (min(rated), max(rated))
    assert beside.n_items == sum(
        any(own is not None and _majority(gold[:k] + gold[k + 1:]) is not None
            for k, own in enumerate(gold)) for gold in golds.values())


def test_no_figure_beside_the_humans_with_one_rater_per_item() -> None:
    records = [PairwiseJudgment(item_id=f"i{k}", gold=["A", None], verdict="A", swapped=False)
               for k in range(3)]
    assert analyse_pairwise_judge(records, None, AnalysisOptions(n_resamples=0)).beside_humans \
        is None
    records.append(PairwiseJudgment(item_id="two", gold=["A", "B"], verdict="A", swapped=False))
    beside = analyse_pairwise_judge(records, None, AnalysisOptions(n_resamples=0)).beside_humans
    assert beside is not None and beside.raters_per_item == (2, 2)


@pytest.mark.parametrize("seed", [8, 9])
def test_self_consistency_equals_krippendorff_and_a_count(seed: int) -> None:
    rng = random.Random(seed)
    records = [PairwiseJudgment(item_id=f"i{i}", gold="A", swapped=swapped, sample=k,
                                verdict=rng.choice(["A", "A", "B", "tie", None]))
               for i in range(10) for swapped in (False, True) for k in range(rng.choice([1, 3]))]
    report = analyse_pairwise_judge(records, None, AnalysisOptions(n_resamples=0))
    cells: dict[tuple[str, bool], list[str]] = {}
    for r in records:
        if r.verdict is not None:
            cells.setdefault((r.item_id, r.swapped), []).append(r.verdict)
    repeated = [v for v in cells.values() if len(v) >= 2]
    consistency = report.self_consistency
    assert consistency is not None and consistency.n_item_orders == len(repeated)
    assert consistency.share_disagree.value == pytest.approx(
        sum(len(set(v)) > 1 for v in repeated) / len(repeated))
    width = max(len(v) for v in repeated)
    data = np.array([[PREFS.index(x) for x in v] + [np.nan] * (width - len(v))
                     for v in repeated], dtype=float)
    assert consistency.krippendorff_alpha_nominal.value == pytest.approx(
        krippendorff.alpha(reliability_data=data.T, level_of_measurement="nominal"))


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_length_preference_equals_a_count(seed: int) -> None:
    records = _records(seed)
    report = analyse_pairwise_judge(records, None, AnalysisOptions(n_resamples=0))
    # an item's lengths: the last record giving both; a record giving one is not a length
    lengths: dict[str, tuple[float, float]] = {}
    for r in records:
        if r.length_a is not None and r.length_b is not None:
            lengths[r.item_id] = (r.length_a, r.length_b)
    longer = {item: "A" if a > b else "B" for item, (a, b) in lengths.items() if a != b}
    picks = [r.verdict == longer[r.item_id] for r in records
             if r.item_id in longer and r.verdict in ("A", "B")]
    golds = {r.item_id: _gold(r.gold) for r in records}
    gold_picks = [golds[item] == side for item, side in longer.items()
                  if golds[item] in ("A", "B")]
    preference = report.length_preference
    assert preference is not None
    assert preference.judge_longer_rate.value == pytest.approx(sum(picks) / len(picks))
    assert preference.gold_longer_rate.value == pytest.approx(sum(gold_picks) / len(gold_picks))
