"""Who a failed sample's failure belongs to: the contract of an attribution.

A failed sample is not always the agent's fault. The simulated user may have broken its
profile, the judges may disagree with each other or with a deterministic check of the same
fact, a mocked tool may have answered with an error the scenario did not mean, or a model
call may have failed. Each failed (or errored) sample carries one :class:`Attribution`:
the party, one line saying why, and the evidence it rests on.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Party = Literal["agent", "simulator", "judge", "tool", "infrastructure"]
PARTIES: tuple[Party, ...] = ("agent", "simulator", "judge", "tool", "infrastructure")


class Attribution(BaseModel):
    """The party a failure is attributed to, why (one line), and the evidence."""

    model_config = ConfigDict(extra="forbid")

    party: Party
    reason: str
    evidence: list[str] = Field(default_factory=list)
