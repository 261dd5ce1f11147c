"""ADK eval sets on the command line: run and validate them as scenarios, select cases,
import to YAML and export back (round trips), and malformed files (one line, exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.formats import load_scenarios
from harness.formats.adk.evalset import read_eval_set
from harness.scenarios.schema import Scenario
from tests.helpers.cli import run_cli

ADK = Path(__file__).parent / "data" / "adk"
FIXTURES = {
    "home_automation": ADK / "home_automation" / "home_automation.evalset.json",
    "dice": ADK / "dice" / "dice.evalset.json",
    "travel": ADK / "travel" / "travel.evalset.json",
    "weather": ADK / "legacy" / "weather.test.json",
}
SCENARIOS = Path(__file__).parents[1] / "scenarios"


def _samples(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def _agent_turns(run_dir: Path, scenario_id: str, epoch: int) -> int:
    """How many user turns the agent answered in one stored sample."""
    from harness.runs.store import RunStore

    with RunStore.open(run_dir, read_only=True) as store:
        [record] = [r for r in store.iter_samples()
                    if (r.scenario_id, r.epoch) == (scenario_id, epoch)]
    turns = record.transcript.turn_of_messages()
    return len({t for m, t in zip(record.transcript.messages, turns, strict=True)
                if m.role == "assistant"})


def _dump(scenarios: list[Scenario]) -> list[dict[str, Any]]:
    return [s.model_dump(mode="json") for s in scenarios]


@pytest.mark.parametrize("name", ["home_automation", "dice", "travel"])
def test_each_fixture_folder_runs_offline_end_to_end(name: str, tmp_path: Path) -> None:
    folder = FIXTURES[name].parent
    result = run_cli("run", folder, "--offline", "--epochs", "2", "--out", tmp_path / "run",
                     "--cache-mode", "off")
    assert result.returncode == 0, result.stderr
    samples = _samples(tmp_path / "run")
    assert samples and all(s["status"] == "scored" for s in samples)
    for sample in samples:
        metrics = sample["metrics"]
        if name == "travel":
            # simulated users; the inline rubric judged on each agent turn (ADK judges each
            # invocation) with ADK's num_samples (3), safety (no judge options in ADK) once
            assert set(metrics) == {"rubric:adk_final_response_quality", "rubric:safety"}
            turns = _agent_turns(tmp_path / "run", sample["scenario_id"], sample["epoch"])
            assert turns >= 1 and sample["usage"]["judge"]["calls"] == 3 * turns + 1
        else:
            # mock:agent replays the recorded calls and answers: every turn matches, and
            # ROUGE-1 of a text against itself is 1
            assert metrics["tool_trajectory_avg_score"] == 1.0
            assert metrics["response_match_score"] == 1.0
            assert sample["passed"] is True


def test_a_single_legacy_test_file_runs(tmp_path: Path) -> None:
    result = run_cli("run", FIXTURES["weather"], "--offline", "--epochs", "1", "--out",
                     tmp_path / "run", "--cache-mode", "off")
    assert result.returncode == 0, result.stderr
    (sample,) = _samples(tmp_path / "run")
    assert sample["scenario_id"] == "weather" and sample["passed"] is True


def test_the_flaky_offline_agent_gives_scores_below_one(tmp_path: Path) -> None:
    result = run_cli("run", FIXTURES["dice"].parent, FIXTURES["home_automation"],
                     "--offline", "--agent", "mock:agent-flaky", "--epochs", "6", "--out",
                     tmp_path / "run", "--cache-mode", "off")
    assert result.returncode in (0, 1), result.stderr
    scores = [s["metrics"]["tool_trajectory_avg_score"] for s in _samples(tmp_path / "run")]
    assert min(scores) < 1.0 and max(scores) == 1.0


def test_an_adk_file_without_an_agent_model_asks_for_one(tmp_path: Path) -> None:
    result = run_cli("run", FIXTURES["weather"], "--simulator", "mock:simulator",
                     "--out", tmp_path / "run")
    assert result.returncode == 2
    assert "weather.test.json: agent.model: no agent model: set it or pass --agent" \
        in result.stderr


def test_validate_reads_adk_files() -> None:
    result = run_cli("validate", ADK)
    assert result.returncode == 0, result.stderr
    assert "ok: 7 scenarios in 4 files" in result.stdout


# --- selectors -----------------------------------------------------------------------------


def test_a_selector_picks_eval_cases_in_file_order(tmp_path: Path) -> None:
    dice = FIXTURES["dice"]
    picked = load_scenarios([f"{dice}:roll_then_check_prime,what_can_you_do"])
    assert [s.id for s in picked] == ["what_can_you_do", "roll_then_check_prime"]
    result = run_cli("run", f"{dice}:roll_17_sided_die_twice", "--offline", "--epochs", "1",
                     "--out", tmp_path / "run", "--cache-mode", "off")
    assert result.returncode == 0, result.stderr
    assert [s["scenario_id"] for s in _samples(tmp_path / "run")] == ["roll_17_sided_die_twice"]


def test_the_same_selector_works_on_scenario_yaml() -> None:
    (scenario,) = load_scenarios([f"{SCENARIOS / 'weather.yaml'}:weather-current-paris"])
    assert scenario.id == "weather-current-paris"


def test_a_selector_that_selects_nothing_lists_the_ids() -> None:
    result = run_cli("validate", f"{FIXTURES['dice']}:roll_die,what_can_you_do")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        f"{FIXTURES['dice']}: selector roll_die selects nothing; ids in this file: "
        "what_can_you_do, roll_17_sided_die_twice, roll_then_check_prime")


# --- import and export ---------------------------------------------------------------------


@pytest.mark.parametrize("name", list(FIXTURES))
def test_import_export_import_gives_identical_scenarios(name: str, tmp_path: Path) -> None:
    source = FIXTURES[name]
    direct = load_scenarios([source])
    first = run_cli("import", "adk", source, "--out", tmp_path / "yaml")
    assert first.returncode == 0, first.stderr
    imported = load_scenarios([tmp_path / "yaml" / f"{name}.yaml"])
    assert _dump(imported) == _dump(direct)  # the YAML loads back as the same scenarios
    out = tmp_path / "adk" / f"{name}.evalset.json"
    exported = run_cli("export", "adk", tmp_path / "yaml", "--out", out)
    assert exported.returncode == 0, exported.stderr
    assert (out.parent / "test_config.json").is_file()
    again = run_cli("import", "adk", out, "--out", tmp_path / "again")
    assert again.returncode == 0, again.stderr
    assert _dump(load_scenarios([tmp_path / "again" / f"{name}.yaml"])) == _dump(direct)


@pytest.mark.parametrize("name", ["home_automation", "dice"])
def test_export_keeps_every_field_of_the_original(name: str, tmp_path: Path) -> None:
    out = tmp_path / f"{name}.evalset.json"
    result = run_cli("export", "adk", FIXTURES[name], "--out", out)
    assert result.returncode == 0, result.stderr
    assert read_eval_set(out) == read_eval_set(FIXTURES[name])
    config = FIXTURES[name].parent / "test_config.json"
    written = json.loads((tmp_path / "test_config.json").read_text())
    if config.is_file():
        assert written == json.loads(config.read_text())
    else:  # ADK's defaults, written out
        assert written == {"criteria": {"tool_trajectory_avg_score": 1.0,
                                        "response_match_score": 0.8}}


def test_the_imported_yaml_names_what_is_not_carried(tmp_path: Path) -> None:
    run_cli("import", "adk", FIXTURES["home_automation"], "--out", tmp_path)
    header = (tmp_path / "home_automation.yaml").read_text().split("\n\n")[0]
    assert "#   bedroom_lamp_off_then_status: creation_timestamp" in header
    assert "invocations (creation_timestamp, intermediate_responses, invocation_id, " \
        "tool_use_ids)" in header
    assert "session_input (app_name, user_id)" in header
    assert "--agent MODEL" in header


def test_export_of_our_yaml_names_what_adk_cannot_hold(tmp_path: Path) -> None:
    out = tmp_path / "weather.evalset.json"
    result = run_cli("export", "adk", f"{SCENARIOS / 'weather.yaml'}:weather-current-paris",
                     "--out", out)
    assert result.returncode == 0, result.stderr
    assert "weather-current-paris: not carried (ADK has no field for it): reference_answer, " \
        "required_phrases, rubric final_response_quality" in result.stderr
    (case,) = json.loads(out.read_text())["eval_cases"]
    assert case["conversation_scenario"]["starting_prompt"] == \
        "What's the weather like in Paris right now?"


def test_export_puts_a_scripted_scenarios_reference_answer_on_its_last_invocation(
        tmp_path: Path) -> None:
    scenario = tmp_path / "scripted.yaml"
    scenario.write_text(
        "id: scripted-two-turns\n"
        "user: {goal: Know the weather, script: [Hello., What is the weather in Paris?]}\n"
        "agent: {model: mock:agent}\n"
        "expectations: {reference_answer: It is sunny in Paris.}\n")
    out = tmp_path / "scripted.evalset.json"
    result = run_cli("export", "adk", scenario, "--out", out)
    assert result.returncode == 0, result.stderr
    (case,) = json.loads(out.read_text())["eval_cases"]
    invocations = case["conversation"]
    assert [inv["user_content"]["parts"][0]["text"] for inv in invocations] == [
        "Hello.", "What is the weather in Paris?"]
    assert invocations[0].get("final_response") is None
    assert invocations[-1]["final_response"]["parts"][0]["text"] == "It is sunny in Paris."
    # ... and it comes back as the answer to that last turn.
    (back,) = load_scenarios([out])
    assert [(a.turn, a.answer) for a in back.expectations.reference_answers or []] == [
        (1, "It is sunny in Paris.")]


# --- malformed files -----------------------------------------------------------------------


def _home_copy(tmp_path: Path, text: str | None = None, config: Any = None) -> Path:
    folder = tmp_path / "set"
    folder.mkdir()
    path = folder / "home.evalset.json"
    if text is None:
        shutil.copy(FIXTURES["home_automation"], path)
    else:
        path.write_text(text)
    if config is not None:
        (folder / "test_config.json").write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(("text", "config", "expected"), [
    ('{"eval_set_id": "s", "eval_cases": [}', None,
     "home.evalset.json:1: not valid JSON: Expecting value (line 1, column 37)"),
    (json.dumps({"eval_set_id": "s", "eval_cases": [{
        "eval_id": "both", "conversation": [],
        "conversation_scenario": {"starting_prompt": "a", "conversation_plan": "b"}}]}), None,
     "home.evalset.json: eval_cases[0]: give exactly one of conversation (recorded turns) and "
     "conversation_scenario (a simulated user)"),
    (None, {"criteria": {"response_match": 0.8}},
     "test_config.json: criteria.response_match: unknown criterion 'response_match'; known "
     "criteria: tool_trajectory_avg_score, response_match_score"),
    (None, {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "ALL"}}},
     "test_config.json: criteria.tool_trajectory_avg_score.match_type: unknown match_type "
     "'ALL'; expected one of EXACT, IN_ORDER, ANY_ORDER"),
])
@pytest.mark.parametrize("command", ["run", "validate"])
def test_malformed_files_are_one_line_and_exit_2(
    command: str, text: str | None, config: Any, expected: str, tmp_path: Path
) -> None:
    path = _home_copy(tmp_path, text, config)
    args = ["--offline", "--out", tmp_path / "run"] if command == "run" else []
    result = run_cli(command, path, *args)
    assert result.returncode == 2
    first = result.stderr.splitlines()[0]
    assert expected in first, first
    assert "Traceback" not in result.stderr


def test_every_criterion_survives_export(tmp_path: Path) -> None:
    config = {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "ANY_ORDER",
                                          "ignore_args": True},
            "response_match_score": 0.6,
            "rubric_based_tool_use_quality_v1": {
                "threshold": 0.5,
                "judge_model_options": {"judge_model": "gemini-x", "num_samples": 2},
                "rubrics": [{"rubric_id": "calls_get_first",
                             "rubric_content": {"text_property": "The agent reads first."}}]},
            "safety_v1": 0.9,
        },
        "user_simulator_config": {"type": "llm_backed", "model": "gemini-x"},
    }
    source = _home_copy(tmp_path, config=config)
    (scenario,) = load_scenarios([source])
    assert scenario.expectations.arg_matching.mode == "ignore"
    assert scenario.rubric_options["adk_tool_use_quality"].samples == 2
    out = tmp_path / "out" / "home.evalset.json"
    result = run_cli("export", "adk", source, "--out", out)
    assert result.returncode == 0, result.stderr
    assert json.loads((out.parent / "test_config.json").read_text()) == config


def test_two_eval_sets_of_one_name_are_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(FIXTURES["dice"], other / "dice.evalset.json")
    result = run_cli("import", "adk", FIXTURES["dice"], other, "--out", tmp_path / "out")
    assert result.returncode == 2
    assert "another eval set would also be written to" in result.stderr
    assert not (tmp_path / "out").exists()
