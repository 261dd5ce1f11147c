"""A criterion judged on some turns only (``turns`` on an ``agent_turn`` rubric's
criterion): each turn's judge call asks the criteria of that turn and no other, a turn with
none gets no call, the criterion's score is over its own turns, weights by turn count make
the rubric score the mean over every (criterion, turn) verdict, and ``turns`` elsewhere is an
error naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import InputError
from harness.judging.judge import judge_once
from harness.judging.rubric import parse_rubric
from harness.judging.verdicts import Judgment
from harness.transcript import Transcript, transcript_from_openai
from tests.helpers.judging_fakes import ScriptedJudge, criterion_reply


def three_turns() -> Transcript:
    return transcript_from_openai("t", [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Price?"}, {"role": "assistant", "content": "Ten euros."},
        {"role": "user", "content": "Bye"}, {"role": "assistant", "content": "Goodbye."}])


def rubric(**polite: Any) -> Any:
    # 'polite' on every turn (weight 3: its three turns); 'price' on turn 1 only
    return parse_rubric({"id": "adk_like", "target": "agent_turn", "threshold": 0.5,
                         "criteria": [
                             {"id": "polite", "question": "Polite?", "scale": "binary",
                              "weight": 3, **polite},
                             {"id": "price", "question": "States the price?",
                              "scale": "binary", "turns": [1]}]}, "inline")


def marked_turn(text: str) -> int:
    return next(i for i, answer in enumerate(("Hello!", "Ten euros.", "Goodbye."))
                if f">>> AGENT: {answer}" in text)


async def test_each_turn_is_asked_its_own_criteria() -> None:
    # polite: yes, no, yes; price (turn 1 only): yes
    answers = {0: {"polite": 1}, 1: {"polite": 0, "price": 1}, 2: {"polite": 1}}

    def script(call: Any) -> dict[str, Any]:
        turn = marked_turn(call.messages[1].content)
        return {c: criterion_reply(v) for c, v in answers[turn].items()}

    judge = ScriptedJudge(script=script)
    outcome = await judge_once(judge, rubric(), three_turns())
    assert isinstance(outcome, Judgment)
    asked = sorted((marked_turn(c.messages[1].content), sorted(c.response_model.model_fields))
                   for c in judge.calls)
    assert asked == [(0, ["polite"]), (1, ["polite", "price"]), (2, ["polite"])]
    # the criteria the judge was shown for a turn are that turn's
    shown = {marked_turn(c.messages[1].content): c.messages[0].content for c in judge.calls}
    assert "States the price?" in shown[1] and "States the price?" not in shown[0]
    assert sorted((v.turn, v.criterion_id, v.score) for v in outcome.verdicts) == [
        (0, "polite", 1), (1, "polite", 0), (1, "price", 1), (2, "polite", 1)]
    assert outcome.criterion_scores == {"polite": pytest.approx(2 / 3), "price": 1.0}
    # weights 3 and 1: the mean over the four verdicts, as ADK pools rubric scores
    assert outcome.score == pytest.approx(3 / 4)


async def test_a_turn_with_no_criterion_of_its_own_gets_no_call() -> None:
    judge = ScriptedJudge(script=lambda call: {"polite": criterion_reply(1),
                                               "price": criterion_reply(0)})
    outcome = await judge_once(judge, rubric(turns=[1]), three_turns())
    assert isinstance(outcome, Judgment) and len(judge.calls) == 1
    assert marked_turn(judge.calls[0].messages[1].content) == 1
    assert outcome.criterion_scores == {"polite": 1.0, "price": 0.0}


async def test_a_criterion_whose_turns_never_came_is_left_out() -> None:
    transcript = transcript_from_openai("t", [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}])
    judge = ScriptedJudge(script=lambda call: {"polite": criterion_reply(1)})
    outcome = await judge_once(judge, rubric(), transcript)
    assert isinstance(outcome, Judgment)
    assert outcome.criterion_scores == {"polite": 1.0, "price": None}
    assert outcome.score == 1.0


@pytest.mark.parametrize(("target", "turns", "expected"), [
    ("final_response", [0], "applies only to target agent_turn"),
    ("agent_turn", [], "at least 1 item"),
    ("agent_turn", [-1], "greater than or equal to 0"),
])
def test_turns_where_they_cannot_apply_name_the_field(target: str, turns: list[int],
                                                      expected: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_rubric({"id": "r", "target": target, "threshold": 0.5, "criteria": [
            {"id": "c", "question": "?", "scale": "binary", "turns": turns}]}, "r.yaml")
    assert "criteria" in str(caught.value) and "turns" in str(caught.value)
    assert expected in str(caught.value)


async def test_no_criterion_for_the_turns_taken_is_unscored_saying_so() -> None:
    only_later = parse_rubric({"id": "later", "target": "agent_turn", "threshold": 0.5,
                               "criteria": [{"id": "bye", "question": "Bye?",
                                             "scale": "binary", "turns": [5]}]}, "inline")
    judge = ScriptedJudge()
    outcome = await judge_once(judge, only_later, three_turns())
    assert isinstance(outcome, Judgment) and outcome.score is None and not judge.calls
    assert "no criterion of the rubric is asked about the turns" in (
        outcome.unscored_reason or "")
