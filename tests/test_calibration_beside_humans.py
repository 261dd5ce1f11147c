"""Pairwise `beside_humans`: each rater against the majority of the other raters (leave one
out), the judge against that same gold, and the paired bootstrap interval of the difference;
checked on a hand-worked set with a known answer and against a direct re-implementation with
the same seeded resamples."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from harness.calibration import AnalysisOptions, analyse, build_pairwise
from harness.calibration.judgments import PairwiseJudgment
from harness.calibration.report import PairwiseJudgeReport


def _judge(records: list[PairwiseJudgment], options: AnalysisOptions) -> PairwiseJudgeReport:
    [judge] = analyse(build_pairwise(records, "synthetic.jsonl"), options).judges
    assert isinstance(judge, PairwiseJudgeReport)
    return judge


def _records(golds: list[list[str | None]], verdicts: list[tuple[str | None, str | None]]
             ) -> list[PairwiseJudgment]:
    return [PairwiseJudgment(item_id=f"i{n}", gold=gold, verdict=verdict, swapped=swapped)
            for n, (gold, pair) in enumerate(zip(golds, verdicts, strict=True))
            for swapped, verdict in zip((False, True), pair, strict=True)]


def test_known_answer() -> None:
    # position 0: items 1, 2 (its others split on 3 and 4): rater 2/2, judge 2/2
    # position 1: items 1, 2, 4 (others B, B): rater 2/3, judge says A on 4: 2/3
    # position 2: items 1, 2, 3 (others A, A): rater says B on 3: 2/3, judge 3/3
    golds: list[list[str | None]] = [["A", "A", "A"], ["B", "B", "B"], ["A", "A", "B"],
                                     ["B", "A", "B"]]
    verdicts: list[tuple[str | None, str | None]] = [("A", "A"), ("B", "B"), ("A", "A"),
                                                     ("A", "A")]
    judge = _judge(_records(golds, verdicts), AnalysisOptions(n_resamples=300, seed=2))
    bh = judge.beside_humans
    assert bh is not None
    assert bh.n_items == 4 and bh.raters_per_item == (3, 3)
    assert bh.human_vs_rest_accuracy.value == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)
    assert bh.judge_vs_rest_accuracy.value == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert bh.accuracy_difference.value == pytest.approx(1 / 9)
    assert bh.accuracy_difference.detail == "judge − human (paired)"


def test_a_judge_that_copies_one_rater_scores_as_that_rater() -> None:
    """A judge that always says what rater 0 said is, against rater 0's leave-one-out gold,
    exactly as accurate as rater 0; its advantage at the other positions comes from agreeing
    with a rater who is part of the gold there."""
    rng = np.random.default_rng(3)
    golds: list[list[str | None]] = [[str(g) for g in rng.choice(["A", "B", "tie"], 3)]
                                     for _ in range(30)]
    verdicts: list[tuple[str | None, str | None]] = [(g[0], g[0]) for g in golds]
    judge = _judge(_records(golds, verdicts), AnalysisOptions(n_resamples=50))
    bh = judge.beside_humans
    assert bh is not None and bh.accuracy_difference.value is not None
    # position 0: the judge is rater 0; positions 1 and 2: two raters agree only when rater 0
    # is one of them, so the judge is always right there
    kept = [g for g in golds if g[1] == g[2]]
    rater_0 = np.mean([g[0] == g[1] for g in kept])
    assert bh.judge_vs_rest_accuracy.value == pytest.approx((rater_0 + 2) / 3)
    assert bh.accuracy_difference.value > 0


def test_no_beside_humans_with_one_rater_per_item() -> None:
    records = _records([["A"], ["B"]], [("A", "A"), ("B", "A")])
    assert _judge(records, AnalysisOptions(n_resamples=10)).beside_humans is None
    single = [PairwiseJudgment(item_id="x", gold="A", verdict="A", swapped=s)
              for s in (False, True)]
    assert _judge(single, AnalysisOptions(n_resamples=10)).beside_humans is None


def _majority(votes: list[str]) -> str | None:
    ranked = Counter(votes).most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _direct(golds: list[list[str | None]], verdicts: list[tuple[str | None, str | None]],
            idx: np.ndarray) -> tuple[float, float] | None:
    """The definition, item by item, on the items ``idx`` (with repeats)."""
    width = max(len(g) for g in golds)
    humans, judges = [], []
    for r in range(width):
        hits = n = 0
        right = {False: 0, True: 0}
        for i in idx:
            gold = golds[i]
            own = gold[r] if r < len(gold) else None
            rest = _majority([g for k, g in enumerate(gold) if k != r and g is not None])
            if own is None or rest is None:
                continue
            n += 1
            hits += own == rest
            for swapped, verdict in zip((False, True), verdicts[i], strict=True):
                right[swapped] += verdict == rest  # a missing verdict counts wrong
        if n:
            humans.append(hits / n)
            judges.append((right[False] / n + right[True] / n) / 2)
    if not humans:
        return None
    return float(np.mean(humans)), float(np.mean(judges))


def test_equals_a_direct_implementation_with_the_same_resamples() -> None:
    rng = np.random.default_rng(11)
    n = 40
    golds: list[list[str | None]] = []
    verdicts: list[tuple[str | None, str | None]] = []
    for _ in range(n):
        truth = str(rng.choice(["A", "B"]))
        raters = [truth if rng.random() < 0.75 else str(rng.choice(["A", "B", "tie"]))
                  for _ in range(int(rng.integers(2, 5)))]
        gold: list[str | None] = list(raters)
        if rng.random() < 0.15:
            gold[0] = None
        golds.append(gold)
        verdicts.append(tuple(  # type: ignore[arg-type]
            None if rng.random() < 0.05 else (truth if rng.random() < 0.8 else "tie")
            for _ in range(2)))
    options = AnalysisOptions(n_resamples=400, seed=9, confidence=0.9)
    bh = _judge(_records(golds, verdicts), options).beside_humans
    assert bh is not None
    whole = _direct(golds, verdicts, np.arange(n))
    assert whole is not None
    assert bh.human_vs_rest_accuracy.value == pytest.approx(whole[0], abs=1e-12)
    assert bh.judge_vs_rest_accuracy.value == pytest.approx(whole[1], abs=1e-12)
    # the documented resamples: default_rng(seed).integers(0, n, (n_resamples, n))
    draws = np.random.default_rng(9).integers(0, n, (400, n))
    diffs = []
    for idx in draws:
        got = _direct(golds, verdicts, idx)
        if got is not None:
            diffs.append(got[1] - got[0])
    low, high = np.percentile(diffs, [5, 95])
    assert bh.accuracy_difference.ci_low == pytest.approx(low, abs=1e-12)
    assert bh.accuracy_difference.ci_high == pytest.approx(high, abs=1e-12)
    assert bh.accuracy_difference.ci_low < bh.accuracy_difference.ci_high
