"""Existing transcripts, read and scored with the checks: our transcript JSONL (contract 4)
or a Vertex AI agent-evaluation dataset (JSONL or CSV, :mod:`.vertex_dataset`).

The form is decided per file: a ``.csv`` file is a Vertex AI dataset; in JSONL the first
non-blank line decides (``messages`` is ours, ``predicted_trajectory`` or
``reference_trajectory`` is Vertex AI's), and a later line, or a line, with keys of both forms
is an error naming the line and the field.

Our form, one JSON object per line::

    {"id": "T001",
     "messages": [ ...OpenAI chat-format messages, tool calls and tool results included... ],
     "expected_tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}],
     "expectations": { ...optional, any field of the scenario expectations block... },
     "reference_answer": "optional text, shorthand for expectations.reference_answer",
     "final_state": { ...optional: the tools' state at the end, for the final-state check... },
     "tools": [ ...optional: the tool definitions the agent was given... ],
     "system_prompt": "optional: the agent's system prompt, when not a system message",
     "metadata": { ...optional, passed through to the output... },
     "user": { ...optional: the scenario's user block (persona, goal, known_facts,
               unknown_facts, opening_message, plan, ...), to check the user's turns... }}

``id``, ``messages`` and ``expected_tool_calls`` are required (``[]`` when no tool call is
expected; it may instead be given as ``expectations.tool_calls``, but not both). Unknown keys
are errors, as everywhere. Blank lines are skipped. Bad input raises
:class:`~harness.errors.InputError` naming the file, the line and the field; tool-call
arguments that are not a JSON object are not an error: those calls score as non-matching and
the output carries a warning.

``user`` is the simulated user's profile, a scenario's ``user`` block
(:class:`~harness.scenarios.schema.UserSpec`): with it, the simulator checks
(:func:`~harness.simulation.user_checks.simulator_findings`, no model call) read the
transcript's user turns, and its output object lists their ``simulator_findings``. Every
message of the line is the live conversation; a ``history`` in the block is context before it.

``tools`` and ``system_prompt`` are what the agent was given; judges of tool use are shown
them. A tool definition may be ours (``{name, description, parameters}``), OpenAI's
(``{"type": "function", "function": {...}}``) or Anthropic's (``{name, description,
input_schema}``), mixed freely. The system prompt is given once: as a ``system`` (or
``developer``) message or as ``system_prompt``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.checks.args import CheckConfigError
from harness.checks.result import CheckReport
from harness.checks.run import PreparedExpectations, prepare_expectations, run_checks
from harness.checks.spec import Expectations, ExpectedToolCall
from harness.errors import InputError, field_path
from harness.files import read_text
from harness.formats.vertex_dataset import VERTEX_COLUMNS, csv_rows, parse_vertex_row
from harness.json_values import load_json
from harness.scenarios.schema import UserSpec
from harness.simulation.user_checks import FINDING_KINDS, simulator_findings
from harness.stats.bounded import mean_intervals
from harness.stats.sampling import wilson_interval
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
    user: UserSpec | None = None


@dataclass
class TranscriptRecord:
    """A parsed line: the transcript, its prepared expectations, and where it came from.
    ``latency_s`` and ``failed`` come from a Vertex AI row's ``latency_in_seconds`` and
    ``failure`` (``None`` when not given)."""

    id: str
    line: int
    transcript: Transcript
    expectations: PreparedExpectations
    metadata: dict[str, Any] = field(default_factory=dict)
    latency_s: float | None = None
    failed: bool | None = None
    user: UserSpec | None = None


# Keys that belong to one form only (``id`` is in both).
_OUR_KEYS = frozenset(TranscriptLine.model_fields) - {"id"}
_VERTEX_KEYS = frozenset(VERTEX_COLUMNS) - {"id"}
_FORM_NAMES = {"transcript": "our transcript form ({id, messages, expected_tool_calls})",
               "vertex": "a Vertex AI dataset row ({predicted_trajectory, "
                         "reference_trajectory, ...})"}


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
    return InputError(path, field_path(first["loc"]) or None, expected, location=line)


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


def _json_object(path: Path, line: int, text: str) -> dict[str, Any]:
    try:
        data = load_json(text, path, location=line)
    except ValueError as err:
        raise InputError(path, None, f"not valid JSON ({err})", location=line) from None
    if not isinstance(data, dict):
        raise InputError(path, None, "a JSON object per line", location=line)
    return data


def _form_of(path: Path, line: int, data: dict[str, Any]) -> str | None:
    """``"transcript"``, ``"vertex"`` or ``None`` (keys of neither form); raises
    :class:`InputError` when the object has keys of both."""
    ours = [k for k in data if k in _OUR_KEYS]
    theirs = [k for k in data if k in _VERTEX_KEYS]
    if ours and theirs:
        raise InputError(path, theirs[0], f"one form per row: {ours[0]!r} is "
                         f"{_FORM_NAMES['transcript']}, {theirs[0]!r} is "
                         f"{_FORM_NAMES['vertex']}", location=line)
    return "transcript" if ours else "vertex" if theirs else None


def _transcript_record(path: Path, line: int, data: dict[str, Any]) -> TranscriptRecord:
    """One line of our form. Raises :class:`InputError` naming ``path:line`` and the field."""
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
                            expectations=prepared, metadata=parsed.metadata, user=parsed.user)


def _vertex_record(path: Path, line: int, index: int, data: dict[str, Any]
                   ) -> TranscriptRecord:
    row = parse_vertex_row(path, line, data)
    record_id = row.id or f"row-{index}"
    return TranscriptRecord(id=record_id, line=line, transcript=row.transcript(record_id),
                            expectations=prepare_expectations(row.expectations()),
                            latency_s=row.latency_in_seconds, failed=row.failure)


def _jsonl_records(path: Path, text: str) -> Iterator[TranscriptRecord]:
    form: str | None = None
    first_line = 0
    index = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        data = _json_object(path, number, raw)
        line_form = _form_of(path, number, data)
        if form is None:
            form, first_line = line_form or "transcript", number
        elif line_form is not None and line_form != form:
            key = next(k for k in data if k in (_OUR_KEYS if line_form == "transcript"
                                                 else _VERTEX_KEYS))
            raise InputError(path, key, f"one form per file: line {first_line} is "
                             f"{_FORM_NAMES[form]}, this line is {_FORM_NAMES[line_form]}",
                             location=number)
        if form == "vertex":
            yield _vertex_record(path, number, index, data)
        else:
            yield _transcript_record(path, number, data)
        index += 1


def load_transcript_file(path: str | Path) -> list[TranscriptRecord]:
    """Read a file of transcripts: our JSONL (contract 4), or a Vertex AI dataset in JSONL or
    CSV (a ``.csv`` name). Raises :class:`InputError` for a missing or unreadable file, an
    empty file, a bad line or row, forms mixed in a row or a file, or a duplicate id (naming
    the line and field)."""
    path = Path(path)
    is_csv = path.suffix.lower() == ".csv"
    text = read_text(path, "a CSV file of Vertex AI dataset rows" if is_csv
                     else "a JSONL file of transcripts")
    if is_csv:
        rows: Iterable[TranscriptRecord] = (
            _vertex_record(path, line, index, data)
            for index, (line, data) in enumerate(csv_rows(path, text)))
    else:
        rows = _jsonl_records(path, text)
    records: list[TranscriptRecord] = []
    first_line_of: dict[str, int] = {}
    for record in rows:
        if record.id in first_line_of:
            raise InputError(path, "id", f"a unique id ({record.id!r} is also on line "
                             f"{first_line_of[record.id]})", location=record.line)
        first_line_of[record.id] = record.line
        records.append(record)
    if not records:
        raise InputError(path, None, "at least one transcript (the file has no lines)")
    return records


def with_single_tool_use(records: Sequence[TranscriptRecord], tools: Sequence[str]
                         ) -> list[TranscriptRecord]:
    """The records with ``tools`` added to every record's ``single_tool_use`` checks (Vertex
    AI's ``trajectory_single_tool_use``, one check per tool)."""
    if not tools:
        return list(records)
    out = []
    for record in records:
        exp = record.expectations.expectations
        merged = list(dict.fromkeys([*exp.single_tool_use, *tools]))
        prepared = prepare_expectations(exp.model_copy(update={"single_tool_use": merged}))
        out.append(replace(record, expectations=prepared))
    return out


