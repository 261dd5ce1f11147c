"""The shape of a judge's answer: the response model asked of the judge model (built per
rubric) and the judgment records that are stored.

The response model has one field per criterion, keyed by the criterion id (criteria are
matched by id only, never by position; unknown ids are rejected). Each criterion's object has
``reasoning`` first, then ``evidence`` (exact quotes from the material shown), then ``score``
constrained to the criterion's scale, with ``"N/A"`` allowed only where the criterion allows it.
Instructor validates this and re-asks when it fails.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

from harness.json_values import STORED_DEPTH, load_json
from harness.judging.grounding import SentenceVerdict, quoted_in, squash
from harness.judging.rubric import Criterion, Rubric, RubricTarget
from harness.models.types import OutsideText
from harness.transcript import UsageTotals

NA = "N/A"
"""What a judge answers for a criterion that does not apply (where allowed)."""


def _tidy_score(value: Any) -> Any:
    """Accept harmless spellings of a valid answer ("4", 4.0, "n/a") so they need no re-ask;
    anything else is left for the scale check to reject."""
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in ("N/A", "NA"):
            return NA
        if text.lstrip("-").isdigit():
            return int(text)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _criterion_model(rubric: Rubric, index: int, criterion: Criterion) -> type[BaseModel]:
    scale = rubric.scale_of(criterion)
    choices: tuple[Any, ...] = scale.values + ((NA,) if criterion.allow_na else ())
    levels = "; ".join(
        f"{value} = {label}" + (f" ({meaning})" if meaning else "")
        for value, label, meaning in rubric.level_meanings(criterion)
    )
    score_help = f"The score: {levels}." + (
        f' Answer "{NA}" only if the criterion does not apply.' if criterion.allow_na else ""
    )
    # Built at run time from the rubric's scale, so typed as Any: a checker can only see a
    # type form in a literal annotation, and pydantic's stubs ask create_model for one.
    score_type: Any = Annotated[Literal[choices], BeforeValidator(_tidy_score)]
    return create_model(
        f"Criterion_{index}_{criterion.id}",
        __config__=ConfigDict(extra="forbid"),
        __doc__=criterion.question,
        reasoning=(
            str,
            Field(min_length=1, description="Your reasoning about this criterion, written "
                                            "before you decide the score."),
        ),
        evidence=(
            list[str],
            Field(description="Short exact quotes from the material that support the score "
                              "(copied verbatim; empty if there is nothing to quote)."),
        ),
        score=(score_type, Field(description=score_help)),
    )


@lru_cache(maxsize=256)
def _response_model_for(rubric_json: str) -> type[BaseModel]:
    rubric = Rubric.model_validate_json(rubric_json)
    # Field names are the criterion ids themselves (the rubric schema rejects ids that would
    # shadow pydantic's own attributes), so a reply dumped and re-validated anywhere, e.g.
    # by the response cache, keeps its shape.
    fields: dict[str, Any] = {
        crit.id: (_criterion_model(rubric, i, crit), Field(description=crit.question))
        for i, crit in enumerate(rubric.criteria)
    }
    return create_model(
        f"RubricVerdict_{rubric.id}",
        __config__=ConfigDict(extra="forbid"),
        __doc__=f"Your verdict on every criterion of the rubric {rubric.id!r}, keyed by "
        "criterion id.",
        **fields,
    )


def response_model_for(rubric: Rubric) -> type[BaseModel]:
    """The pydantic model a judge must answer for ``rubric`` (built once per rubric)."""
    return _response_model_for(rubric.model_dump_json())


def raw_verdicts(rubric: Rubric, reply: BaseModel) -> dict[str, dict[str, Any]]:
    """A validated reply as ``{criterion_id: {"reasoning", "evidence", "score"}}``."""
    data = reply.model_dump()
    return {crit.id: data[crit.id] for crit in rubric.criteria}


# --- stored records -----------------------------------------------------------------------


class CriterionVerdict(OutsideText):
    """A judge's answer on one criterion (for ``agent_turn`` rubrics: on one agent turn).

    ``score`` is on the criterion's scale, ``None`` when the judge said N/A; ``normalised``
    maps it to [0, 1]. ``unverified_evidence`` lists quotes that do not appear in the material
    the judge was shown (kept, but flagged: the judge may have paraphrased or invented them).
    """

    model_config = ConfigDict(extra="forbid")

    criterion_id: str
    turn: int | None = None
    reasoning: str
    evidence: list[str] = Field(default_factory=list)
    unverified_evidence: list[str] = Field(default_factory=list)
    score: int | None
    normalised: float | None

    @property
    def not_applicable(self) -> bool:
        return self.score is None


TurnCheck = Literal["judge", "opening_message"]


class UserTurnVerdict(OutsideText):
    """The verdict on one user turn (0-based index among the conversation's user messages).

    ``checked`` says how: by the judge, or compared with the message the scenario gave
    (``opening_message``, no model call). ``value`` is 1 or 0 for one judge sample; in an
    aggregate it is the share of votes passing the turn (``mean``) or 1/0 by majority.
    ``failed_criteria`` lists the criteria that did not hold (in an aggregate: those that
    failed in at least half the votes); ``reason`` explains a comparison's verdict.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: int = Field(ge=0)
    checked: TurnCheck
    passed: bool
    value: float = Field(ge=0, le=1)
    failed_criteria: list[str] = Field(default_factory=list)
    reason: str | None = None
    votes: list[bool] = Field(default_factory=list,
                              description="each vote's pass verdict (aggregates only)")


class _JudgeRecord(OutsideText):
    model_config = ConfigDict(extra="forbid")

    rubric_id: str
    rubric_version: int | str
    target: RubricTarget
    judge_model: str
    prompt_version: str
    prompt_hash: str
    sample_index: int = 0
    offline: bool = False
    usage: UsageTotals = Field(default_factory=UsageTotals)
    attempts: int = 0


class Judgment(_JudgeRecord):
    """One judge sample on one transcript under one rubric.

    ``criterion_scores`` holds each criterion's normalised score (the mean over agent turns
    for ``agent_turn`` rubrics; ``None`` when not applicable). ``score`` is the rubric score:
    their weighted mean over applicable criteria, ``None`` with ``unscored_reason`` when none
    applied. ``passed`` compares it with the rubric threshold (normalised units).
    ``sentences`` holds the labelled sentences of a ``sentence_grounding`` rubric (whose
    ``verdicts`` are empty: its one criterion's score is the supported share).
    ``user_turns`` holds a ``user_turn`` rubric's verdict per user turn (its ``score`` is the
    share of turns that pass; ``criterion_scores`` the share of judged turns on which each
    criterion held).
    """

    kind: Literal["judgment"] = "judgment"
    verdicts: list[CriterionVerdict]
    sentences: list[SentenceVerdict] = Field(default_factory=list)
    criterion_scores: dict[str, float | None]
    score: float | None
    passed: bool | None
    failed_criteria: list[str] = Field(default_factory=list)
    unscored_reason: str | None = None
    user_turns: list[UserTurnVerdict] = Field(default_factory=list)


class JudgeError(_JudgeRecord):
    """A judge sample that produced no verdict: the model call failed after retries, or the
    reply was still invalid after the re-asks. Never a score."""

    kind: Literal["judge_error"] = "judge_error"
    error_type: str
    message: str


JudgeOutcome = Judgment | JudgeError


def verdicts_from_raw(
    rubric: Rubric, raw: dict[str, dict[str, Any]], material: str, *, turn: int | None = None,
) -> list[CriterionVerdict]:
    """Turn each criterion's validated reply (``raw``, by criterion id) into a stored
    verdict, checking each evidence quote against ``material`` (the text the judge was
    shown), whitespace-insensitively."""
    haystack = squash(material)
    return [_verdict(rubric, criterion, raw[criterion.id], haystack, turn)
            for criterion in rubric.criteria]


def _verdict(rubric: Rubric, criterion: Criterion, raw: dict[str, Any], haystack: str,
             turn: int | None) -> CriterionVerdict:
    score = raw["score"]
    scale = rubric.scale_of(criterion)
    evidence = [str(q) for q in raw.get("evidence") or []]
    return CriterionVerdict(
        criterion_id=criterion.id,
        turn=turn,
        reasoning=raw["reasoning"],
        evidence=evidence,
        unverified_evidence=[q for q in evidence if not quoted_in(q, haystack)],
        score=None if score == NA else int(score),
        normalised=None if score == NA else scale.normalise(int(score)),
    )


def outcome_from_json(data: str | dict[str, Any]) -> JudgeOutcome:
    """Read back a stored :class:`Judgment` or :class:`JudgeError` (by its ``kind``)."""
    value = (load_json(data, "a stored judgment", max_depth=STORED_DEPTH)
             if isinstance(data, str) else data)
    if value.get("kind") == "judge_error":
        return JudgeError.model_validate(value)
    return Judgment.model_validate(value)
