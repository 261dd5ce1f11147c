"""Human labels of a run's samples (contract 10 in DESIGN.md): what a reviewer said about a
sample, stored in the run's own ``run.sqlite`` beside the samples.

A :class:`Label` is one verdict of one reviewer (``annotator``) on one *target* of one sample
(``scenario_id``, ``epoch``):

- ``passed``: did the sample pass, in the reviewer's view (a boolean);
- ``score``: the sample's score, a number in [0, 1];
- ``rubric:<rubric id>``: did the sample pass that rubric (a boolean);
- ``criterion:<rubric id>/<criterion id>``: a value on that criterion's own scale, as the
  rubric defines it (e.g. 1..5), so that it reads as the judge's raw verdict does.

:func:`label_targets` lists what a reviewer can label on a sample, each with the judge's
verdict on the same scale (``judge_value``); :func:`check_label` says whether a label fits
them. :func:`random_queue` is the seeded random order of the run's scored samples: labels
given through it are ``random`` and only those may later correct the suite's figures.
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from harness.judging.rubric import Rubric
from harness.runs.sample import SampleRecord

if TYPE_CHECKING:
    from harness.runs.store import RunStore
    from harness.scenarios.schema import Scenario

LabelValue = StrictBool | StrictInt | StrictFloat
"""A label's value: a boolean (``passed``, ``rubric:``) or a JSON number (``score``,
``criterion:``). Strict: the text ``"4"`` or ``"true"`` is an error, not a guess."""

TargetKind = Literal["bool", "unit", "scale"]

_TARGET = re.compile(
    r"^(?:passed|score|rubric:(?P<rubric>[a-z][a-z0-9_]*)"
    r"|criterion:(?P<crit_rubric>[a-z][a-z0-9_]*)/(?P<criterion>[a-z][a-z0-9_]*))$"
)
TARGET_FORMS = ('"passed", "score", "rubric:<rubric id>" or '
                '"criterion:<rubric id>/<criterion id>"')
QUEUE_SEED_KEY = "label_queue_seed"


def target_kind(target: str) -> TargetKind:
    """The kind of value a target takes. Raises ValueError for a target of no known form."""
    match = _TARGET.match(target)
    if match is None:
        raise ValueError(f"expected {TARGET_FORMS}, got {target!r}")
    if target == "score":
        return "unit"
    if match.group("criterion") is not None:
        return "scale"
    return "bool"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def labelled_timestamp(text: str) -> float:
    """Seconds since the epoch of an ISO 8601 time (one without an offset is read as UTC).
    Raises ValueError when ``text`` is not one."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


class Label(BaseModel):
    """One reviewer's verdict on one target of one sample (contract 10).

    ``random`` says whether the sample was drawn by the random queue (only those labels may
    correct the suite's figures); ``labelled_at`` is set to now (UTC) when absent. Raises
    pydantic's ``ValidationError`` for a field of the wrong type, an unknown field, an empty
    annotator, a target of no known form, or a value of the wrong kind for its target (a
    boolean for ``passed`` and ``rubric:``, a number in [0, 1] for ``score``, a number for
    ``criterion:``; whether it is on the criterion's scale is :func:`check_label`'s to say).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_id: str = Field(min_length=1)
    epoch: StrictInt = Field(ge=0)
    annotator: str = Field(min_length=1, max_length=200)
    target: str
    value: LabelValue
    random: StrictBool
    comment: str | None = Field(default=None, max_length=20_000)
    labelled_at: str = Field(default_factory=_now)

    @field_validator("annotator")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the reviewer's name must not be blank")
        return value

    @field_validator("target")
    @classmethod
    def _known_target(cls, value: str) -> str:
        target_kind(value)
        return value

    @field_validator("labelled_at")
    @classmethod
    def _iso_time(cls, value: str) -> str:
        try:
            labelled_timestamp(value)
        except ValueError:
            raise ValueError(f"expected an ISO 8601 time such as 2026-11-27T20:15:00Z, got "
                             f"{value!r}") from None
        return value

    @model_validator(mode="after")
    def _value_fits_kind(self) -> Label:
        kind = target_kind(self.target)
        if kind == "bool" and not isinstance(self.value, bool):
            raise ValueError(f"value: {self.target} takes true or false, got {self.value!r}")
        if kind != "bool" and isinstance(self.value, bool):
            raise ValueError(f"value: {self.target} takes a number, got {self.value!r}")
        if isinstance(self.value, float) and not math.isfinite(self.value):
            raise ValueError("value: expected a finite number")
        if kind == "unit" and not 0 <= self.value <= 1:
            raise ValueError(f"value: score takes a number from 0 to 1, got {self.value!r}")
        return self

    @property
    def key(self) -> tuple[str, int, str, str]:
        """What a later label replaces: (scenario, epoch, annotator, target)."""
        return (self.scenario_id, self.epoch, self.annotator, self.target)

    def to_json(self) -> dict[str, Any]:
        """The contract-10 object (``comment`` left out when there is none)."""
        return self.model_dump(mode="json", exclude_none=True)


class ScalePoint(BaseModel):
    """One value a reviewer may give, with its name and meaning when the rubric has them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: bool | int | float
    label: str = ""
    meaning: str = ""


class LabelTarget(BaseModel):
    """What a reviewer can label on one sample, with what they need to do it.

    ``kind``: ``bool`` (pass/fail), ``unit`` (a number in [0, 1]) or ``scale`` (one of
    ``values``, the criterion's levels). ``judge_value`` is the harness's verdict on the
    same target and scale (the mean of the judge's samples for a criterion judged several
    times), ``None`` when it has none (an errored sample, a criterion judged N/A).
    ``judge_votes`` are the judge's samples on the criterion's scale; ``judge_reasoning``
    their reasoning, for a page that shows it once the reviewer has labelled.
    """

    model_config = ConfigDict(extra="forbid")

    target: str
    kind: TargetKind
    title: str
    question: str = ""
    rubric_id: str | None = None
    criterion_id: str | None = None
    values: list[ScalePoint] = Field(default_factory=list)
    judge_value: bool | int | float | None = None
    judge_votes: list[bool | int | float] = Field(default_factory=list)
    judge_reasoning: list[str] = Field(default_factory=list)


