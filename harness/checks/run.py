"""Running checks: a scenario's check specs (its expectations expanded into the built-ins'
specs, then its own ``checks``) bound once to their functions, then run on each transcript
in one loop.

A check is named by ``use``: a registered name (every built-in, or a name given to
:func:`~harness.checks.registry.check`; the module must already be imported, as in a
conftest or a script), ``package.module:name`` for a name that module registers (the module
is imported, then the name looked up), or ``package.module:function`` (imported as agent
callables are, the scenario file's directory first on ``sys.path``).

Every check is resolved and its signature bound to its ``args`` when the scenario is loaded
(through its ``prepare`` when it was registered with one), so a path that does not import,
arguments that cannot be used or a function that cannot take them is an error before
anything runs. When a check runs, what it returns is made a
:class:`~harness.checks.result.CheckResult` the same way for every check:

- a ``bool`` (numpy's too) is 1.0 (passed) or 0.0 (failed); a real number (numpy scalars
  included) passes at or above the spec's ``threshold``; a :class:`CheckResult` is taken as
  it is (a copy, under the spec's name; when it leaves ``passed`` unset and gates, the
  threshold decides); a list of :class:`CheckResult` (a check reporting several metrics
  from one pass, as the built-in ``trajectory`` does) keeps each result's own name;
- the threshold that decided a verdict is kept in ``details["threshold"]``;
- a value outside [0, 1], NaN, another type, or an exception is an *errored* check:
  ``error`` holds the message, ``value`` and ``passed`` are ``None`` (never a 0), and the
  sample is errored (see :mod:`harness.runs.scoring`);
- ``gating: false`` in the spec keeps the value as a metric but leaves it out of the sample's
  score and pass verdict (``gating`` false, ``passed`` ``None``);
- a failed verdict the check did not give itself (a bare value, or a result that left
  ``passed`` to the threshold) gets a finding naming the check (kind ``custom_check``), so
  the failure analysis counts it; a check that sets ``passed`` itself gives its own
  findings.

An errored transcript (its agent or simulator call failed) gets no scores at all: the report
carries the error instead, so it is counted apart and never as a failed check.
"""

from __future__ import annotations

import inspect
import math
import numbers
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.checks.args import CheckConfigError
from harness.checks.builtins import expand_expectations
from harness.checks.registry import (
    CheckFunction,
    RegisteredCheck,
    registered,
    registered_for,
    registered_names,
)
from harness.checks.result import CheckReport, CheckResult, Finding
from harness.checks.spec import CheckSpec, Expectations
from harness.transcript import ToolCallRecord, Transcript
from harness.user_code import ImportPathError, resolve_callable


@dataclass(frozen=True)
class CompiledCheck:
    """A check spec with its function resolved and its keyword arguments bound (``kwargs``:
    the spec's ``args``, or what its ``prepare`` made of them)."""

    name: str
    function: CheckFunction
    spec: CheckSpec
    kwargs: dict[str, Any] | None = None

    @property
    def arguments(self) -> dict[str, Any]:
        return self.spec.args if self.kwargs is None else self.kwargs


def check_name(spec: CheckSpec) -> str:
    """The metric name of a check: ``name``, else the registered name or function name."""
    if spec.name is not None:
        return spec.name
    return spec.use.rpartition(":")[2].rsplit(".", 1)[-1]


def _resolve(use: str, base_dir: Path | None) -> tuple[CheckFunction, RegisteredCheck | None]:
    if ":" not in use:
        held = registered(use)
        if held is None:
            raise ImportPathError(
                f"no check is registered as {use!r} (registered: "
                f"{', '.join(registered_names())}); name it 'package.module:function', or "
                "'package.module:name' for a module that registers it with "
                "@harness.checks.check"
            )
        return held.function, held
    module_name, _, attribute = use.partition(":")
    try:
        function = resolve_callable(use, base_dir=base_dir)
    except ImportPathError:
        # 'package.module:name': the module imported and registered the name
        held = registered(attribute)
        if held is None or module_name not in sys.modules:
            raise
        return held.function, held
    return function, registered_for(function)


def compile_check(spec: CheckSpec, *, base_dir: Path | None = None) -> CompiledCheck:
    """Resolve ``spec.use``, prepare its ``args`` (when it was registered with ``prepare``)
    and bind ``(transcript, expectations, **args)`` to its signature. Returns the
    :class:`CompiledCheck`; raises :class:`ImportPathError` saying what failed (no such
    module, name or registered check; a signature that does not fit), or
    :class:`CheckConfigError` naming an argument its ``prepare`` rejected."""
    function, held = _resolve(spec.use, base_dir)
    kwargs = None if held is None or held.prepare is None else held.prepare(dict(spec.args))
    arguments = spec.args if kwargs is None else kwargs
    try:
        inspect.signature(function).bind(None, None, **arguments)
    except TypeError as err:
        raise ImportPathError(
            f"{spec.use!r} must accept (transcript, expectations"
            f"{''.join(f', {k}=...' for k in arguments)}): {err}"
        ) from None
    except ValueError:  # no signature to read (some builtins): found out when it runs
        pass
    return CompiledCheck(name=check_name(spec), function=function, spec=spec, kwargs=kwargs)


