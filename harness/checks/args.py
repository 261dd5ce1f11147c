"""Argument matching: does an actual tool call's arguments match a reference call's?

Modes (per call, from :class:`~harness.checks.spec.ArgMatching`):

- ``exact``: the same keys, and every value equal;
- ``subset``: every reference argument is present with an equal value (extra actual
  arguments are allowed);
- ``superset``: every actual argument is in the reference with an equal value (the reference
  may list more, e.g. optional arguments the agent may leave out);
- ``ignore``: names only.

Values are compared as JSON: objects key by key regardless of order, arrays element by
element in order, ``1`` equals ``1.0``, but ``true`` never equals ``1`` (Python's ``True == 1``
would hide a wrong type).

Per-key overrides apply to one *top-level* argument, and inside that argument they apply
recursively: ``case_insensitive`` casefolds every string in the value, ``tolerance`` allows
that absolute difference for every number in it; ``ignore`` drops the key from both sides
(it is neither required nor unexpected); ``matcher`` names a function
``"package.module:function"`` called as ``f(expected, actual) -> bool`` instead of the
built-in comparison. Matchers are imported once per process; one that does not import is a
:class:`CheckConfigError` before anything is scored. A matcher that raises counts as a
non-match, with a warning naming it (the agent's odd value is what usually makes it raise).

A call's own ``match`` refines the scenario-wide ``arg_matching``: its ``mode`` replaces the
scenario's mode when given, and its overrides are merged over the scenario's, key by key.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.checks.spec import ArgMatching, ArgMode, ArgOverride
from harness.errors import HarnessError
from harness.json_values import json_equal

Matcher = Callable[[Any, Any], Any]


class CheckConfigError(HarnessError):
    """An expectation cannot be used as written (e.g. a matcher that does not import).

    ``field`` is the path inside the expectations block; callers reading a file wrap it in an
    :class:`~harness.errors.InputError` that adds the file and line.
    """

    def __init__(self, field: str, expected: str) -> None:
        self.field = field
        self.expected = expected
        super().__init__(f"{field}: {expected}")


@functools.cache
def _import_matcher(spec: str) -> Matcher:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError("expected 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # any import-time failure is the user's to fix
        raise ValueError(
            f"module {module_name!r} does not import ({type(err).__name__}: {err})"
        ) from err
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ValueError(f"module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{spec!r} is not callable")
    return target  # type: ignore[no-any-return]


def load_matcher(spec: str, *, field: str = "matcher") -> Matcher:
    """Import the function named ``"package.module:function"`` (cached: imported once).

    Raises :class:`CheckConfigError` naming ``field`` when the name is malformed, the module
    does not import, or the attribute is missing or not callable.
    """
    try:
        return _import_matcher(spec)
    except ValueError as err:
        raise CheckConfigError(field, f"custom matcher {spec!r}: {err}") from None


@dataclass
class ArgDiff:
    """How two argument objects compare: ``matched`` plus which keys are at fault.

    ``missing``: reference keys the call lacks (modes exact/subset); ``unexpected``: call keys
    the reference lacks (modes exact/superset); ``different``: keys in both whose values
    differ; ``warnings``: e.g. a custom matcher that raised.
    """

    matched: bool
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    different: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def faulty_keys(self) -> list[str]:
        return sorted({*self.missing, *self.unexpected, *self.different})


@dataclass(frozen=True)
class CompiledMatching:
    """An :class:`ArgMatching` with its custom matchers imported, ready to compare calls."""

    mode: ArgMode
    overrides: Mapping[str, ArgOverride]
    matchers: Mapping[str, Matcher]

    def values_match(self, key: str, expected: Any, actual: Any) -> tuple[bool, str | None]:
        """Compare one argument's values under its override; returns (match, warning)."""
        override = self.overrides.get(key)
        if override is None:
            return json_equal(expected, actual), None
        matcher = self.matchers.get(key)
        if matcher is not None:
            try:
                return bool(matcher(expected, actual)), None
            except Exception as err:  # the agent's value is data; a raising matcher is a miss
                return False, (
                    f"matcher {override.matcher} raised {type(err).__name__} on argument "
                    f"{key!r}: {err}; counted as not matching"
                )
        return (
            json_equal(
                expected,
                actual,
                tolerance=override.tolerance or 0.0,
                casefold=override.case_insensitive,
            ),
            None,
        )

    def compare(self, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> ArgDiff:
        """Compare a reference call's arguments with an actual call's under this mode."""
        if self.mode == "ignore":
            return ArgDiff(matched=True)
        ignored = {k for k, o in self.overrides.items() if o.ignore}
        exp = {k: v for k, v in expected.items() if k not in ignored}
        act = {k: v for k, v in actual.items() if k not in ignored}
        diff = ArgDiff(matched=True)
        if self.mode in ("exact", "subset"):
            diff.missing = sorted(k for k in exp if k not in act)
        if self.mode in ("exact", "superset"):
            diff.unexpected = sorted(k for k in act if k not in exp)
        for key in sorted(exp.keys() & act.keys()):
            ok, warning = self.values_match(key, exp[key], act[key])
            if not ok:
                diff.different.append(key)
            if warning:
                diff.warnings.append(warning)
        diff.matched = not (diff.missing or diff.unexpected or diff.different)
        return diff


def merge_matching(base: ArgMatching, call: ArgMatching | None) -> ArgMatching:
    """The matching for one reference call: the call's ``mode`` when it set one, and its
    overrides merged over the scenario-wide ones."""
    if call is None:
        return base
    mode = call.mode if "mode" in call.model_fields_set else base.mode
    return ArgMatching(mode=mode, overrides={**base.overrides, **call.overrides})


def compile_matching(matching: ArgMatching, *, field: str = "arg_matching") -> CompiledMatching:
    """Import the matchers named in ``matching``. Raises :class:`CheckConfigError` naming
    ``field.overrides.<key>.matcher`` when one does not import."""
    matchers = {
        key: load_matcher(o.matcher, field=f"{field}.overrides.{key}.matcher")
        for key, o in matching.overrides.items()
        if o.matcher is not None
    }
    return CompiledMatching(mode=matching.mode, overrides=dict(matching.overrides),
                            matchers=matchers)
