"""The seed checks: parameter accuracy, forbidden tools, no tools, max calls, latency budget,
final state; plus unscored and errored samples."""

from __future__ import annotations

from typing import Any

import pytest

from harness.checks.args import CheckConfigError
from harness.checks.parameters import validate_value
from harness.checks.result import CheckReport
from harness.checks.run import run_checks
from harness.checks.spec import (
    ArgMatching,
    ArgOverride,
    Expectations,
    ParameterExpectation,
    ParameterValidator,
)
from harness.checks.state import state_diff
from harness.models.types import Message
from harness.transcript import ErrorInfo, StepRecord, ToolCallRecord, Transcript
from tests.helpers.check_inputs import tool_call as _call
from tests.helpers.check_inputs import transcript as _tx

FORECAST = ParameterExpectation(
    tool="get_forecast",
    required={"city": "London"},
    forbidden=["units"],
    validators={"days": ParameterValidator(type="integer", minimum=1, maximum=7)},
)


@pytest.mark.parametrize(
    ("args", "raw", "score", "faulty"),
    [
        ({"city": "London", "days": 3}, None, 1.0, []),
        ({"city": "London", "days": 3.0}, None, 1.0, []),  # JSON Schema: 3.0 is an integer
        ({"city": "Paris", "days": 3}, None, 2 / 3, ["city"]),
        ({"city": "London", "days": 10}, None, 2 / 3, ["days"]),
        ({"city": "London", "days": "3"}, None, 2 / 3, ["days"]),
        ({"city": "London", "days": True}, None, 2 / 3, ["days"]),  # a bool is not an integer
        ({"city": "London", "days": 3, "units": "C"}, None, 2 / 3, ["units"]),
        ({"city": "London"}, None, 2 / 3, ["days"]),  # a validator on an absent parameter fails
        ({"days": 0, "units": "F"}, None, 0.0, ["city", "days", "units"]),
        ({}, "{city: London", 0.0, ["*"]),
    ],
)
def test_parameter_accuracy_partial_credit(args: dict, raw: str | None, score: float,
                                           faulty: list[str]) -> None:
    exp = Expectations(parameters=[FORECAST])
    result = run_checks(_tx([_call("get_forecast", raw=raw, **args)]), exp).get(
        "parameter_accuracy")
    assert result.value == pytest.approx(score)
    assert sorted(result.details["calls"][0]["problems"]) == faulty
    assert result.passed is (score == 1.0)


def test_parameter_accuracy_over_calls_and_never_called_tool() -> None:
    exp = Expectations(parameters=[FORECAST, ParameterExpectation(tool="book", required={"id": 1})])
    calls = [_call("get_forecast", city="London", days=3),
             _call("get_forecast", city="Paris", days=3)]
    result = run_checks(_tx(calls), exp).get("parameter_accuracy")
    # calls score 1 and 2/3; "book" was never called and contributes a 0
    assert result.value == pytest.approx((1 + 2 / 3 + 0) / 3)
    kinds = sorted((f.kind, f.tool) for f in result.findings)
    assert kinds == [("missing_tool", "book"), ("parameter_error", "get_forecast")]


@pytest.mark.parametrize(
    ("calls", "score"),
    [
        ([], 0.0),  # never called: its parameters were not right
        ([_call("book", raw="{id: 1")], 0.0),  # arguments that do not parse earn nothing
        ([_call("book", id=7)], 1.0),  # called, and nothing more was asked of it
        ([_call("other")], 0.0),
    ],
    ids=["never-called", "unparsed-arguments", "called", "other-tool-only"],
)
def test_parameter_expectation_with_only_a_tool(calls: list[ToolCallRecord],
                                                score: float) -> None:
    exp = Expectations(parameters=[ParameterExpectation(tool="book")])
    result = run_checks(_tx(calls), exp).get("parameter_accuracy")
    assert result.value == score
    assert result.passed is (score == 1.0)


