"""A scenario as the judges see it: its :class:`~harness.judging.context.JudgeContext` (the
user's goal, persona, facts and plan, and the expectations' reference answer and calls).
Here, not in judging, because judging is below scenarios and takes the context as given."""

from __future__ import annotations

from harness.judging.context import JudgeContext
from harness.scenarios.personas import persona_text
from harness.scenarios.schema import Scenario


def reference_answer_of(scenario: Scenario) -> str | None:
    """The reference answer judges compare the final answer with (``final_response_match``):
    with per-turn reference answers the last turn's (judges read the final answer), else the
    scenario's ``expectations.reference_answer``."""
    exp = scenario.expectations
    if exp.reference_answers:
        return max(exp.reference_answers, key=lambda a: a.turn).answer
    return exp.reference_answer


def context_for_scenario(scenario: Scenario) -> JudgeContext:
    """The judge context of a scenario: its user's goal, persona (a preset's text included),
    known and unknown facts and plan (or script), and its expectations' reference answer
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
    )
