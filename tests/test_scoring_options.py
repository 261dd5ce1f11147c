"""Seed 000's scoring choices as options: weights of the sample score's components
(``scoring.weights``) and partial credit for a wrong parameter value
(``wrong_value_credit``), with scores computed by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.checks.run import run_checks
from harness.checks.spec import Expectations, ParameterExpectation
from harness.errors import InputError, InputErrors
from harness.judging.aggregate import AggregatedJudgment
from harness.models.types import Message
from harness.runs.scoring import build_sample
from harness.scenarios.loading import load_scenarios
from harness.transcript import ToolCallRecord, Transcript


def _judgment(rubric_id: str, score: float, votes: list[float] | None = None,
              passed: bool = True) -> AggregatedJudgment:
    return AggregatedJudgment(
        level="samples", status="scored", method="mean", rubric_id=rubric_id,
        rubric_version=1, target="final_response", judge_models=["mock:judge"],
        prompt_hashes=[], n_votes=len(votes or [score]), n_failed=0, score=score,
        passed=passed, vote_scores=list(votes or [score]),
    )


def _tx(*calls: ToolCallRecord) -> Transcript:
    return Transcript(scenario_id="s", stop_reason="imported", tool_calls=list(calls),
                      messages=[Message(role="user", content="hi"),
                                Message(role="assistant", content="done")])


def _sample(weights: dict[str, float] | None, judgments: list[AggregatedJudgment]) -> Any:
    # two gating checks, 1.0 and 0.0: the checks component is 0.5
    transcript = _tx(ToolCallRecord(call_id="c", name="delete", arguments={}, turn=0))
    report = run_checks(transcript, Expectations(forbidden_tools=["delete"], max_tool_calls=1))
    assert [r.value for r in report.results] == [0.0, 1.0]
    return build_sample(transcript, report, judgments, started_at=0.0, finished_at=1.0,
                        weights=weights)


def test_without_weights_the_score_is_the_plain_mean_of_components() -> None:
    sample = _sample(None, [_judgment("tone", 0.9), _judgment("task", 0.3)])
    assert sample.score == pytest.approx((0.5 + 0.9 + 0.3) / 3)


def test_weights_make_a_weighted_mean_and_unnamed_components_weigh_one() -> None:
    sample = _sample({"checks": 2.0, "task": 3.0},
                     [_judgment("tone", 0.9), _judgment("task", 0.3)])
    # (2 * 0.5 + 1 * 0.9 + 3 * 0.3) / (2 + 1 + 3) = 2.8 / 6
    assert sample.score == pytest.approx(2.8 / 6)
    assert sample.passed is False  # the verdict does not depend on weights: a check failed


def test_weights_apply_to_the_score_by_judge_sample_too() -> None:
    sample = _sample({"checks": 3.0},
                     [_judgment("task", 0.5, votes=[0.2, 0.8])])
    # vote 0: (3 * 0.5 + 0.2) / 4; vote 1: (3 * 0.5 + 0.8) / 4
    assert sample.score_by_judge_sample == pytest.approx([1.7 / 4, 2.3 / 4])
    assert sample.score == pytest.approx((3 * 0.5 + 0.5) / 4)


def _scenario(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "s.yaml").write_text(
        "id: s\nuser: {goal: g, script: [hi]}\nagent: {model: 'mock:agent'}\n"
        "rubrics: [tone]\n" + extra)
    return tmp_path


def test_weights_load_from_a_scenario(tmp_path: Path) -> None:
    [scenario] = load_scenarios([str(_scenario(tmp_path,
                                               "scoring: {weights: {checks: 2, tone: 0.5}}\n"))])
    assert scenario.scoring.weights == {"checks": 2.0, "tone": 0.5}


@pytest.mark.parametrize(("weights", "field", "expected"), [
    ("{tonne: 2}", "scoring.weights.tonne", "expected 'checks' or a rubric it lists"),
    ("{checks: 0}", "scoring.weights", "a finite number above 0"),
    ("{checks: -1}", "scoring.weights", "a finite number above 0"),
    ("{checks: .nan}", "scoring.weights", "a finite number above 0"),
])
def test_bad_weights_are_refused_naming_the_field(tmp_path: Path, weights: str, field: str,
                                                  expected: str) -> None:
    with pytest.raises((InputError, InputErrors)) as caught:
        load_scenarios([str(_scenario(tmp_path, f"scoring: {{weights: {weights}}}\n"))])
    text = str(caught.value)
    assert "s.yaml" in text and field in text and expected in text


PARAMS = ParameterExpectation(tool="book", required={"city": "Paris", "nights": 2},
                              forbidden=["coupon"])


@pytest.mark.parametrize(("credit", "arguments", "value"), [
    (0.0, {"city": "Lyon", "nights": 2}, 2 / 3),  # seed 000: a wrong value earns nothing
    (0.5, {"city": "Lyon", "nights": 2}, 2.5 / 3),  # half a point for city
    (0.5, {"city": "Lyon", "nights": 3}, 2 / 3),  # 0.5 + 0.5 + 1 (coupon absent)
    (0.5, {"nights": 2}, 2 / 3),  # a missing parameter earns nothing either way
    (1.0, {"city": "Lyon", "nights": 3, "coupon": "X"}, 2 / 3),  # forbidden: no credit
    (0.5, {"city": "Paris", "nights": 2}, 1.0),
])
def test_wrong_value_credit_gives_a_share_of_a_point(credit: float, arguments: dict[str, Any],
                                                      value: float) -> None:
    exp = Expectations(parameters=[PARAMS.model_copy(update={"wrong_value_credit": credit})])
    transcript = _tx(ToolCallRecord(call_id="c", name="book", arguments=arguments, turn=0))
    result = run_checks(transcript, exp).get("parameter_accuracy")
    assert result.value == pytest.approx(value)
    assert result.passed is (value == 1.0)


def test_wrong_value_credit_is_a_share_of_one_point() -> None:
    with pytest.raises(ValueError, match="less than or equal to 1"):
        ParameterExpectation(tool="t", wrong_value_credit=1.5)
