"""ADK custom metrics (``custom_metrics`` in test_config.json) run as checks: on the example
ADK agent, a synchronous metric reading the expected invocations and an asynchronous one on a
0-10 scale give, per eval case, the scores ADK's own LocalEvalService gives (the oracle, on
the same agent, eval set and model replies); the criterion's threshold decides pass or fail;
a metric whose function does not import is one line naming the metric, the import path and
the file; and an export writes the metric back, not a lost check."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.testing.server import LoopbackServer
from tests.helpers.adk_eval import adk_eval_scores, point_adk_agent_at, require_adk_eval
from tests.helpers.cli import run_cli

require_adk_eval()

ROOT = Path(__file__).resolve().parent
EXAMPLE = ROOT.parents[0] / "examples" / "adk_agent"
FIXTURE = ROOT / "fixtures" / "adk_custom_metric"
CUSTOM = ("tool_names_match", "digits_in_answers")

# user text -> (the tool calls the model makes, its answer after their results); the last
# turn calls the wrong tool, so tool_names_match is not 1 everywhere.
SCRIPT: dict[str, tuple[list[tuple[str, dict[str, Any]]], str]] = {
    "Roll a six-sided die.": ([("roll_die", {"sides": 6})], "You rolled a 4 on the die."),
    "Roll a ten-sided die.": ([("roll_die", {"sides": 10})], "You rolled a 7."),
    "Is that number prime?": ([("roll_die", {"sides": 10})], "7 is a prime number."),
}


@pytest.fixture
def adk_env(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> LoopbackServer:
    return point_adk_agent_at(loopback, monkeypatch, SCRIPT, EXAMPLE)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A copy of the fixture folder (eval set, test_config.json, the metrics' module)."""
    folder = tmp_path / "suite"
    shutil.copytree(FIXTURE, folder)
    # each test imports the metrics' module afresh, as a new process would
    for name in [m for m in sys.modules if m.split(".")[0] == "dice_metrics"]:
        del sys.modules[name]
    return folder


def run_samples(eval_set: Path, out: Path) -> dict[str, dict[str, Any]]:
    """Each case's stored sample, as JSON (its check results under ``checks``)."""
    from harness.runs.store import RunStore

    result = run_cli("run", eval_set, "--agent", "adk:dice_agent.agent:root_agent",
                     "--epochs", "1", "--no-judge", "--cache-mode", "off", "--out", out)
    assert result.returncode in (0, 1), result.stderr
    with RunStore.open(out, read_only=True) as store:
        samples = [r.model_dump(mode="json") for r in store.iter_samples()]
    assert all(s["status"] != "errored" for s in samples), samples
    return {s["scenario_id"]: s for s in samples}


