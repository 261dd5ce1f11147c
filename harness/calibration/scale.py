"""The rating scale a set of labels lives on, and the label value types shared by datasets and
judgment records.

A scale has bounds and, for a discrete scale, a step: ``{"min": 1, "max": 5}`` is the 1–5
Likert scale (step 1), ``{"min": 0, "max": 1, "step": null}`` is a continuous score. A label off
the declared scale is a missing label, counted and named in the report. Boolean labels
(pass/fail) live on the scale 0–1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, model_validator

Preference = Literal["A", "B", "tie"]
"""A pairwise preference: output A better, output B better, or the two equally good."""

PREFERENCES: tuple[Preference, ...] = ("A", "B", "tie")

Score = StrictBool | StrictFloat
"""One rating: a JSON number on the scale, or a boolean pass/fail label (strict: the text
"4" is not a number here, so a quoted label is an error rather than a guess)."""

Ratings = Score | list[Score | None] | None
"""One or several ratings of one item (several raters, or several judge samples). ``None``
(or a list of only ``None``) means the label is missing; ``None`` inside a list is one missing
rating."""

_TOLERANCE = 1e-9


class Scale(BaseModel):
    """A rating scale: ``min`` ≤ score ≤ ``max``; a discrete scale's scores are
    ``min + k * step``. ``step = None`` declares a continuous scale."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: float
    max: float
    step: float | None = 1.0

    @model_validator(mode="after")
    def _consistent(self) -> Scale:
        if not (math.isfinite(self.min) and math.isfinite(self.max)) or self.max <= self.min:
            raise ValueError("the scale needs finite bounds with min < max")
        if self.step is not None:
            if self.step <= 0:
                raise ValueError("the scale's step must be positive (or null for continuous)")
            points = (self.max - self.min) / self.step
            if abs(points - round(points)) > 1e-6:
                raise ValueError("max - min must be a whole number of steps")
        return self

    @property
    def discrete(self) -> bool:
        return self.step is not None

    def points(self) -> np.ndarray:
        """The scale's points, lowest first. Raises ValueError on a continuous scale."""
        if self.step is None:
            raise ValueError("a continuous scale has no points")
        count = round((self.max - self.min) / self.step) + 1
        return self.min + self.step * np.arange(count)

    def contains(self, value: float) -> bool:
        """Whether ``value`` is on the scale (within the bounds and, if discrete, on a point)."""
        if not (self.min - _TOLERANCE <= value <= self.max + _TOLERANCE):
            return False
        if self.step is None:
            return True
        k = (value - self.min) / self.step
        return abs(k - round(k)) <= 1e-6

    def describe(self) -> str:
        if self.step is None:
            return f"a number from {self.min:g} to {self.max:g}"
        return f"a number from {self.min:g} to {self.max:g} in steps of {self.step:g}"

    def codes(self, values: np.ndarray) -> np.ndarray:
        """Category index (0 = ``min``) of each value, rounding half up to the nearest point.

        Half up rather than Python's half-to-even so that a mean of 3.5 always becomes 4: a
        documented, order-free rule for the consensus of an even number of raters.
        """
        if self.step is None:
            raise ValueError("a continuous scale has no categories")
        top = round((self.max - self.min) / self.step)
        raw = np.floor((np.asarray(values, dtype=float) - self.min) / self.step + 0.5 + 1e-9)
        return np.clip(raw, 0, top).astype(int)


BOOLEAN_SCALE = Scale(min=0.0, max=1.0, step=1.0)


def infer_scale(values: Sequence[float]) -> Scale | None:
    """A scale for labels that declare none: integer-valued labels give the integer scale
    from their smallest to their largest value (at least two points); anything else gives
    ``None`` (no categories,
    so kappa and the confusion matrix are reported as undefined)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return None
    low, high = min(finite), max(finite)
    if all(float(v).is_integer() for v in finite):
        # one distinct value still gets a (two-point) scale, so kappa can say what is wrong
        return Scale(min=low, max=max(high, low + 1), step=1.0)
    return None


def rating_values(ratings: Ratings) -> list[float | None]:
    """The ratings of one item as a list of numbers (``None`` for a missing rating); booleans
    become 1.0 (pass) and 0.0 (fail)."""
    if ratings is None:
        return []
    listed = ratings if isinstance(ratings, list) else [ratings]
    return [None if value is None else float(value) for value in listed]


def rating_kinds(ratings: Ratings) -> set[str]:
    """Which kinds of rating a value holds: a subset of ``{"bool", "number"}``."""
    listed = ratings if isinstance(ratings, list) else [ratings]
    kinds: set[str] = set()
    for value in listed:
        if isinstance(value, bool):
            kinds.add("bool")
        elif value is not None:
            kinds.add("number")
    return kinds
