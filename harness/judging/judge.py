"""Running rubric judges: one judge call per transcript (per agent turn for ``agent_turn``
rubrics, per simulated user turn for ``user_turn`` rubrics) turned into per-criterion
verdicts, and the ``n`` samples x panel of judges that make one aggregated judgment.

Every call goes through :meth:`ChatModel.structured` with ``role="judge"`` and the rubric's
response model, so instructor validates each criterion and re-asks on failure. A reply still
invalid after the re-asks, or any other model error, becomes a
:class:`~harness.judging.verdicts.JudgeError` for that sample, never a score.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from harness.errors import ModelError
from harness.judging.aggregate import (
    AggregatedJudgment,
    AggregationMethod,
    aggregate_panel,
    aggregate_samples,
)
from harness.judging.grounding import (
    NO_ANSWER,
    NO_APPLICABLE,
    GroundingReply,
    SentenceVerdict,
    answers_to_check,
    sentence_verdicts,
    supported_share,
)
from harness.judging.offline import RubricCase
from harness.judging.prompts import (
    PROMPT_VERSION,
    JudgeContext,
    agent_turns,
    build_judge_prompt,
    template_hash,
)
from harness.judging.rubric import Rubric
from harness.judging.scoring import mean_or_none, score_rubric
from harness.judging.user_turns import (
    NO_USER_TURN,
    criterion_shares,
    judged_turn_verdicts,
    opening_verdict,
    score_user_turns,
    turns_to_judge,
    user_messages,
)
from harness.judging.verdicts import (
    CriterionVerdict,
    JudgeError,
    JudgeOutcome,
    Judgment,
    UserTurnVerdict,
    raw_verdicts,
    response_model_for,
    verdicts_from_raw,
)
from harness.models.base import ChatModel
from harness.models.mock import bind_offline
from harness.models.request import ModelRequest, PromptCache
from harness.models.types import GenerationParams, StructuredResponse
from harness.transcript import Transcript, UsageTotals


class JudgeSettings(BaseModel):
    """How judges are run: ``samples`` per transcript and judge, at ``temperature`` (``None``
    = the provider's default; at 0 repeated samples add little), aggregated by ``method``;
    ``max_reasks`` re-asks for an invalid reply before it is a judge error."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    samples: int = Field(default=1, ge=1, le=100)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int = Field(default=2048, ge=1)
    max_reasks: int = Field(default=2, ge=0, le=10)
    method: AggregationMethod = "mean"

    def params(self) -> GenerationParams:
        return GenerationParams(temperature=self.temperature, max_tokens=self.max_tokens)


def settings_for_rubric(
    rubric: Rubric, settings: JudgeSettings | None = None, *,
    samples: int | None = None, method: AggregationMethod | None = None,
    scenario_samples: int | None = None, scenario_method: AggregationMethod | None = None,
) -> JudgeSettings:
    """The settings ``rubric`` is judged with: the one place judge samples and aggregation
    are resolved from the four places that can give them (``None`` = not given). What the
    command line gave (``samples``, ``method``) wins, then the scenario's ``rubric_options``
    for this rubric (``scenario_samples``, ``scenario_method``), then the rubric's own
    ``samples`` and ``aggregation``, then ``settings`` (default: 1 sample, mean).
    Temperature, token limit and re-asks always come from ``settings``."""
    base = settings or JudgeSettings()
    return base.model_copy(update={
        "samples": samples or scenario_samples or rubric.samples or base.samples,
        "method": method or scenario_method or rubric.aggregation or base.method,
    })


_Answer = tuple[StructuredResponse[Any], list[CriterionVerdict], list[SentenceVerdict]]


async def _ask(
    model: ChatModel, rubric: Rubric, transcript: Transcript, context: JudgeContext | None,
    *, turn: int | None, sample_index: int, params: GenerationParams, max_reasks: int,
    prompt_cache: PromptCache,
) -> _Answer:
    rubric = rubric.for_turn(turn)  # the criteria asked about this turn
    prompt = build_judge_prompt(rubric, transcript, context, turn=turn)
    grounding = rubric.target == "sentence_grounding"
    judge = bind_offline(model, RubricCase(rubric, transcript, prompt.material, turn, context))
    response = await judge.structured(
        ModelRequest(prompt.messages, "judge", params=params, sample_index=sample_index,
                     max_reasks=max_reasks, prompt_cache=prompt_cache),
        GroundingReply if grounding else response_model_for(rubric),
    )
    if grounding:
        answers = answers_to_check(transcript, include_intermediate=rubric.include_intermediate)
        reply = cast(GroundingReply, response.value)  # asked for with that model
        return response, [], sentence_verdicts(reply, answers, prompt.material)
    raw = raw_verdicts(rubric, response.value)
    return response, verdicts_from_raw(rubric, raw, prompt.material, turn=turn), []


NO_USER_PROFILE = (
    "not applicable: simulator fidelity judges a simulated user against its profile, and this "
    "transcript was imported with no profile (persona, known or unknown facts, plan) to judge "
    "against"
)


NO_USER_PROFILE_FOR_TURNS = (
    "not applicable: the per-turn simulator judge judges a simulated user's turns against its "
    "profile, and this transcript was imported with no profile (persona, known or unknown "
    "facts, plan) to judge against"
)


def no_reference_answer(rubric_id: str) -> str:
    """The unscored reason of a rubric that needs a reference answer the scenario lacks."""
    return (f"not applicable: rubric {rubric_id} compares the final answer with a reference "
            "answer, and none was given (expectations.reference_answer)")


def _not_applicable(rubric: Rubric, transcript: Transcript,
                    context: JudgeContext | None) -> str | None:
    """Why ``rubric`` cannot be judged on ``transcript`` at all (no model call), or None.

    A judge asked to compare with a reference that is not there, to ground an answer that was
    never written, or about fidelity to no profile (an imported conversation, unless the
    caller supplies one) would still return a number, which would mean nothing.
    """
    ctx = context or JudgeContext()
    if rubric.requires_reference_answer and not (ctx.reference_answer or "").strip():
        return no_reference_answer(rubric.id)
    if rubric.target == "sentence_grounding" and not answers_to_check(
            transcript, include_intermediate=rubric.include_intermediate):
        return NO_ANSWER
    if rubric.target == "user_turn" and not user_messages(transcript):
        return NO_USER_TURN
    if (rubric.target not in ("simulator_fidelity", "user_turn")
            or transcript.stop_reason != "imported"):
        return None
    if ctx.persona or ctx.user_facts or ctx.user_unknowns or ctx.plan:
        return None
    return NO_USER_PROFILE if rubric.target == "simulator_fidelity" else NO_USER_PROFILE_FOR_TURNS


def _no_agent_turn(transcript: Transcript) -> str:
    """Why an ``agent_turn`` rubric has no turn to ask about."""
    if agent_turns(transcript):
        return ("not scored: no criterion of the rubric is asked about the turns the agent "
                "took (criteria[].turns)")
    return "not scored: the agent took no turn"


def _turns_to_ask(rubric: Rubric, transcript: Transcript,
                  context: JudgeContext | None) -> list[int | None]:
    """What each judge call of one sample is about: every agent turn (``agent_turn``),
    every user turn the simulator wrote (``user_turn``), else the whole transcript."""
    if rubric.target == "agent_turn":
        # a turn none of whose criteria is asked about it gets no call
        return [t for t in agent_turns(transcript)
                if any(c.applies_to(t) for c in rubric.criteria)]
    if rubric.target == "user_turn":
        return list(turns_to_judge(transcript, context))
    return [None]


def _user_turn_judgment(
    base: dict[str, Any], rubric: Rubric, transcript: Transcript,
    context: JudgeContext | None, verdicts: list[CriterionVerdict], *,
    usage: UsageTotals, attempts: int,
) -> Judgment:
    """One sample's judgment of a ``user_turn`` rubric: the given opening message compared,
    every other user turn from its verdicts, the score the share of turns that pass."""
    opening = opening_verdict(transcript, context)
    turns: list[UserTurnVerdict] = [opening] if opening is not None else []
    turns += judged_turn_verdicts(verdicts)
    criterion_scores = criterion_shares(rubric, verdicts)
    result = score_user_turns(rubric, turns, criterion_scores)
    return Judgment(
        **base, usage=usage, attempts=attempts, verdicts=verdicts,
        criterion_scores=criterion_scores, score=result.score, passed=result.passed,
        failed_criteria=result.failed_criteria, unscored_reason=result.unscored_reason,
        user_turns=turns,
    )


async def judge_once(
    model: ChatModel,
    rubric: Rubric,
    transcript: Transcript,
    context: JudgeContext | None = None,
    *,
    sample_index: int = 0,
    params: GenerationParams | None = None,
    max_reasks: int = 2,
    prompt_cache: PromptCache = "system",
) -> JudgeOutcome:
    """One judge sample: the judgment of ``transcript`` under ``rubric`` by ``model``
    (``prompt_cache``: what of the prompt will be sent again, see
    :data:`~harness.models.request.PromptCache`).

    Returns a :class:`Judgment` (per-criterion verdicts, the rubric score and pass verdict,
    the judge model, rubric id/version and prompt hash) or a :class:`JudgeError` when a call
    failed after retries or stayed invalid after ``max_reasks`` re-asks. A rubric that cannot
    apply (``agent_turn`` with no agent turn; ``simulator_fidelity`` on an imported transcript
    whose context has no user profile; a rubric that requires a reference answer, without
    one; ``sentence_grounding`` with no agent text) gives an unscored Judgment with the
    reason and makes no model call. A grounding judgment with no applicable sentence is
    unscored too, with its reason. Errors that are not model errors (e.g. a spent budget) propagate.
    """
    params = params or GenerationParams()
    base: dict[str, Any] = dict(
        rubric_id=rubric.id, rubric_version=rubric.version, target=rubric.target,
        judge_model=str(model.spec), prompt_version=PROMPT_VERSION,
        prompt_hash=template_hash(rubric.target), sample_index=sample_index,
        offline=model.spec.is_offline,
    )
    turns = _turns_to_ask(rubric, transcript, context)
    reason = (_no_agent_turn(transcript) if rubric.target == "agent_turn" and not turns
              else _not_applicable(rubric, transcript, context))
    if reason is not None:
        return Judgment(
            **base, verdicts=[], criterion_scores={c.id: None for c in rubric.criteria},
            score=None, passed=None, unscored_reason=reason,
        )
    results = await asyncio.gather(
        *(_ask(model, rubric, transcript, context, turn=turn, sample_index=sample_index,
               params=params, max_reasks=max_reasks, prompt_cache=prompt_cache)
          for turn in turns),
        return_exceptions=True,
    )
    usage, attempts = UsageTotals(), 0
    verdicts: list[CriterionVerdict] = []
    sentences: list[SentenceVerdict] = []
    failure: tuple[int | None, ModelError] | None = None
    for turn, result in zip(turns, results, strict=True):
        if isinstance(result, ModelError):
            failure = failure or (turn, result)
            continue
        if isinstance(result, BaseException):
            raise result
        response, turn_verdicts, turn_sentences = result
        usage.add(response)
        attempts += response.attempts
        verdicts.extend(turn_verdicts)
        sentences.extend(turn_sentences)
    if failure is not None:
        turn, err = failure
        party = "user" if rubric.target == "user_turn" else "agent"
        where = f" (judging {party} turn {turn})" if turn is not None else ""
        return JudgeError(**base, usage=usage, attempts=attempts,
                          error_type=type(err).__name__, message=f"{err}{where}")
    if rubric.target == "user_turn":
        return _user_turn_judgment(base, rubric, transcript, context, verdicts,
                                   usage=usage, attempts=attempts)
    if rubric.target == "sentence_grounding":
        # its one criterion holds the supported share (the rubric checks there is one)
        criterion_scores = {rubric.criteria[0].id: supported_share(sentences)}
    else:
        criterion_scores = {
            crit.id: mean_or_none([v.normalised for v in verdicts if v.criterion_id == crit.id])
            for crit in rubric.criteria
        }
    result_score = score_rubric(rubric, criterion_scores)
    unscored = result_score.unscored_reason
    if unscored is not None and rubric.target == "sentence_grounding":
        unscored = NO_APPLICABLE
    return Judgment(
        **base, usage=usage, attempts=attempts, verdicts=verdicts, sentences=sentences,
        criterion_scores=criterion_scores, score=result_score.score,
        passed=result_score.passed, failed_criteria=result_score.failed_criteria,
        unscored_reason=unscored,
    )


async def judge_transcript(
    models: ChatModel | Sequence[ChatModel],
    rubric: Rubric,
    transcript: Transcript,
    context: JudgeContext | None = None,
    *,
    settings: JudgeSettings | None = None,
) -> AggregatedJudgment:
    """Judge ``transcript`` under ``rubric`` with ``settings.samples`` samples from each of
    ``models`` (sample indexes 0..n-1, concurrently under the model layer's bounds).

    One model gives its ``samples`` aggregate; several give a ``panel`` aggregate over each
    judge's aggregate. With several samples, a real judge's first sample goes alone and the
    others follow it at once, so they find its prompt in the provider's prompt cache
    (requests sent together would each pay for the whole prompt); batched judges send all
    together. Failed samples are
    counted apart; when all failed the result has ``status == "judge_error"``. ``settings``
    are used as given; without them, the rubric's own ``samples`` and ``aggregation`` apply
    (:func:`settings_for_rubric`). Raises ``ValueError`` when no model is given.
    """
    settings = settings or settings_for_rubric(rubric)
    judges = [models] if isinstance(models, ChatModel) else list(models)
    if not judges:
        raise ValueError("at least one judge model is needed")
    params = settings.params()
    n = settings.samples
    plan: PromptCache = "conversation" if n > 1 else "system"

    async def samples_of(model: ChatModel) -> list[JudgeOutcome]:
        def ask(i: int) -> Awaitable[JudgeOutcome]:
            return judge_once(model, rubric, transcript, context, sample_index=i,
                              params=params, max_reasks=settings.max_reasks, prompt_cache=plan)

        if n == 1 or model.spec.is_offline or model.batched:
            return list(await asyncio.gather(*(ask(i) for i in range(n))))
        first = await ask(0)
        return [first, *await asyncio.gather(*(ask(i) for i in range(1, n)))]

    per_judge = await asyncio.gather(*(samples_of(model) for model in judges))
    members = [aggregate_samples(rubric, outcomes, settings.method) for outcomes in per_judge]
    if len(members) == 1:
        return members[0]
    return aggregate_panel(rubric, members, settings.method)


def metric_name(rubric_id: str) -> str:
    """The metric name a rubric score is stored and summarised under."""
    return f"rubric:{rubric_id}"