def check_result(sample: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [c for c in sample["checks"][0]["results"] if c["name"] == name]
    assert sample["metrics"][name] == found["value"]
    return found  # type: ignore[no-any-return]


async def oracle(suite: Path) -> dict[str, dict[str, float | None]]:
    from dice_agent.agent import root_agent  # type: ignore[import-not-found]

    return await adk_eval_scores(root_agent, suite / "dice.evalset.json",
                                 suite / "test_config.json", app_name="dice_agent")


def test_custom_metrics_give_adk_s_scores_and_the_threshold_decides(
        adk_env: LoopbackServer, suite: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    samples = run_samples(suite / "dice.evalset.json", tmp_path / "run")
    monkeypatch.syspath_prepend(str(suite))  # ADK imports the metrics' module from sys.path
    theirs = asyncio.run(oracle(suite))
    assert sorted(samples) == sorted(theirs) == ["roll_a_die", "roll_then_check_prime"]
    for case, sample in samples.items():
        for name in CUSTOM:
            result = check_result(sample, name)
            assert result["details"]["adk_score"] == pytest.approx(theirs[case][name]), (
                case, name)
    # ADK's numbers, and the harness's verdicts at the criteria's thresholds
    first, second = samples["roll_a_die"], samples["roll_then_check_prime"]
    names_1, names_2 = check_result(first, CUSTOM[0]), check_result(second, CUSTOM[0])
    assert (names_1["value"], names_1["passed"]) == (1.0, True)
    assert (names_2["value"], names_2["passed"]) == (0.5, False)  # 0.5 < 0.75
    assert names_2["details"]["per_invocation"] == [1.0, 0.0]
    digits_1, digits_2 = check_result(first, CUSTOM[1]), check_result(second, CUSTOM[1])
    # "You rolled a 4 on the die.": 1 digit of 10, under the threshold of 2
    assert (digits_1["details"]["adk_score"], digits_1["value"], digits_1["passed"]) == (
        1.0, pytest.approx(0.1), False)
    assert (digits_2["details"]["adk_score"], digits_2["value"], digits_2["passed"]) == (
        2.0, pytest.approx(0.2), True)
    assert digits_2["details"]["threshold"] == 2.0
    # a failed custom metric fails the sample, as it fails the case in ADK
    assert first["passed"] is False and second["passed"] is False
    # a custom metric no criterion names is not run (nor by ADK)
    assert all(c["name"] != "never_named" for s in samples.values()
               for c in s["checks"][0]["results"])


def test_a_metric_that_does_not_import_is_one_line_naming_it(suite: Path) -> None:
    config = json.loads((suite / "test_config.json").read_text())
    config["custom_metrics"]["digits_in_answers"]["code_config"]["name"] = \
        "dice_metrics_gone.digits"
    (suite / "test_config.json").write_text(json.dumps(config))
    result = run_cli("validate", suite / "dice.evalset.json")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if "digits_in_answers" in line]
    assert lines, result.stderr
    for line in lines:
        assert "custom metric 'digits_in_answers'" in line and "to import" in line
        assert "'dice_metrics_gone.digits'" in line and "No module named" in line
        assert "custom_metrics.digits_in_answers.code_config.name" in line
        assert "test_config.json" in line and "dice.evalset.json" in line


def test_a_function_the_module_lacks_is_named_too(suite: Path) -> None:
    config = json.loads((suite / "test_config.json").read_text())
    config["custom_metrics"]["tool_names_match"]["code_config"]["name"] = "dice_metrics.nope"
    (suite / "test_config.json").write_text(json.dumps(config))
    result = run_cli("validate", suite / "dice.evalset.json")
    assert result.returncode == 2
    assert "custom metric 'tool_names_match'" in result.stderr
    assert "'dice_metrics.nope'" in result.stderr


@pytest.mark.parametrize(("change", "field"), [
    ({"custom_metrics": {"tool_names_match": {"code_config": {"name": "nodots"}}}},
     "custom_metrics.tool_names_match.code_config.name"),
    ({"criteria": {"tool_names_match": "high"}}, "criteria.tool_names_match"),
    ({"custom_metrics": {"digits_in_answers": {
        "code_config": {"name": "dice_metrics.digits_in_answers"},
        "metric_info": {"metric_value_info": {"interval": {"min_value": 0}}}}}},
     "custom_metrics.digits_in_answers.metric_info.metricName"),
])
def test_a_malformed_custom_metric_is_named_in_its_file(suite: Path, change: dict[str, Any],
                                                        field: str) -> None:
    config = json.loads((suite / "test_config.json").read_text())
    for key, value in change.items():
        config[key].update(value)
    (suite / "test_config.json").write_text(json.dumps(config))
    result = run_cli("validate", suite / "dice.evalset.json")
    assert result.returncode == 2
    lines = [x for x in result.stderr.splitlines() if field in x]
    assert lines and all("test_config.json" in line for line in lines), result.stderr


def test_an_export_writes_the_metric_back_and_reports_no_lost_check(
        suite: Path, tmp_path: Path) -> None:
    imported = tmp_path / "imported"
    result = run_cli("import", "adk", suite / "dice.evalset.json", "--out", imported)
    assert result.returncode == 0, result.stderr
    exported = tmp_path / "back.evalset.json"
    back = run_cli("export", "adk", imported, "--out", exported)
    assert back.returncode == 0, back.stderr
    assert "check tool_names_match" not in back.stdout + back.stderr
    config = json.loads((tmp_path / "test_config.json").read_text())
    original = json.loads((suite / "test_config.json").read_text())
    assert config["custom_metrics"] == original["custom_metrics"]
    assert config["criteria"]["tool_names_match"] == {"threshold": 0.75}
    assert config["criteria"]["digits_in_answers"] == 2


# --- the check on its own: what the function receives, and what it may return --------------

PROBE = '''
from google.adk.evaluation.eval_case import get_all_tool_calls
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult

SEEN = []


def seen(eval_metric, actual, expected, scenario):
    SEEN.append((eval_metric, actual, expected, scenario))
    return EvaluationResult(overall_score=0.5, overall_eval_status=EvalStatus.PASSED)


def no_score(eval_metric, actual, expected, scenario):
    return EvaluationResult()


def too_high(eval_metric, actual, expected, scenario):
    return EvaluationResult(overall_score=11.0)


def a_number(eval_metric, actual, expected, scenario):
    return 0.5
'''


def _transcript() -> Any:
    from harness.models.types import Message, ToolCall
    from harness.transcript import Transcript

    call = ToolCall(id="c1", name="roll_die", arguments={"sides": 6})
    return Transcript(scenario_id="s", epoch=0, stop_reason="script_finished", messages=[
        Message(role="user", content="Roll."),
        Message(role="assistant", content="Rolling.", tool_calls=(call,)),
        Message(role="tool", tool_call_id="c1", name="roll_die", content='{"result": 4}'),
        Message(role="assistant", content="A 4."),
        Message(role="user", content="Again."),
        Message(role="tool", tool_call_id="c2", name="roll_die", content="5"),
        Message(role="assistant", content="A 5."),
    ])


def _run(tmp_path: Path, function: str, criterion: Any = 0.4,
         metric_info: dict[str, Any] | None = None,
         scenario: dict[str, Any] | None = None) -> Any:
    from harness.checks.run import compile_check, run_check
    from harness.checks.spec import CheckSpec, Expectations
    from harness.formats.adk.custom_metrics import custom_metric_check

    module = tmp_path / "probe_metrics.py"
    if not module.exists():
        module.write_text(PROBE)
    config: dict[str, Any] = {"code_config": {"name": f"probe_metrics.{function}"}}
    if metric_info is not None:
        config["metric_info"] = metric_info
    spec = CheckSpec.model_validate(custom_metric_check(
        "probe", criterion, config, config_file="test_config.json", expected=None,
        scenario=scenario))
    [result] = run_check(compile_check(spec, base_dir=tmp_path), _transcript(), Expectations())
    return result


def test_the_function_gets_adk_s_objects(tmp_path: Path) -> None:
    import sys

    scenario = {"starting_prompt": "Roll.", "conversation_plan": "Roll twice."}
    result = _run(tmp_path, "seen", {"threshold": 0.4}, scenario=scenario)
    assert (result.value, result.passed, result.details["adk_status"]) == (0.5, True, "PASSED")
    eval_metric, actual, expected, given = sys.modules["probe_metrics"].SEEN[-1]
    assert eval_metric.metric_name == "probe" and eval_metric.threshold is None
    assert eval_metric.criterion.threshold == 0.4
    assert expected is None and given.starting_prompt == "Roll."
    first, second = actual
    assert first.user_content.parts[0].text == "Roll."
    assert first.final_response.parts[0].text == "A 4."
    events = first.intermediate_data.invocation_events
    call = events[0].content.parts[1].function_call
    assert (call.name, call.args, call.id) == ("roll_die", {"sides": 6}, "c1")
    assert events[1].content.parts[0].function_response.response == {"result": 4}
    assert events[2].content is None  # the final answer is the final response, not twice
    # a non-object result is wrapped as ADK wraps a function's, and a turn is cut at the user
    assert second.intermediate_data.invocation_events[0].content.parts[0] \
        .function_response.response == {"result": 5}
    assert second.final_response.parts[0].text == "A 5."


def test_the_threshold_decides_not_the_status_the_metric_gave(tmp_path: Path) -> None:
    result = _run(tmp_path, "seen", 0.6)  # the metric says PASSED; 0.5 < 0.6
    assert (result.passed, result.details["adk_status"]) == (False, "PASSED")


def test_no_score_is_unscored_and_a_bad_return_is_an_error(tmp_path: Path) -> None:
    unscored = _run(tmp_path, "no_score")
    assert (unscored.value, unscored.passed) == (None, None)
    assert "gave no overall score" in (unscored.unscored_reason or "")
    outside = _run(tmp_path, "too_high", metric_info={
        "metric_name": "probe", "metric_value_info": {"interval": {"min_value": 0,
                                                                   "max_value": 10}}})
    assert outside.value is None and "outside its range [0, 10]" in (outside.error or "")
    number = _run(tmp_path, "a_number")
    assert number.value is None and "not ADK's EvaluationResult" in (number.error or "")
