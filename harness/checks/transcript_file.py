"""Existing transcripts as JSONL (contract 4), read and scored with the checks.

One JSON object per line::

    {"id": "T001",
     "messages": [ ...OpenAI chat-format messages, tool calls and tool results included... ],
     "expected_tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}],
     "expectations": { ...optional, any field of the scenario expectations block... },
     "reference_answer": "optional text, shorthand for expectations.reference_answer",
     "final_state": { ...optional: the tools' state at the end, for the final-state check... },
     "tools": [ ...optional: the tool definitions the agent was given... ],
     "system_prompt": "optional: the agent's system prompt, when not a system message",
     "metadata": { ...optional, passed through to the output... }}

``id``, ``messages`` and ``expected_tool_calls`` are required (``[]`` when no tool call is
expected; it may instead be given as ``expectations.tool_calls``, but not both). Unknown keys
are errors, as everywhere. Blank lines are skipped. Bad input raises
:class:`~harness.errors.InputError` naming the file, the line and the field; tool-call
arguments that are not a JSON object are not an error: those calls score as non-matching and
the output carries a warning.

``tools`` and ``system_prompt`` are what the agent was given; judges of tool use are shown
them. A tool definition may be ours (``{name, description, parameters}``), OpenAI's
(``{"type": "function", "function": {...}}``) or Anthropic's (``{name, description,
input_schema}``), mixed freely. The system prompt is given once: as a ``system`` (or
``developer``) message or as ``system_prompt``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.checks.args import CheckConfigError
from harness.checks.result import CheckReport
from harness.checks.run import PreparedExpectations, prepare_expectations, run_checks
from harness.checks.spec import Expectations, ExpectedToolCall
from harness.errors import InputError
from harness.files import read_text
from harness.transcript import (
    ToolDefinitionError,
    Transcript,
    tool_specs_from_definitions,
    transcript_from_openai,
)

KNOWN_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


class TranscriptLine(BaseModel):
    """One line of a contract-4 transcript file, as written by the user."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    messages: list[dict[str, Any]]
    expected_tool_calls: list[ExpectedToolCall] | None = None
    expectations: Expectations | None = None
    reference_answer: str | None = None
    final_state: dict[str, Any] | None = None
    tools: list[Any] | None = None
    system_prompt: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


@dataclass
class TranscriptRecord:
    """A parsed line: the transcript, its prepared expectations, and where it came from."""

    id: str
    line: int
    transcript: Transcript
    expectations: PreparedExpectations
    metadata: dict[str, Any] = field(default_factory=dict)


def _field_path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _validation_to_input_error(path: Path, line: int, err: ValidationError) -> InputError:
    first = err.errors()[0]
    kind = first["type"]
    if kind == "missing":
        expected = "required field is missing"
    elif kind == "extra_forbidden":
        expected = "unknown field (allowed: " + ", ".join(TranscriptLine.model_fields) + ")"
        if len(first["loc"]) > 1:
            expected = "unknown field"
    else:
        expected = first["msg"][0].lower() + first["msg"][1:]
    more = len(err.errors()) - 1
    if more:
        expected += f" (and {more} more problem{'s' if more > 1 else ''} on this line)"
    return InputError(path, _field_path(first["loc"]) or None, expected, location=line)


def _check_messages(path: Path, line: int, messages: list[dict[str, Any]]) -> None:
    """Reject what the OpenAI converter would crash on or misread, naming the field."""
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        role = m.get("role")
        if role not in KNOWN_ROLES:
            raise InputError(path, f"{where}.role",
                             f"one of {', '.join(KNOWN_ROLES)} (got {role!r})", location=line)
        content = m.get("content")
        if content is not None and not isinstance(content, str | list):
            raise InputError(path, f"{where}.content", "a string, a list of parts or null",
                             location=line)
        calls = m.get("tool_calls")
        if calls is None:
            continue
        if not isinstance(calls, list):
            raise InputError(path, f"{where}.tool_calls", "a list of tool calls", location=line)
        for k, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise InputError(path, f"{where}.tool_calls[{k}].function",
                                 'an object with a string "name" (and "arguments")',
                                 location=line)


def _expectations_for(path: Path, line: int, parsed: TranscriptLine) -> Expectations:
    exp = parsed.expectations or Expectations()
    update: dict[str, Any] = {}
    if parsed.expected_tool_calls is not None:
        if exp.tool_calls is not None:
            raise InputError(path, "expected_tool_calls",
                             "given only once (expectations.tool_calls is also set)",
                             location=line)
        update["tool_calls"] = parsed.expected_tool_calls
    elif exp.tool_calls is None:
        raise InputError(path, "expected_tool_calls",
                         "required: a list of {name, args} ([] when no tool call is expected)",
                         location=line)
    if parsed.reference_answer is not None:
        if exp.reference_answer is not None:
            raise InputError(path, "reference_answer",
                             "given only once (expectations.reference_answer is also set)",
                             location=line)
        update["reference_answer"] = parsed.reference_answer
    return exp.model_copy(update=update)


