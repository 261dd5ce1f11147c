"""Checks of one's own (a scenario's ``checks``): resolving them at load time, what they may
return, errors, gating, and their values as metrics of a run with intervals."""

from __future__ import annotations

import json
import math
import re
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.checks import CheckResult, check
from harness.checks.run import (
    CompiledCheck,
    PreparedExpectations,
    compile_check,
    prepare_expectations,
    run_check,
    run_checks,
)
from harness.checks.spec import CheckSpec, Expectations
from harness.errors import InputError, InputErrors
from harness.models.types import Message
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.runs.scoring import build_sample
from harness.scenarios.loading import load_scenarios
from harness.transcript import Transcript


def _tx(answer: str = "Your order ships on Monday.") -> Transcript:
    return Transcript(scenario_id="s", stop_reason="imported",
                      messages=[Message(role="user", content="when?"),
                                Message(role="assistant", content=answer)])


def _compiled(function: Any, **spec: Any) -> CompiledCheck:
    return CompiledCheck(name=spec.pop("name", "mine"), function=function,
                         spec=CheckSpec(use="x:y", **spec))


def _run_one(compiled: CompiledCheck, transcript: Transcript) -> CheckResult:
    [result] = run_check(compiled, transcript, Expectations())
    return result


def mentions(transcript: Transcript, expectations: Expectations, *, word: str) -> bool:
    return word.lower() in transcript.final_response.lower()


@pytest.mark.parametrize(("returned", "value", "passed"), [
    (True, 1.0, True),
    (False, 0.0, False),
    (1, 1.0, True),
    (0.75, 0.75, False),  # below the default threshold 1.0
    (np.float64(1.0), 1.0, True),
    (np.bool_(False), 0.0, False),  # what a numpy comparison returns
])
def test_a_bool_or_a_number_becomes_a_value_and_a_verdict(
    returned: Any, value: float, passed: bool
) -> None:
    result = _run_one(_compiled(lambda t, e: returned), _tx())
    assert (result.name, result.value, result.passed, result.error) == ("mine", value, passed,
                                                                        None)
    assert [f.kind for f in result.findings] == ([] if passed else ["custom_check"])


def test_a_number_passes_at_its_threshold() -> None:
    result = _run_one(_compiled(lambda t, e: 0.75, threshold=0.75), _tx())
    assert result.passed is True and result.details["threshold"] == 0.75


def test_a_check_result_is_kept_under_the_specs_name() -> None:
    def detailed(t: Transcript, e: Expectations) -> CheckResult:
        return CheckResult(name="whatever", value=0.5, passed=True, details={"why": "half"})

    result = _run_one(_compiled(detailed, name="tone"), _tx())
    assert (result.name, result.value, result.passed) == ("tone", 0.5, True)
    assert result.details["why"] == "half"

    kept = CheckResult(name="kept", value=0.5, passed=None, details={})
    result = _run_one(_compiled(lambda t, e: kept, threshold=0.5), _tx())
    assert result.passed is True and result.details["threshold"] == 0.5
    assert kept.passed is None and kept.details == {}  # the check's own object is untouched


def test_args_are_passed_as_keywords() -> None:
    spec = CheckSpec(use="x:y", args={"word": "monday"})
    assert _run_one(CompiledCheck("m", mentions, spec), _tx()).value == 1.0
    assert _run_one(CompiledCheck("m", mentions, spec), _tx("Soon.")).value == 0.0


@pytest.mark.parametrize(("function", "message"), [
    (lambda t, e: 1.5, "returned 1.5; expected a value in [0, 1]"),
    (lambda t, e: -0.1, "returned -0.1; expected a value in [0, 1]"),
    (lambda t, e: math.nan, "returned nan; expected a value in [0, 1]"),
    (lambda t, e: "yes", "returned str; expected a CheckResult, a number in [0, 1] or a bool"),
    (lambda t, e: CheckResult(name="n", value=2.0, passed=True), "returned 2.0"),
    (lambda t, e: 1 / 0, "raised ZeroDivisionError: division by zero"),
])
def test_a_bad_value_or_an_exception_is_an_errored_check_not_a_zero(
    function: Any, message: str
) -> None:
    result = _run_one(_compiled(function), _tx())
    assert result.value is None and result.passed is None
    assert result.error is not None and message in result.error
    assert result.error.startswith("check 'mine' ")


