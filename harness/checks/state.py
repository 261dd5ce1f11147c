"""Final-state check for stateful mocks: does the tools' state at the end equal (or contain)
the expected state? The result is a readable diff, one line per difference, with a JSON path.

``equals``: JSON equality everywhere (extra keys are differences). ``contains``: every
expected key must be present with a value that contains the expected one, recursively;
extra keys are allowed in objects at any depth. Arrays are compared element by element and
must have the same length in both modes (an array is a value, not a bag of optional items);
their elements are compared in the same mode.
"""

from __future__ import annotations

from typing import Any, Literal

from harness.json_values import json_equal

MAX_DIFF_LINES = 50


def _path_key(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


def _walk(expected: Any, actual: Any, path: str, mode: str, out: list[str]) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            sub = _path_key(path, str(key))
            if key not in actual:
                out.append(f"{sub}: missing (expected {value!r})")
            else:
                _walk(value, actual[key], sub, mode, out)
        if mode == "equals":
            for key in actual.keys() - expected.keys():
                out.append(f"{_path_key(path, str(key))}: unexpected (got {actual[key]!r})")
        return
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            out.append(f"{path}: expected {len(expected)} items, got {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            _walk(e, a, f"{path}[{i}]", mode, out)
        return
    if not json_equal(expected, actual):
        out.append(f"{path}: expected {expected!r}, got {actual!r}")


def state_diff(
    expected: dict[str, Any], actual: dict[str, Any], mode: Literal["equals", "contains"]
) -> list[str]:
    """Differences between ``actual`` and ``expected`` under ``mode`` (empty when the check
    passes), sorted and capped at :data:`MAX_DIFF_LINES` with a final "... and N more"."""
    out: list[str] = []
    _walk(expected, actual, "$", mode, out)
    out.sort()
    if len(out) > MAX_DIFF_LINES:
        extra = len(out) - MAX_DIFF_LINES
        out = [*out[:MAX_DIFF_LINES], f"... and {extra} more"]
    return out
