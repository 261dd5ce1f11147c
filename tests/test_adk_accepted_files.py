"""What ADK accepts, the harness accepts: ADK's own full dumps (every google-genai field,
newer ones included), the list of named cases ADK's loader converts, the criteria of ADK
2.13 (the multi-turn, simulator and coherence ones, rubrics taken from the eval case or an
invocation), test_config.json's live-model and custom-metric keys, eval_config.json, and an
empty eval set. ADK's own models and converters are the oracle (the ``adk`` extra)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError
from harness.formats.adk.convert import not_carried
from harness.formats.adk.evalset import parse_eval_set
from harness.formats.adk.export import export_eval_set
from harness.formats.adk.loading import adk_scenario_mappings
from harness.scenarios.loading import load_scenarios
from tests.helpers.cli import run_cli

adk_set = pytest.importorskip("google.adk.evaluation.eval_set")
adk_case = pytest.importorskip("google.adk.evaluation.eval_case")
adk_config = pytest.importorskip("google.adk.evaluation.eval_config")
adk_sets = pytest.importorskip("google.adk.evaluation.local_eval_sets_manager")
genai = pytest.importorskip("google.genai.types")


def _adk_dump(tmp_path: Path) -> Path:
    """An eval set written by ADK's own models, with google-genai's streaming fields set."""
    use = genai.FunctionCall(id="c1", name="roll_die", args={"sides": 6}, will_continue=False,
                             partial_args=[])
    result = genai.FunctionResponse(id="c1", name="roll_die", response={"result": 4},
                                    will_continue=False)
    invocation = adk_case.Invocation(
        invocation_id="i1",
        user_content=genai.Content(role="user", parts=[genai.Part(text="Roll a die")]),
        final_response=genai.Content(role="model", parts=[genai.Part(text="I rolled a 4.")]),
        intermediate_data=adk_case.IntermediateData(tool_uses=[use],
                                                    tool_responses=[result]))
    eval_set = adk_set.EvalSet(eval_set_id="dump", eval_cases=[adk_case.EvalCase(
        eval_id="roll", conversation=[invocation],
        session_input=adk_case.SessionInput(app_name="dice", user_id="u", state={}))])
    path = tmp_path / "dump.evalset.json"
    path.write_text(eval_set.model_dump_json(indent=1))
    return path


def test_adk_s_own_full_dump_validates_and_scores_the_same_call(tmp_path: Path) -> None:
    path = _adk_dump(tmp_path)
    text = path.read_text()
    assert '"partial_args"' in text and '"thought_signature": null' in text  # a full dump
    done = run_cli("validate", path)
    assert done.returncode == 0, done.stdout + done.stderr
    (scenario,) = adk_scenario_mappings(path)
    assert scenario["expectations"]["tool_calls"] == [
        {"name": "roll_die", "args": {"sides": 6}, "turn": 0}]
    # the streaming fields bear on no score: named once as not carried
    assert any("streaming_fields_not_carried" in n for n in not_carried(scenario))
    assert scenario["metadata"]["adk"]["invocations"][0]["streaming_fields_not_carried"] == [
        "tool_responses.will_continue", "tool_uses.partial_args", "tool_uses.will_continue"]


def test_an_unknown_key_with_a_value_is_still_refused() -> None:
    data = {"eval_set_id": "x", "eval_cases": [{"eval_id": "c", "conversation": [{
        "user_content": {"parts": [{"text": "hi"}]},
        "intermediate_data": {"tool_uses": [{"name": "t", "argz": {"a": 1}}]}}]}]}
    with pytest.raises(InputError, match=r"tool_uses\[0\]\.argz: unknown key 'argz'"):
        parse_eval_set(data, Path("x.evalset.json"))
    data["eval_cases"][0]["conversation"][0]["intermediate_data"]["tool_uses"][0] = {
        "name": "t", "args": {"a": 1}, "argz": None}  # null: unset, as a dump writes it
    parse_eval_set(data, Path("x.evalset.json"))


NAMED_CASES = [
    {"name": "roll_17_sided_dice_twice",
     "data": [
         {"query": "What can you do?", "expected_tool_use": [],
          "expected_intermediate_agent_responses": [],
          "reference": "I can roll dice of different sizes."},
         {"query": "Roll a 17 sided dice twice for me",
          "expected_tool_use": [{"tool_name": "roll_die", "tool_input": {"sides": 17}},
                                {"tool_name": "roll_die", "tool_input": {"sides": 17}}],
          "expected_intermediate_agent_responses": [{"author": "helper", "text": "rolling"}],
          "reference": "I rolled 13 and 4."}],
     "initial_session": {"state": {"rolls": 0}, "app_name": "hello_world", "user_id": "user"}},
    {"name": "no_session", "data": [{"query": "Hi", "reference": "Hello."}],
     "initial_session": {}},
]


def test_the_list_of_named_cases_converts_as_adk_s_loader_does(tmp_path: Path) -> None:
    path = tmp_path / "named.test.json"
    path.write_text(json.dumps(NAMED_CASES))
    theirs = adk_sets.load_eval_set_from_file(str(path), "named")
    ours = parse_eval_set(NAMED_CASES, path)
    assert ours.eval_set_id == theirs.eval_set_id == "named"
    assert [c.eval_id for c in ours.eval_cases] == [c.eval_id for c in theirs.eval_cases]
    for mine, adk in zip(ours.eval_cases, theirs.eval_cases, strict=True):
        assert [i.user_content.text for i in mine.conversation or []] == [
            i.user_content.parts[0].text for i in adk.conversation]
        assert [i.final_response.text if i.final_response else "" for i in
                mine.conversation or []] == [i.final_response.parts[0].text
                                             for i in adk.conversation]
        assert [[(u.name, u.args) for u in i.tool_uses()] for i in mine.conversation or []] \
            == [[(u.name, u.args) for u in i.intermediate_data.tool_uses]
                for i in adk.conversation]
        if adk.session_input is None:
            assert mine.session_input is None
        else:
            assert mine.session_input is not None
            assert (mine.session_input.app_name, mine.session_input.user_id,
                    mine.session_input.state) == (adk.session_input.app_name,
                                                  adk.session_input.user_id,
                                                  adk.session_input.state)
    assert run_cli("validate", path).returncode == 0


def test_a_bad_named_case_is_one_line_naming_the_item() -> None:
    bad = [{"name": "a", "data": [{"query": "q", "referense": "r"}]}]
    with pytest.raises(InputError, match=r"x.test.json: \[0\]\.data\[0\]\.referense: "
                       r"unknown key 'referense'"):
        parse_eval_set(bad, Path("x.test.json"))


def _simulated_case() -> dict[str, Any]:
    return {"eval_id": "sim", "conversation_scenario": {
        "starting_prompt": "Roll a die", "conversation_plan": "Ask for a roll, then stop."}}


def _eval_set(tmp_path: Path, criteria: dict[str, Any], cases: list[dict[str, Any]],
              **config: Any) -> Path:
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": criteria, **config}))
    path = tmp_path / "e.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "e", "eval_cases": cases}))
    return path


RECORDED = {"eval_id": "rec", "conversation": [{
    "user_content": {"parts": [{"text": "Roll a die"}]},
    "final_response": {"parts": [{"text": "I rolled a 4."}]}}]}
ADK_213 = {"response_evaluation_score": 3.5, "per_turn_user_simulator_quality_v1": 0.8,
           "multi_turn_task_success_v1": 0.7, "multi_turn_trajectory_quality_v1": 0.6,
           "multi_turn_tool_use_quality_v1": 0.5,
           "rubric_based_multi_turn_trajectory_quality_v1": {"threshold": 0.9, "rubrics": [
               {"rubric_id": "asks_first", "rubric_content": {
                   "text_property": "The agent asks before acting."}}]}}


def test_adk_2_13_s_criteria_map_to_rubrics_and_export_back(tmp_path: Path) -> None:
    path = _eval_set(tmp_path, ADK_213, [RECORDED, _simulated_case()])
    recorded, simulated = adk_scenario_mappings(path)
    judged = ["response_coherence", "task_completion", "trajectory_quality",
              "tool_use_quality", "adk_trajectory_quality"]
    assert recorded["rubrics"] == judged  # no simulated user to judge in a recording
    assert simulated["rubrics"] == [*judged[:1], "simulator_turns", *judged[1:]]
    options = simulated["rubric_options"]
    assert options["response_coherence"] == {"threshold": pytest.approx(0.625)}  # (3.5-1)/4
    assert options["simulator_turns"] == {"threshold": 0.8, "samples": 5,
                                          "aggregation": "mean"}
    assert options["task_completion"]["threshold"] == 0.7
    (inline,) = simulated["inline_rubrics"]
    assert (inline["id"], inline["target"]) == ("adk_trajectory_quality", "conversation")
    loaded = load_scenarios([path])
    assert [s.id for s in loaded] == ["rec", "sim"]
    export = export_eval_set(loaded, "e")
    # back to ADK's names and scales, and ADK's own model of the config accepts it
    criteria = export.test_config["criteria"]
    assert criteria["response_evaluation_score"] == pytest.approx(3.5)
    assert {k: criteria[k] for k in ADK_213 if k.startswith("multi_turn")} == {
        "multi_turn_task_success_v1": {"threshold": 0.7, "judge_model_options":
                                       {"num_samples": 5}},
        "multi_turn_trajectory_quality_v1": {"threshold": 0.6, "judge_model_options":
                                             {"num_samples": 5}},
        "multi_turn_tool_use_quality_v1": {"threshold": 0.5, "judge_model_options":
                                           {"num_samples": 5}}}
    adk_config.EvalConfig.model_validate(export.test_config)


def test_rubrics_come_from_the_case_and_its_invocations_by_type(tmp_path: Path) -> None:
    case = {**RECORDED, "rubrics": [
        {"rubric_id": "polite", "type": "FINAL_RESPONSE_QUALITY",
         "rubric_content": {"text_property": "The answer is polite."}},
        {"rubric_id": "tools_ok", "type": "TOOL_USE_QUALITY",
         "rubric_content": {"text_property": "The tools were used well."}}]}
    case["conversation"] = [{**case["conversation"][0], "rubrics": [
        {"rubric_id": "names_number", "type": "FINAL_RESPONSE_QUALITY",
         "rubric_content": {"text_property": "The answer names the number."}}]}]
    path = _eval_set(tmp_path, {"rubric_based_final_response_quality_v1": 0.5}, [case])
    (scenario,) = adk_scenario_mappings(path)
    (inline,) = scenario["inline_rubrics"]
    assert [c["id"] for c in inline["criteria"]] == ["polite", "names_number"]
    # exported, the criterion holds no copy of them: the case and the invocation keep theirs
    export = export_eval_set(load_scenarios([path]), "e")
    assert "rubrics" not in export.test_config["criteria"][
        "rubric_based_final_response_quality_v1"]
    (written,) = export.eval_set["eval_cases"]
    assert [r["rubric_id"] for r in written["rubrics"]] == ["polite", "tools_ok"]
    adk_set.EvalSet.model_validate(export.eval_set)


def test_a_rubric_based_criterion_with_no_rubric_anywhere_is_one_line(tmp_path: Path) -> None:
    path = _eval_set(tmp_path, {"rubric_based_tool_use_quality_v1": 0.5}, [RECORDED])
    with pytest.raises(InputError, match=r"e.evalset.json: eval_cases\[0\]\.rubrics: "
                       r"rubric_based_tool_use_quality_v1 has no rubrics: give them in the "
                       r"criterion \(rubrics\), or in the eval case or an invocation with "
                       r"type 'TOOL_USE_QUALITY'"):
        adk_scenario_mappings(path)


def test_live_model_config_and_custom_metrics_are_kept_and_written_back(
        tmp_path: Path) -> None:
    custom = {"my_metric": {"code_config": {"name": "my_pkg.metrics.my_metric"}}}
    live = {"timeout_seconds": 60}
    # the metric's code beside the eval set, where it is imported from (it runs as a check)
    (tmp_path / "my_pkg").mkdir()
    (tmp_path / "my_pkg" / "__init__.py").write_text("")
    (tmp_path / "my_pkg" / "metrics.py").write_text("def my_metric(*args):\n    pass\n")
    path = _eval_set(tmp_path, {"my_metric": 0.7, "response_match_score": 0.8}, [RECORDED],
                     live_model_config=live, custom_metrics=custom)
    done = run_cli("validate", path)
    assert done.returncode == 0, done.stdout + done.stderr
    export = export_eval_set(load_scenarios([path]), "e")
    assert export.test_config["custom_metrics"] == custom
    assert export.test_config["live_model_config"] == live
    assert export.test_config["criteria"]["my_metric"] == 0.7


def test_a_criterion_nobody_defines_is_still_refused(tmp_path: Path) -> None:
    path = _eval_set(tmp_path, {"my_metric": 0.7}, [RECORDED])
    done = run_cli("validate", path)
    assert done.returncode == 2
    assert "criteria.my_metric: unknown criterion 'my_metric'" in done.stderr + done.stdout


def test_eval_config_json_is_read_beside_the_eval_set(tmp_path: Path) -> None:
    path = _eval_set(tmp_path, {"response_match_score": 0.3}, [RECORDED])
    (tmp_path / "test_config.json").rename(tmp_path / "eval_config.json")
    (scenario,) = adk_scenario_mappings(path)
    assert scenario["expectations"]["response_match_threshold"] == 0.3
    done = run_cli("run", path, "--offline", "--epochs", "1", "--cache-mode", "off",
                   "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    (tmp_path / "test_config.json").write_text('{"criteria": {"response_match_score": 0.9}}')
    with pytest.raises(InputError, match=r"eval_config.json: test_config.json is beside it "
                       r"too; keep one criteria file per folder"):
        adk_scenario_mappings(path)


def test_an_empty_eval_set_is_accepted_and_says_there_is_nothing_to_run(
        tmp_path: Path) -> None:
    path = tmp_path / "empty.evalset.json"
    path.write_text('{"eval_set_id": "empty", "eval_cases": []}')
    adk_set.EvalSet.model_validate_json(path.read_text())  # ADK accepts it
    assert run_cli("validate", path).returncode == 0
    done = run_cli("run", path, "--offline", "--out", tmp_path / "run")
    assert done.returncode == 2
    assert "the ADK eval set holds no eval cases: nothing to run" in " ".join(
        done.stderr.split())
    imported = run_cli("import", "adk", path, "--out", tmp_path / "imported")
    assert imported.returncode == 0, imported.stderr
    assert "skipped" in imported.stdout and "holds no eval cases" in imported.stdout
    assert not list((tmp_path / "imported").glob("*.yaml"))