def test_an_errored_check_makes_the_sample_errored_with_its_message() -> None:
    transcript = _tx()
    prepared = prepare_expectations(Expectations(max_tool_calls=3))
    prepared = PreparedExpectations(prepared.expectations,
                                    (*prepared.checks, _compiled(lambda t, e: 1 / 0, name="boom")))
    report = run_checks(transcript, prepared)
    sample = build_sample(transcript, report, [], started_at=0.0, finished_at=1.0)
    assert sample.status == "errored" and sample.score is None
    assert sample.error is not None and sample.error.kind == "check_error"
    assert "check 'boom' raised ZeroDivisionError" in sample.error.message


def test_a_non_gating_check_is_a_metric_but_not_in_the_score_or_verdict() -> None:
    transcript = _tx()
    prepared = prepare_expectations(Expectations(max_tool_calls=3))
    prepared = PreparedExpectations(prepared.expectations, (
        *prepared.checks, _compiled(lambda t, e: 0.25, name="info", gating=False),
        _compiled(lambda t, e: 0.5, name="gate", threshold=0.4)))
    report = run_checks(transcript, prepared)
    assert report.get("info").passed is None
    sample = build_sample(transcript, report, [], started_at=0.0, finished_at=1.0)
    assert sample.metrics == {"max_tool_calls": 1.0, "info": 0.25, "gate": 0.5}
    assert sample.score == pytest.approx((1.0 + 0.5) / 2)  # max_tool_calls and gate
    assert sample.passed is True


def test_a_failing_gating_check_fails_the_sample() -> None:
    transcript = _tx()
    prepared = prepare_expectations(Expectations())
    prepared = PreparedExpectations(prepared.expectations,
                                    (*prepared.checks, _compiled(lambda t, e: False)))
    sample = build_sample(transcript, run_checks(transcript, prepared), [], started_at=0.0,
                          finished_at=1.0)
    assert sample.passed is False and sample.score == 0.0


# --- resolving: paths, the decorator, errors at load time -----------------------------------

def _suite(tmp_path: Path, checks_yaml: str, module_source: str | None = None,
           module: str = "") -> Path:
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    if module_source is not None:
        (suite / f"{module}.py").write_text(module_source)
    (suite / "s.yaml").write_text(
        "id: s\n"
        "user: {goal: g, script: [hello]}\n"
        f"agent: {{callable: {module or 'missing_module'}:answer}}\n"
        f"{checks_yaml}"
    )
    return suite


MODULE = (
    "import harness.checks\n"
    "async def answer(messages, toolbox):\n"
    "    return 'Order 42 ships on Monday.'\n"
    "def says_monday(transcript, expectations, word='Monday'):\n"
    "    return word in transcript.final_response\n"
    "@harness.checks.check('{registered}')\n"
    "def short(transcript, expectations):\n"
    "    return 1.0 if len(transcript.final_response) < 30 else 0.0\n"
    "def two_args_only(a, b):\n"
    "    return True\n"
)


def _module(tmp_path: Path) -> tuple[str, str, str]:
    name = f"own_checks_{uuid.uuid4().hex}"
    registered = f"short_{uuid.uuid4().hex[:8]}"
    return name, registered, MODULE.replace("{registered}", registered)


def test_a_path_and_a_registered_name_resolve_from_the_scenario_directory(
    tmp_path: Path
) -> None:
    module, registered, source = _module(tmp_path)
    suite = _suite(tmp_path, f"checks:\n"
                             f"  - use: {module}:says_monday\n"
                             f"  - {{use: '{module}:{registered}', name: brevity}}\n"
                             f"  - {{use: {registered}, name: brevity_again}}\n",
                   source, module)
    [scenario] = load_scenarios([str(suite)])
    prepared = prepare_expectations(scenario.expectations, scenario.checks,
                                    base_dir=scenario.base_dir)
    # no expectations: the scenario's checks are its own
    assert [c.name for c in prepared.checks] == ["says_monday", "brevity", "brevity_again"]
    assert prepared.checks[1].function is prepared.checks[2].function


