"""The one registry of checks: the built-in ones and a user's own register the same way.

A check is a function ``f(transcript, expectations, **args)`` returning a
:class:`~harness.checks.result.CheckResult`, a list of them (a check that reports several
metrics from one pass, as ``trajectory`` does), a number in [0, 1] or a bool. It is
registered under a name with :func:`check`, and a scenario names it by that name (``use``)
or by its import path; :mod:`harness.checks.run` binds it to its arguments and runs it.

``prepare``, when given, is called once when a scenario loads with the spec's ``args`` and
returns the keyword arguments the check is called with: the place to validate them and to
compile what every sample reuses (patterns, matchers). It raises
:class:`~harness.checks.args.CheckConfigError` naming the argument that cannot be used.

This module stays light (no check is defined here), so that ``import harness`` can offer
:func:`check` without loading what the checks need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

CheckFunction = Callable[..., Any]
PrepareArgs = Callable[[dict[str, Any]], dict[str, Any]]
F = TypeVar("F", bound=CheckFunction)


@dataclass(frozen=True)
class RegisteredCheck:
    """A check function under its registered name, with its optional ``prepare``."""

    name: str
    function: CheckFunction
    prepare: PrepareArgs | None = None


_REGISTRY: dict[str, RegisteredCheck] = {}


def check(name: str, *, prepare: PrepareArgs | None = None) -> Callable[[F], F]:
    """Register the decorated function as the check called ``name`` (then ``use: name`` in a
    scenario). ``prepare`` (optional) turns the spec's ``args`` into the keyword arguments the
    check is called with, once per scenario (see the module docstring). Returns the function
    unchanged. Raises ``ValueError`` when another function already holds that name."""

    def register(function: F) -> F:
        held = _REGISTRY.get(name)
        if held is not None and qualified_name(held.function) != qualified_name(function):
            raise ValueError(
                f"check {name!r} is already registered by {qualified_name(held.function)}"
            )
        _REGISTRY[name] = RegisteredCheck(name=name, function=function, prepare=prepare)
        return function

    return register


def registered(name: str) -> RegisteredCheck | None:
    """The check registered as ``name``, or ``None``."""
    return _REGISTRY.get(name)


def registered_for(function: CheckFunction) -> RegisteredCheck | None:
    """The registration of ``function`` (found by identity), or ``None``."""
    return next((r for r in _REGISTRY.values() if r.function is function), None)


def registered_names() -> list[str]:
    """Every registered name, sorted."""
    return sorted(_REGISTRY)


def qualified_name(function: CheckFunction) -> str:
    """``module.qualname`` of a function, for messages."""
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', '?')}"
