"""Vertex AI's tabular agent-evaluation dataset, read as transcripts and expectations.

A row (a JSONL object, or a CSV record under a header) has Vertex AI's columns::

    predicted_trajectory  the tool calls the agent made: [{"tool_name", "tool_input"}, ...]
    reference_trajectory  the tool calls expected, in the same shape
    prompt                optional: the user's request
    response              optional: the agent's final answer
    reference             optional: the reference answer (``response_match_score`` is
                          computed when both ``response`` and ``reference`` are given)
    latency_in_seconds    optional: how long the agent took (a number >= 0)
    failure               optional: 1 when the agent run failed, else 0

plus an optional ``id`` of ours (default ``row-<k>``, ``k`` counting data rows from 0 as the
pandas index Vertex AI shows). Other columns are errors, as everywhere.

Decisions:

- ``tool_input`` is an object of arguments, or a string holding one in JSON (the form Vertex
  AI's API sends); any other value, or a string that is not a JSON object, is an error.
  A call without ``tool_input`` has no arguments (``{}``).
- Both trajectories are required (``[]`` for none): they are what this form is for.
- A row with ``failure`` 1 is an errored sample: no metric is computed for it, it is counted
  in the failure rate and reported apart, never scored 0.
- A text cell (``prompt``, ``response``, ``reference``) holds at most :data:`CELL_LIMIT`
  characters (128 KiB, the CSV module's own limit on a field), in JSONL as in CSV.
- In CSV, each cell is text: trajectories are JSON text; ``latency_in_seconds`` a number;
  ``failure`` ``0``, ``1``, ``true`` or ``false``; an empty cell is a missing value (so an
  empty ``response`` cell is no response, not an empty one).

Bad input raises :class:`~harness.errors.InputError` naming the file, the line (for CSV, the
line where the record starts) and the field.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.checks.spec import Expectations, ExpectedToolCall
from harness.errors import InputError, field_path
from harness.json_values import load_json
from harness.transcript import ErrorInfo, Transcript, transcript_from_openai

TRAJECTORY_COLUMNS = ("predicted_trajectory", "reference_trajectory")
VERTEX_COLUMNS = ("id", *TRAJECTORY_COLUMNS, "prompt", "response", "reference",
                  "latency_in_seconds", "failure")
# The longest text cell: Python's csv module refuses a longer CSV field by default, and a JSONL
# cell is held to the same (two 10 MB cells took minutes to score; 128 KiB take a second or two).
CELL_LIMIT = 128 * 1024


class VertexToolCall(BaseModel):
    """One item of a trajectory: a tool's name and its arguments."""

    model_config = ConfigDict(extra="forbid")

    tool_name: str = Field(min_length=1)
    tool_input: dict[str, Any] = Field(default_factory=dict)

    @field_validator("tool_input", mode="before")
    @classmethod
    def _decode_json_text(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            decoded = load_json(value, "tool_input")
        except InputError as err:
            raise ValueError(f"a JSON object within limits: {err.expected}") from None
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            raise ValueError("an object, or a string holding a JSON object "
                             f"(got the string {value[:60]!r})")
        return decoded


class VertexRow(BaseModel):
    """One row of a Vertex AI agent-evaluation dataset (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, min_length=1)
    predicted_trajectory: list[VertexToolCall]
    reference_trajectory: list[VertexToolCall]
    prompt: str | None = Field(default=None, max_length=CELL_LIMIT)
    response: str | None = Field(default=None, max_length=CELL_LIMIT)
    reference: str | None = Field(default=None, max_length=CELL_LIMIT)
    latency_in_seconds: float | None = Field(default=None, ge=0, strict=True,
                                             allow_inf_nan=False)
    failure: bool | None = None

    @field_validator("failure", mode="before")
    @classmethod
    def _zero_or_one(cls, value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int | float) and value in (0, 1):
            return bool(value)
        raise ValueError(f"0 or 1 (or true/false), got {value!r}")

    def transcript(self, transcript_id: str) -> Transcript:
        """The row as an imported conversation: the prompt as the user's message, the
        predicted calls in one assistant message, then the response. A failed row is an
        errored transcript (``agent_error``)."""
        messages: list[dict[str, Any]] = []
        if self.prompt is not None:
            messages.append({"role": "user", "content": self.prompt})
        if self.predicted_trajectory:
            calls = [{"id": f"call_{i}", "type": "function",
                      "function": {"name": c.tool_name, "arguments": json.dumps(c.tool_input)}}
                     for i, c in enumerate(self.predicted_trajectory)]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        if self.response is not None:
            messages.append({"role": "assistant", "content": self.response})
        transcript = transcript_from_openai(transcript_id, messages)
        if self.failure:
            transcript = transcript.model_copy(update={
                "stop_reason": "agent_error",
                "error": ErrorInfo(kind="failure", role="agent",
                                   message="failure = 1 in the dataset"),
            })
        return transcript

    def expectations(self) -> Expectations:
        """The reference calls, and the reference answer when there is a response to compare
        it with."""
        reference = self.reference if self.response is not None else None
        return Expectations(
            tool_calls=[ExpectedToolCall(name=c.tool_name, args=c.tool_input)
                        for c in self.reference_trajectory],
            reference_answer=reference,
        )


def parse_vertex_row(path: Path, line: int, data: dict[str, Any]) -> VertexRow:
    """Validate one row. Raises :class:`InputError` naming ``path:line`` and the field."""
    try:
        return VertexRow.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = field_path(first["loc"]) or None
        if first["type"] == "missing":
            expected = "required field is missing"
            if first["loc"][0] in TRAJECTORY_COLUMNS and len(first["loc"]) == 1:
                expected += " (a list of {tool_name, tool_input}; [] for none)"
        elif first["type"] == "extra_forbidden" and len(first["loc"]) == 1:
            expected = "unknown column (Vertex AI's are: " + ", ".join(VERTEX_COLUMNS) + ")"
        elif first["type"] == "extra_forbidden":
            expected = "unknown field (a trajectory item has tool_name and tool_input)"
        elif first["type"] == "list_type":
            expected = "a list of {tool_name, tool_input} objects"
        elif first["type"] in ("model_type", "model_attributes_type"):
            expected = "an object {tool_name, tool_input}"
        elif first["type"] == "dict_type" and first["loc"][-1] == "tool_input":
            expected = f"an object, or a string holding a JSON object (got {first['input']!r})"
        elif first["type"] == "string_too_long":
            expected = (f"a cell of at most {CELL_LIMIT:,} characters, as a CSV cell (this one "
                        f"has {len(first['input']):,}); refused before scoring")
        elif first["type"] == "value_error":
            expected = str(first["ctx"]["error"])
        else:
            expected = first["msg"][0].lower() + first["msg"][1:]
        raise InputError(path, where, expected, location=line) from None


def _cell(path: Path, line: int, column: str, text: str) -> Any:
    """A CSV cell as the value a JSONL row would hold (``None`` for an empty cell)."""
    if text == "":
        return None
    if column in TRAJECTORY_COLUMNS:
        try:
            return load_json(text, path, location=line)
        except ValueError as err:
            raise InputError(path, column, f"JSON text of a list of {{tool_name, tool_input}} "
                             f"objects (not valid JSON: {err})", location=line) from None
    if column == "latency_in_seconds":
        try:
            return float(text)
        except ValueError:
            raise InputError(path, column, f"a number of seconds (got {text[:40]!r})",
                             location=line) from None
    if column == "failure":
        flags = {"0": False, "1": True, "false": False, "true": True}
        if text.strip().lower() not in flags:
            raise InputError(path, column, f"0 or 1 (or true/false), got {text[:40]!r}",
                             location=line)
        return flags[text.strip().lower()]
    return text


def csv_rows(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The data rows of a Vertex AI dataset in CSV, as ``(line, values)``: ``line`` is where
    the record starts (the header is line 1), values are converted as a JSONL row holds them
    and empty cells left out. Blank lines are skipped. Raises :class:`InputError` for a bad
    header (empty, unknown or repeated column), a record with more or fewer cells than the
    header, or a cell that does not convert."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as err:
        raise InputError(path, None, f"CSV ({err})", location=1) from None
    if not header:
        raise InputError(path, None, "a CSV header naming Vertex AI's columns "
                         "(predicted_trajectory, reference_trajectory, ...)", location=1)
    for i, name in enumerate(header):
        if name not in VERTEX_COLUMNS:
            raise InputError(path, name or f"column {i + 1}", "unknown column (Vertex AI's "
                             "are: " + ", ".join(VERTEX_COLUMNS) + ")", location=1)
        if name in header[:i]:
            raise InputError(path, name, "each column once", location=1)
    line = reader.line_num + 1
    while True:
        try:
            record = next(reader, None)
        except csv.Error as err:
            raise InputError(path, None, f"CSV ({err})", location=line) from None
        if record is None:
            return
        if record:
            if len(record) != len(header):
                raise InputError(path, None, f"{len(header)} cells as in the header (this "
                                 f"record has {len(record)})", location=line)
            values = {name: _cell(path, line, name, cell) for name, cell in zip(header, record,
                                                                                 strict=True)}
            yield line, {k: v for k, v in values.items() if v is not None}
        line = reader.line_num + 1
