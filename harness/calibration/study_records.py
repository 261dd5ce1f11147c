"""What a calibration study's judge answers become: the study's settings, how a rubric
criterion's answer is compared with the human labels, and the contract-3 judgment records
(pure functions; :mod:`harness.calibration.study` makes the calls).

Pointwise labels are compared in one of three ways (:func:`label_mode`):

- ``levels``: numeric human labels on the criterion's own scale (e.g. 1–5 for
  ``ordinal_1_5``): the judge's level is the judge score;
- ``mapped``: numeric labels on another scale, with an explicit ``scale_map``
  ``{judge level: human-scale value}`` covering every level of the criterion;
- ``pass``: ``true``/``false`` labels: the judge score is the criterion's pass verdict (its
  normalised score reaching the criterion's threshold, or the rubric's).

Anything else (another scale and no map, a map that misses a level or leaves the human scale)
is an InputError before any model call.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness import errors
from harness.calibration.datasets import PairwiseItem, PointwiseDataset, PointwiseItem
from harness.calibration.judgments import (
    PairwiseJudgment,
    PointwiseJudgment,
    pairwise_judgments,
    pointwise_judgment,
)
from harness.calibration.scale import Preference, Scale, rating_kinds, rating_values
from harness.errors import InputError
from harness.judging.judge import JudgeSettings
from harness.judging.rubric import Rubric
from harness.judging.scoring import criterion_passed
from harness.judging.verdicts import JudgeError, JudgeOutcome
from harness.models.types import GenerationParams

LabelMode = Literal["levels", "mapped", "pass", "pairwise"]
Record = PointwiseJudgment | PairwiseJudgment

# Failures that would hit every call alike (a missing key, an unknown model, a replay-cache
# miss): they stop the study instead of being recorded as one missing verdict per call.
class StudySettings(BaseModel):
    """Everything that decides what a study's records mean, stored in ``study.json``. A
    resumed study must have the same settings (the dataset may move, its content not)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["pointwise", "pairwise"]
    dataset: str
    dataset_sha256: str
    rubric: str = Field(description="rubric id@version")
    rubric_sha256: str
    prompt_hash: str
    criterion: str | None = Field(description="pointwise: the criterion scored; pairwise: "
                                              "the criterion compared on (null: whole rubric)")
    labels: LabelMode
    scale_map: dict[int, float] | None = None
    samples: int = Field(ge=1, le=100)
    swap: bool
    allow_ties: bool
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_reasks: int = Field(default=2, ge=0, le=10)

    def params(self) -> GenerationParams:
        """The generation parameters of every judge call."""
        return JudgeSettings(samples=self.samples, temperature=self.temperature,
                             max_reasks=self.max_reasks).params()


class StudyCounts(BaseModel):
    """What a (possibly resumed) study did. A unit is one (judge, item) pair."""

    model_config = ConfigDict(extra="forbid")

    units: int = 0
    units_resumed: int = 0
    units_judged: int = 0
    failed_calls: int = 0
    not_applicable: int = 0
    usage: dict[str, Any] = Field(default_factory=dict)


# --- scales --------------------------------------------------------------------------------


def criterion_scale(rubric: Rubric, criterion_id: str) -> Scale:
    """The calibration scale of a rubric criterion: lowest to highest level in steps of the
    levels' greatest common spacing (so every level is a point of it)."""
    values = rubric.scale_of(criterion_id).values
    step = 0
    for low, high in itertools.pairwise(values):
        step = math.gcd(step, high - low)
    return Scale(min=values[0], max=values[-1], step=float(step or 1))


def choose_criterion(rubric: Rubric, criterion: str | None) -> str:
    """``criterion`` if the rubric has it, else the rubric's first criterion. Raises
    InputError naming ``--criterion`` and listing the rubric's criteria."""
    ids = [c.id for c in rubric.criteria]
    if criterion is None:
        return ids[0]
    if criterion not in ids:
        raise InputError("--criterion", None, f"rubric {rubric.id!r} has no criterion "
                                              f"{criterion!r}; its criteria: {', '.join(ids)}")
    return criterion


