"""The scores ADK defines exactly, on the ADK fixtures converted to scenarios, against values
worked out by hand; and the thresholds of test_config.json deciding pass/fail as ADK does
(each criterion's overall score >= its threshold)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rouge_score import rouge_scorer

from harness.checks.result import CheckResult
from harness.checks.run import run_checks
from harness.models.types import Message
from harness.scenarios.loading import load_scenarios
from harness.scenarios.schema import Scenario
from harness.transcript import ToolCallRecord, Transcript

ADK = Path(__file__).parent / "data" / "adk"
HOME = ADK / "home_automation" / "home_automation.evalset.json"

# What an agent did in the home-automation case, turn by turn (reference: turn 0 set device_2
# OFF; turn 1 get the living room; turn 2 set device_1 OFF then device_3 ON).
ACTUAL_CALLS = [
    ("get_device_info", {"location": "bedroom"}, 0),  # an extra call before the expected one
    ("set_device_info", {"device_id": "device_2", "status": "OFF"}, 0),
    ("get_device_info", {"location": "living room"}, 1),
    ("set_device_info", {"device_id": "device_3", "status": "ON"}, 2),  # the two swapped
    ("set_device_info", {"device_id": "device_1", "status": "OFF"}, 2),
]
ACTUAL_ANSWERS = [
    "The bedroom floor lamp is off now.",
    "The ceiling lights are on.",
    "The ceiling lights are off and the kettle plug is on.",
]


def _home(**expectations: Any) -> Scenario:
    scenario = load_scenarios([HOME])[0]
    return scenario.model_copy(update={"expectations": scenario.expectations.model_copy(
        update=expectations)})


def _transcript(scenario: Scenario) -> Transcript:
    messages: list[Message] = []
    for turn, text in enumerate(scenario.user.script or []):
        messages += [Message(role="user", content=text),
                     Message(role="assistant", content=ACTUAL_ANSWERS[turn])]
    calls = [ToolCallRecord(call_id=f"c{i}", name=name, arguments=args, turn=turn)
             for i, (name, args, turn) in enumerate(ACTUAL_CALLS)]
    return Transcript(scenario_id=scenario.id, messages=messages, tool_calls=calls,
                      stop_reason="script_finished")


def _check(scenario: Scenario, name: str) -> CheckResult:
    return run_checks(_transcript(scenario), scenario.expectations).get(name)


@pytest.mark.parametrize(("match_type", "per_turn", "score"), [
    # turn 0 has an extra call, turn 2 the right calls in the wrong order
    ("EXACT", [0.0, 1.0, 0.0], 1 / 3),  # (0 + 1 + 0) / 3
    ("IN_ORDER", [1.0, 1.0, 0.0], 2 / 3),  # extras allowed, order not: (1 + 1 + 0) / 3
    ("ANY_ORDER", [1.0, 1.0, 1.0], 1.0),  # extras and any order allowed: 3 / 3
])
def test_tool_trajectory_avg_score_under_each_match_type(
    match_type: str, per_turn: list[float], score: float
) -> None:
    result = _check(_home(adk_trajectory_match=match_type), "tool_trajectory_avg_score")
    assert result.details["per_turn"] == per_turn
    assert result.value == pytest.approx(score)


# ROUGE-1 F per turn (rouge-score's tokens: lower case, punctuation dropped, Porter stems):
# turn 0: reference "done the floor lamp in the bedroom is now off" (10 tokens), answer "the
#   bedroom floor lamp is off now" (7), all 7 shared: P = 7/7, R = 7/10, F = 2*0.7/1.7 = 14/17
# turn 1: reference "yes the ceiling lights in the living room are on" (10), answer "the
#   ceiling lights are on" (5), all shared: P = 1, R = 1/2, F = 2*0.5/1.5 = 2/3
# turn 2: the same text: F = 1
# response_match_score = (14/17 + 2/3 + 1) / 3 = 0.830065...
PER_TURN_F = [14 / 17, 2 / 3, 1.0]


def test_response_match_score_is_the_mean_of_per_turn_rouge1() -> None:
    result = _check(_home(), "response_match_score")
    assert [t["score"] for t in result.details["per_turn"]] == pytest.approx(PER_TURN_F)
    assert result.value == pytest.approx(sum(PER_TURN_F) / 3)
    assert result.value == pytest.approx(0.8300653594771241)
    # cross-check each turn with rouge-score itself, as ADK calls it
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    scenario = _home()
    for item, answer, expected in zip(scenario.expectations.reference_answers or [],
                                      ACTUAL_ANSWERS, PER_TURN_F, strict=True):
        assert scorer.score(item.answer, answer)["rouge1"].fmeasure == pytest.approx(expected)


@pytest.mark.parametrize(("threshold", "passed"), [
    (0.83, True),  # 0.8300... >= 0.83
    (0.8301, False),
])
def test_the_response_match_threshold_applies_to_the_mean(threshold: float, passed: bool) -> None:
    assert _check(_home(response_match_threshold=threshold), "response_match_score").passed \
        is passed


@pytest.mark.parametrize(("threshold", "passed"), [
    (1.0, False),  # ADK's default: every turn must match (2/3 here, IN_ORDER)
    (2 / 3, True),  # ADK compares score >= threshold
    (0.67, False),
])
def test_the_trajectory_threshold_decides_pass_fail(threshold: float, passed: bool) -> None:
    result = _check(_home(trajectory_threshold=threshold), "tool_trajectory_avg_score")
    assert result.value == pytest.approx(2 / 3)
    assert result.passed is passed


def test_a_check_the_config_does_not_name_is_reported_not_gated() -> None:
    from harness.runs.scoring import build_sample

    scenario = _home(trajectory_threshold=None)  # ANY pass/fail comes from the ROUGE mean
    transcript = _transcript(scenario)
    report = run_checks(transcript, scenario.expectations)
    assert report.get("tool_trajectory_avg_score").passed is None
    sample = build_sample(transcript, report, [], started_at=0.0, finished_at=1.0)
    assert sample.metrics["tool_trajectory_avg_score"] == pytest.approx(2 / 3)
    assert sample.passed is True and sample.score == pytest.approx(sum(PER_TURN_F) / 3)
