"""The seed examples, imported from OpenAI chat format, with numbers computed by hand:
weather T001 (get_weather), T002 (get_forecast), T003 (no tool needed), and the two-step
file task where the agent reads the file twice."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.checks.failures import analyse_failures
from harness.checks.run import run_checks
from harness.checks.spec import Expectations
from harness.transcript import transcript_from_openai


def _assistant_call(call_id: str, name: str, args: dict[str, Any] | str) -> dict[str, Any]:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}


def _tool(call_id: str, content: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(content)}


T001 = [
    {"role": "user", "content": "What's the weather in Paris?"},
    _assistant_call("c1", "get_weather", {"city": "Paris"}),
    _tool("c1", {"condition": "sunny", "temp_c": 18}),
    {"role": "assistant", "content": "It is sunny and 18°C in Paris."},
]
T001_EXP = Expectations.model_validate({
    "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}],
    "reference_answer": "It is sunny and 18°C in Paris.",
    "required_phrases": ["paris"],
    "single_tool_use": ["get_weather"],
})

T002 = [
    {"role": "user", "content": "What's the forecast for London for the next 3 days?"},
    _assistant_call("c1", "get_forecast", {"city": "London", "days": 3}),
    _tool("c1", ["rain", "cloudy", "sunny"]),
    {"role": "assistant", "content": "Rain, then clouds, then sun in London."},
]
T002_EXP = Expectations.model_validate({
    "tool_calls": [{"name": "get_forecast", "args": {"city": "London", "days": 3}}],
    "parameters": [{"tool": "get_forecast", "required": {"city": "London"},
                    "validators": {"days": {"type": "integer", "minimum": 1, "maximum": 7}}}],
    "forbidden_tools": ["get_weather"],
})

T003 = [
    {"role": "user", "content": "Hi! What can you do?"},
    {"role": "assistant", "content": "I can look up the weather and forecasts."},
]
T003_EXP = Expectations.model_validate({"tool_calls": [], "no_tool_calls": True})

FILE_TASK = [
    {"role": "user", "content": "What's in the config file?"},
    _assistant_call("c1", "listFiles", {"path": "."}),
    _tool("c1", ["config.yaml", "README.md"]),
    _assistant_call("c2", "readFile", {"path": "config.yaml"}),
    _tool("c2", "debug: true"),
    _assistant_call("c3", "readFile", {"path": "config.yaml"}),
    _tool("c3", "debug: true"),
    {"role": "assistant", "content": "config.yaml sets debug: true."},
]
FILE_EXP = Expectations.model_validate({
    "tool_calls": [{"name": "listFiles", "args": {"path": "."}},
                   {"name": "readFile", "args": {"path": "config.yaml"}}],
    "tool_order": ["listFiles", "readFile"],
    "max_tool_calls": 3,
})

PERFECT = {"trajectory_exact_match": 1.0, "trajectory_in_order_match": 1.0,
           "trajectory_any_order_match": 1.0, "trajectory_precision": 1.0,
           "trajectory_recall": 1.0, "trajectory_f1": 1.0, "tool_trajectory_avg_score": 1.0}


@pytest.mark.parametrize(
    ("messages", "expectations", "expected"),
    [
        (T001, T001_EXP, {**PERFECT, "trajectory_single_tool_use:get_weather": 1.0,
                          "response_match_score": 1.0, "required_phrases": 1.0}),
        (T002, T002_EXP, {**PERFECT, "parameter_accuracy": 1.0, "forbidden_tools_avoided": 1.0}),
        # nothing expected, nothing called: every trajectory metric is 1 by convention
        (T003, T003_EXP, {**PERFECT, "no_tool_calls": 1.0}),
        # 2 of 3 calls matched one-to-one: precision 2/3, recall 1, F1 = 2*(2/3)/(5/3) = 0.8;
        # not exact (an extra call), in order and any order; ADK EXACT fails the only turn
        (FILE_TASK, FILE_EXP, {
            "trajectory_exact_match": 0.0, "trajectory_in_order_match": 1.0,
            "trajectory_any_order_match": 1.0, "trajectory_precision": 2 / 3,
            "trajectory_recall": 1.0, "trajectory_f1": 0.8, "tool_trajectory_avg_score": 0.0,
            "tool_order_score": 1.0, "max_tool_calls": 1.0}),
    ],
    ids=["T001", "T002", "T003", "file-task"],
)
def test_seed(messages: list[dict[str, Any]], expectations: Expectations,
              expected: dict[str, float]) -> None:
    report = run_checks(transcript_from_openai("seed", messages), expectations)
    assert report.metrics() == pytest.approx(expected)
    assert report.warnings == []


def test_t002_variants() -> None:
    # the agent asks for the current weather instead of the forecast
    wrong = [T002[0], _assistant_call("c1", "get_weather", {"city": "London"}),
             _tool("c1", {"condition": "rain"}), {"role": "assistant", "content": "Rain."}]
    report = run_checks(transcript_from_openai("T002", wrong), T002_EXP)
    metrics = report.metrics()
    assert [metrics[k] for k in PERFECT] == [0.0] * 7
    assert metrics["parameter_accuracy"] == 0.0 and metrics["forbidden_tools_avoided"] == 0.0
    # days as a string: the trajectory fails (exact arguments); parameters earn 1 of 2
    # points (city right, the integer validator on days fails)
    stringly = [T002[0], _assistant_call("c1", "get_forecast", {"city": "London", "days": "3"}),
                *T002[2:]]
    metrics = run_checks(transcript_from_openai("T002", stringly), T002_EXP).metrics()
    assert metrics["trajectory_recall"] == 0.0
    assert metrics["parameter_accuracy"] == 0.5


def test_file_task_with_malformed_second_read() -> None:
    messages = [*FILE_TASK[:5], _assistant_call("c3", "readFile", '{"path": config.yaml'),
                *FILE_TASK[6:]]
    report = run_checks(transcript_from_openai("file", messages), FILE_EXP)
    assert report.metrics()["trajectory_precision"] == pytest.approx(2 / 3)
    assert report.metrics()["tool_order_score"] == 1.0
    assert len(report.warnings) == 1 and "readFile" in report.warnings[0]


def test_failure_analysis_over_the_seeds() -> None:
    wrong = [T002[0], _assistant_call("c1", "get_weather", {"city": "London"}),
             _tool("c1", {}), {"role": "assistant", "content": "Rain."}]
    reports = [run_checks(transcript_from_openai(sid, msgs), exp) for sid, msgs, exp in [
        ("T001", T001, T001_EXP), ("T002", wrong, T002_EXP), ("F001", FILE_TASK, FILE_EXP)]]
    analysis = analyse_failures(reports)
    groups = {(g.kind, g.key): g for g in analysis.groups}
    # get_weather is forbidden in T002, so it is reported as a forbidden tool, and the
    # forecast as missing (the wrong-tool pairing skips forbidden tools)
    assert set(groups) == {("missing_tool", "get_forecast"), ("forbidden_tool", "get_weather"),
                           ("over_calling", "readFile")}
    assert groups[("over_calling", "readFile")].scenarios == ["F001"]
    assert analysis.n_samples == 3 and analysis.n_failed_samples == 2
