"""What a judge needs to know besides the transcript: the scenario's goal, the reference
answer and calls, and the simulated user's profile. An explicit input, so judging does not
depend on where it came from (a scenario, a transcript file, a labelled item)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.checks.spec import ExpectedToolCall


class JudgeContext(BaseModel):
    """What the judge needs besides the transcript, given explicitly by the caller
    (:func:`harness.scenarios.judge_context.context_for_scenario` for a scenario;
    ``score-transcripts`` fills what a transcript line has).

    ``user_facts`` are what the simulated user knows and should reveal only when asked;
    ``user_unknowns`` what it does not know (and must not invent); both and ``persona`` and
    ``plan`` are used for simulator fidelity. ``opening_message`` is the first user message
    the scenario gave (its ``opening_message``, a history's final user message, a script's
    first turn): a ``user_turn`` rubric compares the first turn with it instead of judging it.
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
    opening_message: str | None = None
