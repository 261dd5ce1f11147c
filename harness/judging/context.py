"""What a judge needs to know besides the transcript: the scenario's goal, the reference
answer and calls, and the simulated user's profile. An explicit input, so judging does not
depend on where it came from (a scenario, a transcript file, a labelled item)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from harness.checks.spec import ExpectedToolCall

if TYPE_CHECKING:  # only for the type: judging must not import the scenario module at runtime
    from harness.scenarios.schema import Scenario


class JudgeContext(BaseModel):
    """What the judge needs besides the transcript, given explicitly by the caller
    (:func:`context_for_scenario` for a scenario; ``score-transcripts`` fills what a
    transcript line has).

    ``user_facts`` are what the simulated user knows and should reveal only when asked;
    ``user_unknowns`` what it does not know (and must not invent); both and ``persona`` and
    ``plan`` are used for simulator fidelity.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_id: str | None = None
    goal: str | None = None
    reference_answer: str | None = None
    expected_tool_calls: list[ExpectedToolCall] | None = None
    persona: str | None = None
    user_facts: dict[str, Any] = Field(default_factory=dict)
    user_unknowns: list[str] = Field(default_factory=list)
    plan: list[str] = Field(default_factory=list)


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
    from harness.simulation.personas import persona_text  # data only; keeps imports light

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
