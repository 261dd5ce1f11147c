"""One sample: a scenario run once (one epoch), with its transcript, checks, judgments and the
score the statistics use. This is what the store keeps and what ``samples.jsonl`` exports."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.models.types import Role
from harness.runs.attribution import Attribution
from harness.simulation.user_checks import SimulatorFinding
from harness.transcript import ErrorInfo, Transcript, UsageTotals

SampleStatus = Literal["scored", "errored", "unscored"]


class RerunInfo(BaseModel):
    """A sample run again (``--rerun-simulator-faults``): which attempt (1 for the first
    rerun), the sample index its model calls used (a new seed), and the attribution of the
    record it replaced (kept in the store's ``replaced_samples``)."""

    model_config = ConfigDict(extra="forbid")

    attempt: int = Field(ge=1)
    sample_index: int
    replaced: Attribution | None = None


class SampleRecord(BaseModel):
    """A finished sample.

    ``status`` is ``errored`` when the episode or a judge failed after retries; then ``score``
    and ``passed`` are ``None`` and ``error`` says why. An errored sample is never a failing
    score: the run's error policy decides, explicitly, how it counts. ``unscored`` means the
    sample finished but nothing applied to score it (no check, every rubric N/A).

    ``metrics`` holds every check and rubric score normalised to [0, 1] under its name, so each
    can be summarised with its own interval. ``judge_samples`` holds the per-judge-sample
    scores of each rubric; ``score_by_judge_sample`` the sample score recomputed with the k-th
    judge sample of every rubric (set when judged more than once), which separates judge noise
    from agent noise. ``models`` names the models of each role (``mock:`` ones are offline; a
    Python agent is ``python:module:function``); ``offline`` is true when any role used a
    ``mock:`` model. ``tags`` are the scenario's (empty in stores written before they were
    kept). ``simulator_findings`` are what the simulated user did wrong (for a scripted
    user only the checks of its profile, ``user_checks.SCRIPTED_KINDS``; empty in stores
    written before they were kept); ``attribution`` names the party a
    failed or errored sample's failure belongs to (``None`` for a passed sample);
    ``rerun`` is set on a sample run again in place of one the simulator spoiled.
    """

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    epoch: int
    tags: list[str] = Field(default_factory=list)
    status: SampleStatus
    score: float | None = None
    passed: bool | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    judge_samples: dict[str, list[float]] = Field(default_factory=dict)
    score_by_judge_sample: list[float] = Field(default_factory=list)
    error: ErrorInfo | None = None
    transcript: Transcript
    checks: list[dict[str, Any]] = Field(default_factory=list)
    judgments: list[dict[str, Any]] = Field(default_factory=list)
    usage: dict[Role, UsageTotals] = Field(default_factory=dict)
    simulator_findings: list[SimulatorFinding] = Field(default_factory=list)
    attribution: Attribution | None = None
    rerun: RerunInfo | None = None
    models: dict[Role, list[str]] = Field(default_factory=dict)
    offline: bool = False
    started_at: float = 0.0
    finished_at: float = 0.0

    @property
    def errored(self) -> bool:
        return self.status == "errored"