def label_mode(dataset: PointwiseDataset, rubric: Rubric, criterion: str,
               scale_map: Mapping[int, float] | None) -> tuple[LabelMode, Scale | None]:
    """How the judge's answers are compared with the dataset's human labels (see the module
    docstring), and the scale of the records. Raises InputError naming the dataset (and item)
    or ``--scale-map``."""
    kinds: set[str] = set()
    for item in dataset.items:
        kinds |= rating_kinds(item.human)
    levels = rubric.scale_of(criterion).values
    if "bool" in kinds:
        if scale_map is not None:
            raise InputError("--scale-map", None, "the human labels are true/false; they are "
                             "compared with the criterion's pass verdict, so no map applies")
        return "pass", dataset.scale
    if scale_map is not None:
        _check_map(scale_map, levels, criterion, dataset.scale)
        return "mapped", dataset.scale
    own = criterion_scale(rubric, criterion)
    if dataset.scale is not None and dataset.scale != own:
        raise InputError(Path(dataset.source), "scale", f"the human labels are "
                         f"{dataset.scale.describe()}, but criterion {criterion!r} of rubric "
                         f"{rubric.id!r} answers {own.describe()}; choose a criterion on the "
                         "same scale (--criterion) or map its levels onto the human scale "
                         "(--scale-map LEVEL=VALUE,...)")
    for item in dataset.items:
        for value in rating_values(item.human):
            if value is not None and not own.contains(value):
                raise InputError(Path(dataset.source), "human", f"{value:g} is off criterion "
                                 f"{criterion!r}'s scale ({own.describe()}); declare the "
                                 "dataset's scale and give --scale-map", location=item.item_id)
    return "levels", own


def _check_map(scale_map: Mapping[int, float], levels: Sequence[int], criterion: str,
               human: Scale | None) -> None:
    missing = [lv for lv in levels if lv not in scale_map]
    extra = [lv for lv in scale_map if lv not in levels]
    if missing or extra:
        raise InputError("--scale-map", None, f"map every level of criterion {criterion!r} "
                         f"({', '.join(map(str, levels))}) exactly once; "
                         + (f"missing {missing}" if missing else f"not levels: {extra}"))
    for level, value in scale_map.items():
        if not math.isfinite(value) or (human is not None and not human.contains(value)):
            expected = human.describe() if human is not None else "a finite number"
            raise InputError("--scale-map", None, f"level {level} maps to {value:g}, which is "
                             f"off the human scale; expected {expected}")


