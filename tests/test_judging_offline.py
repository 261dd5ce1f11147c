"""The offline judge: well-formed verdicts for every built-in rubric, deterministic per
(input, sample index), moving with the transcript, and marked offline."""

from __future__ import annotations

import json

import pytest

from harness.errors import ModelConfigError
from harness.judging.context import JudgeContext
from harness.judging.judge import JudgeSettings, judge_once, judge_transcript
from harness.judging.offline import MockJudge
from harness.judging.rubric import load_rubrics
from harness.judging.verdicts import Judgment, response_model_for
from harness.models.request import ModelRequest
from harness.transcript import transcript_from_openai
from tests.helpers.judging_fakes import BehaviourModel, weather_transcript

RUBRICS = load_rubrics()


def mock(name: str = "judge") -> BehaviourModel:
    return BehaviourModel(MockJudge(name), name)


@pytest.mark.parametrize("rubric_id", sorted(RUBRICS))
async def test_every_builtin_rubric_gets_a_valid_offline_judgment(rubric_id: str) -> None:
    # a profile, so that simulator fidelity applies to this imported episode, and a reference
    # answer for final_response_match
    profile = JudgeContext(goal="Know the weather in Paris", persona="A terse traveller",
                           reference_answer="It is 21.5°C and sunny.")
    outcome = await judge_once(mock(), RUBRICS[rubric_id], weather_transcript(), profile)
    assert isinstance(outcome, Judgment) and outcome.offline
    if RUBRICS[rubric_id].target == "sentence_grounding":
        # one labelled sentence, quoting the tool result it rests on
        [sentence] = outcome.sentences
        assert (sentence.label, sentence.in_answer) == ("supported", True)
        assert sentence.evidence and not sentence.unverified_evidence
        assert outcome.score == 1.0
        return
    assert {v.criterion_id for v in outcome.verdicts} == {
        c.id for c in RUBRICS[rubric_id].criteria}
    assert all("Offline mock judge" in v.reasoning for v in outcome.verdicts)
    assert outcome.score is not None
    # its evidence is quoted from the material, so nothing is flagged
    assert all(not v.unverified_evidence for v in outcome.verdicts)


async def test_deterministic_per_sample_and_varying_across_samples() -> None:
    rubric = RUBRICS["final_response_quality"]
    first = [await judge_once(mock(), rubric, weather_transcript(), sample_index=i)
             for i in range(12)]
    again = [await judge_once(mock(), rubric, weather_transcript(), sample_index=i)
             for i in range(12)]
    assert [o.criterion_scores for o in first] == [o.criterion_scores for o in again]
    assert len({tuple(o.criterion_scores.values()) for o in first}) > 1


async def test_temperature_zero_gives_identical_samples() -> None:
    rubric = RUBRICS["final_response_quality"]
    result = await judge_transcript(mock(), rubric, weather_transcript(),
                                    settings=JudgeSettings(samples=5, temperature=0))
    assert result.disagreement.criteria_disagreeing == 0


async def test_scores_drop_for_an_empty_answer_and_a_tool_error() -> None:
    rubric = RUBRICS["final_response_quality"]
    settings = JudgeSettings(samples=1, temperature=0)
    good = await judge_transcript(mock(), rubric, weather_transcript(), settings=settings)
    error = await judge_transcript(mock(), rubric, weather_transcript(tool_error=True),
                                   settings=settings)
    empty = await judge_transcript(mock(), rubric, weather_transcript(final=""),
                                   settings=settings)
    assert good.score is not None and error.score is not None and empty.score is not None
    assert good.score > error.score > empty.score
    assert good.passed and not empty.passed


async def test_strict_and_lenient_variants_shift_scores() -> None:
    rubric = RUBRICS["task_completion"]
    settings = JudgeSettings(temperature=0)
    t = weather_transcript(tool_error=True)
    scores = [(await judge_transcript(mock(n), rubric, t, settings=settings)).score
              for n in ("judge-strict", "judge", "judge-lenient")]
    assert scores == sorted(scores) and scores[0] < scores[2]  # type: ignore[operator]


async def test_na_where_allowed_when_no_tool_was_called() -> None:
    transcript = transcript_from_openai("chat", [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}])
    outcome = await judge_once(mock(), RUBRICS["tool_use_quality"], transcript)
    assert isinstance(outcome, Judgment)
    assert outcome.criterion_scores["argument_correctness"] is None
    assert outcome.criterion_scores["tool_selection"] is not None


async def test_it_refuses_chat_and_requests_it_was_not_bound_to() -> None:
    judge = MockJudge()
    with pytest.raises(ModelConfigError, match="only answers judge requests"):
        await judge.chat(ModelRequest([], "judge"))
    with pytest.raises(ModelConfigError, match="not bound to a rubric or pairwise case"):
        await judge.structured(ModelRequest([], "judge"), response_model_for(RUBRICS["safety"]))
    assert judge.bind("something else") is judge


def test_unknown_variant_is_a_clear_error() -> None:
    with pytest.raises(ModelConfigError, match="mock:judge-first"):
        MockJudge("judge-grumpy")


async def test_through_the_model_layer_mock_registry() -> None:
    from harness.models.hub import ModelHub

    async with ModelHub(environ={}) as hub:
        judge = hub.get("mock:judge")
        biased = hub.get("mock:judge-first")
        outcome = await judge_once(judge, RUBRICS["task_completion"], weather_transcript())
        assert isinstance(outcome, Judgment) and outcome.offline
        assert outcome.judge_model == "mock:judge" and outcome.score is not None
        assert isinstance(biased.spec.name, str) and biased.spec.is_offline
        snapshot = hub.ledger.snapshot()
    assert "judge" in json.dumps(snapshot)
