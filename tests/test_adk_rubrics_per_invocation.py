"""ADK's per-invocation rubric criteria (``rubric_based_final_response_quality_v1``,
``rubric_based_tool_use_quality_v1``) judged per invocation, as ADK judges them: the inline
rubric is an ``agent_turn`` rubric, an invocation's own rubrics are criteria judged on that
turn alone, and the weights make the rubric score the pooled mean ADK's summariser computes
(``MeanInvocationResultsSummarizer``, the oracle) from the same verdicts. Import, export and
import again keep them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.formats.adk.export import export_eval_set
from harness.formats.adk.loading import adk_scenario_mappings
from harness.judging.judge import judge_once
from harness.judging.rubric import parse_rubric
from harness.judging.verdicts import Judgment
from harness.scenarios.loading import load_scenarios
from harness.transcript import transcript_from_openai
from tests.helpers.judging_fakes import ScriptedJudge, criterion_reply

adk_summary = pytest.importorskip("google.adk.evaluation.rubric_based_evaluator")
adk_rubrics = pytest.importorskip("google.adk.evaluation.eval_rubrics")
adk_evaluator = pytest.importorskip("google.adk.evaluation.evaluator")
adk_case = pytest.importorskip("google.adk.evaluation.eval_case")
adk_set = pytest.importorskip("google.adk.evaluation.eval_set")
genai = pytest.importorskip("google.genai.types")

KIND = "FINAL_RESPONSE_QUALITY"
ANSWERS = ("You rolled a 4.", "Goodbye, and good luck.")


def _rubric(rid: str, text: str, kind: str = KIND) -> dict[str, Any]:
    return {"rubric_id": rid, "type": kind, "rubric_content": {"text_property": text}}


def _invocation(user: str, answer: str, rubrics: list[dict[str, Any]]) -> dict[str, Any]:
    return {"user_content": {"role": "user", "parts": [{"text": user}]},
            "final_response": {"role": "model", "parts": [{"text": answer}]},
            "rubrics": rubrics}


def eval_set(tmp_path: Path) -> Path:
    """Two invocations; 'clear' in the criterion, 'polite' on the case, 'names_number' on
    both invocations, 'says_bye' on the second alone, one of another type on the first."""
    number = _rubric("names_number", "The answer names a number.")
    case = {"eval_id": "two_turns", "rubrics": [_rubric("polite", "The answer is polite.")],
            "conversation": [
                _invocation("Roll a die.", ANSWERS[0],
                            [number, _rubric("tools_ok", "Tools used well.",
                                             "TOOL_USE_QUALITY")]),
                _invocation("Thanks, bye.", ANSWERS[1],
                            [number, _rubric("says_bye", "The answer says goodbye.")])]}
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {
        "rubric_based_final_response_quality_v1": {"threshold": 0.5, "rubrics": [
            _rubric("clear", "The answer is clear.")]}}}))
    path = tmp_path / "e.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "e", "eval_cases": [case]}))
    return path


def test_invocation_rubrics_are_criteria_of_their_turns(tmp_path: Path) -> None:
    (scenario,) = adk_scenario_mappings(eval_set(tmp_path))
    (inline,) = scenario["inline_rubrics"]
    assert inline["target"] == "agent_turn"
    criteria = {c["id"]: (c.get("turns"), c.get("weight")) for c in inline["criteria"]}
    # every turn: weight 2 (two turns); names_number on both turns; says_bye on turn 1
    assert criteria == {"clear": (None, 2), "polite": (None, 2),
                        "names_number": ([0, 1], 2), "says_bye": ([1], None)}


async def test_the_rubric_score_is_adk_s_pooled_mean(tmp_path: Path) -> None:
    (scenario,) = load_scenarios([eval_set(tmp_path)])
    rubric = scenario.inline_rubric("adk_final_response_quality")
    assert rubric is not None
    verdicts = {0: {"clear": 1, "polite": 0, "names_number": 1},
                1: {"clear": 1, "polite": 1, "names_number": 0, "says_bye": 0}}

    def script(call: Any) -> dict[str, Any]:
        turn = 0 if f">>> AGENT: {ANSWERS[0]}" in call.messages[1].content else 1
        asked = set(call.response_model.model_fields)
        assert asked == set(verdicts[turn]), (turn, asked)  # that turn's rubrics, no other
        return {c: criterion_reply(v) for c, v in verdicts[turn].items()}

    transcript = transcript_from_openai("t", [
        {"role": "user", "content": "Roll a die."}, {"role": "assistant", "content": ANSWERS[0]},
        {"role": "user", "content": "Thanks, bye."},
        {"role": "assistant", "content": ANSWERS[1]}])
    outcome = await judge_once(ScriptedJudge(script=script), rubric, transcript)
    assert isinstance(outcome, Judgment)
    assert outcome.score == pytest.approx(adk_score(verdicts))
    assert outcome.score == pytest.approx(4 / 7)  # 4 of the 7 (rubric, invocation) verdicts


def adk_score(verdicts: dict[int, dict[str, int]]) -> float:
    """ADK's overall score for these per-invocation verdicts, from ADK's own summariser."""
    results = []
    for turn in sorted(verdicts):
        invocation = adk_case.Invocation(user_content=genai.Content(parts=[genai.Part(
            text=str(turn))]))
        results.append(adk_evaluator.PerInvocationResult(
            actual_invocation=invocation,
            rubric_scores=[adk_rubrics.RubricScore(rubric_id=r, score=float(v))
                           for r, v in verdicts[turn].items()]))
    summary = adk_summary.MeanInvocationResultsSummarizer().summarize(results, threshold=0.5)
    assert summary.overall_score is not None
    return float(summary.overall_score)


def test_import_export_import_keeps_each_rubric_where_it_was(tmp_path: Path) -> None:
    path = eval_set(tmp_path)
    first = adk_scenario_mappings(path)
    export = export_eval_set(load_scenarios([path]), "e")
    adk_set.EvalSet.model_validate(export.eval_set)
    (case,) = export.eval_set["eval_cases"]
    assert [r["rubric_id"] for r in case["rubrics"]] == ["polite"]
    assert [[r["rubric_id"] for r in inv["rubrics"]] for inv in case["conversation"]] == [
        ["names_number", "tools_ok"], ["names_number", "says_bye"]]
    assert [r["rubric_id"] for r in export.test_config["criteria"][
        "rubric_based_final_response_quality_v1"]["rubrics"]] == ["clear"]
    again = tmp_path / "again"
    again.mkdir()
    (again / "test_config.json").write_text(json.dumps(export.test_config))
    (again / "e.evalset.json").write_text(json.dumps(export.eval_set))
    second = adk_scenario_mappings(again / "e.evalset.json")
    assert second[0]["inline_rubrics"] == first[0]["inline_rubrics"]


def test_turns_elsewhere_than_agent_turn_are_refused() -> None:
    from harness.errors import InputError

    with pytest.raises(InputError, match=r"criteria\[0\]\.turns"):
        parse_rubric({"id": "r", "target": "conversation", "threshold": 0.5, "criteria": [
            {"id": "c", "question": "?", "scale": "binary", "turns": [0]}]}, "r.yaml")
