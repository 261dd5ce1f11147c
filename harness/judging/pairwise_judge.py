"""Pairwise judging: which of two answers (or transcripts) is better under one criterion, asked
in both orders.

Each pair is judged twice: once with A shown first, once with B shown first (``swapped``).
The judge's answer in the swapped order is mapped back to the original labels. A winner is
declared only when both orders agree; otherwise the result is a tie and counts as
*inconsistent*. So a judge that always prefers whichever response it sees first ends up with
ties and an inconsistency rate of 1, never with a winner.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from scipy.stats import binomtest

from harness.errors import ModelError
from harness.judging.offline import PairwiseCase
from harness.judging.prompts import (
    PROMPT_VERSION,
    JudgeContext,
    build_pairwise_prompt,
    render_for_pairwise,
    template_hash,
)
from harness.judging.rubric import Rubric
from harness.models.base import ChatModel
from harness.models.mock import bind_offline
from harness.models.request import ModelRequest
from harness.models.types import GenerationParams
from harness.transcript import Transcript, UsageTotals

Preference = Literal["A", "B", "tie"]


class PairwiseCriterion(BaseModel):
    """What the two candidates are compared on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)
    question: str = Field(min_length=1)
    guidance: str = ""
    allow_tie: bool = True

    @classmethod
    def from_rubric(cls, rubric: Rubric, *, allow_tie: bool = True) -> PairwiseCriterion:
        """A criterion that asks which candidate is better overall under ``rubric``."""
        lines = [f"- {c.question} (weight {c.weight:g})" for c in rubric.criteria]
        return cls(
            id=rubric.id,
            question=f"Which response is better under the rubric {rubric.id!r}"
            + (f" ({rubric.description})" if rubric.description else "") + "?",
            guidance="Weigh these criteria:\n" + "\n".join(lines),
            allow_tie=allow_tie,
        )


class PairCandidate(BaseModel):
    """One side of a comparison: an answer's text or a whole transcript."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str | None = None
    transcript: Transcript | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> PairCandidate:
        if (self.text is None) == (self.transcript is None):
            raise ValueError("give exactly one of text or transcript")
        return self

    def render(self) -> str:
        if self.transcript is not None:
            return render_for_pairwise(self.transcript)
        return self.text or ""


class PairwisePreference(BaseModel):
    """The judge's answer: reasoning first, then which response is better."""

    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(min_length=1, description="Your comparison, written before the "
                                                     "verdict.")
    verdict: Preference = Field(description='"A", "B", or "tie" if neither is better.')


class StrictPairwisePreference(BaseModel):
    """The judge's answer when ties are not allowed."""

    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(min_length=1, description="Your comparison, written before the "
                                                     "verdict.")
    verdict: Literal["A", "B"] = Field(description='"A" or "B": the better response.')


class OrderVerdict(BaseModel):
    """The judge's answer in one order. ``said`` is by position (A = shown first);
    ``verdict`` names the original candidate."""

    model_config = ConfigDict(extra="forbid")

    swapped: bool
    said: Preference
    verdict: Preference
    reasoning: str


