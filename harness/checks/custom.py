"""Checks of one's own: Python functions named under a scenario's ``checks``.

A check is ``f(transcript, expectations, **args) -> CheckResult | float | bool``: it gets the
episode's :class:`~harness.transcript.Transcript` and the scenario's
:class:`~harness.checks.spec.Expectations`, plus the spec's ``args`` as keyword arguments.
It is named by ``use``: ``package.module:function`` (imported as agent callables are, the
scenario file's directory first on ``sys.path``), or a name given with the :func:`check`
decorator, bare (the module must already be imported, as in a conftest or a script) or as
``package.module:name`` (the module is imported, then the name looked up).

Every check is resolved and its signature bound to its ``args`` when the scenario is loaded,
so a path that does not import or a function that cannot take those arguments is an error
before anything runs. When a check runs:

- a ``bool`` (numpy's too) is 1.0 (passed) or 0.0 (failed); a real number (numpy scalars
  included) passes at or above the spec's ``threshold``; a :class:`CheckResult` is taken as
  it is (a copy, under the spec's name; without ``passed``, the threshold decides);
- a value outside [0, 1], NaN, another type, or an exception is an *errored* check:
  ``error`` holds the message, ``value`` and ``passed`` are ``None`` (never a 0), and the
  sample is errored (see :mod:`harness.runs.scoring`);
- ``gating: false`` keeps the value as a metric but leaves it out of the sample's score and
  pass verdict (``passed`` is ``None``).
"""

from __future__ import annotations

import inspect
import math
import numbers
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from harness.checks.result import CheckResult, Finding
from harness.checks.spec import CheckSpec, Expectations
from harness.transcript import Transcript
from harness.user_code import ImportPathError, resolve_callable

CheckFunction = Callable[..., Any]
F = TypeVar("F", bound=CheckFunction)

_REGISTRY: dict[str, CheckFunction] = {}


def check(name: str) -> Callable[[F], F]:
    """Register the decorated function as the check called ``name`` (then ``use: name`` in a
    scenario). Returns the function unchanged. Raises ``ValueError`` when another function
    already holds that name."""

    def register(function: F) -> F:
        held = _REGISTRY.get(name)
        if held is not None and _qualified(held) != _qualified(function):
            raise ValueError(f"check {name!r} is already registered by {_qualified(held)}")
        _REGISTRY[name] = function
        return function

    return register


def _qualified(function: CheckFunction) -> str:
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', '?')}"


@dataclass(frozen=True)
class CompiledCheck:
    """A check spec with its function imported and its arguments bound."""

    name: str
    function: CheckFunction
    spec: CheckSpec


def check_name(spec: CheckSpec) -> str:
    """The metric name of a check: ``name``, else the registered name or function name."""
    if spec.name is not None:
        return spec.name
    return spec.use.rpartition(":")[2].rsplit(".", 1)[-1]


def compile_check(spec: CheckSpec, *, base_dir: Path | None = None) -> CompiledCheck:
    """Resolve ``spec.use`` and bind ``(transcript, expectations, **spec.args)`` to its
    signature. Returns the :class:`CompiledCheck`; raises :class:`ImportPathError` saying
    what failed (no such module, name or registered check; a signature that does not fit)."""
    use = spec.use
    if ":" not in use:
        function = _REGISTRY.get(use)
        if function is None:
            known = ", ".join(sorted(_REGISTRY)) or "none"
            raise ImportPathError(
                f"no check is registered as {use!r} (registered: {known}); name it "
                "'package.module:function', or 'package.module:name' for a module that "
                "registers it with @harness.checks.check"
            )
    else:
        module_name, _, attribute = use.partition(":")
        try:
            function = resolve_callable(use, base_dir=base_dir)
        except ImportPathError:
            # 'package.module:name': the module imported and registered the name
            if attribute not in _REGISTRY or module_name not in sys.modules:
                raise
            function = _REGISTRY[attribute]
    try:
        inspect.signature(function).bind(None, None, **spec.args)
    except TypeError as err:
        raise ImportPathError(
            f"{use!r} must accept (transcript, expectations"
            f"{''.join(f', {k}=...' for k in spec.args)}): {err}"
        ) from None
    except ValueError:  # no signature to read (some builtins): found out when it runs
        pass
    return CompiledCheck(name=check_name(spec), function=function, spec=spec)


def run_check(compiled: CompiledCheck, transcript: Transcript,
              expectations: Expectations) -> CheckResult:
    """Call the check on one transcript and normalise what it returns (see the module
    docstring). Never raises for the check's own failures: they become an errored result."""
    spec = compiled.spec
    try:
        returned = compiled.function(transcript, expectations, **spec.args)
    except Exception as err:  # the user's code: its failure is data, reported with the sample
        return _errored(compiled.name, f"raised {type(err).__name__}: {err}")
    if isinstance(returned, CheckResult):
        result = returned.model_copy(update={"name": compiled.name}, deep=True)
        value = result.value
    elif isinstance(returned, bool | np.bool_):  # numpy comparisons give np.bool_
        result = CheckResult(name=compiled.name, value=float(returned), passed=bool(returned))
        value = result.value
    elif isinstance(returned, numbers.Real):  # int, float, numpy scalars
        value = float(returned)
        result = CheckResult(name=compiled.name, value=value, passed=None)
    else:
        return _errored(compiled.name, f"returned {type(returned).__name__}; expected a "
                        "CheckResult, a number in [0, 1] or a bool")
    if value is not None:
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            return _errored(compiled.name, f"returned {value!r}; expected a value in [0, 1]")
        if result.passed is None:
            result.passed = value >= spec.threshold
    result.details.setdefault("threshold", spec.threshold)
    result.details.setdefault("gating", spec.gating)
    if not spec.gating:
        result.passed = None
    elif result.passed is False and not result.findings:
        result.findings.append(Finding(
            kind="custom_check", subject=compiled.name,
            message=f"check {compiled.name!r} failed (value {value:.3f}, threshold "
            f"{spec.threshold})" if value is not None else f"check {compiled.name!r} failed",
        ))
    return result


def _errored(name: str, message: str) -> CheckResult:
    return CheckResult(name=name, value=None, passed=None, error=f"check {name!r} {message}")