_PASS_FAIL = [ScalePoint(value=True, label="pass"), ScalePoint(value=False, label="fail")]


def _number(value: float) -> int | float:
    """A scale value as an int when it is one (4, not 4.0)."""
    return int(value) if float(value).is_integer() else value


def label_targets(record: SampleRecord, rubrics: Mapping[str, Rubric]) -> list[LabelTarget]:
    """What a reviewer can label on ``record``: ``passed`` and ``score`` (the sample), then,
    for each rubric the sample was judged on, the rubric's pass/fail and each criterion on
    its own scale. ``rubrics`` are the rubrics the run used (:meth:`RunStore.rubrics`, with a
    scenario's inline ones: :func:`sample_rubrics`); a rubric missing from it gives its
    pass/fail target only."""
    targets = [
        LabelTarget(target="passed", kind="bool", title="the sample passed",
                    question="Did the agent do what the user needed?", values=_PASS_FAIL,
                    judge_value=record.passed),
        LabelTarget(target="score", kind="unit", title="the sample's score",
                    question="How good was the agent, from 0 (worst) to 1 (best)?",
                    judge_value=record.score),
    ]
    for judgment in record.judgments:
        rubric_id = judgment.get("rubric_id")
        if not isinstance(rubric_id, str):
            continue
        rubric = rubrics.get(rubric_id)
        scored = judgment.get("status") == "scored"
        passed = judgment.get("passed") if scored else None
        targets.append(LabelTarget(
            target=f"rubric:{rubric_id}", kind="bool", title=f"rubric {rubric_id}",
            question=rubric.description if rubric is not None else "",
            rubric_id=rubric_id, values=_PASS_FAIL,
            judge_value=passed if isinstance(passed, bool) else None))
        if rubric is not None:
            targets.extend(_criterion_targets(rubric, judgment if scored else {}))
    return targets


def _criterion_targets(rubric: Rubric, judgment: Mapping[str, Any]) -> list[LabelTarget]:
    verdicts = {c.get("criterion_id"): c for c in judgment.get("criteria") or []}
    reasons: dict[str, list[str]] = {}
    for vote in judgment.get("judgments") or []:
        for verdict in vote.get("verdicts") or []:
            text = verdict.get("reasoning")
            if isinstance(text, str) and text:
                reasons.setdefault(verdict.get("criterion_id"), []).append(text)
    out = []
    for criterion in rubric.criteria:
        scale = rubric.scale_of(criterion)
        span = scale.highest - scale.lowest
        found = verdicts.get(criterion.id) or {}
        value = found.get("value")
        votes = [_number(round(scale.lowest + v * span, 9)) for v in found.get("votes") or []
                 if isinstance(v, int | float)]
        out.append(LabelTarget(
            target=f"criterion:{rubric.id}/{criterion.id}", kind="scale",
            title=f"{criterion.id} ({rubric.id})", question=criterion.question,
            rubric_id=rubric.id, criterion_id=criterion.id,
            values=[ScalePoint(value=v, label=name, meaning=meaning)
                    for v, name, meaning in rubric.level_meanings(criterion)],
            judge_value=(_number(round(scale.lowest + value * span, 9))
                         if isinstance(value, int | float) else None),
            judge_votes=votes, judge_reasoning=reasons.get(criterion.id, [])))
    return out


def check_label(label: Label, targets: Sequence[LabelTarget]) -> str | None:
    """Why ``label`` does not fit the sample whose ``targets`` are given (``None`` when it
    does): a target the sample does not have, or a value off the target's scale. The
    message names the field and what was expected."""
    target = next((t for t in targets if t.target == label.target), None)
    if target is None:
        known = ", ".join(t.target for t in targets)
        return (f"target: this sample has no {label.target!r}; expected one of {known}")
    if target.kind == "scale":
        allowed = [p.value for p in target.values]
        if not any(label.value == v for v in allowed):
            shown = ", ".join(str(v) for v in allowed)
            return (f"value: {label.value!r} is not on the scale of {label.target}; "
                    f"expected one of {shown}")
    return None


def sample_rubrics(rubrics: Mapping[str, Rubric], scenario: Scenario | None) -> dict[str, Rubric]:
    """The rubrics a scenario's samples were judged with: the run's, with the scenario's
    inline rubrics in place of any of the same id."""
    out = dict(rubrics)
    if scenario is not None:
        out.update({r.id: r for r in scenario.inline_rubrics})
    return out


def random_queue(store: RunStore) -> list[tuple[str, int]]:
    """The run's scored samples in a seeded random order, the same every time for this run:
    the seed is drawn once and recorded in the store. Each sample's place comes from a hash
    of the seed and its key, so samples stored later (a run still going) join the order
    without moving the others. Raises :class:`~harness.runs.store.StoreError` when the seed
    cannot be recorded."""
    seed = store.meta.get(QUEUE_SEED_KEY) or store.record_meta_once(
        QUEUE_SEED_KEY, secrets.token_hex(8))
    scored = [(sid, epoch) for sid, epoch, status, *_ in store.score_rows() if status == "scored"]

    def place(key: tuple[str, int]) -> str:
        return hashlib.sha256(f"{seed}\0{key[0]}\0{key[1]}".encode()).hexdigest()

    return sorted(scored, key=place)
