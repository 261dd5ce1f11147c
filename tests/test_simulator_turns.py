"""The per-turn judge of the simulated user (target ``user_turn``, built-in rubric
``simulator_turns``): one verdict per user turn, the given opening compared with no model call,
the score the share of passing turns, samples and panels combined turn by turn (majority with
ties failing, or mean), the offline judge's verdicts, and bad rubrics refused in one line."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from harness.errors import InputError
from harness.judging.aggregate import aggregate_panel, aggregate_samples
from harness.judging.context import JudgeContext
from harness.judging.judge import JudgeSettings, judge_once, judge_transcript
from harness.judging.offline import MockJudge, user_turn_verdicts
from harness.judging.prompts import build_judge_prompt, template_hash
from harness.judging.rubric import (
    SIMULATOR_TARGETS,
    USER_TURN_CRITERIA,
    Rubric,
    load_rubrics,
    parse_rubric,
)
from harness.judging.user_turns import user_messages
from harness.judging.verdicts import Judgment, UserTurnVerdict
from harness.models.types import Message
from harness.transcript import Transcript
from tests.helpers.judging_fakes import BehaviourModel, Call, ScriptedJudge, criterion_reply

RUBRIC = load_rubrics()["simulator_turns"]
CRITERIA = [c.id for c in RUBRIC.criteria]
OPENING = "I want to cancel my order."
PROFILE = JudgeContext(goal="cancel my order", persona="A busy customer",
                       user_facts={"order_id": "A-1", "email": "jo@example.com"},
                       opening_message=OPENING)


def conversation(*users: str, closing: str | None = "Thanks, that's all I needed.",
                 stop: str = "goal_met") -> Transcript:
    """User turns, each answered by the agent asking for the order id."""
    messages = []
    for text in users:
        messages += [Message(role="user", content=text),
                     Message(role="assistant", content="Could you tell me your order id?")]
    return Transcript(scenario_id="s", epoch=0, messages=messages, stop_reason=stop,  # type: ignore[arg-type]
                      stop_detail=closing)


def judge(reply_for: Any) -> ScriptedJudge:
    """A judge whose reply to each call is ``reply_for(call)`` (criterion id -> 0/1)."""
    def script(call: Call) -> dict[str, Any]:
        return {c: criterion_reply(v, reasoning=f"{c} said {v}")
                for c, v in reply_for(call).items()}
    return ScriptedJudge(script=script)


def all_yes(call: Call) -> dict[str, int]:
    return dict.fromkeys(CRITERIA, 1)


def marked_message(call: Call) -> str:
    """The user message the judge is asked about (the line marked with >>>)."""
    text = call.messages[-1].content
    (line,) = [x for x in text.splitlines() if " >>> USER" in x]
    return line.split(": ", 1)[1]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# --- the rubric ----------------------------------------------------------------------------

def test_the_builtin_rubric_has_the_five_criteria_and_judges_the_simulator() -> None:
    assert RUBRIC.target == "user_turn" and "user_turn" in SIMULATOR_TARGETS
    assert list(USER_TURN_CRITERIA) == CRITERIA
    assert all(c.scale == "binary" for c in RUBRIC.criteria)
    assert RUBRIC.threshold == 0.8  # ADK's default threshold for this metric


def _rubric(**change: Any) -> dict[str, Any]:
    data = RUBRIC.model_dump(mode="json", exclude_none=True)
    data.update(change)
    return data


def test_an_unknown_criterion_is_one_line_naming_the_field() -> None:
    criteria = [*_rubric()["criteria"], {"id": "polite", "question": "Polite?",
                                         "scale": "binary"}]
    with pytest.raises(InputError) as err:
        parse_rubric(_rubric(criteria=criteria), "mine.yaml")
    text = str(err.value)
    assert "\n" not in text
    assert "mine.yaml" in text and "criteria[5].id" in text
    assert "unknown criterion 'polite' for target user_turn" in text
    assert "follows_persona" in text


def test_a_criterion_on_another_scale_is_refused() -> None:
    criteria = [{"id": "natural", "question": "Natural?", "scale": "ordinal_1_5"}]
    with pytest.raises(InputError) as err:
        parse_rubric(_rubric(criteria=criteria), "mine.yaml")
    assert "criteria[0]" in str(err.value) and "scale binary" in str(err.value)


def test_a_subset_of_the_criteria_is_a_rubric() -> None:
    rubric = parse_rubric(_rubric(id="two", criteria=_rubric()["criteria"][:2]), "two.yaml")
    assert [c.id for c in rubric.criteria] == CRITERIA[:2]


# --- the prompt ----------------------------------------------------------------------------

def test_the_prompt_shows_the_profile_and_the_conversation_up_to_the_marked_turn() -> None:
    t = conversation(OPENING, "My order id is A-1.", "And my email is jo@example.com.")
    text = build_judge_prompt(RUBRIC, t, PROFILE, turn=1).messages[-1].content
    assert ">>> USER: My order id is A-1." in text
    assert "jo@example.com." not in text.split("<transcript>")[1]  # nothing after the turn
    assert "A busy customer" in text and "order_id: A-1" in text
    closing = build_judge_prompt(RUBRIC, t, PROFILE, turn=3).messages[-1].content
    assert ">>> USER, ending the conversation (goal_met): Thanks, that's all I needed." in closing
    with pytest.raises(ValueError):
        build_judge_prompt(RUBRIC, t, PROFILE)
    assert template_hash("user_turn") != template_hash("simulator_fidelity")


def test_the_closing_words_are_the_last_user_turn_only_when_the_user_ended_it() -> None:
    assert user_messages(conversation("a", "b")) == ["a", "b", "Thanks, that's all I needed."]
    assert user_messages(conversation("a", "b", stop="turn_limit",
                                      closing="10 user turns")) == ["a", "b"]


# --- one sample ----------------------------------------------------------------------------

def test_one_verdict_per_user_turn_and_the_opening_compared_without_a_call() -> None:
    t = conversation(OPENING, "My order id is A-1.")
    fake = judge(all_yes)
    outcome = run(judge_once(fake, RUBRIC, t, PROFILE))
    assert isinstance(outcome, Judgment)
    asked = sorted(marked_message(c) for c in fake.calls)
    assert asked == ["My order id is A-1.", "Thanks, that's all I needed."]
    assert [(u.turn, u.checked, u.passed) for u in outcome.user_turns] == [
        (0, "opening_message", True), (1, "judge", True), (2, "judge", True)]
    assert sorted((v.turn, v.criterion_id) for v in outcome.verdicts) == sorted(
        (turn, c) for turn in (1, 2) for c in CRITERIA)
    assert outcome.score == 1.0 and outcome.passed is True


def test_a_first_turn_that_is_not_the_opening_message_fails_it() -> None:
    t = conversation("Hi, cancel it please.", "My order id is A-1.")
    outcome = run(judge_once(judge(all_yes), RUBRIC, t, PROFILE))
    first = outcome.user_turns[0]
    assert (first.checked, first.passed) == ("opening_message", False)
    assert "not the scenario's opening message" in (first.reason or "")
    assert outcome.score == pytest.approx(2 / 3)


def test_without_an_opening_message_the_first_turn_is_judged() -> None:
    t = conversation("Hi, cancel it please.")
    fake = judge(all_yes)
    no_opening = PROFILE.model_copy(update={"opening_message": None})
    outcome = run(judge_once(fake, RUBRIC, t, no_opening))
    assert [u.checked for u in outcome.user_turns] == ["judge", "judge"]
    assert len(fake.calls) == 2


@pytest.mark.parametrize("failing", [set(), {1}, {1, 2}, {0, 1, 2}])
def test_the_score_is_the_share_of_turns_where_every_criterion_holds(failing: set[int]) -> None:
    users = ["Cancel it.", "My order id is A-1.", "Is it done?"]
    t = conversation(*users, closing=None, stop="turn_limit")

    def reply(call: Call) -> dict[str, int]:
        turn = users.index(marked_message(call))
        # a failing turn fails one criterion only; the others hold
        return {c: int(not (turn in failing and c == CRITERIA[turn])) for c in CRITERIA}

    no_opening = PROFILE.model_copy(update={"opening_message": None})
    outcome = run(judge_once(judge(reply), RUBRIC, t, no_opening))
    matrix = np.array([[reply_of(outcome, turn, c) for c in CRITERIA] for turn in range(3)])
    assert outcome.score == pytest.approx(float(np.mean(np.all(matrix, axis=1))))
    assert outcome.score == pytest.approx(1 - len(failing) / 3)
    assert outcome.passed is (outcome.score >= 0.8)
    assert [u.failed_criteria for u in outcome.user_turns] == [
        [CRITERIA[turn]] if turn in failing else [] for turn in range(3)]


def reply_of(outcome: Judgment, turn: int, criterion: str) -> int:
    (verdict,) = [v for v in outcome.verdicts if v.turn == turn and v.criterion_id == criterion]
    assert verdict.score is not None
    return verdict.score


def test_a_conversation_with_only_the_given_opening_needs_no_call() -> None:
    t = conversation(OPENING, closing=None, stop="turn_limit")
    fake = judge(all_yes)
    outcome = run(judge_once(fake, RUBRIC, t, PROFILE))
    assert fake.calls == [] and outcome.score == 1.0
    assert all(v is None for v in outcome.criterion_scores.values())


def test_an_imported_conversation_without_a_profile_is_not_scored() -> None:
    t = conversation("a", "b").model_copy(update={"stop_reason": "imported"})
    fake = judge(all_yes)
    outcome = run(judge_once(fake, RUBRIC, t, JudgeContext()))
    assert fake.calls == [] and outcome.score is None
    assert "profile" in (outcome.unscored_reason or "")


def test_a_failed_call_is_a_judge_error_naming_the_user_turn() -> None:
    from harness.errors import ModelError

    def reply(call: Call) -> Any:
        if marked_message(call) == "My order id is A-1.":
            raise ModelError("the service is down", model="fake:judge")
        return {c: criterion_reply(1) for c in CRITERIA}

    outcome = run(judge_once(ScriptedJudge(script=reply), RUBRIC,
                             conversation(OPENING, "My order id is A-1."), PROFILE))
    assert outcome.kind == "judge_error" and "judging user turn 1" in outcome.message


# --- samples and panels --------------------------------------------------------------------

def _sample(index: int, passes: list[bool]) -> Judgment:
    turns = [UserTurnVerdict(turn=i, checked="judge", passed=p, value=float(p),
                             failed_criteria=[] if p else ["natural"])
             for i, p in enumerate(passes)]
    return Judgment(rubric_id=RUBRIC.id, rubric_version=RUBRIC.version, target="user_turn",
                    judge_model="fake:judge", prompt_version="x", prompt_hash="h",
                    sample_index=index, verdicts=[],
                    criterion_scores={c: 1.0 for c in CRITERIA},
                    score=float(np.mean(passes)), passed=bool(np.mean(passes) >= 0.8),
                    user_turns=turns)


VOTES = np.array([[True, True, False, True],
                  [True, False, False, True],
                  [False, True, False, True]])  # samples x turns


def test_samples_combine_turn_by_turn_by_majority() -> None:
    samples = [_sample(i, list(row)) for i, row in enumerate(VOTES)]
    agg = aggregate_samples(RUBRIC, samples, "majority")
    expected = VOTES.sum(axis=0) * 2 > VOTES.shape[0]
    assert [t.passed for t in agg.user_turns] == list(expected)
    assert agg.score == pytest.approx(float(np.mean(expected)))
    assert agg.user_turns[0].votes == [True, True, False]
    assert agg.vote_scores == pytest.approx(list(VOTES.mean(axis=1)))
    assert agg.disagreement.score_stdev == pytest.approx(float(np.std(VOTES.mean(axis=1),
                                                                      ddof=1)))


def test_a_tied_majority_fails_the_turn() -> None:
    agg = aggregate_samples(RUBRIC, [_sample(0, [True]), _sample(1, [False])], "majority")
    assert [t.passed for t in agg.user_turns] == [False] and agg.score == 0.0


def test_the_mean_gives_each_turn_the_share_of_votes_passing_it() -> None:
    agg = aggregate_samples(RUBRIC, [_sample(i, list(r)) for i, r in enumerate(VOTES)], "mean")
    assert [t.value for t in agg.user_turns] == pytest.approx(list(VOTES.mean(axis=0)))
    assert agg.score == pytest.approx(float(VOTES.mean()))


def test_a_panel_combines_its_judges_turn_by_turn() -> None:
    members = [aggregate_samples(RUBRIC, [_sample(0, list(row))], "majority") for row in VOTES]
    panel = aggregate_panel(RUBRIC, members, "majority")
    expected = VOTES.sum(axis=0) * 2 > VOTES.shape[0]
    assert panel.level == "panel"
    assert [t.passed for t in panel.user_turns] == list(expected)
    assert panel.score == pytest.approx(float(np.mean(expected)))


def test_judge_samples_take_the_majority_end_to_end() -> None:
    """Three samples: the second says no to `natural` on every turn, the others yes."""
    def reply(call: Call) -> dict[str, int]:
        return {c: int(not (call.sample_index == 1 and c == "natural")) for c in CRITERIA}

    t = conversation(OPENING, "My order id is A-1.")
    settings = JudgeSettings(samples=3, method="majority")
    agg = run(judge_transcript(judge(reply), RUBRIC, t, PROFILE, settings=settings))
    assert agg.n_votes == 3 and agg.score == 1.0
    assert [j.score for j in agg.judgments] == pytest.approx([1.0, 1 / 3, 1.0])
    assert [t.votes for t in agg.user_turns[1:]] == [[True, False, True]] * 2
    worse = run(judge_transcript(judge(lambda c: {k: int(not (c.sample_index and
                                                              k == "natural"))
                                                  for k in CRITERIA}),
                                 RUBRIC, t, PROFILE, settings=settings))
    assert worse.score == pytest.approx(1 / 3)  # two of three samples fail the judged turns


# --- the offline judge ---------------------------------------------------------------------

def _case(text: str, before: str = "", earlier: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"text": text, "agent_before": before, "earlier": list(earlier),
            "facts": {"order_id": "A-1"}, "unknowns": ["the delivery date"]}


@pytest.mark.parametrize(("text", "before", "failing"), [
    ("My order id is A-1.", "Could you tell me your order id?", []),
    ("As an AI, I can help you with that.", "", ["follows_persona"]),
    ("Never mind, I'll sort it out myself.", "Could you tell me your order id?",
     ["pursues_goal"]),
    ("Cancel it. My order id is A-1.", "", ["stays_in_scope"]),
    ("The delivery date was Monday.", "When was the delivery date?",
     ["consistent_with_earlier_turns"]),
    ("I don't know the delivery date.", "When was the delivery date?", []),
    (" ".join(["word"] * 130), "", ["natural"]),
])
def test_the_offline_judge_says_no_where_the_turn_goes_wrong(text: str, before: str,
                                                             failing: list[str]) -> None:
    verdicts = user_turn_verdicts(_case(text, before))
    assert [c for c, (holds, _) in verdicts.items() if not holds] == failing


def test_the_offline_judge_runs_the_rubric_offline() -> None:
    t = conversation(OPENING, "Never mind, I'll sort it out myself.", closing=None,
                     stop="turn_limit")
    model = BehaviourModel(MockJudge(), "judge")
    outcome = run(judge_once(model, RUBRIC, t, PROFILE))
    assert isinstance(outcome, Judgment)
    assert [(u.turn, u.passed, u.failed_criteria) for u in outcome.user_turns] == [
        (0, True, []), (1, False, ["pursues_goal"])]
    assert outcome.score == 0.5


def test_rubric_criteria_are_all_answered_by_the_offline_judge() -> None:
    rubric = Rubric.model_validate({**_rubric(id="one"), "criteria": [
        {"id": "natural", "question": "Natural?", "scale": "binary"}]})
    outcome = run(judge_once(BehaviourModel(MockJudge(), "judge"), rubric,
                             conversation(OPENING, "ok"), PROFILE))
    assert {v.criterion_id for v in outcome.verdicts} == {"natural"}
