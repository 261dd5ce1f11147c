"""The final answer's form: response_matches (Python re, search), response_json_schema
(fences, failing paths) and response_max_chars; bad patterns and schemas refused at load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.checks.args import CheckConfigError
from harness.checks.failures import analyse_failures
from harness.checks.run import prepare_expectations, run_checks
from harness.checks.spec import Expectations
from harness.errors import InputError, InputErrors
from harness.models.types import Message
from harness.scenarios.loading import load_scenarios
from harness.transcript import Transcript


def _tx(answer: str | None) -> Transcript:
    messages = [Message(role="user", content="hi")]
    if answer is not None:
        messages.append(Message(role="assistant", content=answer))
    return Transcript(scenario_id="s", stop_reason="imported", messages=messages)


def _run(answer: str | None, **expectations: Any) -> Any:
    return run_checks(_tx(answer), Expectations(**expectations))


@pytest.mark.parametrize(("pattern", "answer", "value"), [
    (r"order \d+", "Your order 42 ships Monday.", 1.0),  # a search: anywhere in the answer
    (r"^order \d+$", "Your order 42 ships Monday.", 0.0),  # anchored: the whole answer
    (r"^order \d+$", "order 42", 1.0),
    (r"(?i)REFUND", "Your refund is on its way.", 1.0),  # inline flags work
    (r"REFUND", "Your refund is on its way.", 0.0),  # case-sensitive by default
    (r"ships", None, 0.0),  # the agent never spoke: the final answer is ""
])
def test_response_matches_searches_with_python_re(pattern: str, answer: str | None,
                                                  value: float) -> None:
    result = _run(answer, response_matches=pattern).get("response_matches")
    assert (result.value, result.passed) == (value, value == 1.0)
    assert [f.kind for f in result.findings] == ([] if value else ["response_format"])


SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["order_id", "items"],
    "properties": {
        "order_id": {"type": "integer"},
        "items": {"type": "array", "items": {"type": "object", "required": ["sku"],
                                             "properties": {"price": {"type": "number"}}}},
    },
}


@pytest.mark.parametrize(("answer", "value", "fenced"), [
    ('{"order_id": 7, "items": []}', 1.0, False),
    ('  \n{"order_id": 7, "items": []}\n', 1.0, False),
    ('```json\n{"order_id": 7, "items": []}\n```', 1.0, True),
    ('```\n{"order_id": 7, "items": []}\n```', 1.0, True),
    ('Here it is:\n```json\n{"order_id": 7, "items": []}\n```', 0.0, False),  # text outside
    ('{"order_id": 7, "items": []} hope that helps', 0.0, False),
])
def test_json_schema_reads_one_fenced_block_and_nothing_around_it(
    answer: str, value: float, fenced: bool
) -> None:
    result = _run(answer, response_json_schema=SCHEMA).get("response_json_schema")
    assert result.value == value and result.details["fenced"] is fenced
    if not value:
        assert "not JSON" in result.findings[0].message


def test_json_schema_findings_name_each_failing_path() -> None:
    answer = '{"order_id": "7", "items": [{"sku": "a", "price": 1}, {"price": "free"}]}'
    result = _run(answer, response_json_schema=SCHEMA).get("response_json_schema")
    assert result.value == 0.0 and result.passed is False
    paths = [e["path"] for e in result.details["errors"]]
    assert paths == ["$.items[1]", "$.items[1].price", "$.order_id"]
    # cross-checked: jsonschema itself finds the same three failures
    assert len(list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(
        json.loads(answer)))) == 3
    messages = [f.message for f in result.findings]
    assert any(m.startswith("the final answer's JSON at $.order_id: '7' is not of type")
               for m in messages)
    analysis = analyse_failures([_run(answer, response_json_schema=SCHEMA)])
    assert [(g.kind, g.key) for g in analysis.groups] == [
        ("response_format", "response_json_schema")]


@pytest.mark.parametrize(("answer", "value"), [
    ("12345", 1.0), ("123456", 0.0), ("é" * 5, 1.0), (None, 1.0),
])
def test_response_max_chars_counts_characters(answer: str | None, value: float) -> None:
    result = _run(answer, response_max_chars=5).get("response_max_chars")
    assert result.value == value
    assert result.details["limit"] == 5


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("response_matches", "order (", "a valid Python regular expression"),
    ("response_json_schema", {"type": "nonsense"}, "a valid JSON Schema"),
])
def test_a_bad_pattern_or_schema_is_refused_before_scoring(
    tmp_path: Path, field: str, value: Any, expected: str
) -> None:
    with pytest.raises(CheckConfigError, match=expected) as caught:
        prepare_expectations(Expectations(**{field: value}))
    assert caught.value.field == field
    (tmp_path / "s.yaml").write_text(
        "id: s\nuser: {goal: g, script: [hi]}\nagent: {model: 'mock:agent'}\n"
        f"expectations: {{{field}: {json.dumps(value)}}}\n")
    with pytest.raises((InputError, InputErrors)) as loaded:
        load_scenarios([str(tmp_path)])
    assert f"expectations.{field}" in str(loaded.value) and expected in str(loaded.value)


def test_an_adk_export_names_the_new_checks_as_not_carried() -> None:
    from harness.checks.spec import CheckSpec
    from harness.formats.adk.export import export_eval_set
    from harness.scenarios.schema import Scenario

    scenario = Scenario.model_validate({
        "id": "s", "user": {"goal": "g", "script": ["hi"]},
        "expectations": {"response_matches": "x", "response_max_chars": 9},
        "checks": [CheckSpec(use="pkg.mod:tone").model_dump()],
        "scoring": {"weights": {"checks": 2}}, "agent": {},
    })
    [note] = export_eval_set([scenario], "set").not_carried
    assert note == ("s: not carried (ADK has no field for it): response_matches, "
                    "response_max_chars, check tone, scoring.weights")
