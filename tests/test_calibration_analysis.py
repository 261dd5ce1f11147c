"""analyse() on synthetic judgments with known answers: perfect agreement, a constant judge,
judges that always say A, missing labels, pass/fail, self-consistency, verbosity, comparisons
and the JSON shape of contract 3."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from harness.calibration import AnalysisOptions, analyse, build_pairwise, build_pointwise
from harness.calibration.judgments import PairwiseJudgment, PointwiseJudgment
from harness.calibration.report import PairwiseJudgeReport, PointwiseJudgeReport

FAST = AnalysisOptions(n_resamples=100)
SCALE = {"min": 1, "max": 5}


def _pointwise(rows: list[dict[str, Any]], options: AnalysisOptions = FAST) -> Any:
    records = [PointwiseJudgment.model_validate({"scale": SCALE, **row}) for row in rows]
    return analyse(build_pointwise(records, "synthetic.jsonl"), options)


def _one(report: Any) -> PointwiseJudgeReport:
    judge = report.judges[0]
    assert isinstance(judge, PointwiseJudgeReport)
    return judge


def test_perfect_agreement() -> None:
    human = [1, 2, 3, 4, 5, 2, 4, 3]
    report = _pointwise([{"item_id": str(i), "human": h, "judge": h} for i, h in enumerate(human)])
    judge = _one(report)
    for name in ("spearman", "kendall_tau_b", "pearson", "cohen_kappa", "cohen_kappa_unweighted",
                 "krippendorff_alpha", "krippendorff_alpha_nominal",
                 "krippendorff_alpha_interval"):
        estimate = getattr(judge, name)
        assert estimate.value == pytest.approx(1), name
        assert estimate.ci_low == pytest.approx(1) and estimate.ci_high == pytest.approx(1), name
    assert judge.mean_bias.value == 0 and judge.mae.value == 0
    assert judge.confusion_matrix is not None
    assert np.array_equal(np.diag(judge.confusion_matrix.counts), [1, 2, 2, 2, 1])


def test_constant_judge_reports_undefined_statistics_and_keeps_the_others() -> None:
    human = [1, 2, 3, 4, 5, 2, 4, 3]
    judge = _one(_pointwise([{"item_id": str(i), "human": h, "judge": 3}
                             for i, h in enumerate(human)]))
    for name in ("spearman", "kendall_tau_b", "pearson"):
        estimate = getattr(judge, name)
        assert estimate.value is None
        assert estimate.undefined == f"{name}: the judge scores are constant (all 3)"
    assert judge.mae.value == pytest.approx(np.mean(np.abs(np.array(human) - 3)))
    assert judge.mean_bias.value == pytest.approx(3 - np.mean(human))
    # kappa is defined (0: no better than chance) because the humans vary
    assert judge.cohen_kappa_unweighted.value == pytest.approx(0)


def test_always_picks_first_position() -> None:
    """A judge that always prefers whatever it is shown first: verdict A in the original
    order, B when swapped."""
    golds = ["A", "B", "A", "B", "B", "A", "B", "B"]
    records = [PairwiseJudgment(item_id=str(i), gold=g, verdict="B" if sw else "A", swapped=sw)
               for i, g in enumerate(golds) for sw in (False, True)]
    report = analyse(build_pairwise(records, "x"), FAST)
    judge = report.judges[0]
    assert isinstance(judge, PairwiseJudgeReport)
    assert judge.accuracy_original_order.value == pytest.approx(3 / 8)
    assert judge.accuracy_swapped_order.value == pytest.approx(5 / 8)
    assert judge.accuracy.value == pytest.approx(0.5)
    assert judge.accuracy_both_orders.value == 0
    assert judge.position_consistency.value == 0
    assert judge.first_position_rate.value == 1
    assert judge.order_kappa.value == pytest.approx(0)


def test_always_says_original_a() -> None:
    golds = ["A", "B", "A", "B", "tie"]
    records = [PairwiseJudgment(item_id=str(i), gold=g, verdict="A", swapped=sw)
               for i, g in enumerate(golds) for sw in (False, True)]
    judge = analyse(build_pairwise(records, "x"), FAST).judges[0]
    assert isinstance(judge, PairwiseJudgeReport)
    assert judge.accuracy.value == pytest.approx(2 / 5)
    assert judge.accuracy_both_orders.value == pytest.approx(2 / 5)
    assert judge.position_consistency.value == 1
    assert judge.first_position_rate.value == pytest.approx(0.5)
    assert judge.order_kappa.value is None
    assert judge.order_kappa.undefined is not None
    assert judge.order_kappa.undefined.startswith("cohen_kappa: both raters put every item")


def test_one_order_only_leaves_both_order_statistics_undefined() -> None:
    records = [PairwiseJudgment(item_id=str(i), gold="A", verdict=v, swapped=False)
               for i, v in enumerate(["A", "A", "B"])]
    judge = analyse(build_pairwise(records, "x"), FAST).judges[0]
    assert isinstance(judge, PairwiseJudgeReport)
    assert judge.accuracy.value == pytest.approx(2 / 3)
    assert judge.accuracy.detail == "only one order was judged: its accuracy"
    assert judge.accuracy_swapped_order.value is None
    assert judge.position_consistency.value is None
    assert "no unit was judged in both orders" in (judge.position_consistency.undefined or "")


def test_each_pairwise_n_counts_only_the_items_that_statistic_uses() -> None:
    """Item c has no gold label: it is in the consistency statistics, not the accuracies
    (issue 11: accuracy.n was 3 where 2 items contribute)."""
    rows = [("a", "A", "A", "A"), ("b", "B", "A", "B"), ("c", None, "A", "B"),
            ("d", "A", None, None)]  # d: no verdict in either order
    records = [PairwiseJudgment(item_id=item, gold=gold, verdict=verdict, swapped=sw)
               for item, gold, original, swapped in rows
               for sw, verdict in ((False, original), (True, swapped))]
    judge = analyse(build_pairwise(records, "x"), FAST).judges[0]
    assert isinstance(judge, PairwiseJudgeReport)
    assert judge.n_items == 4 and judge.n_missing_gold == 1
    # Missing verdicts count as wrong (the default policy): d is in the accuracies.
    assert (judge.accuracy.value, judge.accuracy.n) == (pytest.approx((1 / 3 + 2 / 3) / 2), 3)
    assert judge.accuracy_original_order.n == judge.accuracy_both_orders.n == 3
    assert (judge.position_consistency.value, judge.position_consistency.n) == (
        pytest.approx(1 / 4), 4)
    # Only given verdicts: d is out of these three.
    assert judge.order_kappa.n == judge.first_position_rate.n == judge.tie_rate.n == 3
    excluded = analyse(build_pairwise(records, "x"),
                       FAST.model_copy(update={"missing_verdict": "exclude"})).judges[0]
    assert isinstance(excluded, PairwiseJudgeReport)
    assert (excluded.accuracy.value, excluded.accuracy.n) == (pytest.approx(0.75), 2)
    assert excluded.position_consistency.n == 3


@pytest.mark.parametrize(("policy", "expected"), [("wrong", 1 / 3), ("exclude", 1.0)])
def test_a_unit_with_no_verdict_in_either_order_is_not_position_consistent(
        policy: str, expected: float) -> None:
    # Item 0 agrees with itself; item 1 has no verdict in one order, item 2 in neither. By
    # default a missing verdict is inconsistent with the other order (LLMBar's counting), even
    # when both are missing; with "exclude" both units leave the statistic.
    verdicts = [("A", "A"), ("B", None), (None, None)]
    records = [PairwiseJudgment(item_id=str(i), gold="A", verdict=v, swapped=sw)
               for i, pair in enumerate(verdicts) for v, sw in zip(pair, (False, True),
                                                                  strict=True)]
    options = AnalysisOptions(n_resamples=100, missing_verdict=policy)
    judge = analyse(build_pairwise(records, "x"), options).judges[0]
    assert isinstance(judge, PairwiseJudgeReport)
    assert judge.n_missing_verdicts == 3
    assert judge.position_consistency.value == pytest.approx(expected)


def test_pairwise_gold_majority_baseline_and_repeated_samples() -> None:
    records = []
    gold_lists = [["A", "A", "B"], ["B", "B", "B"], ["A", "B", None], ["tie", "tie", "A"]]
    for i, gold in enumerate(gold_lists):
        for sw in (False, True):
            for verdict in ("A", "A" if i % 2 == 0 else "B"):  # two samples per order
                records.append(PairwiseJudgment(item_id=str(i), gold=gold, verdict=verdict,
                                                swapped=sw))
    report = analyse(build_pairwise(records, "x"), FAST)
    judge = report.judges[0]
    assert isinstance(judge, PairwiseJudgeReport)
    assert judge.n_gold_without_majority == 1  # ["A", "B", None] is split
    assert judge.n_units == 8  # 4 items × 2 samples
    assert judge.self_consistency is not None
    assert judge.self_consistency.share_disagree.value == pytest.approx(0.5)
    assert report.human_baseline is not None and report.human_baseline.n_items == 4


def test_missing_labels_are_counted_not_dropped_silently() -> None:
    rows = [
        {"item_id": "a", "human": [4, None, 5], "judge": [4, None]},
        {"item_id": "b", "human": None, "judge": 3},
        {"item_id": "c", "human": 2, "judge": None},
        {"item_id": "d", "human": None, "judge": [None]},
        {"item_id": "e", "human": 1, "judge": 2},
        {"item_id": "f", "human": 3, "judge": 3},
    ]
    report = _pointwise(rows)
    judge = _one(report)
    assert (judge.n_records, judge.n_items) == (6, 3)
    assert (judge.n_missing_human, judge.n_missing_judge, judge.n_missing_both) == (1, 1, 1)
    assert judge.n_missing_human_ratings == 1 and judge.n_missing_judge_samples == 1
    assert any("lack a human label" in note for note in report.notes)
    assert any(policy.startswith("missing labels") for policy in report.policies)
    # item a: human mean 4.5, judge 4
    assert judge.mean_bias.value == pytest.approx(((4 - 4.5) + (2 - 1) + 0) / 3)


def test_boolean_labels_give_pass_fail_statistics() -> None:
    human = [True, True, True, True, False, False, False, False, False, False]
    judge = [True, True, True, False, False, False, False, False, True, True]
    report = analyse(build_pointwise(
        [PointwiseJudgment(item_id=str(i), human=h, judge=j)
         for i, (h, j) in enumerate(zip(human, judge, strict=True))], "bool"), FAST)
    pass_fail = _one(report).pass_fail
    assert pass_fail is not None
    assert pass_fail.coverage.value == pytest.approx(4 / 6)
    assert pass_fail.false_failure_rate.value == pytest.approx(1 / 4)
    assert pass_fail.accuracy.value == pytest.approx(0.7)
    assert (pass_fail.human_pass_judge_fail, pass_fail.human_fail_judge_pass) == (1, 2)


def test_threshold_calibration_from_boolean_human_verdicts_and_judge_scores() -> None:
    scores = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    records = [PointwiseJudgment(item_id=str(s), human=s >= 7, judge=float(s)) for s in scores]
    judge = _one(analyse(build_pointwise(records, "gate"), FAST))
    assert judge.thresholds is not None
    assert judge.thresholds.best_threshold.value == 7
    assert judge.thresholds.best is not None and judge.thresholds.best.accuracy == 1
    assert len(judge.thresholds.curve) == 10
    # no common scale between pass/fail labels and 1–10 scores
    assert judge.mae.value is None and "no common scale" in (judge.mae.undefined or "")
    assert judge.spearman.value is not None


def test_pass_threshold_on_scores_and_ppi_with_unlabelled_items() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(60):
        truth = int(rng.integers(1, 6))
        judge_score = int(np.clip(truth + rng.integers(-1, 2), 1, 5))
        rows.append({"item_id": str(i), "human": truth if i < 20 else None, "judge": judge_score})
    judge = _one(_pointwise(rows, AnalysisOptions(n_resamples=50, pass_threshold=4)))
    assert judge.pass_fail is not None and judge.pass_fail.human_rule == "mean human score ≥ 4"
    assert judge.ppi is not None and judge.ppi.mean_score is not None
    assert judge.ppi.mean_score.n_labelled == 20 and judge.ppi.mean_score.n_unlabelled == 40
    assert judge.ppi.pass_rate is not None


def test_self_consistency_and_verbosity() -> None:
    rng = np.random.default_rng(1)
    rows = []
    for i in range(40):
        human = int(rng.integers(1, 6))
        length = float(rng.integers(10, 400))
        # the judge adds a point to long answers: a verbosity bias by construction
        judge = min(5, human + (1 if length > 200 else 0))
        samples = [judge, judge, judge] if i % 4 else [judge, max(1, judge - 1), judge]
        rows.append({"item_id": str(i), "human": human, "judge": samples, "length": length})
    judge = _one(_pointwise(rows))
    assert judge.self_consistency is not None
    assert judge.self_consistency.share_items_disagree.value == pytest.approx(
        sum(1 for i in range(40) if i % 4 == 0 and rows[i]["judge"][1] != rows[i]["judge"][0])
        / 40)
    assert judge.verbosity is not None and judge.verbosity.length_source == "length"
    residual = [np.mean(r["judge"]) - r["human"] for r in rows]
    expected = stats.spearmanr(residual, [r["length"] for r in rows])[0]
    assert judge.verbosity.spearman.value == pytest.approx(expected, abs=1e-12)
    assert expected > 0.5


def test_two_judges_are_compared_on_common_items_with_a_paired_interval() -> None:
    rng = np.random.default_rng(2)
    rows = []
    for i in range(60):
        human = int(rng.integers(1, 6))
        rows.append({"item_id": str(i), "human": human, "judge": human, "judge_id": "good"})
        noisy = int(np.clip(human + rng.integers(-2, 3), 1, 5))
        rows.append({"item_id": str(i), "human": human, "judge": noisy, "judge_id": "noisy"})
    report = _pointwise(rows)
    assert [j.judge_id for j in report.judges] == ["good", "noisy"]
    by_name = {c.statistic: c for c in report.comparisons}
    spearman = by_name["spearman"]
    assert (spearman.judge_a, spearman.judge_b, spearman.n_items) == ("good", "noisy", 60)
    assert spearman.difference.value == pytest.approx(1 - report.judges[1].spearman.value)
    assert spearman.difference.ci_low > 0  # type: ignore[operator]
    assert by_name["cohen_kappa"].difference.value > 0  # type: ignore[operator]


def test_json_shape_follows_contract_3() -> None:
    single = _pointwise([{"item_id": str(i), "human": h, "judge": h}
                         for i, h in enumerate([1, 2, 3, 4, 5])]).to_json_dict()
    for key in ("spearman", "kendall_tau_b", "pearson", "cohen_kappa", "krippendorff_alpha",
                "mean_bias", "mae"):
        assert set(single[key]) >= {"value", "ci_low", "ci_high", "n"}
    assert single["n_items"] == 5 and "judges" not in single
    pairwise = analyse(build_pairwise(
        [PairwiseJudgment(item_id="1", gold="A", verdict="A", swapped=s) for s in (False, True)],
        "x"), FAST).to_json_dict()
    for key in ("accuracy", "accuracy_both_orders", "position_consistency", "order_kappa"):
        assert "value" in pairwise[key]
    several = _pointwise([{"item_id": str(i), "human": h, "judge": h, "judge_id": j}
                          for j in ("x", "y") for i, h in enumerate([1, 2, 3])]).to_json_dict()
    assert [j["judge_id"] for j in several["judges"]] == ["x", "y"]


def test_no_human_label_at_all_says_so_rather_than_blaming_the_scale() -> None:
    judge = _one(_pointwise([{"item_id": str(i), "human": None, "judge": i % 5 + 1}
                             for i in range(6)]))
    assert judge.n_items == 0 and judge.n_missing_human == 6
    assert judge.mae.undefined == "mae: no items"
    assert judge.cohen_kappa.undefined == "cohen_kappa (quadratic): no items"


def test_one_distinct_value_everywhere() -> None:
    records = [PointwiseJudgment(item_id=str(i), human=3, judge=3) for i in range(5)]
    judge = _one(analyse(build_pointwise(records, "flat"), FAST))
    assert judge.cohen_kappa_unweighted.undefined is not None
    assert "every item in the same category" in judge.cohen_kappa_unweighted.undefined
    assert judge.krippendorff_alpha_interval.value is None
    assert judge.mae.value == 0