def summarise_metrics(
    rows: Sequence[Mapping[str, float | None]], confidence: float = 0.95
) -> dict[str, dict[str, Any]]:
    """Per metric (first-seen order): the mean over the rows that have a value (unscored
    values are left out, not counted as 0), that count ``n``, and an interval for the mean
    with each transcript one independent unit: ``ci_low``/``ci_high`` and its ``method``.

    Metrics whose values are all 0 or 1 get the Wilson interval of the proportion; others
    the t interval on ``n - 1`` df cut at [0, 1] (every metric here lies in [0, 1]); when
    every value is the same, the exact no-spread interval of run summaries. With fewer than
    2 values there is no interval (``None``)."""
    names = list(dict.fromkeys(name for row in rows for name in row))
    summary: dict[str, dict[str, Any]] = {}
    for name in names:
        values = np.asarray([v for row in rows if (v := row.get(name)) is not None],
                            dtype=float)
        n = int(values.size)
        entry: dict[str, Any] = {"mean": float(values.mean()) if n else None, "n": n,
                                 "ci_low": None, "ci_high": None, "method": None}
        spread = bool(n and values.max() > values.min())
        if n >= 2 and spread and bool(np.isin(values, (0.0, 1.0)).all()):
            low, high = wilson_interval(int(values.sum()), n, confidence)
            entry.update(ci_low=low, ci_high=high, method="wilson")
        elif n >= 2:
            bounds = mean_intervals(np.array([values.mean()]),
                                    np.array([values.std(ddof=1) / np.sqrt(n)]),
                                    np.array([spread]), np.array([n]), confidence=confidence)
            entry.update(ci_low=float(bounds.low[0]), ci_high=float(bounds.high[0]),
                         method=str(bounds.rule[0]))
        summary[name] = entry
    return summary


