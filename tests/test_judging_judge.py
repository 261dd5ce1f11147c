"""One judge call -> per-criterion verdicts, with a scripted fake model that validates and
re-asks like instructor does (the loopback tests repeat the key cases with the real SDKs)."""

from __future__ import annotations

import pytest

from harness.errors import BudgetExceededError, ModelConfigError, ModelUnavailableError
from harness.judging.judge import JudgeSettings, judge_once, judge_transcript
from harness.judging.prompts import PROMPT_VERSION, JudgeContext, template_hash
from harness.judging.rubric import load_rubrics, parse_rubric
from harness.judging.verdicts import JudgeError, Judgment, outcome_from_json
from harness.models.types import GenerationParams
from harness.transcript import transcript_from_openai
from tests.helpers.judging_fakes import ScriptedJudge, criterion_reply, weather_transcript

RUBRIC = parse_rubric({
    "id": "answer", "version": 3, "target": "final_response", "threshold": 0.7,
    "criteria": [
        {"id": "correct", "question": "Correct?", "scale": "ordinal_1_5", "weight": 2},
        {"id": "grounded", "question": "Grounded?", "scale": "binary", "allow_na": True},
    ],
}, "inline")

GOOD_REPLY = {
    "correct": criterion_reply(4, "Matches the tool result.", ["21.5°C and sunny"]),
    "grounded": criterion_reply(1, "Uses the temperature.", ['"temp_c": 21.5', "made up"]),
}


async def test_per_criterion_verdicts_are_parsed() -> None:
    judge = ScriptedJudge(queue=[GOOD_REPLY])
    outcome = await judge_once(judge, RUBRIC, weather_transcript(),
                               JudgeContext(goal="Know the weather"), sample_index=2)
    assert isinstance(outcome, Judgment)
    by_id = {v.criterion_id: v for v in outcome.verdicts}
    assert by_id["correct"].score == 4 and by_id["correct"].normalised == 0.75
    assert by_id["correct"].reasoning == "Matches the tool result."
    assert by_id["correct"].evidence == ["21.5°C and sunny"]
    assert by_id["correct"].unverified_evidence == []
    # a quote that is not in the material is kept but flagged
    assert by_id["grounded"].unverified_evidence == ["made up"]
    assert outcome.criterion_scores == {"correct": 0.75, "grounded": 1.0}
    assert outcome.score == pytest.approx((2 * 0.75 + 1.0) / 3)
    assert outcome.passed is True
    # provenance: judge model, rubric id and version, prompt version and hash, sample
    assert outcome.judge_model == "openai:judge"
    assert (outcome.rubric_id, outcome.rubric_version) == ("answer", 3)
    assert outcome.prompt_hash == template_hash("final_response")
    assert outcome.prompt_version == PROMPT_VERSION
    assert outcome.sample_index == 2 and outcome.attempts == 1
    assert outcome.usage.calls == 1 and outcome.usage.input_tokens == 100
    # the call itself: role judge, the sample index, the rubric's criteria in the schema
    call = judge.calls[0]
    assert call.role == "judge" and call.sample_index == 2
    assert set(call.response_model.model_fields) == {"correct", "grounded"}
    assert "Know the weather" in call.messages[1].content


