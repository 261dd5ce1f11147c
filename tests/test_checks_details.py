"""What each check reports beside its value, pinned whole: the details, findings, pass flags
and unscored reasons that the terminal and HTML reports and the failure analysis read.

Each expected result is written out from the check's definition (harness/checks/run.py), so a
renamed key, a dropped finding field or a pass bar moved by a hair fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.checks.args import CheckConfigError
from harness.checks.run import run_checks
from harness.checks.spec import (
    Expectations,
    ExpectedToolCall,
    ParameterExpectation,
    ParameterValidator,
)
from harness.models.types import Message
from harness.transcript import ErrorInfo, StepRecord, Transcript
from tests.helpers.check_inputs import tool_call as _call
from tests.helpers.check_inputs import transcript as _tx


def _results(transcript: Transcript, expectations: Expectations) -> dict[str, dict[str, Any]]:
    """Check name -> the whole result as JSON-ready data (without the name)."""
    report = run_checks(transcript, expectations)
    return {r.name: r.model_dump(exclude={"name"}) for r in report.results}


def _finding(kind: str, message: str, *, tool: str | None = None,
             expected_tool: str | None = None, parameters: list[str] | None = None,
             subject: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "tool": tool, "expected_tool": expected_tool,
            "parameters": parameters or [], "subject": subject, "message": message}


def _scored(value: float, passed: bool, details: dict[str, Any],
            findings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"value": value, "passed": passed, "details": details, "findings": findings or [],
            "unscored_reason": None}


def _unscored(reason: str, details: dict[str, Any]) -> dict[str, Any]:
    return {"value": None, "passed": None, "details": details, "findings": [],
            "unscored_reason": reason}


def test_trajectory_details_name_pairs_reference_and_unmatched_calls() -> None:
    reference = [ExpectedToolCall(name="search", args={"q": "a"}, turn=0),
                 ExpectedToolCall(name="book", args={"id": 1}, turn=1),
                 ExpectedToolCall(name="pay", turn=1)]
    calls = [_call("search", q="a"), _call("lookup", x=1), _call("book", turn=1, id=2),
             _call("search", turn=2, raw="{q")]
    exp = Expectations(tool_calls=reference, adk_trajectory_match="ANY_ORDER")
    report = run_checks(_tx(calls), exp)
    results = {r.name: r.model_dump(exclude={"name"}) for r in report.results}

    counts = {"reference_calls": 3, "actual_calls": 4, "matched": 1}
    precision, recall = 1 / 4, 1 / 3
    assert results == {
        "trajectory_exact_match": _scored(0.0, False, counts),
        "trajectory_in_order_match": _scored(0.0, False, counts),
        "trajectory_any_order_match": _scored(0.0, False, {
            **counts,
            "reference": [{"index": 0, "name": "search", "args": {"q": "a"}, "turn": 0},
                          {"index": 1, "name": "book", "args": {"id": 1}, "turn": 1},
                          {"index": 2, "name": "pay", "args": {}, "turn": 1}],
            "pairs": [{"reference": 0, "actual": 0, "name": "search"}],
            "unmatched_reference": [{"index": 1, "name": "book", "args": {"id": 1}},
                                    {"index": 2, "name": "pay", "args": {}}],
            # a call that parsed shows its arguments; one that did not shows the raw text
            "unmatched_actual": [{"index": 1, "name": "lookup", "turn": 0, "args": {"x": 1}},
                                 {"index": 2, "name": "book", "turn": 1, "args": {"id": 2}},
                                 {"index": 3, "name": "search", "turn": 2,
                                  "raw_arguments": "{q"}],
        }, [
            _finding("parameter_error", "book: id: expected 1, got 2", tool="book",
                     parameters=["id"]),
            _finding("wrong_tool", "called lookup where pay was expected", tool="lookup",
                     expected_tool="pay"),
            _finding("malformed_arguments", "arguments of search are not a JSON object: '{q'",
                     tool="search"),
        ]),
        "trajectory_precision": _scored(precision, False, counts),
        "trajectory_recall": _scored(recall, False, counts),
        "trajectory_f1": _scored(2 * precision * recall / (precision + recall), False, counts),
        # turn 0: search matched, the extra lookup allowed; turn 1: book and pay unmatched;
        # turn 2 has no reference call but is scored, because a call was made in it
        "tool_trajectory_avg_score": _scored(2 / 3, False, {"match_type": "ANY_ORDER",
                                                            "per_turn": [1.0, 0.0, 1.0],
                                                            "threshold": 1.0}),
    }
    assert report.warnings == ["tool call 3 (search, turn 2) has arguments that are not a JSON "
                               "object ('{q'); scored as not matching"]


def test_a_trajectory_that_matches_passes_every_trajectory_check() -> None:
    exp = Expectations(tool_calls=[ExpectedToolCall(name="search", args={"q": "a"})])
    results = _results(_tx([_call("search", q="a")]), exp)
    counts = {"reference_calls": 1, "actual_calls": 1, "matched": 1}
    assert {name: (r["value"], r["passed"]) for name, r in results.items()} == {
        "trajectory_exact_match": (1.0, True), "trajectory_in_order_match": (1.0, True),
        "trajectory_any_order_match": (1.0, True), "trajectory_precision": (1.0, True),
        "trajectory_recall": (1.0, True), "trajectory_f1": (1.0, True),
        "tool_trajectory_avg_score": (1.0, True)}
    assert results["trajectory_exact_match"]["details"] == counts
    assert results["trajectory_f1"]["details"] == counts
    assert results["trajectory_any_order_match"]["details"]["unmatched_actual"] == []
    assert results["tool_trajectory_avg_score"]["details"] == {"match_type": "EXACT",
                                                               "per_turn": [1.0],
                                                               "threshold": 1.0}


def test_single_tool_use_counts_the_calls_of_its_tool() -> None:
    calls = [_call("search"), _call("book"), _call("search")]
    results = _results(_tx(calls), Expectations(single_tool_use=["search", "pay"]))
    assert results == {"trajectory_single_tool_use:search": _scored(1.0, True, {"calls": 2}),
                       "trajectory_single_tool_use:pay": _scored(0.0, False, {"calls": 0})}


@pytest.mark.parametrize(
    ("called", "expected"),
    [
        (["lookup", "search", "book", "search"], _scored(
            1.0, True, {"expected": ["search", "book"], "found_in_order": ["search", "book"],
                        "not_in_order": [], "called": ["lookup", "search", "book", "search"]})),
        (["book", "search", "book"], _scored(
            0.5, False, {"expected": ["search", "book"], "found_in_order": ["book"],
                         "not_in_order": ["search"], "called": ["book", "search", "book"]},
            [_finding("wrong_order", "expected order search -> book; tools called in order "
                      "book -> search", subject="search -> book")])),
        ([], _scored(
            0.0, False, {"expected": ["search", "book"], "found_in_order": [],
                         "not_in_order": ["search", "book"], "called": []},
            [_finding("wrong_order", "expected order search -> book; tools called in order "
                      "(none)", subject="search -> book")])),
    ],
    ids=["in-order", "out-of-order", "none-called"],
)
def test_tool_order_details_and_finding(called: list[str], expected: dict[str, Any]) -> None:
    exp = Expectations(tool_order=["search", "book"])
    assert _results(_tx([_call(n) for n in called]), exp) == {"tool_order_score": expected}


def test_parameter_accuracy_details_and_findings() -> None:
    exp = Expectations(parameters=[
        ParameterExpectation(tool="forecast", required={"city": "London"},
                             validators={"days": ParameterValidator(maximum=7)}),
        ParameterExpectation(tool="book"),
    ])
    calls = [_call("forecast", city="Paris", days=9), _call("forecast", raw="{city"),
             _call("forecast", city="London", days=7)]
    problems = {"city": "expected 'London', got 'Paris'", "days": "above maximum 7.0"}
    assert _results(_tx(calls), exp) == {"parameter_accuracy": _scored(
        (0 + 0 + 1 + 0) / 4, False,
        {"calls": [
            {"tool": "forecast", "call": 0, "score": 0.0, "earned": 0, "available": 2,
             "problems": problems},
            {"tool": "forecast", "call": 1, "score": 0.0, "earned": 0, "available": 2,
             "problems": {"*": "arguments are not a JSON object: '{city'"}},
            {"tool": "forecast", "call": 2, "score": 1.0, "earned": 2, "available": 2,
             "problems": {}},
            {"tool": "book", "call": None, "score": 0.0, "earned": 0, "available": 1,
             "problems": {"*": "tool never called"}},
        ]},
        [
            _finding("parameter_error",
                     "forecast: city: expected 'London', got 'Paris'; days: above maximum 7.0",
                     tool="forecast", parameters=["city", "days"]),
            _finding("malformed_arguments",
                     "forecast: arguments are not a JSON object: '{city'", tool="forecast"),
            _finding("missing_tool", "book was never called", tool="book"),
        ],
    )}


def test_parameter_accuracy_passes_at_full_credit() -> None:
    exp = Expectations(parameters=[ParameterExpectation(tool="t", required={"a": 1})])
    result = _results(_tx([_call("t", a=1)]), exp)["parameter_accuracy"]
    assert (result["value"], result["passed"], result["findings"]) == (1.0, True, [])


def test_forbidden_no_calls_and_budget_details_and_findings() -> None:
    calls = [_call("search"), _call("delete"), _call("delete"), _call("search"),
             _call("delete")]
    exp = Expectations(forbidden_tools=["delete", "refund"], no_tool_calls=True,
                       max_tool_calls=4)
    assert _results(_tx(calls), exp) == {
        "forbidden_tools_avoided": _scored(0.0, False, {
            "forbidden": ["delete", "refund"], "called": {"delete": 3}},
            [_finding("forbidden_tool", "called forbidden tool delete 3 time(s)",
                      tool="delete")]),
        "no_tool_calls": _scored(0.0, False, {"calls": 5, "called": {"search": 2, "delete": 3}}, [
            _finding("unexpected_call", "called search 2 time(s) where no tool call was expected",
                     tool="search"),
            _finding("unexpected_call", "called delete 3 time(s) where no tool call was expected",
                     tool="delete")]),
        "max_tool_calls": _scored(0.0, False, {
            "calls": 5, "budget": 4, "by_tool": {"search": 2, "delete": 3}},
            [_finding("over_calling", "made 5 tool calls, budget 4 (most called: delete)",
                      tool="delete")]),
    }


def test_no_calls_and_a_budget_met_exactly_pass() -> None:
    exp = Expectations(forbidden_tools=["delete"], no_tool_calls=True, max_tool_calls=0)
    assert _results(_tx([]), exp) == {
        "forbidden_tools_avoided": _scored(1.0, True, {"forbidden": ["delete"], "called": {}}),
        "no_tool_calls": _scored(1.0, True, {"calls": 0, "called": {}}),
        "max_tool_calls": _scored(1.0, True, {"calls": 0, "budget": 0, "by_tool": {}}),
    }


def test_latency_details_findings_and_the_budget_edge() -> None:
    steps = [StepRecord(role="agent", turn=0, model="m", latency_s=0.5),
             StepRecord(role="agent", turn=1, model="m", latency_s=1.2345678)]
    # turn 0 takes exactly the budget (within it); turn 2 has a tool call but no agent step
    calls = [_call("search", turn=0, latency=0.5), _call("search", turn=2, latency=1.5)]
    assert _results(_tx(calls, steps=steps), Expectations(latency_budget_s=1.0)) == {
        "latency_budget": _scored(1 - 2 / 3, False, {
            "budget_s": 1.0,
            "turn_latency_s": {"0": 1.0, "1": 1.234568, "2": 1.5},
            "over_budget_turns": [1, 2]}, [
            _finding("over_latency", "turn 1 took 1.235s, budget 1.0s", subject="turn 1"),
            _finding("over_latency", "turn 2 took 1.500s, budget 1.0s", subject="turn 2")])}


def test_latency_without_agent_timings_is_unscored_with_its_reason() -> None:
    assert _results(_tx([_call("search", latency=3.0)]), Expectations(latency_budget_s=2.0)) == {
        "latency_budget": _unscored("the transcript has no agent timings", {"budget_s": 2.0})}


def _answer(text: str) -> Transcript:
    return _tx([], messages=[Message(role="user", content="hi"),
                             Message(role="assistant", content=text)])


def test_response_match_details_finding_and_threshold_edge() -> None:
    # one shared word of two on each side: ROUGE-1 precision = recall = F = 0.5
    at_threshold = _results(_answer("red car"),
                            Expectations(reference_answer="red bus", response_match_threshold=0.5))
    assert at_threshold == {"response_match_score": _scored(0.5, True, {
        "rouge1_precision": 0.5, "rouge1_recall": 0.5, "threshold": 0.5,
        "empty_response": False})}
    below = _results(_answer("   "),
                     Expectations(reference_answer="red bus", response_match_threshold=0.25))
    assert below == {"response_match_score": _scored(0.0, False, {
        "rouge1_precision": 0.0, "rouge1_recall": 0.0, "threshold": 0.25,
        "empty_response": True}, [
        _finding("response_mismatch",
                 "ROUGE-1 F 0.000 against the reference answer, threshold 0.25",
                 subject="reference_answer")])}


def test_required_phrases_details_and_findings() -> None:
    exp = Expectations(required_phrases=["order  NUMBER", "refund", "sorry"])
    assert _results(_answer("Your Order number is 7. Sorry!"), exp) == {
        "required_phrases": _scored(2 / 3, False, {"found": ["order  NUMBER", "sorry"],
                                                   "missing": ["refund"]}, [
            _finding("missing_phrase", "the final answer does not contain 'refund'",
                     subject="refund")])}
    assert _results(_answer("a refund, sorry, order number 7"), exp)["required_phrases"][
        "passed"] is True


def test_final_state_details_findings_and_mode() -> None:
    state = {"order": {"status": "shipped", "note": "a: b"}, "cart": []}
    exp = Expectations(final_state={"order": {"status": "cancelled", "note": "a: c"}},
                       final_state_mode="equals")
    diff = ["$.cart: unexpected (got [])",
            "$.order.note: expected 'a: c', got 'a: b'",
            "$.order.status: expected 'cancelled', got 'shipped'"]
    assert _results(_tx([], final_state=state), exp) == {"final_state_match": _scored(
        0.0, False, {"mode": "equals", "diff": diff}, [
            _finding("wrong_final_state", diff[0], subject="$.cart"),
            _finding("wrong_final_state", diff[1], subject="$.order.note"),
            _finding("wrong_final_state", diff[2], subject="$.order.status")])}
    contained = Expectations(final_state={"cart": []})
    assert _results(_tx([], final_state=state), contained) == {"final_state_match": _scored(
        1.0, True, {"mode": "contains", "diff": []})}
    assert _results(_tx([]), exp) == {"final_state_match": _unscored(
        "the transcript has no final state", {"mode": "equals"})}


@pytest.mark.parametrize(
    ("stop_reason", "detail", "error"),
    [("time_limit", "ran past 60 s", "time_limit: ran past 60 s"),
     ("agent_error", None, "agent_error: no detail")],
)
def test_an_errored_sample_without_error_info_reports_its_stop(
        stop_reason: str, detail: str | None, error: str) -> None:
    transcript = Transcript(scenario_id="s", stop_reason=stop_reason,  # type: ignore[arg-type]
                            stop_detail=detail)
    report = run_checks(transcript, Expectations(no_tool_calls=True))
    assert (report.error, report.results) == (error, [])


def test_error_info_wins_over_the_stop_detail() -> None:
    transcript = Transcript(scenario_id="s", stop_reason="agent_error", stop_detail="detail",
                            error=ErrorInfo(kind="X", message="503 after 5 tries"))
    assert run_checks(transcript, Expectations()).error == "agent_error: 503 after 5 tries"


def test_turns_on_some_reference_calls_only_is_a_config_error() -> None:
    exp = Expectations(tool_calls=[ExpectedToolCall(name="a", turn=0), ExpectedToolCall(name="b")])
    with pytest.raises(CheckConfigError) as raised:
        run_checks(_tx([]), exp)
    assert str(raised.value) == (
        "tool_calls[1].turn: a turn on every reference call or on none "
        "(some calls name their turn)")


def test_latency_message_rounds_the_turn_time_once() -> None:
    # 1.0995002 s is 1.100 s to three places; rounding to six places first (1.0995, stored
    # as 1.09949999...) and then to three would print 1.099
    steps = [StepRecord(role="agent", turn=0, model="m", latency_s=1.0995002)]
    result = run_checks(_tx([], steps=steps), Expectations(latency_budget_s=1.0)).get(
        "latency_budget")
    assert [f.message for f in result.findings] == ["turn 0 took 1.100s, budget 1.0s"]
    assert result.details["turn_latency_s"] == {"0": 1.0995}
