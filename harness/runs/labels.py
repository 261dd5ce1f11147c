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
import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from harness.judging.rubric import Rubric
from harness.runs.label_model import (
    TARGET_FORMS,
    Label,
    LabelValue,
    TargetKind,
    labelled_timestamp,
    target_kind,
)
from harness.runs.sample import SampleRecord

if TYPE_CHECKING:
    from harness.runs.store import RunStore
    from harness.scenarios.schema import Scenario

QUEUE_SEED_KEY = "label_queue_seed"


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
        return (f"target: this sample has no {label.target!r}; expected one of "
                f"{some([t.target for t in targets])}")
    if target.kind == "scale":
        allowed = [p.value for p in target.values]
        if not any(label.value == v for v in allowed):
            shown = ", ".join(str(v) for v in allowed)
            return (f"value: {label.value!r} is not on the scale of {label.target}; "
                    f"expected one of {shown}")
    return None


def some(names: Sequence[str], shown: int = 6) -> str:
    """The first ``shown`` names, then how many there are in all (for one-line messages)."""
    if len(names) <= shown:
        return ", ".join(names)
    return ", ".join(names[:shown]) + f", … ({len(names)} in all)"


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
    seed = store.meta_value(QUEUE_SEED_KEY) or store.record_meta_once(
        QUEUE_SEED_KEY, secrets.token_hex(8))
    scored = [(sid, epoch) for sid, epoch, status, *_ in store.score_rows() if status == "scored"]

    def place(key: tuple[str, int]) -> str:
        return hashlib.sha256(f"{seed}\0{key[0]}\0{key[1]}".encode()).hexdigest()

    return sorted(scored, key=place)


__all__ = ["TARGET_FORMS", "Label", "LabelTarget", "LabelValue", "ScalePoint", "TargetKind",
           "check_label", "label_targets", "labelled_timestamp", "random_queue",
           "sample_rubrics", "target_kind"]
