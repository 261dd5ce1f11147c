"""Real judge and human data (tests/data, sources and licences in its README): the project's
statistics must reproduce LLMBar's own figures and equal krippendorff / statsmodels / scipy on
NewsRoom."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from harness.calibration import AnalysisOptions, analyse, build_pairwise, build_pointwise
from harness.calibration.judgments import PairwiseJudgment, PointwiseJudgment

DATA = Path(__file__).parent / "data"
LLMBAR = DATA / "llmbar-natural" / "evaluators"
NEWSROOM = DATA / "judgebench-newsroom" / "newsroom_ratings.json"
CRITERIA = ("Informativeness", "Relevance", "Fluency", "Coherence")

FAST = AnalysisOptions(n_resamples=50)


def _llmbar_dirs() -> list[Path]:
    return sorted(p.parent for p in LLMBAR.glob("*/*/statistics.json"))


def _ratio(text: str) -> float:
    """LLMBar writes counts as 'k / n = p%'; take k / n exactly."""
    count, total = text.split("=")[0].split("/")
    return int(count) / int(total)


def _llmbar_records(directory: Path) -> list[PairwiseJudgment]:
    """LLMBar's result.json as contract-3 records: output_1 is A, output_2 is B; both 'winner'
    fields name the original output, which is what contract 3's verdict does too."""
    names = {"1": "A", "2": "B", None: None}
    records = []
    for i, item in enumerate(json.loads((directory / "result.json").read_text())):
        result = item["results"][0]
        for swapped in (False, True):
            records.append(PairwiseJudgment(
                item_id=str(i), gold={1: "A", 2: "B"}[item["label"]],
                verdict=names[result[f"swap = {swapped}"]["winner"]], swapped=swapped,
            ))
    return records


def test_llmbar_directories_are_all_there() -> None:
    assert len(_llmbar_dirs()) == 6  # GPT-4 and ChatGPT × Vanilla, CoT, Rating


@pytest.mark.parametrize("directory", _llmbar_dirs(), ids=lambda p: f"{p.parent.name}-{p.name}")
def test_pairwise_statistics_equal_llmbar_statistics(directory: Path) -> None:
    published = json.loads((directory / "statistics.json").read_text())
    report = analyse(build_pairwise(_llmbar_records(directory), str(directory)), FAST)
    judge = report.judges[0]
    assert judge.accuracy_original_order.value == pytest.approx(_ratio(published["correct_False"]))
    assert judge.accuracy_swapped_order.value == pytest.approx(_ratio(published["correct_True"]))
    average = float(published["correct_average"].rstrip("%")) / 100
    assert judge.accuracy.value == pytest.approx(average)
    assert judge.accuracy_both_orders.value == pytest.approx(_ratio(published["correct_both"]))
    assert judge.position_consistency.value == pytest.approx(_ratio(published["equal"]))
    assert judge.n_items == 100 and judge.n_units_both_orders == 100


@pytest.mark.parametrize("directory", _llmbar_dirs(), ids=lambda p: f"{p.parent.name}-{p.name}")
def test_order_kappa_equals_sklearn_and_llmbar_where_no_verdict_is_missing(directory: Path) -> None:
    records = _llmbar_records(directory)
    judge = analyse(build_pairwise(records, str(directory)), FAST).judges[0]
    by_item: dict[str, dict[bool, Any]] = {}
    for r in records:
        by_item.setdefault(r.item_id, {})[r.swapped] = r.verdict
    pairs = [(v[False], v[True]) for v in by_item.values() if None not in v.values()]
    expected = cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs])
    assert judge.order_kappa.value == pytest.approx(expected)
    published = json.loads((directory / "statistics.json").read_text())
    if len(pairs) == 100:
        assert judge.order_kappa.value == pytest.approx(published["kappa_agreement"])
    else:
        # ChatGPT/CoT has one verdict missing; LLMBar's kappa_agreement counts it as "2"
        # (an imputation we do not make), so only the count is checked here
        assert judge.n_missing_verdicts == 1


def test_llmbar_missing_verdict_policies() -> None:
    directory = LLMBAR / "ChatGPT" / "CoT"
    records = _llmbar_records(directory)
    wrong = analyse(build_pairwise(records, "x"), FAST).judges[0]
    excluded = analyse(build_pairwise(records, "x"),
                       AnalysisOptions(n_resamples=50, missing_verdict="exclude")).judges[0]
    # the item without a verdict (original order) was labelled 2 (B): wrong under "wrong",
    # left out under "exclude"
    assert wrong.accuracy_original_order.value == pytest.approx(70 / 100)
    assert excluded.accuracy_original_order.value == pytest.approx(70 / 99)
    assert excluded.position_consistency.value == pytest.approx(64 / 99)


