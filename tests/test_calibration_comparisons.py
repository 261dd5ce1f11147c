"""Comparisons of two pointwise judges on their common items: each side's Spearman and
quadratic-weighted Cohen's kappa against scipy and scikit-learn, the paired difference, and a
judge given without a judge_id named as such."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from harness.calibration import load_judgments
from harness.calibration.analysis import analyse
from harness.calibration.report import AnalysisOptions


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_side_of_a_pointwise_comparison_against_scipy_and_sklearn(
        tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    human = {f"i{k}": rng.randint(1, 5) for k in range(15)}
    judged = {j: {i: min(5, max(1, h + rng.choice([-2, -1, 0, 0, 1]))) for i, h in human.items()}
              for j in ("a", "b")}
    del judged["b"]["i0"], judged["b"]["i1"]  # b skipped two items
    rows = [{"item_id": i, "human": human[i], "judge": s, "judge_id": j,
             "scale": {"min": 1, "max": 5}} for j, scores in judged.items()
            for i, s in scores.items()]
    report = analyse(load_judgments(_write(tmp_path / "j.jsonl", rows)),
                     AnalysisOptions(n_resamples=0))
    common = [i for i in human if i in judged["b"]]
    by_name = {c.statistic: c for c in report.comparisons}
    assert set(by_name) == {"spearman", "cohen_kappa"}
    for name, figure in (
            ("spearman", lambda j: stats.spearmanr([judged[j][i] for i in common],
                                                   [human[i] for i in common]).statistic),
            ("cohen_kappa", lambda j: cohen_kappa_score([human[i] for i in common],
                                                        [judged[j][i] for i in common],
                                                        labels=[1, 2, 3, 4, 5],
                                                        weights="quadratic"))):
        comparison = by_name[name]
        assert (comparison.judge_a, comparison.judge_b, comparison.n_items) == (
            "a", "b", len(common))
        assert comparison.a.value == pytest.approx(figure("a"))
        assert comparison.b.value == pytest.approx(figure("b"))
        assert comparison.difference.value == pytest.approx(figure("a") - figure("b"))
        assert comparison.difference.detail == "a − b, paired bootstrap over common items"


def test_a_judge_without_a_judge_id_is_named_so(tmp_path: Path) -> None:
    rows = [{"item_id": f"i{k}", "human": h, "judge": j, **({"judge_id": "m"} if who else {})}
            for who in (0, 1) for k, (h, j) in enumerate([(1, 2), (3, 3), (5, 4), (2, 2)])]
    report = analyse(load_judgments(_write(tmp_path / "j.jsonl", rows)),
                     AnalysisOptions(n_resamples=0))
    assert {(c.judge_a, c.judge_b) for c in report.comparisons} == {("(no judge_id)", "m")}
