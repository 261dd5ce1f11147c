"""Rubric scoring, as pure functions: per-criterion normalised scores in, the rubric score and
its pass verdict out.

- A criterion's score is normalised to [0, 1] on its scale (lowest level 0, highest 1).
- The rubric score is the weighted mean of the normalised scores of the criteria that applied;
  N/A criteria are left out (not counted as 0). When none applied, the rubric is explicitly
  *not scored* (``score is None`` with a reason), never 0.
- The rubric passes when its score >= the rubric threshold (normalised units). A criterion
  fails when its normalised score is below its own threshold (or the rubric's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from harness.judging.rubric import Rubric

EPS = 1e-9
"""Scores are means of fractions: without this tolerance 0.7 could fail a 0.7 threshold."""


class RubricScore(BaseModel):
    """The rubric score, whether it passed, which criteria failed, or why it is unscored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    score: float | None
    passed: bool | None
    failed_criteria: list[str] = Field(default_factory=list)
    unscored_reason: str | None = None


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """The mean of the values that are not ``None``; ``None`` when there are none."""
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def criterion_passed(rubric: Rubric, criterion_id: str, normalised: float | None) -> bool | None:
    """Whether a criterion's normalised score reaches its threshold (``None`` when N/A)."""
    if normalised is None:
        return None
    return normalised >= rubric.criterion_threshold(rubric.criterion(criterion_id)) - EPS


def score_rubric(rubric: Rubric, criterion_scores: Mapping[str, float | None]) -> RubricScore:
    """Combine per-criterion normalised scores (``None`` = not applicable) into the rubric
    score. Criteria missing from ``criterion_scores`` raise ``KeyError``: a judgment must
    cover every criterion of its rubric."""
    weighted, weights, failed = 0.0, 0.0, []
    for crit in rubric.criteria:
        value = criterion_scores[crit.id]
        if value is None:
            continue
        weighted += crit.weight * value
        weights += crit.weight
        if not criterion_passed(rubric, crit.id, value):
            failed.append(crit.id)
    if weights == 0:
        return RubricScore(
            score=None, passed=None,
            unscored_reason="not scored: no criterion of the rubric applied (all N/A)",
        )
    score = weighted / weights
    return RubricScore(score=score, passed=score >= rubric.threshold - EPS,
                       failed_criteria=failed)
