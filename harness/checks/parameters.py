"""Parameter accuracy with partial credit (from the seeds).

For every call of an expected tool, each constraint is worth one point: a required value
present and equal (compared as JSON, with the scenario's per-key overrides such as tolerance
or case-insensitivity), a forbidden parameter absent, a validator satisfied (a validator on
an absent parameter fails). A call's score is points earned / points available (1.0 when the
expectation lists no constraint). The check's value is the mean over the scored calls; an
expected tool that was never called contributes one 0 (its parameters were not right), and a
call whose arguments did not parse earns no point. Validators follow JSON Schema: ``integer``
accepts ``3.0`` but never ``true``, ``pattern`` is a regular-expression *search*,
``minimum``/``maximum`` are inclusive.

Seed 000 gave a required parameter its point only for the right value; an expectation's
``wrong_value_credit`` (0 by default, so scores are unchanged) gives a present but wrong value
that share of a point, for tasks where calling the tool with the parameter at all is progress.
A missing parameter earns nothing either way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.checks.args import CheckConfigError, CompiledMatching
from harness.checks.spec import ParameterExpectation, ParameterValidator
from harness.json_values import json_equal
from harness.transcript import ToolCallRecord

_JSON_TYPES: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def compile_patterns(expectations: Sequence[ParameterExpectation]) -> None:
    """Check every validator pattern compiles. Raises :class:`CheckConfigError` naming
    ``parameters[i].validators.<key>.pattern`` when one does not."""
    for i, exp in enumerate(expectations):
        for key, validator in exp.validators.items():
            if validator.pattern is not None:
                try:
                    re.compile(validator.pattern)
                except re.error as err:
                    raise CheckConfigError(
                        f"parameters[{i}].validators.{key}.pattern",
                        f"a valid regular expression ({err})",
                    ) from None


def validate_value(value: Any, validator: ParameterValidator) -> list[str]:
    """The reasons ``value`` fails ``validator`` (empty when it passes)."""
    problems: list[str] = []
    if validator.type is not None and not _JSON_TYPES[validator.type](value):
        problems.append(f"expected type {validator.type}, got {type(value).__name__}")
    if validator.pattern is not None and not (
        isinstance(value, str) and re.search(validator.pattern, value)
    ):
        problems.append(f"does not match pattern {validator.pattern!r}")
    if validator.one_of is not None and not any(json_equal(o, value) for o in validator.one_of):
        problems.append(f"not one of {validator.one_of!r}")
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if validator.minimum is not None and not (is_number and value >= validator.minimum):
        problems.append(f"below minimum {validator.minimum}")
    if validator.maximum is not None and not (is_number and value <= validator.maximum):
        problems.append(f"above maximum {validator.maximum}")
    return problems


@dataclass
class CallParameterScore:
    """Partial credit for one call: points earned of points available, and what failed."""

    tool: str
    call_index: int | None
    earned: float
    available: int
    problems: dict[str, str] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return 1.0 if self.available == 0 else self.earned / self.available


def score_call(
    expectation: ParameterExpectation,
    arguments: dict[str, Any],
    matching: CompiledMatching,
    call_index: int,
) -> CallParameterScore:
    """Score one well-formed call's arguments against ``expectation``."""
    result = CallParameterScore(tool=expectation.tool, call_index=call_index, earned=0.0,
                                available=0)
    for key, expected in expectation.required.items():
        result.available += 1
        if key not in arguments:
            result.problems[key] = f"missing (expected {expected!r})"
            continue
        ok, warning = matching.values_match(key, expected, arguments[key])
        if ok:
            result.earned += 1
        else:
            result.earned += expectation.wrong_value_credit
            result.problems[key] = f"expected {expected!r}, got {arguments[key]!r}" + (
                f" ({warning})" if warning else ""
            )
    for key in expectation.forbidden:
        result.available += 1
        if key in arguments:
            result.problems[key] = "forbidden parameter was passed"
        else:
            result.earned += 1
    for key, validator in expectation.validators.items():
        result.available += 1
        if key not in arguments:
            result.problems.setdefault(key, "missing (a validator applies)")
            continue
        problems = validate_value(arguments[key], validator)
        if problems:
            result.problems.setdefault(key, "; ".join(problems))
        else:
            result.earned += 1
    return result


def parameter_accuracy(
    expectations: Sequence[ParameterExpectation],
    actual: Sequence[ToolCallRecord],
    matching: CompiledMatching,
) -> list[CallParameterScore]:
    """One :class:`CallParameterScore` per call of each expected tool (``call_index`` is the
    call's position in the transcript), or one zero score with ``call_index=None`` for an
    expected tool that was never called."""
    scores: list[CallParameterScore] = []
    for exp in expectations:
        available = len(exp.required) + len(exp.forbidden) + len(exp.validators)
        calls = [(j, c) for j, c in enumerate(actual) if c.name == exp.tool]
        if not calls:
            scores.append(CallParameterScore(tool=exp.tool, call_index=None, earned=0,
                                             available=max(available, 1),
                                             problems={"*": "tool never called"}))
        for j, call in calls:
            if call.raw_arguments is not None:
                scores.append(CallParameterScore(
                    tool=exp.tool, call_index=j, earned=0, available=max(available, 1),
                    problems={"*": f"arguments are not a JSON object: {call.raw_arguments!r}"},
                ))
            else:
                scores.append(score_call(exp, call.arguments, matching, j))
    return scores