async def test_the_response_schema_is_keyed_by_criterion_id() -> None:
    judge = ScriptedJudge(queue=[GOOD_REPLY])
    await judge_once(judge, RUBRIC, weather_transcript())
    schema = judge.calls[0].response_model.model_json_schema()
    assert list(schema["properties"]) == ["correct", "grounded"]
    assert schema["additionalProperties"] is False
    props = schema["$defs"][schema["properties"]["grounded"]["$ref"].split("/")[-1]]
    assert list(props["properties"]) == ["reasoning", "evidence", "score"]  # reasoning first
    assert props["properties"]["score"]["enum"] == [0, 1, "N/A"]
    correct = schema["$defs"][schema["properties"]["correct"]["$ref"].split("/")[-1]]
    assert correct["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]  # no N/A here


async def test_criteria_are_matched_by_id_not_position() -> None:
    reply = {"grounded": criterion_reply(0), "correct": criterion_reply(5)}
    outcome = await judge_once(ScriptedJudge(queue=[reply]), RUBRIC, weather_transcript())
    assert isinstance(outcome, Judgment)
    assert outcome.criterion_scores == {"correct": 1.0, "grounded": 0.0}


@pytest.mark.parametrize(
    "invalid",
    [
        {"correct": criterion_reply(6), "grounded": criterion_reply(1)},  # off the scale
        {"correct": criterion_reply("N/A"), "grounded": criterion_reply(1)},  # N/A not allowed
        {"correct": criterion_reply(4)},  # a criterion missing
        {**GOOD_REPLY, "tone": criterion_reply(3)},  # an unknown criterion id
        {"correct": {"score": 4, "evidence": []}, "grounded": criterion_reply(1)},  # no reason
        {"correct": criterion_reply(4, reasoning=""), "grounded": criterion_reply(1)},
    ],
)
async def test_an_invalid_reply_is_re_asked(invalid) -> None:
    judge = ScriptedJudge(queue=[invalid, GOOD_REPLY])
    outcome = await judge_once(judge, RUBRIC, weather_transcript())
    assert isinstance(outcome, Judgment)
    assert outcome.attempts == 2 and outcome.criterion_scores["correct"] == 0.75


async def test_harmless_spellings_need_no_re_ask() -> None:
    reply = {"correct": criterion_reply("4"), "grounded": criterion_reply(" n/a ")}
    outcome = await judge_once(ScriptedJudge(queue=[reply]), RUBRIC, weather_transcript())
    assert isinstance(outcome, Judgment) and outcome.attempts == 1
    assert outcome.criterion_scores == {"correct": 0.75, "grounded": None}
    assert outcome.score == 0.75  # the N/A criterion is left out


async def test_a_persistently_invalid_reply_is_a_judge_error_not_a_score() -> None:
    bad = {"correct": criterion_reply(9), "grounded": criterion_reply(1)}
    judge = ScriptedJudge(queue=[bad, bad, bad])
    outcome = await judge_once(judge, RUBRIC, weather_transcript(), max_reasks=2)
    assert isinstance(outcome, JudgeError)
    assert outcome.error_type == "StructuredOutputError"
    assert "re-asks" in outcome.message and judge.calls[0].attempts == 3
    assert outcome.rubric_id == "answer" and outcome.prompt_hash == template_hash(
        "final_response")
    assert not hasattr(outcome, "score")


@pytest.mark.parametrize("error", [ModelUnavailableError("500 x4", model="openai:judge"),
                                   ModelConfigError("OPENAI_API_KEY was refused (401)")])
async def test_a_failed_model_call_is_a_judge_error(error) -> None:
    outcome = await judge_once(ScriptedJudge(queue=[error]), RUBRIC, weather_transcript())
    assert isinstance(outcome, JudgeError)
    assert outcome.error_type == type(error).__name__ and str(error) in outcome.message


async def test_a_spent_budget_is_not_swallowed() -> None:
    with pytest.raises(BudgetExceededError):
        await judge_once(ScriptedJudge(queue=[BudgetExceededError("max cost")]), RUBRIC,
                         weather_transcript())


async def test_generation_params_and_reasks_are_passed_through() -> None:
    judge = ScriptedJudge(queue=[GOOD_REPLY])
    params = GenerationParams(temperature=0.7, max_tokens=900)
    await judge_once(judge, RUBRIC, weather_transcript(), params=params, max_reasks=4)
    assert judge.calls[0].params == params and judge.calls[0].max_reasks == 4


async def test_judgments_round_trip_through_json() -> None:
    good = await judge_once(ScriptedJudge(queue=[GOOD_REPLY]), RUBRIC, weather_transcript())
    bad = await judge_once(ScriptedJudge(queue=[ModelUnavailableError("x")]), RUBRIC,
                           weather_transcript())
    assert outcome_from_json(good.model_dump_json()) == good
    assert outcome_from_json(bad.model_dump(mode="json")) == bad


TURNS = parse_rubric({"id": "turns", "target": "agent_turn", "threshold": 0.5, "criteria": [
    {"id": "helpful", "question": "Helpful?", "scale": "ordinal_1_5"},
    {"id": "polite", "question": "Polite?", "scale": "binary", "allow_na": True}]}, "inline")


def _two_turns():
    return transcript_from_openai("t", [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Bye"}, {"role": "assistant", "content": "Goodbye."}])


async def test_agent_turn_rubrics_judge_each_turn_and_average() -> None:
    def script(call):
        text = call.messages[1].content
        if ">>> AGENT: Goodbye." in text:
            return {"helpful": criterion_reply(3), "polite": criterion_reply("N/A")}
        return {"helpful": criterion_reply(5), "polite": criterion_reply(1)}

    judge = ScriptedJudge(script=script)
    outcome = await judge_once(judge, TURNS, _two_turns())
    assert isinstance(outcome, Judgment) and len(judge.calls) == 2
    assert sorted((v.turn, v.criterion_id, v.score) for v in outcome.verdicts) == [
        (0, "helpful", 5), (0, "polite", 1), (1, "helpful", 3), (1, "polite", None)]
    assert outcome.criterion_scores == {"helpful": pytest.approx(0.75), "polite": 1.0}
    assert outcome.usage.calls == 2


async def test_agent_turn_failure_in_one_turn_fails_the_sample() -> None:
    def script(call):
        if ">>> AGENT: Goodbye." in call.messages[1].content:
            return ModelUnavailableError("timeout")
        return {"helpful": criterion_reply(5), "polite": criterion_reply(1)}

    outcome = await judge_once(ScriptedJudge(script=script), TURNS, _two_turns())
    assert isinstance(outcome, JudgeError) and "agent turn 1" in outcome.message


async def test_agent_turn_rubric_with_no_agent_turn_is_not_scored() -> None:
    transcript = transcript_from_openai("t", [{"role": "user", "content": "Hi"}])
    judge = ScriptedJudge()
    outcome = await judge_once(judge, TURNS, transcript)
    assert isinstance(outcome, Judgment) and outcome.score is None
    assert outcome.unscored_reason and not judge.calls


async def test_all_na_judgment_is_not_scored() -> None:
    rubric = parse_rubric({"id": "na", "target": "conversation", "threshold": 0.5, "criteria": [
        {"id": "x", "question": "?", "allow_na": True}]}, "inline")
    outcome = await judge_once(ScriptedJudge(queue=[{"x": criterion_reply("N/A")}]), rubric,
                               weather_transcript())
    assert isinstance(outcome, Judgment)
    assert outcome.score is None and outcome.passed is None and outcome.unscored_reason


# A simulated user's profile, so simulator fidelity applies to the (imported) weather episode,
# and a reference answer, so final_response_match does.
PROFILE = JudgeContext(goal="Know the weather in Paris", persona="A terse traveller",
                       reference_answer="21.5°C and sunny.")


async def test_every_builtin_rubric_accepts_a_well_formed_reply() -> None:
    for rubric in load_rubrics().values():
        reply = {c.id: criterion_reply(rubric.scale_of(c).highest) for c in rubric.criteria}
        if rubric.target == "sentence_grounding":
            reply = {"sentences": [{"answer": 1, "sentence": "It is 21.5°C and sunny in Paris.",
                                    "reasoning": "The tool says so.",
                                    "evidence": ['"temp_c": 21.5'], "label": "supported"}]}
        outcome = await judge_once(ScriptedJudge(queue=[reply]), rubric, weather_transcript(),
                                   PROFILE)
        assert isinstance(outcome, Judgment) and outcome.score == 1.0 and outcome.passed


@pytest.mark.parametrize("context", [None, JudgeContext(goal="Know the weather in Paris")])
async def test_simulator_fidelity_on_an_imported_transcript_without_a_profile_is_not_applicable(
        context: JudgeContext | None) -> None:
    rubric = load_rubrics()["simulator_fidelity"]
    judge = ScriptedJudge(queue=[])
    outcome = await judge_once(judge, rubric, weather_transcript(), context)
    assert isinstance(outcome, Judgment) and not judge.calls  # no model call at all
    assert outcome.score is None and outcome.passed is None
    assert outcome.criterion_scores == {c.id: None for c in rubric.criteria}
    assert (outcome.unscored_reason or "").startswith("not applicable: simulator fidelity")
    assert "imported" in (outcome.unscored_reason or "")


@pytest.mark.parametrize("profile", [
    JudgeContext(persona="A terse traveller"), JudgeContext(user_facts={"city": "Paris"}),
    JudgeContext(user_unknowns=["the date"]), JudgeContext(plan=["ask about Paris"])])
async def test_simulator_fidelity_is_judged_when_a_profile_is_given(
        profile: JudgeContext) -> None:
    rubric = load_rubrics()["simulator_fidelity"]
    reply = {c.id: criterion_reply(rubric.scale_of(c).highest) for c in rubric.criteria}
    judge = ScriptedJudge(queue=[reply])
    outcome = await judge_once(judge, rubric, weather_transcript(), profile)
    assert isinstance(outcome, Judgment) and outcome.score == 1.0 and len(judge.calls) == 1


async def test_simulator_fidelity_of_a_simulated_episode_needs_no_imported_profile() -> None:
    # Only imported conversations lack a simulated user; a run episode is judged as before.
    rubric = load_rubrics()["simulator_fidelity"]
    reply = {c.id: criterion_reply(rubric.scale_of(c).highest) for c in rubric.criteria}
    episode = weather_transcript().model_copy(update={"stop_reason": "goal_met"})
    outcome = await judge_once(ScriptedJudge(queue=[reply]), rubric, episode)
    assert isinstance(outcome, Judgment) and outcome.score == 1.0


async def test_aggregates_keep_the_not_applicable_reason() -> None:
    # samples and a panel alike: the specific reason, not the generic "all N/A"
    rubric = load_rubrics()["simulator_fidelity"]
    settings = JudgeSettings(samples=2)
    for judges in ([ScriptedJudge(queue=[])], [ScriptedJudge(queue=[]), ScriptedJudge(queue=[])]):
        result = await judge_transcript(judges, rubric, weather_transcript(), settings=settings)
        assert result.status == "not_scored" and result.score is None
        assert (result.unscored_reason or "").startswith("not applicable: simulator fidelity")
        assert result.n_failed == 0 and not any(j.calls for j in judges)
