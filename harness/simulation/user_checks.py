"""What the simulated user did wrong, turn by turn: the contract of a simulator finding.

A simulated user is a model too, and it fails in ways that make an agent look worse (or
better) than it is: it volunteers a fact nobody asked for, contradicts its own profile,
invents an answer it was told it does not know, goes on after saying its goal was met, walks
out while the agent is mid-task, speaks as the assistant, skips a step of its plan, or opens
with another message than the scenario's. Each is a :class:`SimulatorFinding` naming the
user turn and quoting the evidence. Findings are reported apart from the agent's figures and
feed the attribution of a failed sample to the party that caused it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FindingKind = Literal[
    "fact_volunteered",  # a known fact revealed before the agent asked for it
    "fact_contradicted",  # a fact stated that contradicts the profile's known_facts
    "unknown_fact_invented",  # an answer made up for one of the profile's unknown_facts
    "turn_after_goal_met",  # the user went on after declaring the goal met
    "ended_while_agent_pending",  # the user ended while the agent asked or was mid-action
    "role_confusion",  # a user turn spoken as the assistant (or holding tool-call JSON)
    "plan_step_skipped",  # a step of the scenario's plan never said
    "opening_mismatch",  # the first user message is not the scenario's opening message
]
FINDING_KINDS: tuple[FindingKind, ...] = (
    "fact_volunteered",
    "fact_contradicted",
    "unknown_fact_invented",
    "turn_after_goal_met",
    "ended_while_agent_pending",
    "role_confusion",
    "plan_step_skipped",
    "opening_mismatch",
)


class SimulatorFinding(BaseModel):
    """One thing the simulated user did wrong: its ``kind``, the 0-based user ``turn`` it
    happened at, and the ``evidence`` (the words quoted, and what they break)."""

    model_config = ConfigDict(extra="forbid")

    kind: FindingKind
    turn: int = Field(ge=0, description="0-based index of the user turn")
    evidence: str
