"""JSON values compared as JSON: numbers by value (``1`` is ``1.0``), booleans apart from
numbers (``true`` is not ``1``), objects by keys and values, arrays in order. One behaviour for
every place that compares a tool's arguments, a mocked tool's rule, a state or an exported
value, so they cannot disagree."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def is_number(value: Any) -> bool:
    """Whether ``value`` is a JSON number (a bool is not one, though Python says it is)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(
    expected: Any, actual: Any, *, tolerance: float = 0.0, casefold: bool = False
) -> bool:
    """JSON equality, with an optional absolute numeric ``tolerance`` and string
    ``casefold`` applied at every depth. ``true`` is not ``1``; ``1`` is ``1.0``."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if is_number(expected) and is_number(actual):
        diff = abs(expected - actual)
        # isclose absorbs float noise such as abs(2.1 - 2.0) = 0.10000000000000009 > 0.1
        return diff <= tolerance or math.isclose(diff, tolerance, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.casefold() == actual.casefold() if casefold else expected == actual
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(
            json_equal(v, actual[k], tolerance=tolerance, casefold=casefold)
            for k, v in expected.items()
        )
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        return len(expected) == len(actual) and all(
            json_equal(e, a, tolerance=tolerance, casefold=casefold)
            for e, a in zip(expected, actual, strict=True)
        )
    if type(expected) is not type(actual):
        return False
    return bool(expected == actual)
