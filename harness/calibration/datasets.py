"""Labelled-item datasets: the items a judge is run on, with the human labels to compare with.

Two kinds, in JSONL (one object per line) or CSV (see :mod:`harness.calibration.files` for the
CSV conventions). The kind is recognised from the first record's fields.

**Pointwise** (a judge scores one output)::

    {"item_id": "q1", "text": "the output to judge", "input": "the request (optional)",
     "context": "reference or source text (optional)", "human": [4, 5, 3],
     "scale": {"min": 1, "max": 5}}

- ``human``: one score, a list of scores (one per rater; ``null`` for a rater who skipped the
  item), or ``true``/``false`` pass labels; ``null`` when the item has no label yet.
- ``scale``: optional on each line; when given it must be the same on every line. A scale can
  also be passed to the loader (the CLI's ``--scale``), which then wins.
- ``metadata``: optional object kept with the item.

**Pairwise** (a judge picks the better of two outputs)::

    {"item_id": "p1", "input": "the request", "output_a": "...", "output_b": "...",
     "gold": "A"}

- ``gold``: ``"A"``, ``"B"`` or ``"tie"``, a list of such preferences (one per rater), or
  ``null`` when not labelled.

An unknown field, a label that is not a number (or true/false), a preference outside
A/B/tie, a duplicate ``item_id`` or an empty file is an :class:`~harness.errors.InputError`
naming the file, line and field. A number off the declared scale is not: it becomes a missing
rating of its item and is listed in the dataset's ``off_scale`` (the report counts and names
it), so one mistyped label does not stop a study.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.calibration.files import parse_record, read_records
from harness.calibration.report import OffScaleLabel
from harness.calibration.scale import (
    PREFERENCES,
    Preference,
    Ratings,
    Scale,
    rating_kinds,
    rating_values,
)
from harness.errors import InputError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PointwiseItem(_Strict):
    """One output to be scored, with its human ratings."""

    item_id: str = Field(min_length=1)
    text: str
    input: str | None = None
    context: str | None = None
    human: Ratings = None
    scale: Scale | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class PairwiseItem(_Strict):
    """Two outputs for one input, with the human (or gold) preference."""

    item_id: str = Field(min_length=1)
    input: str
    output_a: str
    output_b: str
    gold: Preference | list[Preference | None] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class PointwiseDataset(BaseModel):
    """Pointwise items read from ``source``, on ``scale`` (``None``: not declared)."""

    kind: Literal["pointwise"] = "pointwise"
    source: str
    scale: Scale | None
    items: list[PointwiseItem]
    off_scale: list[OffScaleLabel] = Field(default_factory=list)


class PairwiseDataset(BaseModel):
    """Pairwise items read from ``source``."""

    kind: Literal["pairwise"] = "pairwise"
    source: str
    items: list[PairwiseItem]
    off_scale: list[OffScaleLabel] = Field(default_factory=list)


def load_dataset(path: Path, scale: Scale | None = None) -> PointwiseDataset | PairwiseDataset:
    """Read a labelled-item dataset (JSONL or CSV), pointwise or pairwise by its first record.

    ``scale`` overrides any scale declared in the file. A human rating off the scale becomes
    ``None`` (a missing rating) and is listed in ``off_scale``. Raises InputError for an empty
    file, an unknown kind, a record that fails validation, a duplicate ``item_id``, a scale that
    differs between lines, a rating that is not a finite number, or booleans mixed with numbers.
    """
    records = read_records(path, "a JSONL or CSV file of labelled items")
    first_line, first = records[0]
    if "output_a" in first or "output_b" in first:
        records, off_pw = screen_preferences(path, records, ("gold",))
        items_pw = [parse_record(PairwiseItem, path, line, rec) for line, rec in records]
        _check_unique(path, records, [item.item_id for item in items_pw])
        return PairwiseDataset(source=str(path), items=items_pw, off_scale=off_pw)
    if "text" in first:
        items = [parse_record(PointwiseItem, path, line, rec) for line, rec in records]
        _check_unique(path, records, [item.item_id for item in items])
        lines = [line for line, _ in records]
        declared = resolve_scale(path, lines, [item.scale for item in items], scale)
        screened, off_scale = screen_ratings(path, lines, [item.item_id for item in items],
                                             {"human": [item.human for item in items]}, declared)
        items = [item if human is item.human else item.model_copy(update={"human": human})
                 for item, human in zip(items, screened["human"], strict=True)]
        return PointwiseDataset(source=str(path), scale=declared, items=items,
                                off_scale=off_scale)
    raise InputError(
        path,
        None,
        "cannot tell the dataset kind: a pointwise item needs 'text', a pairwise item needs "
        "'output_a' and 'output_b'",
        location=first_line,
    )


def screen_preferences(
    path: Path, records: list[tuple[int, dict[str, Any]]],
    fields: Sequence[Literal["gold", "verdict"]],
) -> tuple[list[tuple[int, dict[str, Any]]], list[OffScaleLabel]]:
    """Raw pairwise records with every preference in ``fields`` that is a string other than
    "A", "B" or "tie" replaced by ``None`` (a missing preference), and one
    :class:`OffScaleLabel` per replaced value. Anything that is not a string is left for
    validation to refuse."""
    off: list[OffScaleLabel] = []
    screened: list[tuple[int, dict[str, Any]]] = []
    expected = '"A", "B" or "tie"'
    for line, record in records:
        item_id = str(record.get("item_id", "?"))
        judge_id = record.get("judge_id") if isinstance(record.get("judge_id"), str) else None
        changed = dict(record)
        for name in fields:
            value = record.get(name)
            values = value if isinstance(value, list) else [value]
            bad = [i for i, v in enumerate(values) if isinstance(v, str) and v not in PREFERENCES]
            if not bad:
                continue
            off += [OffScaleLabel(source=str(path), line=line, item_id=item_id,
                                  field=name,
                                  judge_id=judge_id if name == "verdict" else None,
                                  position=i if isinstance(value, list) else None,
                                  value=values[i], expected=expected) for i in bad]
            kept = [None if i in bad else v for i, v in enumerate(values)]
            changed[name] = kept if isinstance(value, list) else kept[0]
        screened.append((line, changed))
    return screened, off


def _check_unique(path: Path, records: list[tuple[int, dict[str, Any]]], ids: list[str]) -> None:
    seen: dict[str, int] = {}
    for (line, _), item_id in zip(records, ids, strict=True):
        if item_id in seen:
            raise InputError(
                path, "item_id", f"duplicate item {item_id!r} (first on line {seen[item_id]})",
                location=line,
            )
        seen[item_id] = line


def resolve_scale(
    path: Path, lines: list[int], declared: list[Scale | None], override: Scale | None
) -> Scale | None:
    """The one scale of a file: ``override`` if given, else the scale every line that declares
    one agrees on. Raises InputError naming the first line whose scale differs."""
    if override is not None:
        return override
    found: Scale | None = None
    for line, scale in zip(lines, declared, strict=True):
        if scale is None:
            continue
        if found is None:
            found = scale
        elif scale != found:
            raise InputError(
                path, "scale", f"differs from the scale declared earlier ({found.describe()})",
                location=line,
            )
    return found


def screen_ratings(
    path: Path,
    lines: list[int],
    item_ids: list[str],
    fields: dict[str, list[Ratings]],
    scale: Scale | None,
    judge_ids: list[str | None] | None = None,
) -> tuple[dict[str, list[Ratings]], list[OffScaleLabel]]:
    """Check, line by line, every rating in ``fields`` (field name → one value per line) and set
    aside the numbers off ``scale``; ``judge_ids`` (one per line) name the judge of the
    ``judge`` field's samples.

    Returns the fields with each off-scale number replaced by ``None`` (the value object itself
    when nothing in it changed) and one :class:`OffScaleLabel` per replaced number. Raises
    InputError naming the first bad line, its item and field for a rating that is not a finite
    number and for a field that mixes booleans with numbers across the file: those say the
    file is not what it claims to be, where an off-scale number is one mistyped label.
    """
    kinds_seen: dict[str, set[str]] = {name: set() for name in fields}
    screened: dict[str, list[Ratings]] = {name: [] for name in fields}
    off_scale: list[OffScaleLabel] = []
    for row, (line, item_id) in enumerate(zip(lines, item_ids, strict=True)):
        for field, values in fields.items():
            value = values[row]
            kinds = rating_kinds(value)
            kinds_seen[field] |= kinds
            if len(kinds_seen[field]) > 1:
                raise InputError(
                    path, field,
                    f"mixes true/false labels with numbers (item {item_id!r}); use one kind",
                    location=line,
                )
            if "bool" in kinds:
                screened[field].append(value)
                continue
            for number in rating_values(value):
                if number is not None and not math.isfinite(number):
                    raise InputError(
                        path, field, f"expected a finite number, got {number} (item {item_id!r})",
                        location=line,
                    )
            kept, dropped = _without_off_scale(value, scale)
            screened[field].append(kept)
            off_scale += [
                OffScaleLabel(source=str(path), line=line, item_id=item_id,
                              field=field,
                              judge_id=judge_ids[row] if judge_ids and field == "judge"
                              else None,
                              position=position, value=number,
                              expected=scale.describe() if scale is not None else "")
                for position, number in dropped
            ]
    return screened, off_scale


def _without_off_scale(
    value: Ratings, scale: Scale | None
) -> tuple[Ratings, list[tuple[int | None, float]]]:
    """``value`` with its numbers off ``scale`` replaced by ``None``, and those numbers with
    their positions (``None`` for a single value)."""
    if scale is None or value is None or isinstance(value, bool):
        return value, []
    if not isinstance(value, list):
        return (value, []) if scale.contains(float(value)) else (None, [(None, float(value))])
    dropped: list[tuple[int | None, float]] = [
        (i, float(v)) for i, v in enumerate(value)
        if v is not None and not isinstance(v, bool) and not scale.contains(float(v))]
    if not dropped:
        return value, []
    off = {i for i, _ in dropped}
    return [None if i in off else v for i, v in enumerate(value)], dropped
