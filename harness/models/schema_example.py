"""Build a small value that satisfies a JSON Schema.

Used where something must answer "sensibly" without a model: the offline ``mock:echo``
behaviour (structured output from a response model's defaults and minimal valid values) and
the loopback test server's auto responder (schema-valid tool arguments and structured answers).
It covers the subset of JSON Schema that pydantic and tool definitions produce: ``$ref`` into
``$defs``, ``const``/``enum``/``default``, ``anyOf``/``oneOf``/``allOf``, typed objects with
``required`` properties, arrays with ``minItems``, strings with ``minLength``/``format``, and
numbers with bounds.
"""

from __future__ import annotations

import math
from typing import Any

_STRING_FORMATS: dict[str, str] = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00",
    "email": "user@example.com",
    "uri": "https://example.com",
    "uuid": "00000000-0000-0000-0000-000000000000",
}


def example_from_schema(schema: dict[str, Any], *, fill_optional: bool = False) -> Any:
    """Return a JSON value valid against ``schema`` (a JSON Schema dict).

    A ``default`` is used where the schema gives one; otherwise the smallest value that meets
    the constraints (empty string, 0, ``false``, the first enum member, ``minItems`` items).
    Objects get their required properties, and every property when ``fill_optional`` is set.
    Raises ``ValueError`` for a ``$ref`` that does not resolve.
    """
    return _example(schema, schema.get("$defs") or schema.get("definitions") or {},
                    fill_optional, depth=0)


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema
    name = ref.rsplit("/", 1)[-1]
    if name not in defs:
        raise ValueError(f"JSON Schema $ref {ref!r} does not resolve")
    merged = {**defs[name], **{k: v for k, v in schema.items() if k != "$ref"}}
    return _resolve(merged, defs)


def _example(schema: Any, defs: dict[str, Any], fill_optional: bool, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 32:  # `true` schemas, and cycles kept finite
        return None
    schema = _resolve(schema, defs)
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, defs))
        merged.update({k: v for k, v in schema.items() if k != "allOf"})
        return _example(merged, defs, fill_optional, depth + 1)
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = [_resolve(o, defs) for o in schema[key]]
            # Prefer a non-null branch so optional fields still show their shape.
            non_null = [o for o in options if o.get("type") != "null"]
            return _example((non_null or options)[0], defs, fill_optional, depth + 1)

    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or kind
        kind = kinds[0]
    if kind is None:
        kind = "object" if "properties" in schema else "string"

    if kind == "object":
        props: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        return {
            name: _example(sub, defs, fill_optional, depth + 1)
            for name, sub in props.items()
            if name in required or fill_optional
        }
    if kind == "array":
        prefix = schema.get("prefixItems")
        if prefix:
            return [_example(p, defs, fill_optional, depth + 1) for p in prefix]
        count = int(schema.get("minItems", 0))
        item = _example(schema.get("items", {}), defs, fill_optional, depth + 1)
        return [item for _ in range(count)]
    if kind == "string":
        fmt = schema.get("format")
        if fmt in _STRING_FORMATS:
            return _STRING_FORMATS[fmt]
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return False
    return None


def _number(schema: dict[str, Any], *, integer: bool) -> int | float:
    """Zero when the bounds allow it, else the value nearest zero inside them."""
    value: float = 0
    low, high = schema.get("minimum"), schema.get("maximum")
    ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if low is not None and value < low:
        value = low
    if ex_low is not None and value <= ex_low:
        value = math.floor(ex_low) + 1 if integer else ex_low + 1e-6
    if high is not None and value > high:
        value = high
    if ex_high is not None and value >= ex_high:
        value = math.ceil(ex_high) - 1 if integer else ex_high - 1e-6
    if integer:
        return math.ceil(value) if value > 0 else math.floor(value)
    return float(value)