def test_parameter_required_values_use_scenario_overrides() -> None:
    exp = Expectations(parameters=[ParameterExpectation(tool="t", required={"city": "London"})],
                       arg_matching=ArgMatching(
                           overrides={"city": ArgOverride(case_insensitive=True)}))
    assert run_checks(_tx([_call("t", city="LONDON")]), exp).metrics() == {
        "parameter_accuracy": 1.0}


@pytest.mark.parametrize(
    ("value", "validator", "ok"),
    [
        ("ab-12", ParameterValidator(pattern=r"^[a-z]+-\d+$"), True),
        ("x ab-12", ParameterValidator(pattern=r"ab-\d+"), True),  # a search, as in JSON Schema
        (12, ParameterValidator(pattern=r"\d+"), False),  # patterns apply to strings only
        ("C", ParameterValidator(one_of=["C", "F"]), True),
        ("K", ParameterValidator(one_of=["C", "F"]), False),
        (1, ParameterValidator(one_of=[True]), False),
        (1.5, ParameterValidator(type="number", minimum=1.5, maximum=1.5), True),
        ("2", ParameterValidator(minimum=1), False),
        ([1], ParameterValidator(type="array"), True),
        ({}, ParameterValidator(type="object"), True),
        (False, ParameterValidator(type="boolean"), True),
        (0, ParameterValidator(type="boolean"), False),
    ],
)
def test_validators(value: object, validator: ParameterValidator, ok: bool) -> None:
    assert (validate_value(value, validator) == []) is ok


def test_bad_validator_pattern_is_a_config_error() -> None:
    exp = Expectations(parameters=[ParameterExpectation(
        tool="t", validators={"id": ParameterValidator(pattern="([a-z")})])
    with pytest.raises(CheckConfigError, match=r"parameters\[0\]\.validators\.id\.pattern"):
        run_checks(_tx([]), exp)


def test_forbidden_tools_no_tools_and_max_calls() -> None:
    calls = [_call("search"), _call("delete_account"), _call("search")]
    exp = Expectations(forbidden_tools=["delete_account", "refund"], no_tool_calls=True,
                       max_tool_calls=2)
    report = run_checks(_tx(calls), exp)
    assert report.metrics() == {"forbidden_tools_avoided": 0.0, "no_tool_calls": 0.0,
                                "max_tool_calls": 0.0}
    assert report.get("forbidden_tools_avoided").details["called"] == {"delete_account": 1}
    assert report.get("max_tool_calls").findings[0].tool == "search"
    clean = run_checks(_tx([]), exp)
    assert clean.metrics() == {"forbidden_tools_avoided": 1.0, "no_tool_calls": 1.0,
                               "max_tool_calls": 1.0}
    assert clean.passed is True
    assert run_checks(_tx(calls[:2]), Expectations(max_tool_calls=2)).metrics() == {
        "max_tool_calls": 1.0}


def test_latency_budget_per_turn_from_agent_steps_and_tools() -> None:
    steps = [StepRecord(role="agent", turn=0, model="m", latency_s=0.5),
             StepRecord(role="agent", turn=0, model="m", latency_s=0.5),
             StepRecord(role="simulator", turn=0, model="m", latency_s=9.0),  # not the agent's
             StepRecord(role="agent", turn=1, model="m", latency_s=1.5)]
    calls = [_call("search", turn=0, latency=0.4), _call("search", turn=1, latency=0.2)]
    result = run_checks(_tx(calls, steps=steps), Expectations(latency_budget_s=1.5)).get(
        "latency_budget")
    # turn 0: 0.5 + 0.5 + 0.4 = 1.4 (within); turn 1: 1.5 + 0.2 = 1.7 (over)
    assert result.value == 0.5 and result.passed is False
    assert result.details["turn_latency_s"] == {"0": pytest.approx(1.4), "1": pytest.approx(1.7)}
    assert result.details["over_budget_turns"] == [1]


def test_latency_budget_unscored_without_timings() -> None:
    result = run_checks(_tx([]), Expectations(latency_budget_s=1.0)).get("latency_budget")
    assert result.value is None and result.passed is None
    assert "no agent timings" in (result.unscored_reason or "")


