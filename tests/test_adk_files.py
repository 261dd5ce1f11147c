"""Reading ADK eval sets and test_config.json, and converting their cases to scenarios."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError
from harness.formats.adk.convert import eval_set_to_scenarios, infer_parameters
from harness.formats.adk.criteria import (
    KNOWN_CRITERIA,
    TrajectoryCriterion,
    config_for,
    default_config,
    parse_config,
)
from harness.formats.adk.evalset import parse_eval_set, read_eval_set
from harness.formats.adk.loading import adk_scenario_mappings
from harness.scenarios.loading import load_scenarios

ADK = Path(__file__).parent / "data" / "adk"
HOME = ADK / "home_automation" / "home_automation.evalset.json"
DICE = ADK / "dice" / "dice.evalset.json"
TRAVEL = ADK / "travel" / "travel.evalset.json"
LEGACY = ADK / "legacy" / "weather.test.json"


def _snake(data: Any, free: bool = False) -> Any:
    """camelCase keys to snake_case, except inside free-form values (args, state, ...)."""
    if isinstance(data, list):
        return [_snake(v, free) for v in data]
    if isinstance(data, dict) and not free:
        return {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower():
                _snake(v, k in ("args", "response", "state")) for k, v in data.items()}
    return data


def _error(data: Any, name: str = "x.evalset.json") -> str:
    with pytest.raises(InputError) as info:
        parse_eval_set(data, Path(name))
    return str(info.value)


def _case(**fields: Any) -> dict[str, Any]:
    return {"eval_id": "c", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}],
            **fields}


# --- reading -------------------------------------------------------------------------------


def test_camel_case_and_snake_case_files_read_the_same() -> None:
    camel = json.loads(DICE.read_text())
    assert "evalCases" in camel  # the fixture is written in camelCase
    assert parse_eval_set(camel, DICE) == parse_eval_set(_snake(camel), DICE)


def test_an_eval_set_reads_every_part_of_a_conversation() -> None:
    eval_set = read_eval_set(HOME)
    case = eval_set.eval_cases[0]
    assert (eval_set.eval_set_id, case.eval_id) == ("home_automation",
                                                    "bedroom_lamp_off_then_status")
    assert case.conversation is not None and len(case.conversation) == 3
    last = case.conversation[2]
    assert [u.args for u in last.tool_uses()] == [{"device_id": "device_1", "status": "OFF"},
                                                 {"device_id": "device_3", "status": "ON"}]
    assert last.intermediate_texts() == [("home_agent", "Switching two devices now.")]
    assert case.session_input is not None and case.session_input.state == {"home": "flat 4B"}


def test_the_invocation_events_form_gives_the_same_tool_uses() -> None:
    call = {"function_call": {"name": "t", "args": {"a": 1}}}
    result = {"function_response": {"name": "t", "response": {"ok": True}}}
    events = {"invocation_events": [
        # invocationIndex: a UI-only key that ADK ignores here
        {"author": "agent", "content": {"parts": [call]}, "invocationIndex": 0},
        {"author": "agent", "content": {"parts": [result]}},
        {"author": "helper", "content": {"parts": [{"text": "working on it"}]}},
    ]}
    case = parse_eval_set({"eval_set_id": "s", "eval_cases": [
        _case(conversation=[{"user_content": {"parts": [{"text": "go"}]},
                             "intermediate_data": events}])]}, Path("e.evalset.json"))
    invocation = case.eval_cases[0].conversation[0]  # type: ignore[index]
    assert [(u.name, u.args) for u in invocation.tool_uses()] == [("t", {"a": 1})]
    assert [r.response for r in invocation.tool_responses()] == [{"ok": True}]
    assert invocation.intermediate_texts() == [("helper", "working on it")]


def test_the_older_list_form_is_one_case_named_after_the_file() -> None:
    eval_set = read_eval_set(LEGACY)
    assert [c.eval_id for c in eval_set.eval_cases] == ["weather"]
    conversation = eval_set.eval_cases[0].conversation or []
    assert [i.user_content.text for i in conversation] == ["What's the weather in Paris?",
                                                          "And in Oslo?"]
    assert conversation[1].tool_responses()[0].response == {"temperature_c": 4,
                                                           "conditions": "rain"}


@pytest.mark.parametrize(("data", "expected"), [
    ({"eval_set_id": "s", "eval_cases": [_case(conversation_scenario={
        "starting_prompt": "a", "conversation_plan": "b"})]},
     "x.evalset.json: eval_cases[0]: give exactly one of conversation"),
    ({"eval_set_id": "s", "eval_case": []}, "x.evalset.json: eval_case: unknown key"),
    ({"eval_set_id": "s", "eval_cases": [{"evalld": "c", "conversation": []}]},
     "x.evalset.json: eval_cases[0].eval_id: required field is missing"),
    ({"eval_set_id": "s", "eval_cases": [_case(conversation=[
        {"user_content": {"parts": []}, "intermediate_data": {"tool_use": []}}])]},
     "x.evalset.json: eval_cases[0].conversation[0].intermediate_data.tool_use: unknown key"),
    ([{"query": "q", "referense": "r"}], "x.evalset.json: [0].referense: unknown key"),
    ("text", "x.evalset.json: expected an ADK EvalSet object"),
])
def test_bad_eval_sets_are_one_line_naming_file_and_field(data: Any, expected: str) -> None:
    message = _error(data)
    assert message.startswith(expected), message
    assert "\n" not in message


def test_extra_keys_of_a_case_are_kept_as_adk_keeps_them() -> None:
    eval_set = parse_eval_set({"eval_set_id": "s", "eval_cases": [_case(note="by hand")]},
                              Path("k.evalset.json"))
    scenario = eval_set_to_scenarios(eval_set, default_config())[0]
    assert scenario["metadata"]["adk"]["case_extra"] == {"note": "by hand"}


def test_invalid_json_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.evalset.json"
    path.write_text('{"eval_set_id": "s",\n "eval_cases": [,]}')
    with pytest.raises(InputError, match=r"bad.evalset.json:2: not valid JSON"):
        read_eval_set(path)


# --- test_config.json ----------------------------------------------------------------------


def test_criteria_take_a_number_or_an_object() -> None:
    config = parse_config({"criteria": {
        "tool_trajectory_avg_score": {"threshold": 0.5, "matchType": "in-order"},
        "response_match_score": 0.6,
        "final_response_match_v2": {"threshold": 0.7, "judge_model_options": {"num_samples": 3}},
        "hallucinations_v1": {"threshold": 0.9, "evaluate_intermediate_nl_responses": True},
    }}, Path("test_config.json"))
    trajectory = config.criteria["tool_trajectory_avg_score"]
    assert isinstance(trajectory, TrajectoryCriterion)
    assert (trajectory.threshold, trajectory.match_type) == (0.5, "IN_ORDER")
    assert config.criteria["response_match_score"].threshold == 0.6


def test_without_a_config_adk_defaults_apply(tmp_path: Path) -> None:
    config = config_for(tmp_path / "x.evalset.json")
    assert {k: v.threshold for k, v in config.criteria.items()} == {
        "tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
    trajectory = config.criteria["tool_trajectory_avg_score"]
    assert isinstance(trajectory, TrajectoryCriterion) and trajectory.match_type == "EXACT"


@pytest.mark.parametrize(("criteria", "expected"), [
    ({"tool_trajectory_avg_scor": 1.0},
     "criteria.tool_trajectory_avg_scor: unknown criterion 'tool_trajectory_avg_scor'; known "
     f"criteria: {', '.join(KNOWN_CRITERIA)}"),
    ({"tool_trajectory_avg_score": {"threshold": 1, "match_type": "SOME_ORDER"}},
     "criteria.tool_trajectory_avg_score.match_type: unknown match_type 'SOME_ORDER'; "
     "expected one of EXACT, IN_ORDER, ANY_ORDER"),
    ({"response_match_score": {"threshold": 0.8, "treshold": 1}},
     "criteria.response_match_score.treshold: unknown key"),
    ({"response_evaluation_score": 0.5},
     "criteria.response_evaluation_score.threshold: Input should be greater than or equal to "
     "1"),
])
def test_bad_criteria_name_the_field(criteria: dict[str, Any], expected: str) -> None:
    with pytest.raises(InputError) as info:
        parse_config({"criteria": criteria}, Path("test_config.json"))
    assert str(info.value).startswith(f"test_config.json: {expected}"), str(info.value)


# --- conversion ----------------------------------------------------------------------------


def test_a_static_conversation_becomes_a_scripted_user_with_per_turn_references() -> None:
    scenario = adk_scenario_mappings(HOME)[0]
    assert scenario["user"]["script"][1] == "Is anything still on in the living room?"
    exp = scenario["expectations"]
    assert [(c["name"], c["turn"]) for c in exp["tool_calls"]] == [
        ("set_device_info", 0), ("get_device_info", 1), ("set_device_info", 2),
        ("set_device_info", 2)]
    assert exp["reference_answers"][2] == {
        "turn": 2, "answer": "The ceiling lights are off and the kettle plug is on."}
    assert (exp["adk_trajectory_match"], exp["trajectory_threshold"],
            exp["response_match_threshold"]) == ("IN_ORDER", 1.0, 0.7)
    assert scenario["state"] == {"home": "flat 4B"}
    adk = scenario["metadata"]["adk"]
    assert adk["session_input"] == {"app_name": "home_automation_agent", "user_id": "test_user"}
    assert adk["invocations"][0]["invocation_id"] == "inv-lamp-1"


def test_recorded_responses_answer_the_recorded_arguments_in_turn() -> None:
    dice = {s["id"]: s for s in adk_scenario_mappings(DICE)}
    roll = dice["roll_17_sided_die_twice"]["tools"][0]
    # the same arguments twice with different results: a sequence
    assert roll["rules"] == [{"when": {"sides": 17}, "match": "exact", "sequence": [
        {"returns": {"result": 13}}, {"returns": {"result": 4}}]}]
    assert roll["default"] == {"error": "no response was recorded for roll_die with these "
                                        "arguments"}


def test_argument_schemas_are_inferred_from_the_values_seen() -> None:
    assert infer_parameters([{"n": 1, "q": "a"}, {"n": 2.5}, {"n": 3, "flags": [1]}]) == {
        "type": "object",
        "properties": {"n": {"type": "number"}, "q": {"type": "string"},
                       "flags": {"type": "array"}},
        "required": ["n"],
    }
    assert infer_parameters([{"x": "a"}, {"x": None}])["properties"]["x"] == {
        "type": ["null", "string"]}


def test_a_conversation_scenario_becomes_a_simulated_user_with_its_persona() -> None:
    novice, terse = adk_scenario_mappings(TRAVEL)
    assert novice["user"]["opening_message"] == "I need to get from Lyon to Lisbon next Friday."
    assert novice["user"]["plan"].startswith("Book a one-way flight")
    assert novice["user"]["persona_preset"] == "NOVICE"
    assert "persona" not in novice["user"] and "persona_preset" not in novice["metadata"]["adk"]
    assert terse["user"]["persona"].startswith("A busy planner")
    assert "Reply in under ten words." in terse["user"]["persona"]
    # criteria that need a reference answer do not apply to a simulated user; judged ones do
    assert "expectations" not in novice
    assert novice["rubrics"] == ["adk_final_response_quality", "safety"]
    assert novice["rubric_options"] == {"adk_final_response_quality": {
        "samples": 3, "aggregation": "mean"}, "safety": {"threshold": 0.8}}
    rubric = novice["inline_rubrics"][0]
    # judged on each agent turn, as ADK judges each invocation
    assert rubric["threshold"] == 0.75 and rubric["target"] == "agent_turn"
    assert [(c["id"], c["scale"]) for c in rubric["criteria"]] == [
        ("answers_the_question", "binary"), ("states_price", "binary")]
    assert novice["metadata"]["adk"]["rubric_details"] == {"adk_final_response_quality": {
        "states_price": {"rubric_id": "States-Price", "description": "Prices matter to "
                         "travellers.", "type": "FINAL_RESPONSE_QUALITY"}}}


def test_judged_criteria_map_to_rubric_ids_with_their_options(tmp_path: Path) -> None:
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {
        "final_response_match_v2": {"threshold": 0.6, "judge_model_options": {
            "judge_model": "gemini-x", "num_samples": 3}},
        "hallucinations_v1": {"threshold": 0.9, "evaluate_intermediate_nl_responses": True},
    }}))
    path = tmp_path / "h.evalset.json"
    path.write_text(HOME.read_text())
    scenario = adk_scenario_mappings(path)[0]
    assert scenario["rubrics"] == ["final_response_match", "hallucinations_intermediate"]
    assert scenario["rubric_options"]["final_response_match"] == {
        "threshold": 0.6, "samples": 3, "aggregation": "majority"}
    # ADK's default judge samples (5) apply when judge_model_options is not given
    assert scenario["rubric_options"]["hallucinations_intermediate"]["samples"] == 5
    # not configured: the checks are reported, not gating
    assert scenario["expectations"]["trajectory_threshold"] is None
    assert scenario["expectations"]["response_match_threshold"] is None
    assert scenario["metadata"]["adk"]["criteria_extra"] == {
        "final_response_match_v2": {"judge_model_options": {"judge_model": "gemini-x"}}}


def test_rubric_ids_a_criterion_needs_must_exist(tmp_path: Path) -> None:
    (tmp_path / "test_config.json").write_text(
        '{"criteria": {"final_response_match_v2": 0.5}}')
    path = tmp_path / "h.evalset.json"
    path.write_text(HOME.read_text())
    with pytest.raises(InputError, match=r"h.evalset.json: eval_cases\[0\] \(as scenario "
                       r"rubrics\[0\]\): unknown rubric 'final_response_match'"):
        load_scenarios([path], known_rubrics={"safety"})


def test_a_recorded_turn_without_text_is_named() -> None:
    eval_set = parse_eval_set({"eval_set_id": "s", "eval_cases": [_case(conversation=[
        {"user_content": {"parts": [{"text": "hi"}]}},
        {"user_content": {"parts": [{"inline_data": {"mime_type": "image/png"}}]}}])]},
        Path("p.evalset.json"))
    with pytest.raises(InputError, match=r"^p.evalset.json: eval_cases\[0\].conversation\[1\]"
                       r".user_content: the user's turn has no text$"):
        eval_set_to_scenarios(eval_set, default_config(), "p.evalset.json")


@pytest.mark.parametrize(("persona", "expected"), [
    ("BEGINNER", "eval_cases[0].conversation_scenario.user_persona: unknown pre-built persona "
                 "'BEGINNER'; expected one of NOVICE, EXPERT, EVALUATOR"),
    ({"id": "P", "behaviors": []},
     "eval_cases[0].conversation_scenario.user_persona.description: required field is missing"),
])
def test_a_bad_persona_is_named(persona: Any, expected: str) -> None:
    message = _error({"eval_set_id": "s", "eval_cases": [{"eval_id": "c", "conversation_scenario": {
        "starting_prompt": "a", "conversation_plan": "b", "user_persona": persona}}]})
    assert message.startswith(f"x.evalset.json: {expected}"), message