def _newsroom() -> list[dict[str, Any]]:
    return json.loads(NEWSROOM.read_text())["instances"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("criterion", CRITERIA)
def test_newsroom_human_baseline_equals_krippendorff_and_statsmodels(criterion: str) -> None:
    instances = _newsroom()
    ratings = np.array([i["annotations"][criterion]["individual_human_scores"]
                        for i in instances], dtype=float)
    assert ratings.shape == (420, 3)
    records = [PointwiseJudgment(item_id=str(i["id"]), human=list(r), judge=float(r[0]),
                                 scale={"min": 1, "max": 5})  # type: ignore[arg-type]
               for i, r in zip(instances, ratings.tolist(), strict=True)]
    report = analyse(build_pointwise(records, "newsroom"), FAST)
    baseline = report.human_baseline
    assert baseline is not None and baseline.n_items == 420
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level)
        assert getattr(baseline, f"krippendorff_alpha_{level}").value == pytest.approx(
            expected, abs=1e-12)
    table, _ = aggregate_raters(ratings.astype(int))
    assert baseline.fleiss_kappa.value == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)


@pytest.mark.parametrize("criterion", CRITERIA)
def test_newsroom_correlations_equal_scipy(criterion: str) -> None:
    """One rater plays the judge against the mean of the other two."""
    instances = _newsroom()
    ratings = np.array([i["annotations"][criterion]["individual_human_scores"]
                        for i in instances], dtype=float)
    records = [PointwiseJudgment(item_id=str(i["id"]), human=[r[1], r[2]], judge=r[0],
                                 scale={"min": 1, "max": 5})  # type: ignore[arg-type]
               for i, r in zip(instances, ratings.tolist(), strict=True)]
    judge = analyse(build_pointwise(records, "newsroom"), FAST).judges[0]
    rater, rest = ratings[:, 0], ratings[:, 1:].mean(axis=1)
    assert judge.spearman.value == pytest.approx(stats.spearmanr(rater, rest)[0], abs=1e-12)
    assert judge.pearson.value == pytest.approx(stats.pearsonr(rater, rest)[0], abs=1e-12)
    assert judge.kendall_tau_b.value == pytest.approx(stats.kendalltau(rater, rest)[0], abs=1e-12)
    assert judge.mean_bias.value == pytest.approx(float(np.mean(rater - rest)))
    # interval alpha of (human mean, judge) as two coders, against the package
    expected = krippendorff.alpha(reliability_data=np.vstack([rest, rater]),
                                  level_of_measurement="interval")
    assert judge.krippendorff_alpha_interval.value == pytest.approx(expected, abs=1e-12)


def test_newsroom_judge_beside_humans_uses_leave_one_out() -> None:
    instances = _newsroom()
    ratings = np.array([i["annotations"]["Fluency"]["individual_human_scores"]
                        for i in instances], dtype=float)
    mean_human = np.array([i["annotations"]["Fluency"]["mean_human"] for i in instances])
    records = [PointwiseJudgment(item_id=str(i["id"]), human=list(r), judge=float(m),
                                 scale={"min": 1, "max": 5, "step": None})  # type: ignore[arg-type]
               for i, r, m in zip(instances, ratings.tolist(), mean_human, strict=True)]
    beside = analyse(build_pointwise(records, "newsroom"), FAST).judges[0].beside_humans
    assert beside is not None
    expected_human = np.mean([
        stats.spearmanr(ratings[:, r], np.delete(ratings, r, axis=1).mean(axis=1))[0]
        for r in range(3)])
    expected_judge = np.mean([
        stats.spearmanr(mean_human, np.delete(ratings, r, axis=1).mean(axis=1))[0]
        for r in range(3)])
    assert beside.human_vs_rest_spearman.value == pytest.approx(expected_human, abs=1e-12)
    assert beside.judge_vs_rest_spearman.value == pytest.approx(expected_judge, abs=1e-12)
    # the judge here is the mean of all three humans, so it tracks the rest better than any
    # single human does
    assert beside.spearman_difference.value > 0  # type: ignore[operator]