def summarise_latency(seconds: Sequence[float]) -> dict[str, float | int]:
    """``mean``, ``std`` (sample standard deviation, 0 for one value), ``median``, ``p90``
    (linear interpolation), ``max`` and ``n`` of the latencies (at least one)."""
    values = np.asarray(seconds, dtype=float)
    return {"mean": float(values.mean()),
            "std": float(values.std(ddof=1)) if values.size > 1 else 0.0,
            "median": float(np.median(values)), "p90": float(np.percentile(values, 90)),
            "max": float(values.max()), "n": int(values.size)}


def summarise_failures(failed: int, n: int) -> dict[str, float | int]:
    """The failure rate ``failed / n`` with its 95% Wilson interval (``ci_low``,
    ``ci_high``), ``failed`` and ``n`` (``n`` at least 1)."""
    low, high = wilson_interval(failed, n)
    return {"rate": failed / n, "ci_low": low, "ci_high": high, "failed": failed, "n": n}


def summarise_findings(per_transcript: Sequence[Sequence[Mapping[str, Any]]]
                       ) -> dict[str, Any]:
    """Over the transcripts that carried a ``user`` block (each one's findings as output):
    how many were checked, how many had a finding, how many findings in all and of each
    kind (every kind, 0 included)."""
    kinds = [str(f["kind"]) for findings in per_transcript for f in findings]
    return {"transcripts_checked": len(per_transcript),
            "transcripts_with_findings": sum(1 for f in per_transcript if f),
            "findings": len(kinds),
            "by_kind": {kind: kinds.count(kind) for kind in FINDING_KINDS}}


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

    Records from a Vertex AI dataset may add, per row, ``latency_in_seconds`` and ``failure``
    (0/1) and, in the summary, ``latency_in_seconds`` (:func:`summarise_latency`) and
    ``failure`` (:func:`summarise_failures`), over the rows that give them. An errored
    record (a failed row) has no metric, ``passed`` null and its ``error``. A record with a
    ``user`` block adds ``simulator_findings`` (each ``kind``, ``turn``, ``evidence``; about
    the simulated user, never in its metrics or ``passed``), and the summary counts them
    (:func:`summarise_findings`) when any record has one.
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
        if report.error is not None:
            row["error"] = report.error
        if record.latency_s is not None:
            row["latency_in_seconds"] = record.latency_s
        if record.failed is not None:
            row["failure"] = int(record.failed)
        if record.metadata:
            row["metadata"] = record.metadata
        if record.user is not None:
            row["simulator_findings"] = [
                f.model_dump(mode="json") for f in simulator_findings(
                    record.user, record.transcript.messages,
                    history=record.user.history_messages())]
        rows.append(row)
        all_warnings.extend(f"line {record.line} (id {record.id}): {w}" for w in report.warnings)
    summary: dict[str, Any] = {"n_transcripts": len(rows),
                               "metrics": summarise_metrics(metric_rows)}
    latencies = [r.latency_s for r in records if r.latency_s is not None]
    if latencies:
        summary["latency_in_seconds"] = summarise_latency(latencies)
    failures = [r.failed for r in records if r.failed is not None]
    if failures:
        summary["failure"] = summarise_failures(sum(failures), len(failures))
    checked = [row["simulator_findings"] for row in rows if "simulator_findings" in row]
    if checked:
        summary["simulator_findings"] = summarise_findings(checked)
    return {"transcripts": rows, "summary": summary, "warnings": all_warnings}
