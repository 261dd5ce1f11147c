"""Agreement figures for a run's labelled samples (issue 27): sensitivity and specificity of
pass/fail verdicts (checked against scikit-learn) and the bootstrap that resamples whole
scenarios (every item its own cluster: the same draws as scipy's bootstrap)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import recall_score

from harness.calibration import agreement
from harness.calibration.analysis import analyse
from harness.calibration.bootstrap import ItemBootstrap
from harness.calibration.judgments import PointwiseJudgment, build_pointwise
from harness.calibration.report import AnalysisOptions


def _verdicts(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.random(n) < 0.6
    judge = np.where(rng.random(n) < 0.8, human, ~human)
    return human, judge


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sensitivity_and_specificity_equal_scikit_learn_recall(seed: int) -> None:
    human, judge = _verdicts(40, seed)
    assert agreement.sensitivity(human, judge) == pytest.approx(
        recall_score(human, judge, pos_label=True))
    assert agreement.specificity(human, judge) == pytest.approx(
        recall_score(human, judge, pos_label=False))
    # the EvalGen names of the same figures
    assert agreement.sensitivity(human, judge) == pytest.approx(
        1 - agreement.false_failure_rate(human, judge))
    assert agreement.specificity(human, judge) == pytest.approx(agreement.coverage(human, judge))


def test_sensitivity_and_specificity_say_why_they_are_undefined() -> None:
    everyone_passes = np.ones(4, dtype=bool)
    with pytest.raises(ValueError, match="specificity: the humans failed no output"):
        agreement.specificity(everyone_passes, everyone_passes)
    with pytest.raises(ValueError, match="sensitivity: the humans passed no output"):
        agreement.sensitivity(~everyone_passes, everyone_passes)


def test_the_calibration_report_gives_them_with_intervals() -> None:
    human, judge = _verdicts(30, 4)
    records = [PointwiseJudgment(item_id=f"i{i}", human=bool(h), judge=bool(j))
               for i, (h, j) in enumerate(zip(human, judge, strict=True))]
    report = analyse(build_pointwise(records, "test"), AnalysisOptions(n_resamples=200))
    pass_fail = report.judges[0].pass_fail
    assert pass_fail is not None and pass_fail.sensitivity is not None
    assert pass_fail.sensitivity.value == pytest.approx(recall_score(human, judge))
    assert pass_fail.specificity is not None
    assert pass_fail.specificity.value == pytest.approx(
        recall_score(human, judge, pos_label=False))
    low, high = pass_fail.sensitivity.ci_low, pass_fail.sensitivity.ci_high
    assert low is not None and high is not None and low < pass_fail.sensitivity.value < high


def test_every_item_its_own_cluster_is_scipys_bootstrap() -> None:
    rng = np.random.default_rng(5)
    judge, human = rng.normal(size=50), rng.normal(size=50)
    ids = [f"s{i}" for i in range(50)]
    ours = ItemBootstrap(50, 999, 0.9, seed=7, clusters=ids).estimate(
        lambda idx: agreement.mae(judge[idx], human[idx]))
    plain = ItemBootstrap(50, 999, 0.9, seed=7).estimate(
        lambda idx: agreement.mae(judge[idx], human[idx]))
    ref = stats.bootstrap((judge, human), lambda j, h: np.mean(np.abs(j - h)), paired=True,
                          n_resamples=999, confidence_level=0.9, method="percentile",
                          rng=np.random.default_rng(7), vectorized=False)
    assert ours == plain
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high)


def test_clusters_are_resampled_whole() -> None:
    clusters = ["a", "a", "b", "c", "c", "c"]
    boot = ItemBootstrap(6, 300, 0.95, seed=1, clusters=clusters)
    assert boot.n_clusters == 3
    members = {"a": {0, 1}, "b": {2}, "c": {3, 4, 5}}
    for idx in boot.indices:
        drawn = list(idx)
        for items in members.values():
            # a cluster's items come together, each as often as the cluster was drawn
            assert len({drawn.count(i) for i in items}) == 1
    with pytest.raises(ValueError, match="one per item"):
        ItemBootstrap(3, 10, 0.95, seed=0, clusters=["a"])


def test_scenario_effects_widen_the_clustered_interval() -> None:
    """Five epochs of twelve scenarios that share the scenario's error: resampling items as
    if independent understates the spread of the mean bias; resampling scenarios does not."""
    rng = np.random.default_rng(11)
    scenario_error = np.repeat(rng.normal(0, 1.0, 12), 5)
    judge_minus_human = scenario_error + rng.normal(0, 0.2, 60)
    clusters = np.repeat(np.arange(12), 5).tolist()

    def bias(idx: np.ndarray) -> float:
        return float(np.mean(judge_minus_human[idx]))

    flat = ItemBootstrap(60, 2000, 0.95, seed=0).estimate(bias)
    clustered = ItemBootstrap(60, 2000, 0.95, seed=0, clusters=clusters).estimate(bias)
    assert flat.value == clustered.value
    width = [(e.ci_high or 0) - (e.ci_low or 0) for e in (flat, clustered)]
    assert width[1] > 1.7 * width[0]