def run_check(compiled: CompiledCheck, transcript: Transcript,
              expectations: Expectations) -> list[CheckResult]:
    """Call the check on one transcript and normalise what it returns (see the module
    docstring). Never raises for the check's own failures: they become an errored result."""
    name = compiled.name
    try:
        returned = compiled.function(transcript, expectations, **compiled.arguments)
    except Exception as err:  # the check's failure is data, reported with the sample
        return [_errored(name, f"raised {type(err).__name__}: {err}")]
    # said_why: the check returned results that set ``passed`` themselves (with their own
    # findings); a bare value, or a verdict left to the threshold, has no reason attached
    if isinstance(returned, list) and returned and all(
            isinstance(r, CheckResult) for r in returned):
        results = list(returned)
    elif isinstance(returned, CheckResult):
        results = [returned if returned.name == name
                   else returned.model_copy(update={"name": name}, deep=True)]
    elif isinstance(returned, bool | np.bool_):  # numpy comparisons give np.bool_
        results = [CheckResult(name=name, value=float(returned), passed=bool(returned))]
    elif isinstance(returned, numbers.Real):  # int, float, numpy scalars
        results = [CheckResult(name=name, value=float(returned), passed=None)]
    else:
        return [_errored(name, f"returned {type(returned).__name__}; expected a "
                         "CheckResult, a number in [0, 1] or a bool (or a list of CheckResult)")]
    bare = not isinstance(returned, list | CheckResult)
    said_why = [not bare and r.passed is not None for r in results]
    out = [_settled(r, compiled.spec) for r in results]
    # a verdict the run gave has no reason attached: say which check failed, so that the
    # failure analysis counts it
    failed = [r for r, said in zip(out, said_why, strict=True)
              if not said and r.gating and r.passed is False and not r.findings]
    if failed:  # a fresh object or a copy (the run decided its verdict): ours to change
        first = failed[0]
        first.findings.append(Finding(
            kind="custom_check", subject=first.name,
            message=f"check {first.name!r} failed (value {first.value:.3f}, threshold "
            f"{compiled.spec.threshold})"
            if first.value is not None else f"check {first.name!r} failed",
        ))
    return out


def _settled(result: CheckResult, spec: CheckSpec) -> CheckResult:
    """A returned result with its value checked, its verdict decided (by the threshold when
    the check left it) and the spec's ``gating`` applied: a copy when anything changes, so
    that an object the check keeps (or returns again) is never altered."""
    value = result.value
    if result.error is not None:
        return result
    update: dict[str, Any] = {}
    if value is not None:
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            return _errored(result.name, f"returned {value!r}; expected a value in [0, 1]")
        if result.passed is None and result.gating:
            update["passed"] = value >= spec.threshold
            update["details"] = {**result.details, "threshold": spec.threshold}
    if not spec.gating:
        update.update(gating=False, passed=None)
    if not update:
        return result
    return result.model_copy(update=update, deep=True)


def _errored(name: str, message: str) -> CheckResult:
    return CheckResult(name=name, value=None, passed=None, error=f"check {name!r} {message}")


@dataclass(frozen=True)
class PreparedExpectations:
    """A scenario's expectations and its checks, built-in and its own, each bound once and
    reused for every sample."""

    expectations: Expectations
    checks: tuple[CompiledCheck, ...] = field(default_factory=tuple)


def prepare_expectations(
    expectations: Expectations,
    checks: Sequence[CheckSpec] = (),
    *,
    base_dir: Path | None = None,
) -> PreparedExpectations:
    """Expand ``expectations`` into the built-ins' check specs, add the scenario's own
    ``checks`` after them (resolved from ``base_dir`` first), and bind each (see
    :func:`compile_check`). Raises :class:`CheckConfigError` naming the field, before
    anything is scored."""
    compiled = [compile_check(spec) for spec in expand_expectations(expectations)]
    for i, spec in enumerate(checks):
        try:
            compiled.append(compile_check(spec, base_dir=base_dir))
        except ImportPathError as err:
            raise CheckConfigError(f"checks[{i}].use", f"a check f(transcript, expectations): "
                                   f"{err}") from None
        except CheckConfigError as err:
            raise CheckConfigError(f"checks[{i}].args.{err.field}", err.expected) from None
    return PreparedExpectations(expectations, tuple(compiled))


def malformed_call_warnings(calls: Sequence[ToolCallRecord]) -> list[str]:
    """One warning per call whose arguments were not a JSON object."""
    return [
        f"tool call {j} ({c.name}, turn {c.turn}) has arguments that are not a JSON object "
        f"({c.raw_arguments!r}); scored as not matching"
        for j, c in enumerate(calls)
        if c.raw_arguments is not None
    ]


def run_checks(
    transcript: Transcript, expectations: Expectations | PreparedExpectations
) -> CheckReport:
    """Run every check of the scenario on ``transcript``, in order: the built-ins its
    expectations ask for, then its own ``checks``.

    Takes the scenario's :class:`Expectations` (or the result of
    :func:`prepare_expectations`, to bind the checks once for many samples) and returns a
    :class:`CheckReport`. Raises :class:`CheckConfigError` when the expectations cannot be
    used (a matcher that does not import, a bad pattern).
    """
    prepared = (
        expectations
        if isinstance(expectations, PreparedExpectations)
        else prepare_expectations(expectations)
    )
    report = CheckReport(scenario_id=transcript.scenario_id, epoch=transcript.epoch)
    if transcript.errored:
        reason = transcript.error.message if transcript.error else transcript.stop_detail
        report.error = f"{transcript.stop_reason}: {reason or 'no detail'}"
        return report
    report.warnings.extend(malformed_call_warnings(transcript.tool_calls))
    seen: set[str] = set()
    for compiled in prepared.checks:
        for result in run_check(compiled, transcript, prepared.expectations):
            if result.name in seen:  # two values under one name would be averaged as one
                result = _errored(result.name, "reported a metric another check already "
                                  "reported; give the check another name")
            seen.add(result.name)
            if result.warnings:  # said once, in the report
                report.warnings.extend(result.warnings)
                result = result.model_copy(update={"warnings": []})
            report.results.append(result)
    report.warnings = list(dict.fromkeys(report.warnings))
    return report
