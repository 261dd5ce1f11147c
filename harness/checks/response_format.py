"""Checks on the form of the agent's final answer: a regex, a JSON Schema, a length limit.

- ``response_matches``: Python ``re`` syntax, ``re.search`` (the pattern may match anywhere;
  anchor it with ``^``/``$`` or ``\\A``/``\\Z`` to match the whole answer; inline flags such
  as ``(?i)`` or ``(?s)`` work).
- ``response_json_schema``: the answer, stripped of surrounding white space, is parsed with
  ``json.loads``. An answer that is exactly one fenced block (```` ```json ```` or ```` ``` ````
  on the first line, ```` ``` ```` on the last) is read inside the fence, because models
  wrap JSON that way even when told not to; any other text around the JSON fails. The parsed
  value is validated with ``jsonschema`` (the draft the schema's ``$schema`` names, else
  2020-12); each failure is a finding naming its JSON path (``$.items[0].price``).
- ``response_max_chars``: the answer has at most N characters (Unicode code points).

Each is 1.0 (passed) or 0.0 (failed), on the final answer (the agent's last message with
text; ``""`` when it never spoke, which matches only a pattern that matches the empty text).
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema

from harness.checks.args import CheckConfigError
from harness.checks.result import CheckResult, Finding
from harness.errors import InputError
from harness.json_values import load_json

_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(?P<body>.*)\n```\Z", re.DOTALL | re.IGNORECASE)


def compile_response_checks(pattern: str | None, schema: dict[str, Any] | None) -> None:
    """Check the regex compiles and the schema is a valid JSON Schema. Raises
    :class:`CheckConfigError` naming ``response_matches`` or ``response_json_schema``."""
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as err:
            raise CheckConfigError("response_matches",
                                   f"a valid Python regular expression ({err})") from None
    if schema is not None:
        try:
            _validator_class(schema).check_schema(schema)
        except jsonschema.SchemaError as err:
            raise CheckConfigError("response_json_schema",
                                   f"a valid JSON Schema ({err.message})") from None


def _validator_class(schema: dict[str, Any]) -> type[jsonschema.protocols.Validator]:
    cls: type[jsonschema.protocols.Validator] = jsonschema.validators.validator_for(
        schema, jsonschema.Draft202012Validator
    )
    return cls


def matches_check(pattern: str, response: str) -> CheckResult:
    """``response_matches``: 1.0 when ``re.search(pattern, response)`` finds a match."""
    found = re.search(pattern, response)
    findings = [] if found else [Finding(
        kind="response_format", subject="response_matches",
        message=f"the final answer does not match the regular expression {pattern!r}",
    )]
    return CheckResult(name="response_matches", value=float(found is not None),
                       passed=found is not None,
                       details={"pattern": pattern,
                                "match": found.group(0) if found else None},
                       findings=findings)


def json_schema_check(schema: dict[str, Any], response: str) -> CheckResult:
    """``response_json_schema``: 1.0 when the answer parses as JSON (inside one fence, if
    fenced) and validates against ``schema``; a finding per failure, naming its path."""
    text = response.strip()
    fence = _FENCE.match(text)
    if fence:
        text = fence.group("body")
    details: dict[str, Any] = {"fenced": fence is not None}
    try:
        value = load_json(text, "the final answer")
    except (json.JSONDecodeError, InputError) as err:
        details["parse_error"] = str(err)
        return CheckResult(name="response_json_schema", value=0.0, passed=False, details=details,
                           findings=[Finding(kind="response_format",
                                             subject="response_json_schema",
                                             message=f"the final answer is not JSON ({err})")])
    cls = _validator_class(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    details["errors"] = [{"path": e.json_path, "message": e.message} for e in errors]
    findings = [Finding(kind="response_format", subject="response_json_schema",
                        message=f"the final answer's JSON at {e.json_path}: {e.message}")
                for e in errors]
    return CheckResult(name="response_json_schema", value=float(not errors), passed=not errors,
                       details=details, findings=findings)


def max_chars_check(limit: int, response: str) -> CheckResult:
    """``response_max_chars``: 1.0 when the answer has at most ``limit`` characters."""
    ok = len(response) <= limit
    findings = [] if ok else [Finding(
        kind="response_format", subject="response_max_chars",
        message=f"the final answer has {len(response)} characters, more than {limit}",
    )]
    return CheckResult(name="response_max_chars", value=float(ok), passed=ok,
                       details={"chars": len(response), "limit": limit}, findings=findings)