@pytest.mark.parametrize(("checks", "field", "expected"), [
    ("[{use: 'no_such_module_xyz:f'}]", "checks[0].use", "does not import"),
    ("[{use: '{module}:nothing_here'}]", "checks[0].use", "has no attribute"),
    ("[{use: '{module}:two_args_only', args: {word: x}}]", "checks[0].use",
     "must accept (transcript, expectations, word=...)"),
    ("[{use: '{module}:answer', args: {}}, {use: never_registered_name}]", "checks[1].use",
     "no check is registered as 'never_registered_name'"),
    ("[{use: '{module}:says_monday', name: required_phrases}]", "checks[0].name",
     "taken by a built-in metric"),
    ("[{use: '{module}:says_monday'}, {use: '{module}:says_monday'}]", "checks[1].use",
     "used twice"),
])
def test_a_check_that_cannot_be_used_is_an_error_at_load_naming_file_and_field(
    tmp_path: Path, checks: str, field: str, expected: str
) -> None:
    module, _, source = _module(tmp_path)
    suite = _suite(tmp_path, "checks: " + checks.replace("{module}", module) + "\n",
                   source, module)
    with pytest.raises((InputError, InputErrors)) as caught:
        load_scenarios([str(suite)])
    text = str(caught.value)
    assert "s.yaml" in text and field in text and expected in text


def test_the_decorator_refuses_a_name_held_by_another_function() -> None:
    name = f"held_{uuid.uuid4().hex[:8]}"
    check(name)(mentions)
    check(name)(mentions)  # the same function again (a module imported twice) is fine
    with pytest.raises(ValueError, match="already registered"):
        check(name)(lambda t, e: True)


def test_compile_check_binds_the_args_to_the_signature() -> None:
    name = f"kw_{uuid.uuid4().hex[:8]}"
    check(name)(mentions)
    assert compile_check(CheckSpec(use=name, args={"word": "x"})).name == name
    with pytest.raises(ValueError, match="must accept"):
        compile_check(CheckSpec(use=name))  # 'word' is required


# --- end to end: metrics with intervals, the pass verdict -----------------------------------

async def test_own_checks_are_metrics_with_intervals_and_gate_the_run(tmp_path: Path) -> None:
    module, registered, source = _module(tmp_path)
    suite = _suite(tmp_path, f"checks:\n"
                             f"  - {{use: {module}:says_monday, args: {{word: Tuesday}}}}\n"
                             f"  - {{use: '{module}:{registered}', name: brevity, "
                             f"gating: false}}\n",
                   source, module)
    config = RunConfig(scenario_paths=[str(suite)], epochs=3, cache_mode="off",
                       bootstrap_resamples=0)
    result = await run_suite(config, tmp_path / "run")
    lines = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert [x["status"] for x in lines] == ["scored"] * 3
    assert all(x["metrics"] == {"says_monday": 0.0, "brevity": 1.0} for x in lines)
    assert all(x["passed"] is False and x["score"] == 0.0 for x in lines)  # brevity: reported
    metrics = result.summary.metrics
    assert metrics["says_monday"].value == 0.0 and metrics["brevity"].value == 1.0
    assert metrics["brevity"].n == 3 and metrics["brevity"].n_scenarios == 1


async def test_the_docs_example_runs_as_written(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "checks.md").read_text(encoding="utf-8")
    section = page[page.index("## Checks of one's own"):]
    python = re.search(r"```python\n(.*?)```", section, flags=re.S)
    yaml = re.search(r"```yaml\n(checks:.*?)```", section, flags=re.S)
    assert python and yaml
    # names of this run's own: module names and registered names are global to the process
    module, registered = f"my_checks_{uuid.uuid4().hex}", f"apologises_{uuid.uuid4().hex[:8]}"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / f"{module}.py").write_text(
        python.group(1).replace('"apologises"', f'"{registered}"')
        + "async def answer(messages, toolbox):\n"
        "    return 'Sorry for the wait: order A-1001 is cancelled.'\n")
    (suite / "s.yaml").write_text(
        "id: s\nuser: {goal: g, script: [cancel A-1001]}\n"
        f"agent: {{callable: '{module}:answer'}}\n"
        + yaml.group(1).replace("my_checks", module).replace(":apologises", f":{registered}"))
    config = RunConfig(scenario_paths=[str(suite)], epochs=2, cache_mode="off",
                       bootstrap_resamples=0)
    await run_suite(config, tmp_path / "run")
    lines = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert [x["metrics"] for x in lines] == [{"cites_order_id": 1.0, "one_apology": 1.0}] * 2
    assert [x["passed"] for x in lines] == [True, True]
