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
from pathlib import Path
from typing import Any

import pytest

from harness.testing.replies import RecordedRequest, Reply
from harness.testing.server import LoopbackServer
from tests.helpers.adk_eval import adk_eval_scores, require_adk_eval
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


def scripted(request: RecordedRequest) -> Reply:
    contents = request.messages
    texts = [p["text"] for c in contents if c["role"] == "user" for p in c.get("parts", [])
             if "text" in p]
    calls, answer = SCRIPT[texts[-1]]
    answered = any("functionResponse" in p for p in contents[-1].get("parts", []))
    return Reply.text_reply(answer) if answered else Reply.calls(*calls)


@pytest.fixture
def adk_env(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> LoopbackServer:
    from harness.testing.hub import loopback_environ

    for name, value in loopback_environ(loopback).items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    loopback.set_responder(scripted)
    return loopback


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A copy of the fixture folder (eval set, test_config.json, the metrics' module)."""
    folder = tmp_path / "suite"
    shutil.copytree(FIXTURE, folder)
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
])
def test_a_malformed_custom_metric_is_named_in_its_file(suite: Path, change: dict[str, Any],
                                                        field: str) -> None:
    config = json.loads((suite / "test_config.json").read_text())
    for key, value in change.items():
        config[key].update(value)
    (suite / "test_config.json").write_text(json.dumps(config))
    result = run_cli("validate", suite / "dice.evalset.json")
    assert result.returncode == 2
    [line] = [x for x in result.stderr.splitlines() if field in x]
    assert "test_config.json" in line


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