class PairwiseResult(BaseModel):
    """A pair judged in both orders: the winner only when both orders agree, else a tie."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["pairwise"] = "pairwise"
    pair_id: str
    criterion_id: str
    judge_model: str
    prompt_version: str
    prompt_hash: str
    sample_index: int = 0
    offline: bool = False
    status: Literal["decided", "judge_error"]
    orders: list[OrderVerdict] = Field(default_factory=list)
    winner: Preference | None = None
    consistent: bool | None = None
    error_type: str | None = None
    message: str | None = None
    usage: UsageTotals = Field(default_factory=UsageTotals)
    attempts: int = 0

    def calibration_records(self, gold: Preference) -> list[dict[str, Any]]:
        """This pair as contract-3 pairwise judgment lines (one per order answered), for
        ``harness calibrate --judgments``."""
        return [{"item_id": self.pair_id, "gold": gold, "verdict": o.verdict,
                 "swapped": o.swapped, "judge_id": self.judge_model} for o in self.orders]


_FLIP: dict[str, Preference] = {"A": "B", "B": "A", "tie": "tie"}


def _candidate(value: PairCandidate | str | Transcript) -> PairCandidate:
    if isinstance(value, PairCandidate):
        return value
    if isinstance(value, Transcript):
        return PairCandidate(transcript=value)
    return PairCandidate(text=value)


async def compare_pair(
    model: ChatModel,
    criterion: PairwiseCriterion,
    a: PairCandidate | str | Transcript,
    b: PairCandidate | str | Transcript,
    *,
    pair_id: str,
    context: JudgeContext | None = None,
    sample_index: int = 0,
    params: GenerationParams | None = None,
    max_reasks: int = 2,
) -> PairwiseResult:
    """Judge ``a`` against ``b`` in both orders (both calls concurrently).

    Returns a :class:`PairwiseResult`: ``winner`` is ``"A"``/``"B"`` only when both orders
    agree, ``"tie"`` otherwise (``consistent`` False when the two orders disagree). When
    either call fails after retries or re-asks, ``status`` is ``judge_error`` and there is no
    winner. Errors that are not model errors propagate.
    """
    texts = (_candidate(a).render(), _candidate(b).render())
    response_model = PairwisePreference if criterion.allow_tie else StrictPairwisePreference
    params = params or GenerationParams()

    async def ask(swapped: bool) -> Any:
        first, second = (texts[1], texts[0]) if swapped else texts
        prompt = build_pairwise_prompt(criterion, first, second, context)
        judge = bind_offline(model, PairwiseCase(first, second, criterion.allow_tie))
        return await judge.structured(
            ModelRequest(prompt.messages, "judge", params=params, sample_index=sample_index,
                         max_reasks=max_reasks),
            response_model,
        )

    results = await asyncio.gather(ask(False), ask(True), return_exceptions=True)
    base: dict[str, Any] = dict(
        pair_id=pair_id, criterion_id=criterion.id, judge_model=str(model.spec),
        prompt_version=PROMPT_VERSION, prompt_hash=template_hash("pairwise"),
        sample_index=sample_index, offline=model.spec.is_offline,
    )
    usage, attempts, orders = UsageTotals(), 0, []
    failure: ModelError | None = None
    for swapped, result in zip((False, True), results, strict=True):
        if isinstance(result, ModelError):
            failure = failure or result
            continue
        if isinstance(result, BaseException):
            raise result
        usage.add(result)
        attempts += result.attempts
        said: Preference = result.value.verdict
        orders.append(OrderVerdict(swapped=swapped, said=said,
                                   verdict=_FLIP[said] if swapped else said,
                                   reasoning=result.value.reasoning))
    if failure is not None:
        return PairwiseResult(**base, status="judge_error", orders=orders, usage=usage,
                              attempts=attempts, error_type=type(failure).__name__,
                              message=str(failure))
    consistent = orders[0].verdict == orders[1].verdict
    return PairwiseResult(**base, status="decided", orders=orders, usage=usage,
                          attempts=attempts, consistent=consistent,
                          winner=orders[0].verdict if consistent else "tie")


async def compare_pairs(
    model: ChatModel,
    criterion: PairwiseCriterion,
    pairs: Sequence[tuple[str, PairCandidate | str | Transcript, PairCandidate | str | Transcript]],
    *,
    context: JudgeContext | None = None,
    sample_index: int = 0,
    params: GenerationParams | None = None,
    max_reasks: int = 2,
) -> list[PairwiseResult]:
    """Judge many ``(pair_id, a, b)`` pairs concurrently; results in the same order."""
    return list(await asyncio.gather(*(
        compare_pair(model, criterion, a, b, pair_id=pair_id, context=context,
                     sample_index=sample_index, params=params, max_reasks=max_reasks)
        for pair_id, a, b in pairs
    )))


class Proportion(BaseModel):
    """A share with its 95% Wilson score interval (scipy's ``binomtest``)."""

    model_config = ConfigDict(extra="forbid")

    value: float | None
    ci_low: float | None
    ci_high: float | None
    k: int
    n: int
    method: str = "Wilson score interval, 95%"


def _proportion(k: int, n: int) -> Proportion:
    if n == 0:
        return Proportion(value=None, ci_low=None, ci_high=None, k=0, n=0)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return Proportion(value=k / n, ci_low=float(ci.low), ci_high=float(ci.high), k=k, n=n)


class PairwiseSummary(BaseModel):
    """Over many pairs: wins, ties, the inconsistency rate (pairs whose two orders disagree)
    and the first-position rate (share of all order verdicts that chose the response shown
    first; about 0.5 for a judge without position bias, 1.0 for one that always picks the
    first). Pairs with a judge error are counted apart and left out of the rates."""

    model_config = ConfigDict(extra="forbid")

    n_pairs: int
    n_errors: int
    n_decided: int
    wins_a: int
    wins_b: int
    ties: int
    inconsistency_rate: Proportion
    first_position_rate: Proportion
    offline: bool


def summarise_pairwise(results: Sequence[PairwiseResult]) -> PairwiseSummary:
    """Summarise pairwise results (pure)."""
    decided = [r for r in results if r.status == "decided"]
    orders = [o for r in decided for o in r.orders]
    return PairwiseSummary(
        n_pairs=len(results),
        n_errors=len(results) - len(decided),
        n_decided=len(decided),
        wins_a=sum(1 for r in decided if r.winner == "A"),
        wins_b=sum(1 for r in decided if r.winner == "B"),
        ties=sum(1 for r in decided if r.winner == "tie"),
        inconsistency_rate=_proportion(sum(1 for r in decided if not r.consistent),
                                       len(decided)),
        first_position_rate=_proportion(sum(1 for o in orders if o.said == "A"), len(orders)),
        offline=any(r.offline for r in results),
    )
