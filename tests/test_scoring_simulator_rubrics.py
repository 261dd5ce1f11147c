"""A rubric that judges the simulated user is reported with the sample but moves neither its
score nor its pass: the same judgment under an agent target does move both, so the test
fails if the target stops mattering."""

from __future__ import annotations

import pytest

from harness.checks.result import CheckReport
from harness.judging.aggregate import AggregatedJudgment
from harness.judging.rubric import RUBRIC_TARGETS, SIMULATOR_TARGETS, judges_the_simulator
from harness.models.types import Message
from harness.report.html.sample_outcome import failed_because
from harness.runs.sample import SampleRecord
from harness.runs.scoring import build_sample
from harness.transcript import Transcript


def _judgment(rubric_id: str, target: str, score: float, votes: list[float],
              passed: bool) -> AggregatedJudgment:
    return AggregatedJudgment.model_validate(dict(
        level="samples", status="scored", method="mean", rubric_id=rubric_id,
        rubric_version=1, target=target, judge_models=["mock:judge"], prompt_hashes=[],
        n_votes=len(votes), n_failed=0, score=score, passed=passed, vote_scores=votes))


def _sample(*judgments: AggregatedJudgment) -> SampleRecord:
    transcript = Transcript(scenario_id="s", stop_reason="goal_met", messages=[
        Message(role="user", content="hi"), Message(role="assistant", content="done")])
    return build_sample(transcript, CheckReport(scenario_id="s"), list(judgments),
                        started_at=0.0, finished_at=1.0)


AGENT = _judgment("task", "conversation", 0.9, [0.8, 1.0], True)


def test_the_simulator_targets_are_rubric_targets() -> None:
    assert set(RUBRIC_TARGETS) >= SIMULATOR_TARGETS
    assert judges_the_simulator("simulator_fidelity")
    assert not judges_the_simulator("conversation") and not judges_the_simulator(None)


def test_a_failing_rubric_under_an_agent_target_moves_the_score_and_the_pass() -> None:
    # the old treatment of simulator_fidelity: averaged in and gating, like any rubric
    moved = _sample(AGENT, _judgment("fidelity", "conversation", 0.2, [0.2, 0.2], False))
    assert moved.score == pytest.approx((0.9 + 0.2) / 2) and moved.passed is False


def test_a_simulator_rubric_is_kept_and_reported_but_does_not_count() -> None:
    alone = _sample(AGENT)
    sample = _sample(AGENT, _judgment("simulator_fidelity", "simulator_fidelity", 0.2,
                                      [0.1, 0.3], False))
    assert sample.status == "scored"
    assert sample.score == alone.score == pytest.approx(0.9) and sample.passed is True
    assert sample.metrics["rubric:simulator_fidelity"] == pytest.approx(0.2)
    assert sample.judge_samples["rubric:simulator_fidelity"] == [0.1, 0.3]
    assert [j["rubric_id"] for j in sample.judgments] == ["task", "simulator_fidelity"]
    # the k-th judge sample's score is over the counted rubric only
    assert sample.score_by_judge_sample == pytest.approx([0.8, 1.0])
    assert sample.score_by_judge_sample == alone.score_by_judge_sample


def test_a_sample_judged_only_on_its_simulator_is_unscored() -> None:
    sample = _sample(_judgment("simulator_fidelity", "simulator_fidelity", 1.0, [1.0], True))
    assert sample.status == "unscored" and sample.score is None
    assert sample.metrics == {"rubric:simulator_fidelity": 1.0}


def test_a_failed_simulator_rubric_is_not_named_among_a_failed_samples_causes() -> None:
    sample = _sample(_judgment("task", "conversation", 0.3, [0.3], False),
                     _judgment("simulator_fidelity", "simulator_fidelity", 0.2, [0.2], False))
    assert sample.passed is False
    assert [r["name"] for r in failed_because(sample, None, {})] == ["rubric task"]
