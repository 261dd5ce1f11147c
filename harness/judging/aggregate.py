"""Combining judge votes: ``n`` samples of one judge, and a panel of several judges.

A *vote* is one set of per-criterion normalised scores (``None`` = N/A). Samples of one judge
are votes; for a panel, each judge's aggregate is one vote (judges weigh equally, however many
samples each took). Methods:

- ``mean``: per criterion, the mean of the applicable votes (N/A left out; N/A only when every
  vote said N/A);
- ``majority``: per criterion, the most frequent answer, N/A counting as an answer. Ties go to
  the lowest tied score (the conservative choice), and N/A wins only outright.

The rubric score is then computed from the per-criterion aggregates (see
:mod:`harness.judging.scoring`). Disagreement is reported beside it: per criterion the spread
(sample standard deviation and range of the applicable votes) and the agreement (the share of
vote pairs that gave the same answer); overall the spread of the votes' rubric scores, the
share of criteria on which votes differ, the mean pairwise agreement, and the share of votes
agreeing with the majority pass/fail verdict.

A ``user_turn`` rubric combines per user turn instead (:mod:`harness.judging.user_turns`): a
turn passes by the majority of the votes (or holds the share of votes passing it, for
``mean``), and the score is the share of turns that pass; its criteria are aggregated as
above, for reading.

Failed votes (:class:`~harness.judging.verdicts.JudgeError`) are counted apart and kept; the
aggregate is over the successful ones. When every vote failed, the aggregate is a judge error,
never a score.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.choices import AggregationMethod as AggregationMethod  # re-exported
from harness.errors import FATAL_MODEL_ERRORS
from harness.judging.rubric import Rubric, RubricTarget
from harness.judging.scoring import RubricScore, criterion_passed, score_rubric
from harness.judging.user_turns import combine_turn_votes, score_user_turns
from harness.judging.verdicts import JudgeError, JudgeOutcome, Judgment, UserTurnVerdict

AggregateStatus = Literal["scored", "not_scored", "judge_error"]

Vote = Mapping[str, float | None]


class CriterionAggregate(BaseModel):
    """One criterion across votes."""

    model_config = ConfigDict(extra="forbid")

    criterion_id: str
    value: float | None = Field(description="aggregated normalised score; None = N/A")
    passed: bool | None
    votes: list[float | None]
    n_applicable: int
    stdev: float | None = Field(description="sample standard deviation of applicable votes")
    range: float | None = Field(description="max - min of applicable votes")
    agreement: float | None = Field(description="share of vote pairs giving the same answer")
    unanimous: bool | None


class Disagreement(BaseModel):
    """How much the votes disagree (``None`` where fewer than two votes make it undefined)."""

    model_config = ConfigDict(extra="forbid")

    score_stdev: float | None = None
    score_range: float | None = None
    criteria_disagreeing: float | None = Field(
        default=None, description="share of criteria on which not all votes gave one answer")
    pairwise_agreement: float | None = Field(
        default=None, description="mean over criteria of the share of agreeing vote pairs")
    pass_agreement: float | None = Field(
        default=None, description="share of votes agreeing with the majority pass verdict")


class AggregatedJudgment(BaseModel):
    """The judges' verdict on one transcript under one rubric.

    ``level`` is ``samples`` (one judge, ``n`` samples; ``judgments`` and ``errors`` hold
    them) or ``panel`` (``members`` holds each judge's ``samples`` aggregate). ``n_votes``
    counts votes asked for, ``n_failed`` those that failed. ``vote_scores`` are the rubric
    scores of the successful votes (judge noise, for the statistics).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["aggregate"] = "aggregate"
    level: Literal["samples", "panel"]
    status: AggregateStatus
    method: AggregationMethod
    rubric_id: str
    rubric_version: int | str
    target: RubricTarget
    judge_models: list[str]
    prompt_hashes: list[str]
    n_votes: int
    n_failed: int
    score: float | None
    passed: bool | None
    failed_criteria: list[str] = Field(default_factory=list)
    unscored_reason: str | None = None
    error: str | None = None
    criteria: list[CriterionAggregate] = Field(default_factory=list)
    vote_scores: list[float | None] = Field(default_factory=list)
    disagreement: Disagreement = Field(default_factory=Disagreement)
    judgments: list[Judgment] = Field(default_factory=list)
    errors: list[JudgeError] = Field(default_factory=list)
    members: list[AggregatedJudgment] = Field(default_factory=list)
    user_turns: list[UserTurnVerdict] = Field(
        default_factory=list, description="user_turn rubrics: the combined verdict per turn")
    offline: bool = False

    @property
    def n_ok(self) -> int:
        return self.n_votes - self.n_failed

    @property
    def criterion_values(self) -> dict[str, float | None]:
        return {c.criterion_id: c.value for c in self.criteria}

    def fatal_error(self) -> JudgeError | None:
        """The first failed vote (panel members included) that no retry can fix and every
        later call would meet alike (:data:`~harness.errors.FATAL_MODEL_ERRORS`: a missing
        or refused key, an unknown model, a replay-cache miss), or ``None``."""
        for error in self.errors:
            if error.error_type in FATAL_MODEL_ERRORS:
                return error
        return next((e for m in self.members if (e := m.fatal_error()) is not None), None)


def _majority(values: Sequence[float | None]) -> float | None:
    counts = Counter(values)
    top = max(counts.values())
    tied = [v for v, c in counts.items() if c == top]
    scores = [v for v in tied if v is not None]
    # Conservative: the lowest of tied scores; N/A only when it wins outright.
    return min(scores) if scores else None


def _agreement(values: Sequence[float | None]) -> float | None:
    pairs = list(combinations(values, 2))
    if not pairs:
        return None
    return sum(1 for a, b in pairs if a == b) / len(pairs)


def _criterion(
    rubric: Rubric, criterion_id: str, votes: Sequence[float | None], method: AggregationMethod
) -> CriterionAggregate:
    applicable = [v for v in votes if v is not None]
    if method == "mean":
        value = statistics.fmean(applicable) if applicable else None
    else:
        value = _majority(votes) if votes else None
    return CriterionAggregate(
        criterion_id=criterion_id,
        value=value,
        passed=criterion_passed(rubric, criterion_id, value),
        votes=list(votes),
        n_applicable=len(applicable),
        stdev=statistics.stdev(applicable) if len(applicable) >= 2 else None,
        range=max(applicable) - min(applicable) if applicable else None,
        agreement=_agreement(votes),
        unanimous=len(set(votes)) == 1 if votes else None,
    )


def _disagreement(
    rubric: Rubric, votes: Sequence[Vote], criteria: Sequence[CriterionAggregate],
    scored: Sequence[RubricScore] | None = None,
) -> tuple[Disagreement, list[float | None]]:
    if scored is None:
        scored = [score_rubric(rubric, vote) for vote in votes]
    scores = [s.score for s in scored]
    present = [s for s in scores if s is not None]
    verdicts = [s.passed for s in scored if s.passed is not None]
    pass_agreement = None
    if len(verdicts) >= 2:
        majority = Counter(verdicts).most_common(1)[0][1]
        pass_agreement = majority / len(verdicts)
    multi = len(votes) >= 2
    agreements = [c.agreement for c in criteria if c.agreement is not None]
    return Disagreement(
        score_stdev=statistics.stdev(present) if len(present) >= 2 else None,
        score_range=max(present) - min(present) if len(present) >= 2 else None,
        criteria_disagreeing=(
            sum(1 for c in criteria if not c.unanimous) / len(criteria) if multi else None
        ),
        pairwise_agreement=statistics.fmean(agreements) if agreements else None,
        pass_agreement=pass_agreement,
    ), scores


def aggregate_votes(
    rubric: Rubric, votes: Sequence[Vote], method: AggregationMethod = "mean",
    scored: Sequence[RubricScore] | None = None,
) -> tuple[list[CriterionAggregate], Disagreement, list[float | None]]:
    """Pure core: per-criterion aggregates, the disagreement and each vote's rubric score
    (``scored``, when given, is each vote's own result, for rubrics not scored from their
    criteria alone). Every vote must cover every criterion of ``rubric`` (``KeyError``
    otherwise)."""
    criteria = [
        _criterion(rubric, crit.id, [vote[crit.id] for vote in votes], method)
        for crit in rubric.criteria
    ]
    disagreement, scores = _disagreement(rubric, votes, criteria, scored)
    return criteria, disagreement, scores


def _error_summary(count: int, errors: Sequence[str]) -> str:
    first = errors[0] if errors else "no vote"
    return f"all {count} judge vote(s) failed; first: {first}"


def _finish(
    rubric: Rubric,
    votes: Sequence[Vote],
    method: AggregationMethod,
    *,
    level: Literal["samples", "panel"],
    n_votes: int,
    error_texts: Sequence[str],
    judge_models: list[str],
    prompt_hashes: list[str],
    offline: bool,
    judgments: list[Judgment] | None = None,
    errors: list[JudgeError] | None = None,
    members: list[AggregatedJudgment] | None = None,
    turn_votes: Sequence[tuple[list[UserTurnVerdict], RubricScore]] | None = None,
) -> AggregatedJudgment:
    common: dict[str, Any] = dict(
        level=level, method=method, rubric_id=rubric.id, rubric_version=rubric.version,
        target=rubric.target, judge_models=judge_models, prompt_hashes=prompt_hashes,
        n_votes=n_votes, n_failed=n_votes - len(votes), offline=offline,
        judgments=judgments or [], errors=errors or [], members=members or [],
    )
    if not votes:
        return AggregatedJudgment(
            status="judge_error", score=None, passed=None,
            error=_error_summary(n_votes, error_texts), **common,
        )
    if turn_votes is not None:
        return _finish_user_turns(rubric, votes, method, turn_votes, common)
    criteria, disagreement, scores = aggregate_votes(rubric, votes, method)
    result = score_rubric(rubric, {c.criterion_id: c.value for c in criteria})
    reason = _unscored_reason(result, [v.unscored_reason
                                       for v in (judgments or []) + (members or [])])
    return AggregatedJudgment(
        status="scored" if result.score is not None else "not_scored",
        score=result.score, passed=result.passed, failed_criteria=result.failed_criteria,
        unscored_reason=reason, criteria=criteria, vote_scores=scores,
        disagreement=disagreement, **common,
    )


def _unscored_reason(result: RubricScore, given: Sequence[str | None]) -> str | None:
    """Why the aggregate is unscored: the votes' own reason (e.g. "not applicable: ...")
    when they all agree on it, rather than the generic one of the recomputed score."""
    if result.score is not None:
        return result.unscored_reason
    reasons = set(given)
    if len(reasons) == 1 and None not in reasons:
        return reasons.pop()
    return result.unscored_reason


def _finish_user_turns(
    rubric: Rubric, votes: Sequence[Vote], method: AggregationMethod,
    turn_votes: Sequence[tuple[list[UserTurnVerdict], RubricScore]], common: dict[str, Any],
) -> AggregatedJudgment:
    """A ``user_turn`` aggregate: the votes combined turn by turn, the score the share of
    combined turns that pass, each vote's own score kept for the disagreement."""
    criteria, disagreement, scores = aggregate_votes(
        rubric, votes, method, scored=[result for _, result in turn_votes])
    turns = combine_turn_votes([t for t, _ in turn_votes], method)
    result = score_user_turns(rubric, turns, {c.criterion_id: c.value for c in criteria})
    reason = _unscored_reason(result, [vote.unscored_reason for _, vote in turn_votes])
    return AggregatedJudgment(
        status="scored" if result.score is not None else "not_scored",
        score=result.score, passed=result.passed, failed_criteria=result.failed_criteria,
        unscored_reason=reason, criteria=criteria, vote_scores=scores,
        disagreement=disagreement, user_turns=turns, **common,
    )


def _vote_result(vote: Judgment | AggregatedJudgment) -> RubricScore:
    return RubricScore(score=vote.score, passed=vote.passed,
                       failed_criteria=vote.failed_criteria,
                       unscored_reason=vote.unscored_reason)


def aggregate_samples(
    rubric: Rubric, outcomes: Sequence[JudgeOutcome], method: AggregationMethod = "mean"
) -> AggregatedJudgment:
    """Aggregate the ``n`` samples of one judge (or any list of outcomes) under ``rubric``.

    Raises ``ValueError`` when ``outcomes`` is empty or belongs to another rubric."""
    if not outcomes:
        raise ValueError("no judge outcomes to aggregate")
    if any(o.rubric_id != rubric.id for o in outcomes):
        raise ValueError(f"outcomes of another rubric given for {rubric.id!r}")
    judgments = [o for o in outcomes if isinstance(o, Judgment)]
    errors = [o for o in outcomes if isinstance(o, JudgeError)]
    return _finish(
        rubric, [j.criterion_scores for j in judgments], method,
        level="samples", n_votes=len(outcomes),
        error_texts=[f"{e.judge_model} sample {e.sample_index}: {e.error_type}: {e.message}"
                     for e in errors],
        judge_models=list(dict.fromkeys(o.judge_model for o in outcomes)),
        prompt_hashes=list(dict.fromkeys(o.prompt_hash for o in outcomes)),
        offline=any(o.offline for o in outcomes),
        judgments=judgments, errors=errors,
        turn_votes=([(j.user_turns, _vote_result(j)) for j in judgments]
                    if rubric.target == "user_turn" else None),
    )


def aggregate_panel(
    rubric: Rubric, members: Sequence[AggregatedJudgment], method: AggregationMethod = "mean"
) -> AggregatedJudgment:
    """Aggregate several judges' sample aggregates, one vote per judge. A judge whose votes
    all failed counts as a failed panel vote. Raises ``ValueError`` when ``members`` is
    empty."""
    if not members:
        raise ValueError("no panel members to aggregate")
    ok = [m for m in members if m.status != "judge_error"]
    return _finish(
        rubric, [m.criterion_values for m in ok], method,
        level="panel", n_votes=len(members),
        error_texts=[m.error or "" for m in members if m.status == "judge_error"],
        judge_models=[name for m in members for name in m.judge_models],
        prompt_hashes=list(dict.fromkeys(h for m in members for h in m.prompt_hashes)),
        offline=any(m.offline for m in members),
        members=list(members),
        turn_votes=([(m.user_turns, _vote_result(m)) for m in ok]
                    if rubric.target == "user_turn" else None),
    )
