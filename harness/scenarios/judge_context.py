"""A scenario as the judges see it: its :class:`~harness.judging.context.JudgeContext` (the
user's goal, persona, facts and plan, and the expectations' reference answer and calls).
Here, not in judging, because judging is below scenarios and takes the context as given."""

from __future__ import annotations

from harness.errors import InputError
from harness.judging.context import JudgeContext
from harness.judging.rubric import Rubric
from harness.scenarios.personas import persona_text
from harness.scenarios.schema import Scenario, UserSpec


def reference_answer_of(scenario: Scenario) -> str | None:
    """The reference answer judges compare the final answer with (``final_response_match``):
    with per-turn reference answers the last turn's that has answer text (judges read the
    final answer; a reference's thinking text, ``thought``, is never theirs), else the
    scenario's ``expectations.reference_answer``."""
    exp = scenario.expectations
    answered = [a for a in exp.reference_answers or [] if a.answer.strip()]
    if answered:
        return max(answered, key=lambda a: a.turn).answer
    return exp.reference_answer


def given_opening_message(user: UserSpec) -> str | None:
    """The first live user message the scenario gives rather than the simulator writes: the
    ``opening_message``, a history's final user message, or a script's first turn."""
    if user.script:
        return user.script[0]
    return user.opening_message or user.history_opening()


def user_turn_problem(scenario: Scenario, rubric: Rubric, field: str) -> InputError | None:
    """Why ``rubric`` (named at ``field`` of the scenario) cannot judge this scenario's user
    turn by turn, or ``None``: a ``user_turn`` rubric on a scripted user with no turn after
    the first has nothing to judge (every turn is given, and the first is only compared)."""
    script = scenario.user.script
    if rubric.target != "user_turn" or script is None or len(script) > 1:
        return None
    return InputError(
        scenario.source or scenario.id, field,
        f"rubric {rubric.id!r} judges the simulated user's turns after the first, and this "
        "scenario's user is scripted with one turn; drop the rubric or give the user a goal "
        "for a simulator to play")


def context_for_scenario(scenario: Scenario) -> JudgeContext:
    """The judge context of a scenario: its user's goal, persona (a preset's text included),
    known and unknown facts, plan (or script) and given opening message
    (:func:`given_opening_message`), and its expectations' reference answer
    (:func:`reference_answer_of`) and reference tool calls."""
    user = scenario.user
    plan = [user.plan] if user.plan else []
    if user.script:
        plan += [f"say: {turn}" for turn in user.script]
    return JudgeContext(
        scenario_id=scenario.id,
        goal=user.goal,
        reference_answer=reference_answer_of(scenario),
        expected_tool_calls=scenario.expectations.tool_calls,
        persona=persona_text(user.persona_preset, user.persona) or None,
        user_facts=dict(user.known_facts),
        user_unknowns=list(user.unknown_facts),
        plan=plan,
        opening_message=given_opening_message(user),
    )