STATE = {"orders": [{"id": 1, "status": "shipped"}], "cart": [], "user": {"name": "Ann"}}


@pytest.mark.parametrize(
    ("expected", "mode", "diff"),
    [
        ({"orders": [{"id": 1, "status": "shipped"}]}, "contains", []),
        ({"orders": [{"status": "shipped"}]}, "contains", []),  # objects may have extra keys
        ({"orders": [{"status": "shipped"}]}, "equals", [
            "$.cart: unexpected (got [])",
            "$.orders[0].id: unexpected (got 1)",
            "$.user: unexpected (got {'name': 'Ann'})"]),
        (STATE, "equals", []),
        ({"orders": [{"id": 1, "status": "pending"}]}, "contains",
         ["$.orders[0].status: expected 'pending', got 'shipped'"]),
        ({"orders": []}, "contains", ["$.orders: expected 0 items, got 1"]),
        ({"refunds": 1}, "contains", ["$.refunds: missing (expected 1)"]),
        ({"user": {"name": "ann"}}, "contains", ["$.user.name: expected 'ann', got 'Ann'"]),
        ({"cart": [True]}, "contains", ["$.cart: expected 1 items, got 0"]),
    ],
)
def test_state_diff(expected: dict, mode: str, diff: list[str]) -> None:
    assert state_diff(expected, STATE, mode) == diff  # type: ignore[arg-type]


def test_final_state_check() -> None:
    exp = Expectations(final_state={"orders": [{"id": 1, "status": "cancelled"}]})
    result = run_checks(_tx([], final_state=STATE), exp).get("final_state_match")
    assert result.value == 0.0
    assert result.details["diff"] == ["$.orders[0].status: expected 'cancelled', got 'shipped'"]
    assert result.findings[0].kind == "wrong_final_state"
    ok = run_checks(_tx([], final_state=STATE), Expectations(final_state={"cart": []}))
    assert ok.get("final_state_match").value == 1.0
    unscored = run_checks(_tx([]), exp).get("final_state_match")
    assert unscored.value is None and unscored.unscored_reason


def test_errored_sample_gets_no_scores() -> None:
    transcript = Transcript(
        scenario_id="s", stop_reason="agent_error",
        error=ErrorInfo(kind="ModelUnavailableError", message="503 after 5 tries", role="agent"))
    report = run_checks(transcript, Expectations(tool_calls=[], no_tool_calls=True))
    assert report.results == [] and report.passed is None
    assert report.error == "agent_error: 503 after 5 tries"


def test_report_round_trips_through_json() -> None:
    exp = Expectations(forbidden_tools=["x"], required_phrases=["hi"], latency_budget_s=1)
    report = run_checks(Transcript(scenario_id="s", stop_reason="imported", messages=[
        Message(role="assistant", content="hi there")], tool_calls=[_call("x")]), exp)
    again = CheckReport.model_validate_json(report.model_dump_json())
    assert again == report
    assert again.metrics() == {"forbidden_tools_avoided": 0.0, "latency_budget": None,
                               "required_phrases": 1.0}
    assert again.passed is False


def _problems(exp: ParameterExpectation, call: ToolCallRecord,
              matching: ArgMatching | None = None) -> dict[str, Any]:
    expectations = Expectations(parameters=[exp], arg_matching=matching or ArgMatching())
    (scored,) = run_checks(_tx([call]), expectations).get("parameter_accuracy").details["calls"]
    return scored  # type: ignore[no-any-return]


def test_parameter_problems_are_written_out_per_argument() -> None:
    exp = ParameterExpectation(
        tool="t", required={"a": 1, "b": "x", "c": 3, "d": 4}, forbidden=["f", "g"],
        validators={"m": ParameterValidator(), "n": ParameterValidator(maximum=9),
                    "v": ParameterValidator(type="integer", one_of=[1, 2]),
                    "w": ParameterValidator(pattern="^z")})
    # a missing, b wrong, c and d right; f passed, g not; m absent, n right, v fails twice,
    # w fails: a point for c, d, g and n
    scored = _problems(exp, _call("t", b="y", c=3, d=4, f=0, n=9, v="s", w="q"))
    assert scored == {"tool": "t", "call": 0, "score": 4 / 10, "earned": 4, "available": 10,
                      "problems": {
                          "a": "missing (expected 1)",
                          "b": "expected 'x', got 'y'",
                          "f": "forbidden parameter was passed",
                          "m": "missing (a validator applies)",
                          "v": "expected type integer, got str; not one of [1, 2]",
                          "w": "does not match pattern '^z'"}}


