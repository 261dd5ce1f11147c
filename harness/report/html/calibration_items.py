"""The calibration page's view of single items: each judge's score next to the people's, the
items where they disagree most with what the judge said, and the pairwise verdict tables.

The figures follow the analysis's own rules (:mod:`harness.calibration.pointwise`,
:mod:`harness.calibration.pairwise_agreement`): an item's human score is the mean of its ratings and
its judge score the mean of its samples (missing ones left out); an item without either is
not shown; a pairwise item's gold is the unique majority of its raters, and each verdict
names the original A/B. What the judge said (its reasoning, its error) comes from the
records' ``metadata``, where a calibration study writes it; records from elsewhere may have
none, and the page then says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.calibration.datasets import PairwiseItem, PointwiseItem
from harness.calibration.judgments import PairwiseJudgment, PointwiseJudgment
from harness.calibration.pairwise_agreement import MISSING, NOT_RUN, PairwiseUnits, gold_code
from harness.calibration.scale import PREFERENCES, rating_values

# Categories of a pairwise verdict table: the three preferences, then "no verdict".
VERDICT_LABELS = (*PREFERENCES, "none")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def show_rating(value: float | None, boolean: bool) -> str:
    """One rating as a reader sees it: ``pass``/``fail`` for boolean labels, the number
    otherwise, a dash when missing."""
    if value is None:
        return "—"
    if boolean:
        return "pass" if value >= 0.5 else "fail"
    return f"{value:g}"


@dataclass(frozen=True)
class JudgeSample:
    """One judge sample of an item: its score (``None``: missing), what the judge said and
    why the sample is missing, when it is."""

    index: int
    score: float | None
    reasoning: str | None
    error: str | None


@dataclass(frozen=True)
class PointwiseItemView:
    """One item scored by both: the ratings and samples, their means, judge − human."""

    position: int  # the record's place among the judge's records (for anchors)
    item_id: str
    human: list[float | None]
    judge: list[float | None]
    human_mean: float
    judge_mean: float
    difference: float
    samples: list[JudgeSample]
    input: str | None
    text: str | None


def _samples(record: PointwiseJudgment, judge: list[float | None]) -> list[JudgeSample]:
    meta = record.metadata
    reasoning = meta.get("reasoning")
    # a study writes one reasoning per sample; a single one (a file from elsewhere) is the
    # first sample's
    said = reasoning if isinstance(reasoning, list) else [reasoning]
    errors = meta.get("errors")
    errors = errors if isinstance(errors, dict) else {}
    return [JudgeSample(index=i, score=score,
                        reasoning=_text(said[i]) if i < len(said) else None,
                        error=_text(errors.get(str(i))))
            for i, score in enumerate(judge)]


def pointwise_items(records: Sequence[PointwiseJudgment],
                    items: Mapping[str, PointwiseItem] | None = None
                    ) -> list[PointwiseItemView]:
    """One judge's items with a human label and a judge score, in record order. ``items``
    (the study's dataset, by id) supplies the request and the judged text; without it the
    text is the record's ``output``."""
    views = []
    for position, record in enumerate(records):
        human, judge = rating_values(record.human), rating_values(record.judge)
        h, j = _mean(human), _mean(judge)
        if h is None or j is None:
            continue
        item = (items or {}).get(record.item_id)
        views.append(PointwiseItemView(
            position=position, item_id=record.item_id, human=human, judge=judge,
            human_mean=h, judge_mean=j, difference=j - h, samples=_samples(record, judge),
            input=item.input if item else None,
            text=item.text if item else record.output))
    return views


def largest_differences(views: Sequence[PointwiseItemView], limit: int
                        ) -> list[PointwiseItemView]:
    """The ``limit`` items whose judge and human means differ most (ties in record order);
    items where they are equal are left out."""
    differing = [v for v in views if not math.isclose(v.difference, 0.0, abs_tol=1e-12)]
    return sorted(differing, key=lambda v: -abs(v.difference))[:limit]


@dataclass(frozen=True)
class Verdict:
    """One pairwise verdict: sample, order, the verdict naming the original A/B (``None``:
    none was given), what the judge said by position, its reasoning and error."""

    sample: int
    swapped: bool
    verdict: str | None
    said: str | None
    reasoning: str | None
    error: str | None
    correct: bool


@dataclass(frozen=True)
class PairwiseItemView:
    """One pairwise item with a gold label: its verdicts, how many miss the gold, and how
    many samples changed their verdict when the order was swapped."""

    position: int
    item_id: str
    gold: str
    raters: list[str | None]
    verdicts: list[Verdict]
    wrong: int
    inconsistent: int
    samples_both_orders: int
    input: str | None
    output_a: str | None
    output_b: str | None

    @property
    def share_wrong(self) -> float:
        return self.wrong / len(self.verdicts) if self.verdicts else 0.0


def pairwise_items(records: Sequence[PairwiseJudgment],
                   items: Mapping[str, PairwiseItem] | None = None) -> list[PairwiseItemView]:
    """One judge's pairwise items that have a gold label (a unique majority), with every
    verdict, in order of first appearance. A missing verdict counts as not matching the
    gold."""
    by_item: dict[str, list[PairwiseJudgment]] = {}
    for record in records:
        by_item.setdefault(record.item_id, []).append(record)
    views = []
    for position, (item_id, group) in enumerate(by_item.items()):
        code = gold_code(group[0].gold)
        if code < 0:
            continue
        gold = PREFERENCES[code]
        group = sorted(group, key=lambda r: (r.sample or 0, r.swapped))
        verdicts = [Verdict(sample=r.sample or 0, swapped=r.swapped, verdict=r.verdict,
                            said=_text(r.metadata.get("said")),
                            reasoning=_text(r.metadata.get("reasoning")),
                            error=_text(r.metadata.get("error")), correct=r.verdict == gold)
                    for r in group]
        orders: dict[int, dict[bool, str | None]] = {}
        for v in verdicts:
            orders.setdefault(v.sample, {})[v.swapped] = v.verdict
        both = [o for o in orders.values() if len(o) == 2]
        item = (items or {}).get(item_id)
        raw = group[0].gold
        views.append(PairwiseItemView(
            position=position, item_id=item_id, gold=gold,
            raters=list(raw) if isinstance(raw, list) else [],
            verdicts=verdicts, wrong=sum(not v.correct for v in verdicts),
            inconsistent=sum(o[False] != o[True] or o[False] is None for o in both),
            samples_both_orders=len(both),
            input=item.input if item else None, output_a=item.output_a if item else None,
            output_b=item.output_b if item else None))
    return views


def most_wrong(views: Sequence[PairwiseItemView], limit: int) -> list[PairwiseItemView]:
    """The ``limit`` items with the largest share of verdicts missing the gold (ties: more
    order flips first, then first appearance); items the judge always got right are left
    out."""
    wrong = [v for v in views if v.wrong]
    return sorted(wrong, key=lambda v: (-v.share_wrong, -v.inconsistent))[:limit]


def verdict_tables(records: Sequence[PairwiseJudgment]
                   ) -> tuple[list[list[int]], list[list[int]]]:
    """Two count tables over :data:`VERDICT_LABELS`, for one judge's records:

    - gold × verdict: every verdict (both orders, every sample) of an item with a gold
      label, by its gold (rows A, B, tie; no "none" row) and the verdict (columns);
    - original order × swapped order: every sample judged in both orders, by its verdict in
      each (the diagonal is the position-consistent samples; a missing verdict is "none",
      never consistent).
    """
    units = PairwiseUnits(records)
    column = {code: code for code in range(len(PREFERENCES))} | {MISSING: len(PREFERENCES)}
    by_gold = [[0] * len(VERDICT_LABELS) for _ in PREFERENCES]
    by_order = [[0] * len(VERDICT_LABELS) for _ in VERDICT_LABELS]
    for gold, first, second in zip(units.unit_gold, units.first, units.second, strict=True):
        for verdict in (first, second):
            if gold >= 0 and verdict != NOT_RUN:
                by_gold[gold][column[int(verdict)]] += 1
        if NOT_RUN not in (first, second):
            by_order[column[int(first)]][column[int(second)]] += 1
    return by_gold, by_order
