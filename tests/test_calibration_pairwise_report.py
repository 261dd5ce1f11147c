"""The parts of a pairwise calibration report around the per-judge figures: the human
baseline of list-valued gold labels (Fleiss' kappa from statsmodels, alpha from krippendorff),
judge comparisons on their common items (each side equal to that judge analysed on those items
alone, under the same missing-verdict policy, and reproducible from the seed), and the notes
and policies the report prints."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from harness.calibration import load_judgments
from harness.calibration.analysis import analyse, off_scale_notes
from harness.calibration.report import AnalysisOptions

PREFS = ("A", "B", "tie")


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _rows(seed: int, judges: tuple[str, ...] = ("j1", "j2")) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    golds = {f"i{k}": [rng.choice([*PREFS, "A", None]) for _ in range(3)] for k in range(12)}
    rows = []
    for judge in judges:
        items = list(golds)
        if judge != judges[0]:
            items = items[2:]  # the second judge skipped two items
        for item in items:
            for swapped in (False, True):
                rows.append({"item_id": item, "gold": golds[item], "swapped": swapped,
                             "judge_id": judge, "verdict": rng.choice([*PREFS, "A", None])})
    return rows


def test_the_human_baseline_of_rater_preferences(tmp_path: Path) -> None:
    rows = _rows(1, ("j1",))
    report = analyse(load_judgments(_write(tmp_path / "j.jsonl", rows)),
                     AnalysisOptions(n_resamples=0))
    baseline = report.human_baseline
    assert baseline is not None
    golds = {r["item_id"]: r["gold"] for r in rows}
    codes = [[np.nan if g is None else PREFS.index(g) for g in gold] for gold in golds.values()]
    counts = [sum(g is not None for g in gold) for gold in golds.values()]
    multi = [row for row, n in zip(codes, counts, strict=True) if n >= 2]
    assert baseline.n_items == len(multi)
    assert baseline.raters_per_item == (min(c for c in counts if c >= 2), max(counts))
    assert baseline.krippendorff_alpha_nominal.value == pytest.approx(krippendorff.alpha(
        reliability_data=np.array(multi).T, level_of_measurement="nominal"))
    # Fleiss' kappa on the items with the most common number of ratings (here 3: complete)
    complete = np.array([row for row in multi if not np.isnan(row).any()], dtype=int)
    table, _ = aggregate_raters(complete, n_cat=3)
    assert baseline.fleiss_kappa.value == pytest.approx(fleiss_kappa(table, method="fleiss"))
    assert baseline.fleiss_kappa.n == len(complete)


@pytest.mark.parametrize("missing", ["wrong", "exclude"])
def test_a_comparison_side_is_that_judge_alone_on_the_common_items(
        tmp_path: Path, missing: str) -> None:
    rows = _rows(2)
    options = AnalysisOptions(n_resamples=50, seed=3, missing_verdict=missing)  # type: ignore[arg-type]
    report = analyse(load_judgments(_write(tmp_path / "j.jsonl", rows)), options)
    common = {r["item_id"] for r in rows if r["judge_id"] == "j2"}
    alone = {}
    for judge in ("j1", "j2"):
        mine = [r for r in rows if r["judge_id"] == judge and r["item_id"] in common]
        [alone[judge]] = analyse(load_judgments(_write(tmp_path / f"{judge}.jsonl", mine)),
                                 options).judges
    assert [(c.judge_a, c.judge_b, c.statistic) for c in report.comparisons] == [
        ("j1", "j2", name)
        for name in ("accuracy", "accuracy_both_orders", "position_consistency")]
    for comparison in report.comparisons:
        assert comparison.n_items == len(common)
        a, b = (getattr(alone[j], comparison.statistic) for j in ("j1", "j2"))
        for side, expected in ((comparison.a, a), (comparison.b, b)):
            assert (side.value, side.ci_low, side.ci_high) == pytest.approx(
                (expected.value, expected.ci_low, expected.ci_high))
        assert a.value is not None and b.value is not None
        assert comparison.difference.value == pytest.approx(a.value - b.value)
    # the same options give the same intervals: the report can be reproduced
    again = analyse(load_judgments(tmp_path / "j.jsonl"), options)
    assert again.comparisons == report.comparisons


def test_notes_count_missing_verdicts_and_name_off_scale_ones(tmp_path: Path) -> None:
    rows = [{"item_id": "p", "gold": "A", "swapped": False, "verdict": None},
            {"item_id": "p", "gold": "A", "swapped": True, "verdict": "X"},
            {"item_id": "q", "gold": "B", "swapped": False, "verdict": "B"}]
    data = load_judgments(_write(tmp_path / "j.jsonl", rows))
    report = analyse(data, AnalysisOptions(n_resamples=0))
    # the off-scale "X" is a missing verdict too
    assert report.notes[0].startswith("2 verdicts missing (the judge gave none or one that "
                                      "is not A, B or tie)")
    assert report.notes[1:] == off_scale_notes(data.off_scale) != []


@pytest.mark.parametrize(("missing", "opening"), [
    ("wrong", "missing verdicts: counted as wrong and as inconsistent with the other order "
     "(as LLMBar counts them)"),
    ("exclude", "missing verdicts: that item-order is left out of the statistics that need it"),
])
def test_the_missing_verdict_policy_is_the_one_applied(
        tmp_path: Path, missing: str, opening: str) -> None:
    data = load_judgments(_write(tmp_path / "j.jsonl", _rows(4, ("j1",))))
    report = analyse(data, AnalysisOptions(n_resamples=0, missing_verdict=missing))  # type: ignore[arg-type]
    assert report.policies[0] == (f"{opening}; order_kappa, first_position_rate and tie_rate "
                                  "use given verdicts only")


def test_every_pairwise_statistic_says_what_it_is(tmp_path: Path) -> None:
    """The line a report prints under each pairwise statistic, word for word."""
    report = analyse(load_judgments(_write(tmp_path / "j.jsonl", _rows(1, ("j1",)))),
                     AnalysisOptions(n_resamples=0))
    [judge] = report.judges
    said = {name: getattr(judge, name).detail for name in (
        "accuracy", "accuracy_both_orders", "position_consistency", "order_kappa",
        "first_position_rate", "tie_rate")}
    assert said == {
        "accuracy": "mean of the accuracies in the two orders",
        "accuracy_both_orders": "correct in both orders",
        "position_consistency": "same verdict in both orders",
        "order_kappa": "Cohen's kappa, original-order vs swapped verdicts (given verdicts "
                       "only)",
        "first_position_rate": "share of A/B verdicts naming the output shown first (units "
                               "judged in both orders)",
        "tie_rate": "share of given verdicts that are tie",
    }
    beside = judge.beside_humans
    assert beside is not None
    assert (beside.human_vs_rest_accuracy.detail, beside.judge_vs_rest_accuracy.detail,
            beside.accuracy_difference.detail) == (
        "each rater vs the majority of the other raters, averaged over rater positions",
        "judge vs the same leave-one-out majorities (mean of the two orders)",
        "judge − human (paired)")
