"""Reading labelled-item and judgment files: JSONL or CSV records, each with its line number,
and turning a validation failure into an :class:`~harness.errors.InputError` that names the
file, the line (and item) and the field.

CSV conventions (the same for datasets and judgments):

- the header names the fields; an empty cell is a missing value (``null``);
- several ratings of one item go in numbered columns: ``human_1``, ``human_2``, … (or
  ``judge_1``, …, ``gold_1``, …) and become one list in column order;
- a scale goes in ``scale_min``, ``scale_max`` and optionally ``scale_step`` columns;
- ``true``/``false`` cells (any case) are booleans, numeric cells are numbers.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from harness.errors import InputError
from harness.files import read_text
from harness.json_values import load_json

M = TypeVar("M", bound=BaseModel)

_NUMBERED = re.compile(r"^(?P<field>[a-z_]+?)_(?P<index>\d+)$")
_TEXT_FIELDS = frozenset(
    {"item_id", "text", "input", "context", "output", "output_a", "output_b", "judge_id"}
)
_SCALE_COLUMNS = {"scale_min": "min", "scale_max": "max", "scale_step": "step"}
_LIST_FIELDS = frozenset({"human", "judge", "gold"})


def read_records(path: Path, expected: str) -> list[tuple[int, dict[str, Any]]]:
    """Read a ``.jsonl`` or ``.csv`` file into ``(line number, record)`` pairs; ``expected``
    says what the file should hold (e.g. ``"a JSONL or CSV file of judgment records"``).

    Raises InputError when the file is missing, a directory, unreadable or not UTF-8 (see
    :func:`harness.files.read_text`), not valid JSON(L)/CSV, holds a line that is not a JSON
    object, or holds no records at all.
    """
    text = read_text(path, expected)
    is_csv = path.suffix.lower() == ".csv"
    records = list(_csv_records(path, text) if is_csv else _jsonl(path, text))
    if not records:
        raise InputError(path, None, "the file holds no records (expected one record per line)")
    return records


def _jsonl(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = load_json(line, path, location=number)
        except json.JSONDecodeError as err:
            raise InputError(path, None, f"invalid JSON ({err.msg})", location=number) from err
        if not isinstance(record, dict):
            raise InputError(path, None, "expected a JSON object on each line", location=number)
        yield number, record


def _csv_records(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(text.splitlines())
    if not reader.fieldnames:
        return
    for row in reader:
        number = reader.line_num
        if None in row:  # more cells than header columns
            raise InputError(path, None, "more cells than header columns", location=number)
        if all((cell or "").strip() == "" for cell in row.values()):
            continue
        yield number, _csv_row(row)


def _csv_row(row: dict[str, str | None]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    numbered: dict[str, list[tuple[int, Any]]] = {}
    scale: dict[str, Any] = {}
    for column, raw in row.items():
        name = column.strip()
        cell = (raw or "").strip()
        value: Any = cell if name in _TEXT_FIELDS else _cell_value(cell)
        if name in _TEXT_FIELDS and cell == "":
            value = None
        if name in _SCALE_COLUMNS:
            if value is not None:
                scale[_SCALE_COLUMNS[name]] = value
            continue
        match = _NUMBERED.match(name)
        if match and match["field"] in _LIST_FIELDS:
            numbered.setdefault(match["field"], []).append((int(match["index"]), value))
            continue
        record[name] = value
    for field, cells in numbered.items():
        record[field] = [value for _, value in sorted(cells)]
    if scale:
        # a discrete scale with the default step unless scale_step is a column; an empty
        # scale_step cell declares a continuous scale
        if "scale_step" in row and scale.get("step") is None:
            scale["step"] = None
        record["scale"] = scale
    return record


def _cell_value(cell: str) -> Any:
    if cell == "":
        return None
    lowered = cell.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return float(cell)
    except ValueError:
        return cell  # kept as text; the record's validation names the field


_FIELD_HINTS = {
    "human": "a number, true/false, a list of those (one per rater), or null",
    "judge": "a number, true/false, a list of those (one per judge sample), or null",
    "gold": '"A", "B", "tie", a list of those (one per rater), or null',
    "verdict": '"A", "B", "tie", or null when the judge gave no verdict',
}


def validation_error(
    path: Path, line: int, err: ValidationError, record: dict[str, Any]
) -> InputError:
    """An InputError for the first validation failure of a record: file, line, field (and item
    id when the record has one) and what was expected."""
    errors = err.errors()
    first = errors[0]
    loc = [str(part) for part in first["loc"]]
    message = first["msg"]
    if loc and loc[0] in _FIELD_HINTS and first["type"] != "missing":
        # say what the field accepts rather than which member of its union failed how
        loc = loc[:1]
        message = f"expected {_FIELD_HINTS[loc[0]]}, got {first['input']!r}"
    elif first["type"] == "extra_forbidden":
        message = "unknown field (check its spelling; extra data goes under 'metadata')"
    item = record.get("item_id")
    if isinstance(item, str | int):
        message += f" (item {item!r})"
    return InputError(path, ".".join(loc) or None, message, location=line)


def parse_record(
    model: type[M], path: Path, line: int, record: dict[str, Any]
) -> M:
    """Validate one record as ``model``; raise InputError naming file, line and field."""
    try:
        return model.model_validate(record)
    except ValidationError as err:
        raise validation_error(path, line, err, record) from err
