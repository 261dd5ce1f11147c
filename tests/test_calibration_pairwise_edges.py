"""Pairwise cases the random records of test_calibration_pairwise_figures rarely draw: a rater
position empty on every item, Fleiss' kappa on items where one rater of three is missing,
sample numbers given on some lines only, every figure reported with what it measures, a
self-consistency interval that is an interval, and a failed call without swap kept as a
missing verdict with its error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from harness.calibration import load_judgments
from harness.calibration.analysis import analyse
from harness.calibration.judgments import PairwiseJudgment
from harness.calibration.pairwise_agreement import analyse_pairwise_judge
from harness.calibration.report import AnalysisOptions
from harness.calibration.study import run_calibration
from harness.testing.replies import Reply
from tests.helpers.calibration_rubrics import HELPFUL_RUBRIC

PREFS = ("A", "B", "tie")


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_rater_position_empty_everywhere_leaves_the_others_beside_the_humans() -> None:
    golds = [[None, "A", "A"], [None, "B", "A"], [None, "B", "B"]]
    records = [PairwiseJudgment(item_id=f"i{k}", gold=g, verdict="A", swapped=False)
               for k, g in enumerate(golds)]
    beside = analyse_pairwise_judge(records, None, AnalysisOptions(n_resamples=0)).beside_humans
    assert beside is not None
    # positions 1 and 2, each against the other: agree on i0 and i2, not on i1
    assert beside.human_vs_rest_accuracy.value == pytest.approx(2 / 3)
    assert beside.raters_per_item == (2, 2) and beside.n_items == 3


def test_fleiss_kappa_of_raters_with_one_missing_per_item(tmp_path: Path) -> None:
    golds = [["A", None, "A"], ["B", "B", None], [None, "A", "B"], ["tie", "A", None],
             ["A", "A", None], ["B", None, "tie"], ["A", "B", "B"]]
    rows = [{"item_id": f"i{k}", "gold": g, "verdict": "A", "swapped": False}
            for k, g in enumerate(golds)]
    baseline = analyse(load_judgments(_write(tmp_path / "p.jsonl", rows)),
                       AnalysisOptions(n_resamples=0)).human_baseline
    assert baseline is not None
    # the most common number of ratings is 2: Fleiss on those six items, raters in any order
    pairs = np.array([[PREFS.index(x) for x in g if x is not None] for g in golds[:6]])
    table, _ = aggregate_raters(pairs, n_cat=3)
    assert baseline.fleiss_kappa.value == pytest.approx(fleiss_kappa(table, method="fleiss"))
    assert baseline.fleiss_kappa.n == 6


def test_sample_numbers_given_on_some_lines_only(tmp_path: Path) -> None:
    row = {"item_id": "p", "gold": "A", "verdict": "A", "swapped": False}
    data = load_judgments(_write(tmp_path / "p.jsonl", [
        {**row, "sample": 2}, {**row, "sample": 0}, row, row]))
    # an unnumbered line takes the number after the highest so far in its order
    assert [r.sample for r in data.records] == [2, 0, 3, 4]


def _records() -> list[PairwiseJudgment]:
    rows = []
    verdicts = ["A", "B", "A", "tie", "B", "A", "A", "B"]
    for k in range(8):
        for swapped in (False, True):
            for sample in range(2):
                verdict = verdicts[(k + sample + swapped) % 8]
                rows.append(PairwiseJudgment(item_id=f"i{k}", gold=["A", "B", "A"],
                                             verdict=verdict, swapped=swapped, sample=sample,
                                             length_a=float(k + 1), length_b=4.0))
    return rows


def test_every_pairwise_figure_says_what_it_measures() -> None:
    report = analyse_pairwise_judge(_records(), None, AnalysisOptions(n_resamples=20))
    for name in ("accuracy", "accuracy_both_orders", "position_consistency", "order_kappa",
                 "first_position_rate", "tie_rate"):
        assert getattr(report, name).detail, name
    beside, consistency, lengths = (report.beside_humans, report.self_consistency,
                                    report.length_preference)
    assert beside is not None and consistency is not None and lengths is not None
    for estimate in (beside.human_vs_rest_accuracy, beside.judge_vs_rest_accuracy,
                     beside.accuracy_difference, consistency.krippendorff_alpha_nominal,
                     consistency.share_disagree, lengths.judge_longer_rate,
                     lengths.gold_longer_rate):
        assert estimate.detail and estimate.value is not None


def test_self_consistency_intervals_are_resampled_and_reproducible() -> None:
    options = AnalysisOptions(n_resamples=200, seed=4)
    first = analyse_pairwise_judge(_records(), None, options).self_consistency
    again = analyse_pairwise_judge(_records(), None, options).self_consistency
    assert first is not None and first == again
    alpha = first.krippendorff_alpha_nominal
    assert alpha.ci_low is not None and alpha.ci_high is not None
    assert alpha.ci_low < alpha.ci_high  # resamples of items, not the whole set every time


RUBRIC = HELPFUL_RUBRIC


async def test_a_failed_call_without_swap_is_a_missing_verdict_with_its_error(
        loopback: Any, make_hub: Any, tmp_path: Path) -> None:
    loopback.set_responder(lambda request: Reply.server_error(503))
    rubrics = tmp_path / "rubrics"
    rubrics.mkdir()
    (rubrics / "helpful.yaml").write_text(RUBRIC, encoding="utf-8")
    data = _write(tmp_path / "pairs.jsonl", [{"item_id": "p", "input": "q", "output_a": "a",
                                               "output_b": "b", "gold": "A"}])
    out = tmp_path / "out"
    report = await run_calibration(data, ["openai:judge"], "helpful", swap=False, out_dir=out,
                                   rubric_dirs=[rubrics], options=AnalysisOptions(n_resamples=0),
                                   hub=make_hub())
    [line] = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert (line["swapped"], line["verdict"]) == (False, None)
    assert line["metadata"]["error"].startswith("ModelUnavailableError: ")
    assert report.judges[0].n_missing_verdicts == 1