def parse_scale_map(text: str) -> dict[int, float]:
    """``LEVEL=VALUE,LEVEL=VALUE,...`` (judge level → human-scale value), e.g.
    ``1=1,2=1,3=2,4=3,5=3``. Raises InputError naming ``--scale-map``."""
    mapping: dict[int, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        level, sep, value = part.partition("=")
        try:
            if not sep:
                raise ValueError(part)
            key, number = int(level.strip()), float(value.strip())
        except ValueError:
            raise InputError("--scale-map", None, "expected LEVEL=VALUE pairs separated by "
                             f"commas, e.g. 1=1,2=1,3=2,4=3,5=3; got {part!r}") from None
        if key in mapping:
            raise InputError("--scale-map", None, f"level {key} is mapped twice")
        mapping[key] = number
    if not mapping:
        raise InputError("--scale-map", None, "expected LEVEL=VALUE pairs, got nothing")
    return mapping


# --- judge answers -------------------------------------------------------------------------


@dataclass
class SampleResult:
    """One judge sample of one item. Pointwise: ``level`` (``None`` when N/A or failed), the
    error and reasoning under key ``False``. Pairwise: per order (``swapped``), the verdict
    naming the original A/B (``None`` when that call failed), what the judge said by position,
    its reasoning, and the error."""

    level: int | None = None
    verdicts: dict[bool, Preference | None] = field(default_factory=dict)
    said: dict[bool, Preference] = field(default_factory=dict)
    reasoning: dict[bool, str] = field(default_factory=dict)
    errors: dict[bool, str] = field(default_factory=dict)
    not_applicable: bool = False


def raise_if_fatal(error_type: str | None, message: str | None) -> None:
    """Raise the configuration error a failed call stands for (see
    :data:`harness.errors.FATAL_MODEL_ERRORS`)."""
    errors.raise_if_fatal(error_type, message, kept="the judgments finished so far are kept")


def pointwise_sample(outcome: JudgeOutcome, criterion: str) -> SampleResult:
    """The criterion's level from one judge outcome. A failed call is an error (no level);
    a fatal one raises (:func:`raise_if_fatal`)."""
    if isinstance(outcome, JudgeError):
        raise_if_fatal(outcome.error_type, outcome.message)
        return SampleResult(errors={False: f"{outcome.error_type}: {outcome.message}"})
    for verdict in outcome.verdicts:
        if verdict.criterion_id == criterion:
            return SampleResult(level=verdict.score, reasoning={False: verdict.reasoning},
                                not_applicable=verdict.score is None)
    return SampleResult(not_applicable=True,
                        reasoning={False: outcome.unscored_reason or "not scored"})


def judge_value(rubric: Rubric, settings: StudySettings, level: int) -> float | bool:
    """The judge score a criterion level becomes under the study's label mode."""
    assert settings.criterion is not None
    if settings.labels == "pass":
        normalised = rubric.scale_of(settings.criterion).normalise(level)
        return bool(criterion_passed(rubric, settings.criterion, normalised))
    if settings.labels == "mapped":
        assert settings.scale_map is not None
        return float(settings.scale_map[level])
    return float(level)


def pointwise_record(item: PointwiseItem, judge_id: str, samples: Sequence[SampleResult],
                     settings: StudySettings, rubric: Rubric, scale: Scale | None,
                     offline: bool) -> PointwiseJudgment:
    """The contract-3 record of one (judge, item): one judge value per sample (``None`` for
    a failed call or an N/A answer); levels, reasoning and errors under ``metadata``."""
    values = [None if s.level is None else judge_value(rubric, settings, s.level)
              for s in samples]
    record = pointwise_judgment(item, values, judge_id=judge_id)
    metadata = {
        "rubric": settings.rubric, "criterion": settings.criterion, "offline": offline,
        "levels": [s.level for s in samples],
        "reasoning": [s.reasoning.get(False) for s in samples],
        "errors": {str(i): s.errors[False] for i, s in enumerate(samples) if s.errors},
        "not_applicable": [i for i, s in enumerate(samples) if s.not_applicable],
    }
    return record.model_copy(update={"scale": scale, "metadata": metadata})


def pairwise_records(item: PairwiseItem, judge_id: str, samples: Sequence[SampleResult],
                     settings: StudySettings, offline: bool) -> list[PairwiseJudgment]:
    """The contract-3 records of one (judge, item): one line per sample and order asked, the
    verdict naming the original A/B (``None`` for a failed call; its error in ``metadata``)."""
    orders = (False, True) if settings.swap else (False,)
    records = pairwise_judgments(
        item, {swapped: [s.verdicts.get(swapped) for s in samples] for swapped in orders},
        judge_id=judge_id)
    out = []
    for record in records:
        sample = samples[record.sample or 0]
        metadata: dict[str, Any] = {"rubric": settings.rubric, "criterion": settings.criterion,
                                    "offline": offline,
                                    "said": sample.said.get(record.swapped),
                                    "reasoning": sample.reasoning.get(record.swapped)}
        if record.swapped in sample.errors:
            metadata["error"] = sample.errors[record.swapped]
        out.append(record.model_copy(update={"metadata": metadata}))
    return out


def has_error(record: Record) -> bool:
    """Whether a study record holds a failed call (so a resumed study judges it again)."""
    return bool(record.metadata.get("errors") or record.metadata.get("error"))


def record_line(record: Record) -> str:
    """One JSONL line (contract 3) for a record; empty optional fields are left out."""
    data = record.model_dump(mode="json")
    for key in ("length", "output", "scale", "cluster", "sample", "length_a", "length_b"):
        if key in data and data[key] is None:
            del data[key]
    return json.dumps(data, ensure_ascii=False, allow_nan=False)
