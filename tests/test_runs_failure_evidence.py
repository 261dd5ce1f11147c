"""The run summary keeps only each check report's failure evidence: the failure analysis made
from it is the one made from the whole reports."""

from __future__ import annotations

from typing import Any

from harness.checks.failures import JudgeFailure, analyse_failures
from harness.checks.run import run_checks
from harness.checks.spec import Expectations, ExpectedToolCall, ParameterExpectation
from harness.runs.summary import failure_evidence
from harness.transcript import ErrorInfo, ToolCallRecord, Transcript

FORECAST = Expectations(
    tool_calls=[ExpectedToolCall(name="get_forecast", args={"city": "London", "days": 3})],
    parameters=[ParameterExpectation(tool="get_forecast", required={"city": "London",
                                                                     "days": 3})],
)
SEARCH = Expectations(tool_calls=[ExpectedToolCall(name="search", args={"q": "x"})],
                      forbidden_tools=["delete"], max_tool_calls=2)


def _call(name: str, **args: Any) -> ToolCallRecord:
    return ToolCallRecord(call_id=name, name=name, arguments=args)


def _checked(scenario: str, epoch: int, calls: list[ToolCallRecord],
             expectations: Expectations, **transcript: Any) -> Any:
    return run_checks(Transcript(scenario_id=scenario, epoch=epoch, tool_calls=calls,
                                 stop_reason=transcript.pop("stop_reason", "imported"),
                                 **transcript), expectations)


REPORTS = [
    _checked("forecast-1", 0, [_call("get_weather", city="London")], FORECAST),
    _checked("forecast-1", 1, [_call("get_forecast", city="London", days=7)], FORECAST),
    _checked("forecast-2", 0, [], FORECAST),
    _checked("search-1", 0, [_call("search", q="x"), _call("delete"), _call("search", q="y")],
             SEARCH),
    _checked("search-2", 0, [_call("search", q="x")], SEARCH),
    _checked("search-3", 0, [], SEARCH, stop_reason="agent_error",
             error=ErrorInfo(kind="x", message="503")),
]


def test_the_analysis_of_the_evidence_is_the_analysis_of_the_reports() -> None:
    judged = [JudgeFailure(scenario_id="search-2", rubric_id="quality", criterion_id="brief")]
    whole = analyse_failures(REPORTS, judged)
    assert len(whole.groups) >= 5 and whole.n_errored_samples == 1  # the fixture has substance
    assert analyse_failures([failure_evidence(r) for r in REPORTS], judged) == whole


def test_the_evidence_drops_details_and_checks_without_findings() -> None:
    clean, failed = REPORTS[4], REPORTS[0]
    assert any(r.details for r in clean.results)
    assert failure_evidence(clean).results == []
    kept = failure_evidence(failed).results
    assert kept and all(r.findings and not r.details for r in kept)
    assert [r.findings for r in kept] == [r.findings for r in failed.results if r.findings]
    errored = failure_evidence(REPORTS[5])
    assert (errored.scenario_id, errored.epoch, errored.error) == ("search-3", 0,
                                                                   REPORTS[5].error)
