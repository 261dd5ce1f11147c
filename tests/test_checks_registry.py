"""One check registry: the built-in checks register as a user's ``@check`` does, a
scenario's expectations expand into check specs, and a user's check and a built-in come out
in the same shape (the stored results, ``samples.jsonl``, ``summary.json``, the report's
sample view)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from harness.checks import CheckResult, builtins
from harness.checks.args import CheckConfigError
from harness.checks.registry import check, registered
from harness.checks.run import (
    PreparedExpectations,
    compile_check,
    prepare_expectations,
    run_check,
    run_checks,
)
from harness.checks.spec import CheckSpec, Expectations
from harness.errors import InputError, InputErrors
from harness.models.types import Message
from harness.report.html.run_page import sample_view
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.runs.scoring import build_sample
from harness.runs.store import RunStore
from harness.scenarios.loading import load_scenarios
from harness.testing.outcome import failure_message
from harness.transcript import Transcript
from tests.helpers.check_inputs import tool_call as _call
from tests.helpers.check_inputs import transcript as _tx

BUILTIN_USES = {
    "trajectory": builtins.trajectory, "single_tool_use": builtins.single_tool_use,
    "tool_order": builtins.tool_order, "parameters": builtins.parameters,
    "forbidden_tools": builtins.forbidden_tools, "no_tool_calls": builtins.no_tool_calls,
    "max_tool_calls": builtins.max_tool_calls, "latency_budget": builtins.latency_budget,
    "response_match": builtins.response_match, "required_phrases": builtins.required_phrases,
    "final_state": builtins.final_state, "response_matches": builtins.response_matches,
    "response_json_schema": builtins.response_json_schema,
    "response_max_chars": builtins.response_max_chars,
}


# --- the built-ins are ordinary registered checks -------------------------------------------

@pytest.mark.parametrize("use", sorted(BUILTIN_USES))
def test_every_built_in_is_in_the_registry_under_its_name(use: str) -> None:
    held = registered(use)
    assert held is not None and held.function is BUILTIN_USES[use]


def test_use_trajectory_names_the_built_in_and_binds_its_args() -> None:
    compiled = compile_check(CheckSpec(use="trajectory",
                                       args={"tool_calls": [{"name": "search"}]}))
    assert compiled.function is builtins.trajectory
    results = run_check(compiled, _tx([_call("search")]), Expectations())
    assert [r.name for r in results] == [
        "trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
        "trajectory_precision", "trajectory_recall", "trajectory_f1",
        "tool_trajectory_avg_score"]
    assert [r.gating for r in results] == [False] * 6 + [True]


def test_a_user_check_can_be_registered_with_prepare_as_the_built_ins_are() -> None:
    name = f"longer_than_{uuid.uuid4().hex[:8]}"

    def prepare(args: dict[str, Any]) -> dict[str, Any]:
        return {"limit": int(args["chars"])}

    @check(name, prepare=prepare)
    def longer_than(transcript: Transcript, expectations: Expectations, *, limit: int) -> bool:
        return len(transcript.final_response) > limit

    compiled = compile_check(CheckSpec(use=name, args={"chars": "3"}))
    assert compiled.arguments == {"limit": 3}
    answer = _tx([], messages=[Message(role="assistant", content="four")])
    assert [r.value for r in run_check(compiled, answer, Expectations())] == [1.0]


# --- expectations expand into check specs ---------------------------------------------------

def test_expectations_expand_into_the_built_ins_specs_in_the_order_they_run() -> None:
    exp = Expectations.model_validate({
        "tool_calls": [{"name": "search", "args": {"q": "a"}}], "max_tool_calls": 2,
        "reference_answer": "Sunny.", "forbidden_tools": ["delete"],
        "response_max_chars": 0})
    specs = builtins.expand_expectations(exp)
    assert [(s.use, s.name) for s in specs] == [
        ("trajectory", "trajectory"), ("forbidden_tools", "forbidden_tools_avoided"),
        ("max_tool_calls", "max_tool_calls"), ("response_match", "response_match_score"),
        ("response_max_chars", "response_max_chars")]
    assert specs[2].args == {"max_tool_calls": 2}
    assert specs[0].args["tool_calls"] == [{"name": "search", "args": {"q": "a"}, "turn": None,
                                            "match": None}]
    json.dumps([s.model_dump() for s in specs])  # specs are data


def test_empty_lists_and_false_flags_ask_for_nothing_but_an_empty_reference_does() -> None:
    assert builtins.expand_expectations(Expectations()) == []
    [spec] = builtins.expand_expectations(Expectations(tool_calls=[]))
    assert spec.use == "trajectory"  # "the agent should call nothing" is a reference


def test_a_built_in_named_under_checks_scores_as_its_expectation_does() -> None:
    transcript = _tx([_call("a"), _call("b")])
    from_expectations = run_checks(transcript, Expectations(max_tool_calls=1))
    named = run_checks(transcript, prepare_expectations(
        Expectations(), [CheckSpec(use="max_tool_calls", args={"max_tool_calls": 1})]))
    assert named.model_dump() == from_expectations.model_dump()


@pytest.mark.parametrize(("args", "field", "expected"), [
    ({}, "max_tool_calls", "needs it"),
    ({"max_tool_calls": -1}, "max_tool_calls", "greater than or equal to 0"),
    ({"max_tool_calls": 1, "budget": 2}, "budget", "one of max_tool_calls"),
])
def test_a_built_ins_bad_args_are_an_error_naming_the_argument(
    args: dict[str, Any], field: str, expected: str
) -> None:
    with pytest.raises(CheckConfigError) as caught:
        compile_check(CheckSpec(use="max_tool_calls", args=args))
    assert caught.value.field == field and expected in str(caught.value)


# --- one shape for a user's check and a built-in --------------------------------------------

def test_a_user_check_may_report_a_metric_that_does_not_gate_as_a_built_in_view_does() -> None:
    transcript = _tx([_call("a")], messages=[Message(role="assistant", content="Hello.")])
    compiled = compile_check(CheckSpec(use="tests.helpers.user_checks:two_metrics"))
    prepared = prepare_expectations(Expectations(tool_calls=[{"name": "b"}],
                                                 trajectory_threshold=None))
    prepared = PreparedExpectations(prepared.expectations, (*prepared.checks, compiled))
    report = run_checks(transcript, prepared)
    sample = build_sample(transcript, report, [], started_at=0.0, finished_at=1.0)
    # only 'polite' gates: the trajectory views and 'words' are reported, and the ADK score
    # is informational (threshold null)
    assert sample.score == 1.0 and sample.passed is True
    assert sample.metrics["words"] == 0.5 and sample.metrics["trajectory_exact_match"] == 0.0
    stored = {r["name"]: r for r in report.model_dump(mode="json")["results"]}
    assert stored["words"]["gating"] is False and "gating" not in stored["polite"]
    assert "gating" not in stored["trajectory_exact_match"]  # implied by its name
    read_back = {name: CheckResult.model_validate(stored[name]).gating
                 for name in ("trajectory_exact_match", "polite", "words")}
    assert read_back == {"trajectory_exact_match": False, "polite": True, "words": False}


def test_two_checks_reporting_one_metric_name_error_the_second_rather_than_average() -> None:
    transcript = _tx([_call("a")])
    prepared = prepare_expectations(Expectations(), [
        CheckSpec(use="trajectory", name="first", args={"tool_calls": [{"name": "a"}]}),
        CheckSpec(use="trajectory", name="again", args={"tool_calls": [{"name": "a"}]})])
    report = run_checks(transcript, prepared)
    errors = [r for r in report.results if r.error is not None]
    assert len(errors) == 7 and "another check already reported" in (errors[0].error or "")


MODULE = (
    "import harness\n"
    "async def answer(messages, toolbox):\n"
    "    return 'Order 42 ships on Monday.'\n"
    "def says_tuesday(transcript, expectations):\n"
    "    return 'Tuesday' in transcript.final_response\n"
)


def _suite(tmp_path: Path, checks: str, expectations: str) -> Path:
    module = f"own_checks_{uuid.uuid4().hex}"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / f"{module}.py").write_text(MODULE)
    (suite / "s.yaml").write_text(
        "id: s\n"
        "user: {goal: g, script: [hello]}\n"
        f"agent: {{callable: {module}:answer}}\n"
        f"expectations: {expectations}\n"
        + checks.replace("{module}", module))
    return suite


async def test_a_user_check_and_a_built_in_have_one_shape_in_every_output(
    tmp_path: Path
) -> None:
    # both fail: the built-in (required phrase 'Tuesday') and the user's ('Tuesday' too)
    suite = _suite(tmp_path, "checks: [{use: '{module}:says_tuesday'}]\n",
                   "{required_phrases: [Tuesday]}")
    config = RunConfig(scenario_paths=[str(suite)], epochs=2, cache_mode="off",
                       bootstrap_resamples=0)
    run_dir = tmp_path / "run"
    result = await run_suite(config, run_dir)

    lines = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert all(x["metrics"] == {"required_phrases": 0.0, "says_tuesday": 0.0} for x in lines)

    summary = json.loads((run_dir / "summary.json").read_text())
    built_in, own = summary["metrics"]["required_phrases"], summary["metrics"]["says_tuesday"]
    assert set(built_in) == set(own) and built_in["n"] == own["n"] == 2
    groups = {g["key"]: g for g in summary["failure_analysis"]["groups"]}
    assert set(groups) == {"Tuesday", "says_tuesday"}
    assert set(groups["Tuesday"]) == set(groups["says_tuesday"])
    assert groups["Tuesday"]["samples"] == groups["says_tuesday"]["samples"] == 2
    assert result.summary.metrics["says_tuesday"].n_scenarios == 1

    with RunStore.open(run_dir) as store:
        record = next(iter(store.iter_samples()))
    stored = {r["name"]: r for r in record.checks[0]["results"]}
    assert set(stored["required_phrases"]) - {"details"} == set(stored["says_tuesday"]) - {
        "details"}
    view = {c["name"]: c for c in sample_view(record)["checks"]}
    assert set(view["required_phrases"]) == set(view["says_tuesday"])
    assert view["required_phrases"]["gating"] is view["says_tuesday"]["gating"] is True
    message = failure_message(result) or ""
    assert "required_phrases" in message and "says_tuesday" in message


@pytest.mark.parametrize(("checks", "expectations", "field", "expected"), [
    ("checks: [{use: max_tool_calls, args: {max_tool_calls: -1}}]\n", "{}",
     "checks[0].args.max_tool_calls", "greater than or equal to 0"),
    ("checks: [{use: trajectory, args: {tool_calls: [{name: a}]}}]\n", "{tool_calls: []}",
     "checks[0].use", "already runs from expectations.tool_calls"),
    ("", "{tool_calls: [{name: a, turn: 0}, {name: b}]}", "expectations.tool_calls[1].turn",
     "a turn on every reference call or on none"),
])
def test_a_built_in_that_cannot_be_used_is_an_error_at_load_naming_file_and_field(
    tmp_path: Path, checks: str, expectations: str, field: str, expected: str
) -> None:
    suite = _suite(tmp_path, checks, expectations)
    with pytest.raises((InputError, InputErrors)) as caught:
        load_scenarios([str(suite)])
    text = str(caught.value)
    assert "s.yaml" in text and field in text and expected in text


def test_a_built_in_named_under_checks_may_take_its_own_metric_name(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "checks: [{use: max_tool_calls, args: {max_tool_calls: 1}}]\n",
                   "{}")
    [scenario] = load_scenarios([str(suite)])
    [compiled] = prepare_expectations(scenario.expectations, scenario.checks).checks
    assert compiled.name == "max_tool_calls" and compiled.function is builtins.max_tool_calls
