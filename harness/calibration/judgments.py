"""Judgment records (contract 3 in DESIGN.md): what a judge said about labelled items, next to
the human labels. ``harness calibrate --judgments FILE`` reads them; running judges on a dataset
produces the same records (see :func:`pointwise_judgment` and :func:`pairwise_judgments`).

**Pointwise** lines (JSONL; CSV with the conventions of :mod:`harness.calibration.files`)::

    {"item_id": "q1", "human": 4 | [4, 5, 3] | true | null,
     "judge": 4 | [4, 4, 5] | true | null}

``human`` lists are several raters, ``judge`` lists are several samples of the same judge;
``null`` is a missing label or a judge that gave no score. Optional fields:

- ``judge_id``: which judge (or prompt) gave the judgment; several judges in one file are
  analysed separately and compared on their common items. Each (``judge_id``, ``item_id``)
  appears once, and the human labels of an item must be the same on every line.
- ``scale``: ``{"min": 1, "max": 5, "step": 1}`` (``step: null`` for a continuous scale); the
  same on every line that has it (``--scale`` on the CLI wins). A human rating or judge sample
  off it counts as missing for that item, and the report counts and names it.
- ``length`` (a number in any unit, e.g. tokens) or ``output`` (the judged text; its length is
  counted in words): for the verbosity-bias statistic. Use one of the two throughout a file.
- ``cluster``: items with the same cluster (a string) are not independent (the epochs of one
  scenario): the intervals resample whole clusters. Without it every item is its own.
- ``metadata``: any object, kept and ignored.

**Pairwise** lines::

    {"item_id": "p1", "gold": "A" | "B" | "tie" | ["A", "A", "B"] | null,
     "verdict": "A" | "B" | "tie" | null, "swapped": false}

``verdict`` always names the original A/B, also when the judge saw the outputs swapped;
``null`` means the judge gave no verdict. A ``gold`` list holds several raters' preferences (the
majority is the gold label). Optional: ``judge_id``; ``sample`` (the index of a repeated
judgment in the same order; when absent, repeats are numbered in file order);
``length_a``/``length_b`` (lengths of the two outputs, for the length-preference statistic);
``metadata``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from harness.calibration.datasets import (
    PairwiseItem,
    PointwiseItem,
    resolve_scale,
    screen_preferences,
    screen_ratings,
)
from harness.calibration.files import parse_record, read_records
from harness.calibration.report import OffScaleLabel
from harness.calibration.scale import Preference, Ratings, Scale, rating_kinds
from harness.errors import InputError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PointwiseJudgment(_Strict):
    """One item scored by one judge (one or several samples), with its human ratings."""

    item_id: str = Field(min_length=1)
    human: Ratings
    judge: Ratings
    judge_id: str | None = None
    length: float | None = Field(default=None, ge=0)
    output: str | None = None
    scale: Scale | None = None
    cluster: str | None = Field(default=None, min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)


class PairwiseJudgment(_Strict):
    """One pairwise verdict in one presentation order, with the gold preference."""

    item_id: str = Field(min_length=1)
    gold: Preference | list[Preference | None] | None
    verdict: Preference | None
    swapped: StrictBool
    judge_id: str | None = None
    sample: int | None = Field(default=None, ge=0)
    length_a: float | None = Field(default=None, ge=0)
    length_b: float | None = Field(default=None, ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)


LengthSource = Literal["length", "words", "none"]


class PointwiseJudgments(BaseModel):
    """Validated pointwise judgment records from one source.

    ``human_kind``/``judge_kind`` say whether the labels are numbers or booleans (``None`` when
    every label is missing); ``length_source`` says where lengths come from. Labels off
    ``scale`` are ``None`` in ``records`` and listed, with their values, in ``off_scale``;
    ``lines`` are the records' line numbers in ``source``.
    """

    kind: Literal["pointwise"] = "pointwise"
    source: str
    scale: Scale | None = None
    human_kind: Literal["number", "bool"] | None = None
    judge_kind: Literal["number", "bool"] | None = None
    length_source: LengthSource = "none"
    records: list[PointwiseJudgment]
    lines: list[int] = Field(default_factory=list)
    off_scale: list[OffScaleLabel] = Field(default_factory=list)


class PairwiseJudgments(BaseModel):
    """Validated pairwise judgment records from one source; every record has its ``sample``
    index filled in."""

    kind: Literal["pairwise"] = "pairwise"
    source: str
    records: list[PairwiseJudgment]
    off_scale: list[OffScaleLabel] = Field(default_factory=list)


JudgmentSet = PointwiseJudgments | PairwiseJudgments


def load_judgments(path: Path, scale: Scale | None = None) -> JudgmentSet:
    """Read contract-3 judgment records (JSONL or CSV), pointwise or pairwise by the first
    record's fields. ``scale`` overrides a scale declared in the file.

    Raises InputError for an empty file, an unknown kind, a record that fails validation
    (naming line, item and field), duplicates, human labels or gold that differ between lines
    of the same item, or mixed length units. Labels off the scale are not errors: see
    :func:`build_pointwise`.
    """
    expected = "a JSONL or CSV file of judgment records"
    study_file = path / "judgments.jsonl"
    if study_file.is_file():  # a calibration study's --out directory was given
        raise InputError(path, None, f"is a directory; expected {expected} (for a calibration "
                         f"study's judgments, give {study_file})")
    records = read_records(path, expected)
    first_line, first = records[0]
    if "verdict" in first:
        records, off = screen_preferences(path, records, ("gold", "verdict"))
        parsed = [parse_record(PairwiseJudgment, path, ln, rec) for ln, rec in records]
        return build_pairwise(parsed, str(path), [ln for ln, _ in records], off_scale=off)
    if "judge" in first:
        parsed_pw = [parse_record(PointwiseJudgment, path, ln, rec) for ln, rec in records]
        return build_pointwise(parsed_pw, str(path), [ln for ln, _ in records], scale)
    raise InputError(
        path,
        None,
        "cannot tell the judgment kind: a pointwise line has 'human' and 'judge', a pairwise "
        "line has 'gold', 'verdict' and 'swapped'",
        location=first_line,
    )


def build_pointwise(
    records: Sequence[PointwiseJudgment],
    source: str,
    lines: Sequence[int] | None = None,
    scale: Scale | None = None,
    off_scale: Sequence[OffScaleLabel] = (),
) -> PointwiseJudgments:
    """Check pointwise records as a set (uniqueness, one scale, consistent human labels and
    length units) and wrap them. ``lines`` are the records' line numbers (default: their
    positions, 1-based). A human rating or judge sample off the scale becomes ``None`` (missing)
    and is listed in ``off_scale`` (a human label once per item), after any ``off_scale``
    entries found upstream (e.g. in the dataset the records were made from). Raises InputError
    naming the offending line."""
    path = Path(source)
    numbers = list(lines) if lines is not None else list(range(1, len(records) + 1))
    if not records:
        raise InputError(path, None, "no judgment records")
    declared = resolve_scale(path, numbers, [r.scale for r in records], scale)
    ids = [r.item_id for r in records]
    screened, found = screen_ratings(
        path, numbers, ids,
        {"human": [r.human for r in records], "judge": [r.judge for r in records]},
        declared, [r.judge_id for r in records])
    seen: dict[tuple[str | None, str], int] = {}
    human_of: dict[str, tuple[Ratings, int]] = {}
    for line, record in zip(numbers, records, strict=True):
        key = (record.judge_id, record.item_id)
        if key in seen:
            raise InputError(
                path, "item_id",
                f"item {record.item_id!r} appears twice for judge {record.judge_id!r} (first on "
                f"line {seen[key]}); put several judge samples in one 'judge' list",
                location=line,
            )
        seen[key] = line
        earlier = human_of.setdefault(record.item_id, (record.human, line))
        if earlier[0] != record.human:
            raise InputError(
                path, "human",
                f"item {record.item_id!r} has other human labels on line {earlier[1]}; one item "
                "has one set of human labels for every judge",
                location=line,
            )
    with_length = [line for line, r in zip(numbers, records, strict=True) if r.length is not None]
    only_text = [
        line for line, r in zip(numbers, records, strict=True)
        if r.length is None and r.output is not None
    ]
    if with_length and only_text:
        raise InputError(
            path, "length",
            f"missing while line {with_length[0]} gives one; lengths from 'length' and from "
            "'output' (words) would mix units: use one throughout",
            location=only_text[0],
        )
    source_kind: LengthSource = "length" if with_length else ("words" if only_text else "none")
    kept = [
        record if human is record.human and judge is record.judge
        else record.model_copy(update={"human": human, "judge": judge})
        for record, human, judge in zip(records, screened["human"], screened["judge"],
                                        strict=True)
    ]
    return PointwiseJudgments(
        source=source,
        scale=declared,
        human_kind=_kind([r.human for r in kept]),
        judge_kind=_kind([r.judge for r in kept]),
        length_source=source_kind,
        records=kept,
        lines=numbers,
        off_scale=_once_per_label([*off_scale, *found]),
    )


def _once_per_label(entries: Sequence[OffScaleLabel]) -> list[OffScaleLabel]:
    """An item's human labels (and pairwise gold) repeat on every judge's line: name each
    off-scale one once (at its first line). Judge samples and verdicts are each their own."""
    seen: set[tuple[str, str, int | None]] = set()
    out = []
    for entry in entries:
        if entry.field in ("judge", "verdict"):
            out.append(entry)
            continue
        key = (entry.item_id, entry.field, entry.position)
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


def restore_off_scale(data: PointwiseJudgments) -> list[PointwiseJudgment]:
    """``data``'s records with the off-scale labels put back (to check them against another
    scale)."""
    human: dict[str, list[OffScaleLabel]] = {}
    judge: dict[tuple[str | None, str], list[OffScaleLabel]] = {}
    for entry in data.off_scale:
        if entry.field == "human":
            human.setdefault(entry.item_id, []).append(entry)
        else:
            judge.setdefault((entry.judge_id, entry.item_id), []).append(entry)

    def put_back(value: Ratings, entries: list[OffScaleLabel]) -> Ratings:
        for entry in entries:
            label = entry.value
            if isinstance(label, str):  # a pairwise preference; not in pointwise data
                continue
            if entry.position is None:
                value = label
            elif isinstance(value, list) and entry.position < len(value):
                value = [*value[:entry.position], label, *value[entry.position + 1:]]
        return value

    restored = []
    for record in data.records:
        update: dict[str, Ratings] = {}
        if record.item_id in human:
            update["human"] = put_back(record.human, human[record.item_id])
        if (record.judge_id, record.item_id) in judge:
            update["judge"] = put_back(record.judge, judge[(record.judge_id, record.item_id)])
        restored.append(record.model_copy(update=update) if update else record)
    return restored


def _kind(values: Sequence[Ratings]) -> Literal["number", "bool"] | None:
    kinds: set[str] = set()
    for value in values:
        kinds |= rating_kinds(value)
    if "bool" in kinds:
        return "bool"
    return "number" if kinds else None


def build_pairwise(
    records: Sequence[PairwiseJudgment], source: str, lines: Sequence[int] | None = None,
    off_scale: Sequence[OffScaleLabel] = (),
) -> PairwiseJudgments:
    """Check pairwise records as a set and number repeated samples: the k-th record of the same
    (judge, item, order) without an explicit ``sample`` gets sample k. Raises InputError for a
    duplicate (judge, item, order, sample) or gold labels that differ between lines of an item.
    """
    path = Path(source)
    numbers = list(lines) if lines is not None else list(range(1, len(records) + 1))
    if not records:
        raise InputError(path, None, "no judgment records")
    next_sample: dict[tuple[str | None, str, bool], int] = {}
    seen: dict[tuple[str | None, str, bool, int], int] = {}
    gold_of: dict[str, tuple[Any, int]] = {}
    numbered: list[PairwiseJudgment] = []
    for line, record in zip(numbers, records, strict=True):
        order_key = (record.judge_id, record.item_id, record.swapped)
        sample = record.sample if record.sample is not None else next_sample.get(order_key, 0)
        next_sample[order_key] = max(next_sample.get(order_key, 0), sample + 1)
        key = (*order_key, sample)
        if key in seen:
            raise InputError(
                path, "sample",
                f"item {record.item_id!r} already has sample {sample} in this order "
                f"(swapped={record.swapped}) for judge {record.judge_id!r} on line {seen[key]}",
                location=line,
            )
        seen[key] = line
        earlier = gold_of.setdefault(record.item_id, (record.gold, line))
        if earlier[0] != record.gold:
            raise InputError(
                path, "gold",
                f"item {record.item_id!r} has another gold label on line {earlier[1]}",
                location=line,
            )
        numbered.append(record.model_copy(update={"sample": sample}))
    return PairwiseJudgments(source=source, records=numbered,
                             off_scale=_once_per_label(list(off_scale)))


def pointwise_judgment(
    item: PointwiseItem, judge_scores: Sequence[float | bool | None], judge_id: str | None = None
) -> PointwiseJudgment:
    """The judgment record for a dataset item scored by a judge (one score per sample; ``None``
    for a sample whose call failed). The item's text goes in ``output`` for the length
    statistic."""
    return PointwiseJudgment(
        item_id=item.item_id,
        human=item.human,
        judge=list(judge_scores),
        judge_id=judge_id,
        output=item.text,
        scale=item.scale,
    )


def pairwise_judgments(
    item: PairwiseItem,
    verdicts: Mapping[bool, Sequence[Preference | None]],
    judge_id: str | None = None,
) -> list[PairwiseJudgment]:
    """The judgment records for a pairwise dataset item: ``verdicts[swapped]`` lists one verdict
    per sample in that order, each naming the original A/B (``None`` when the judge gave none).
    Output lengths are counted in words."""
    return [
        PairwiseJudgment(
            item_id=item.item_id,
            gold=item.gold,
            verdict=verdict,
            swapped=swapped,
            judge_id=judge_id,
            sample=sample,
            length_a=float(len(item.output_a.split())),
            length_b=float(len(item.output_b.split())),
        )
        for swapped, per_sample in verdicts.items()
        for sample, verdict in enumerate(per_sample)
    ]