def test_a_raising_matcher_adds_its_warning_to_the_problem() -> None:
    matching = ArgMatching(overrides={"a": ArgOverride(matcher="operator:truediv")})
    scored = _problems(ParameterExpectation(tool="t", required={"a": "x"}), _call("t", a=4),
                       matching)
    assert scored["problems"] == {"a": "expected 'x', got 4 (matcher operator:truediv raised "
                                       "TypeError on argument 'a': unsupported operand type(s) "
                                       "for /: 'str' and 'int'; counted as not matching)"}


@pytest.mark.parametrize(
    ("exp", "available"),
    [(ParameterExpectation(tool="t", required={"a": 1}, forbidden=["f", "g"],
                           validators={"v": ParameterValidator()}), 4),
     (ParameterExpectation(tool="t", required={"a": 1}), 1),
     (ParameterExpectation(tool="t"), 1)],
)
def test_unparsed_or_absent_calls_earn_nothing_of_every_point(exp: ParameterExpectation,
                                                              available: int) -> None:
    malformed = _problems(exp, _call("t", raw="{a"))
    assert malformed == {"tool": "t", "call": 0, "score": 0.0, "earned": 0,
                         "available": available,
                         "problems": {"*": "arguments are not a JSON object: '{a'"}}
    result = run_checks(_tx([]), Expectations(parameters=[exp])).get("parameter_accuracy")
    assert result.details["calls"] == [{"tool": "t", "call": None, "score": 0.0, "earned": 0,
                                        "available": available,
                                        "problems": {"*": "tool never called"}}]


def test_bad_validator_pattern_message() -> None:
    exp = Expectations(parameters=[ParameterExpectation(
        tool="t", validators={"id": ParameterValidator(pattern="(")})])
    with pytest.raises(CheckConfigError) as raised:
        run_checks(_tx([]), exp)
    assert str(raised.value) == ("parameters[0].validators.id.pattern: a valid regular "
                                 "expression (missing ), unterminated subpattern at position 0)")


@pytest.mark.parametrize(
    ("expected", "actual", "diff"),
    [
        ({"order id": 1}, {}, ["$['order id']: missing (expected 1)"]),
        ({"a": {"b": 1}}, {"a": [1]}, ["$.a: expected {'b': 1}, got [1]"]),
        ({"a": [1]}, {"a": 5}, ["$.a: expected [1], got 5"]),
    ],
)
def test_state_diff_paths_and_mismatched_types(expected: dict, actual: dict,
                                               diff: list[str]) -> None:
    assert state_diff(expected, actual, "contains") == diff


@pytest.mark.parametrize("n", [50, 51, 53])
def test_state_diff_caps_at_fifty_lines(n: int) -> None:
    expected = {f"k{i:02d}": i for i in range(n)}
    lines = [f"$.k{i:02d}: missing (expected {i})" for i in range(n)]
    capped = lines if n <= 50 else [*lines[:50], f"... and {n - 50} more"]
    assert state_diff(expected, {}, "equals") == capped


def test_report_get_names_the_check_it_lacks() -> None:
    with pytest.raises(KeyError) as raised:
        CheckReport(scenario_id="s").get("trajectory_recall")
    assert raised.value.args == ("trajectory_recall",)


def test_required_phrases_normalise_whitespace_without_adding_text() -> None:
    result = run_checks(_tx([], messages=[Message(role="assistant", content="a  b\nc")]),
                        Expectations(required_phrases=["a b c", "x"])).get("required_phrases")
    assert result.details == {"found": ["a b c"], "missing": ["x"]}