def parse_line(path: Path, line: int, text: str) -> TranscriptRecord:
    """Parse one non-blank line. Raises :class:`InputError` naming ``path:line`` and the
    field."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise InputError(path, None, f"not valid JSON ({err})", location=line) from None
    if not isinstance(data, dict):
        raise InputError(path, None, "a JSON object per line", location=line)
    try:
        parsed = TranscriptLine.model_validate(data)
    except ValidationError as err:
        raise _validation_to_input_error(path, line, err) from None
    _check_messages(path, line, parsed.messages)
    expectations = _expectations_for(path, line, parsed)
    try:
        prepared = prepare_expectations(expectations)
    except CheckConfigError as err:
        where = err.field
        if parsed.expected_tool_calls is not None and where.startswith("tool_calls"):
            where = "expected_tool_calls" + where[len("tool_calls"):]
        else:
            where = f"expectations.{where}"
        raise InputError(path, where, err.expected, location=line) from None
    try:
        tools = tool_specs_from_definitions(parsed.tools or [])
    except ToolDefinitionError as err:
        raise InputError(path, f"tools{err.field}", err.expected, location=line) from None
    if parsed.system_prompt is not None:
        system_at = next((i for i, m in enumerate(parsed.messages)
                          if m.get("role") in ("system", "developer")), None)
        if system_at is not None:
            raise InputError(path, "system_prompt", f"given only once (messages[{system_at}] "
                             "is also a system prompt)", location=line)
    try:
        transcript = transcript_from_openai(parsed.id, parsed.messages, tools=tools,
                                            system_prompt=parsed.system_prompt)
    except (ValueError, TypeError, AttributeError) as err:
        raise InputError(path, "messages", f"OpenAI chat-format messages ({err})",
                         location=line) from None
    if parsed.final_state is not None:
        transcript = transcript.model_copy(update={"final_state": parsed.final_state})
    return TranscriptRecord(id=parsed.id, line=line, transcript=transcript,
                            expectations=prepared, metadata=parsed.metadata)


def load_transcript_file(path: str | Path) -> list[TranscriptRecord]:
    """Read a contract-4 JSONL file. Raises :class:`InputError` for a missing or unreadable
    file, an empty file, a bad line or a duplicate id (naming the line and field)."""
    path = Path(path)
    text = read_text(path, "a JSONL file of transcripts")
    records: list[TranscriptRecord] = []
    first_line_of: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        record = parse_line(path, number, raw)
        if record.id in first_line_of:
            raise InputError(path, "id", f"a unique id ({record.id!r} is also on line "
                             f"{first_line_of[record.id]})", location=number)
        first_line_of[record.id] = number
        records.append(record)
    if not records:
        raise InputError(path, None, "at least one transcript (the file has no lines)")
    return records


def summarise_metrics(rows: Sequence[Mapping[str, float | None]]) -> dict[str, dict[str, Any]]:
    """Per metric, the mean over the rows that have a value, and that count ``n``
    (unscored values are left out, not counted as 0). Metrics keep first-seen order."""
    names = list(dict.fromkeys(name for row in rows for name in row))
    summary: dict[str, dict[str, Any]] = {}
    for name in names:
        values = [v for row in rows if (v := row.get(name)) is not None]
        summary[name] = {"mean": sum(values) / len(values) if values else None,
                         "n": len(values)}
    return summary


def score_records(
    records: Sequence[TranscriptRecord],
    extra_metrics: Mapping[str, Mapping[str, float | None]] | None = None,
) -> dict[str, Any]:
    """Run the checks on every record; return the contract-4 output object.

    ``extra_metrics`` maps a transcript id to more metrics (e.g. judge scores) merged into
    its row and the summary. The output is ``{"transcripts": [...], "summary": {...},
    "warnings": [...]}``: each transcript object has ``id``, ``line``, every metric under its
    name at the top level, ``passed``, ``warnings`` and ``checks`` (the full results with
    details); the summary has ``n_transcripts`` and, per metric, ``mean`` and ``n``.
    """
    rows: list[dict[str, Any]] = []
    metric_rows: list[dict[str, float | None]] = []
    all_warnings: list[str] = []
    for record in records:
        report: CheckReport = run_checks(record.transcript, record.expectations)
        metrics: dict[str, float | None] = report.metrics()
        metrics.update((extra_metrics or {}).get(record.id, {}))
        metric_rows.append(metrics)
        row: dict[str, Any] = {"id": record.id, "line": record.line, **metrics,
                               "passed": report.passed, "warnings": report.warnings,
                               "checks": [r.model_dump(mode="json") for r in report.results]}
        if record.metadata:
            row["metadata"] = record.metadata
        rows.append(row)
        all_warnings.extend(f"line {record.line} (id {record.id}): {w}" for w in report.warnings)
    return {
        "transcripts": rows,
        "summary": {"n_transcripts": len(rows), "metrics": summarise_metrics(metric_rows)},
        "warnings": all_warnings,
    }
