"""Failure analysis: grouping by kind and subject, counts, scenarios, recommendations."""

from __future__ import annotations

from typing import Any

from harness.checks.failures import JudgeFailure, analyse_failures
from harness.checks.result import CheckReport
from harness.checks.run import run_checks
from harness.checks.spec import Expectations, ExpectedToolCall, ParameterExpectation
from harness.transcript import ErrorInfo, ToolCallRecord, Transcript


def _call(name: str, **args: Any) -> ToolCallRecord:
    return ToolCallRecord(call_id=name, name=name, arguments=args)


def _report(scenario: str, epoch: int, calls: list[ToolCallRecord],
            expectations: Expectations) -> CheckReport:
    transcript = Transcript(scenario_id=scenario, epoch=epoch, tool_calls=calls,
                            stop_reason="imported")
    return run_checks(transcript, expectations)


FORECAST = Expectations(
    tool_calls=[ExpectedToolCall(name="get_forecast", args={"city": "London", "days": 3})],
    parameters=[ParameterExpectation(tool="get_forecast", required={"city": "London",
                                                                     "days": 3})],
)
SEARCH = Expectations(tool_calls=[ExpectedToolCall(name="search", args={"q": "x"})],
                      forbidden_tools=["delete"], max_tool_calls=2)


def test_groups_counts_scenarios_and_recommendations() -> None:
    reports = [
        # wrong tool in two scenarios, one of them in two epochs
        _report("forecast-1", 0, [_call("get_weather", city="London")], FORECAST),
        _report("forecast-1", 1, [_call("get_weather", city="London")], FORECAST),
        _report("forecast-2", 0, [_call("get_weather", city="Rome")], FORECAST),
        # right tool, wrong days
        _report("forecast-3", 0, [_call("get_forecast", city="London", days=7)], FORECAST),
        # forbidden tool plus over the call budget
        _report("search-1", 0, [_call("search", q="x"), _call("delete"), _call("search", q="x")],
                SEARCH),
        # a clean sample
        _report("search-2", 0, [_call("search", q="x")], SEARCH),
    ]
    errored = run_checks(Transcript(scenario_id="search-3", stop_reason="agent_error",
                                    error=ErrorInfo(kind="x", message="503")), SEARCH)
    judge = [JudgeFailure(scenario_id="search-2", rubric_id="final_response_quality",
                          criterion_id="concise", reasoning="three paragraphs for a yes"),
             JudgeFailure(scenario_id="forecast-3", rubric_id="final_response_quality",
                          criterion_id="concise")]
    analysis = analyse_failures([*reports, errored], judge)

    assert analysis.n_samples == 7
    assert analysis.n_errored_samples == 1 and analysis.errored_scenarios == ["search-3"]
    assert analysis.n_failed_samples == 6  # all but the errored one (search-2 failed a judge)
    groups = {(g.kind, g.key): g for g in analysis.groups}

    wrong = groups[("wrong_tool", "get_weather instead of get_forecast")]
    assert (wrong.samples, wrong.scenarios) == (3, ["forecast-1", "forecast-2"])
    assert wrong.tool == "get_weather" and wrong.expected_tool == "get_forecast"
    assert "`get_weather`" in wrong.recommendation and "`get_forecast`" in wrong.recommendation
    assert "disambiguate" in wrong.recommendation
    assert wrong.share_of_samples == 3 / 7
    # the parameter check also finds get_forecast never called; the wrong tool explains it
    assert ("missing_tool", "get_forecast") not in groups

    params = groups[("parameter_error", "get_forecast")]
    assert params.scenarios == ["forecast-3"] and params.parameters == {"days": 1}
    assert "`days`" in params.recommendation

    assert groups[("forbidden_tool", "delete")].scenarios == ["search-1"]
    over = groups[("over_calling", "search")]
    assert over.scenarios == ["search-1"] and over.occurrences == 1  # max count, not the sum

    concise = groups[("judge_failed_criterion", "final_response_quality/concise")]
    assert concise.scenarios == ["forecast-3", "search-2"]
    assert "`concise`" in concise.recommendation
    assert "`final_response_quality`" in concise.recommendation
    assert any("three paragraphs" in e for e in concise.examples)

    # sorted by samples touched: the three wrong-tool samples come first
    assert analysis.groups[0].samples == 3
    assert [g.samples for g in analysis.groups] == sorted(
        (g.samples for g in analysis.groups), reverse=True)


def test_no_failures() -> None:
    analysis = analyse_failures([_report("search-2", 0, [_call("search", q="x")], SEARCH)])
    assert analysis.groups == [] and analysis.n_failed_samples == 0 and analysis.n_samples == 1


def test_analysis_is_json_serialisable() -> None:
    analysis = analyse_failures([_report("f", 0, [], FORECAST)])
    assert type(analysis).model_validate_json(analysis.model_dump_json()) == analysis


def test_missing_tool_found_by_two_checks_counts_once() -> None:
    analysis = analyse_failures([_report("forecast-4", 0, [], FORECAST)])
    (group,) = analysis.groups
    assert (group.kind, group.key, group.samples, group.occurrences) == (
        "missing_tool", "get_forecast", 1, 1)
    assert "`get_forecast`" in group.recommendation
