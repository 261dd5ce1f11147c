"""Failure analysis: grouping by kind and subject, counts, scenarios, recommendations."""

from __future__ import annotations

from typing import Any

import pytest

from harness.checks.failures import JudgeFailure, analyse_failures, recommend
from harness.checks.result import CheckReport, CheckResult, Finding, FindingKind
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


# The recommendation is what a reader acts on, so its whole text is pinned, per kind.
@pytest.mark.parametrize(
    ("kind", "tool", "expected_tool", "key", "parameters", "text"),
    [
        ("wrong_tool", "get_weather", "get_forecast", "get_weather instead of get_forecast", (),
         "The agent called `get_weather` where `get_forecast` was expected: disambiguate the "
         "descriptions of `get_weather` and `get_forecast` (say what each is for and when not "
         "to use it, with an example request for each)."),
        ("missing_tool", "book", None, "book", (),
         "The agent did not call `book`: say in its description which requests need it, and "
         "check the system prompt does not tell the agent to answer from memory."),
        ("parameter_error", "book", None, "book", ("date", "id"),
         "`book` was called with wrong values for `date`, `id`: document their format and "
         "allowed values in the parameter schema (enum, pattern, units, an example), and say "
         "where in the conversation the value comes from."),
        ("parameter_error", None, None, "parameter_error", (),
         "the tool was called with wrong values for its arguments: document their format and "
         "allowed values in the parameter schema (enum, pattern, units, an example), and say "
         "where in the conversation the value comes from."),
        ("malformed_arguments", "book", None, "book", (),
         "Arguments to `book` were not valid JSON objects: enable strict/structured tool "
         "calling if the provider offers it, and simplify the parameter schema."),
        ("unexpected_call", "lookup", None, "lookup", (),
         "The agent called `lookup` when the reference needs no such call: say in its "
         "description when it is not needed, or remove it from this agent's toolset."),
        ("over_calling", "search", None, "search", (),
         "The agent called `search` more often than needed: say in the system prompt or in "
         "`search`'s description that its result can be reused within the conversation, and "
         "set max_tool_calls to catch regressions."),
        ("forbidden_tool", "delete", None, "delete", (),
         "The agent called forbidden tool `delete`: remove it from the toolset for this task, "
         "require a confirmation step, or state the rule in the system prompt."),
        ("wrong_order", None, None, "search -> book", (),
         "Tools were called out of the expected order (search -> book): state the order in the "
         "system prompt, or say in the later tool's description which call must come first."),
        ("missing_phrase", None, None, "refund", (),
         "The final answer lacked 'refund': tell the agent to include it (or the fact it "
         "stands for) in its answer, or check the tool result that provides it."),
        ("response_mismatch", None, None, "reference_answer", (),
         "Final answers overlap little with the reference answer: check whether the reference "
         "is too specific for ROUGE-1, or instruct the agent on the answer's content and "
         "wording."),
        ("wrong_final_state", None, None, "$.orders", (),
         "The tools' final state differs at $.orders: check which calls should have changed "
         "it and whether the agent confirmed them before finishing."),
        ("over_latency", None, None, "latency budget", (),
         "Turns exceeded the latency budget: reduce steps per turn (fewer or parallel tool "
         "calls), use a faster model, or shorten the prompt."),
        ("judge_failed_criterion", None, None, "final_response_quality/concise", (),
         "Judges failed criterion `concise` of rubric `final_response_quality`: read the "
         "judges' reasoning for these scenarios and address that behaviour in the system "
         "prompt; if the reasoning looks wrong, review the criterion's wording."),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v else None,
)
def test_recommendation_text(kind: FindingKind, tool: str | None, expected_tool: str | None,
                             key: str, parameters: tuple[str, ...], text: str) -> None:
    assert recommend(kind, tool, expected_tool, key, parameters) == text


def _with_findings(scenario: str, *findings: Finding, epoch: int = 0) -> CheckReport:
    return CheckReport(scenario_id=scenario, epoch=epoch, results=[CheckResult(
        name="check", value=0.0, passed=False, findings=list(findings))])


@pytest.mark.parametrize(
    ("finding", "key"),
    [
        (Finding(kind="wrong_final_state", subject="$.orders[0].status", message="m"),
         "$.orders"),
        (Finding(kind="wrong_final_state", subject="$.user.name", message="m"), "$.user"),
        # a key that is not an identifier is written in brackets: it is its own group
        (Finding(kind="wrong_final_state", subject="$['order id'].status", message="m"),
         "$['order id']"),
        (Finding(kind="wrong_final_state", subject="$['a.b'][0]", message="m"), "$['a.b']"),
        (Finding(kind="wrong_final_state", subject='$["it\'s"].x', message="m"), '$["it\'s"]'),
        # the last line of a capped diff names no path
        (Finding(kind="wrong_final_state", subject="... and 3 more", message="m"),
         "... and 3 more"),
        (Finding(kind="over_latency", subject="turn 3", message="m"), "latency budget"),
        (Finding(kind="missing_phrase", subject="refund", message="m"), "refund"),
        (Finding(kind="over_calling", tool="search", message="m"), "search"),
        (Finding(kind="response_mismatch", message="m"), "response_mismatch"),
    ],
)
def test_group_key(finding: Finding, key: str) -> None:
    (group,) = analyse_failures([_with_findings("s", finding)]).groups
    assert group.key == key


def test_group_counts_occurrences_parameters_and_keeps_three_examples() -> None:
    def bad_days(scenario: str, epoch: int) -> CheckReport:
        return _with_findings(scenario, Finding(kind="parameter_error", tool="book",
                                                parameters=["days"], message=f"days {epoch}"),
                              epoch=epoch)

    reports = [bad_days("a", 0), bad_days("a", 1), bad_days("b", 0), bad_days("b", 1)]
    analysis = analyse_failures(reports)
    assert analysis.model_dump() == {
        "n_samples": 4, "n_failed_samples": 4, "n_errored_samples": 0, "errored_scenarios": [],
        "groups": [{
            "kind": "parameter_error", "key": "book", "tool": "book", "expected_tool": None,
            "samples": 4, "share_of_samples": 1.0, "occurrences": 4, "scenarios": ["a", "b"],
            "parameters": {"days": 4},
            "examples": ["a#0: days 0", "a#1: days 1", "b#0: days 0"],
            "recommendation": recommend("parameter_error", "book", None, "book", ["days"]),
        }],
    }


def test_an_errored_sample_does_not_stop_the_reports_after_it() -> None:
    errored = CheckReport(scenario_id="e", error="agent_error: 503")
    later = _with_findings("s", Finding(kind="over_calling", tool="search", message="m"))
    analysis = analyse_failures([errored, later])
    assert (analysis.n_errored_samples, analysis.errored_scenarios) == (1, ["e"])
    assert [(g.key, g.scenarios) for g in analysis.groups] == [("search", ["s"])]
    assert analysis.n_failed_samples == 1


def test_the_first_check_to_report_a_failure_gives_its_example() -> None:
    # the trajectory check runs before the parameter check; both find get_forecast missing
    (group,) = analyse_failures([_report("forecast-4", 0, [], FORECAST)]).groups
    assert group.examples == ["forecast-4#0: expected a call to get_forecast(city='London', "
                              "days=3)"]


def test_judge_failure_examples_with_and_without_reasoning() -> None:
    failures = [JudgeFailure(scenario_id="s", epoch=2, rubric_id="quality", criterion_id="tone"),
                JudgeFailure(scenario_id="t", rubric_id="quality", criterion_id="tone",
                             reasoning="curt")]
    (group,) = analyse_failures([], failures).groups
    assert group.examples == ["s#2: quality/tone failed", "t#0: quality/tone failed: curt"]
    assert (group.samples, group.share_of_samples) == (2, 1.0)
