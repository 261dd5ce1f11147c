"""The human label of one target of one sample (contract 10 in DESIGN.md), on its own so
that the store can read and write labels without importing what uses them
(:mod:`harness.runs.labels` is the module to import)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any, Literal

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
