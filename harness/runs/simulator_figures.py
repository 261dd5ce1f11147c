"""The simulated user's figures of a run, the ``simulator`` section of ``summary.json``: how
many samples' conversations the simulator checks read, how many had at least one finding
(with the share and its interval), how many findings of each kind, and a few examples to
open. They describe the simulated user, not the agent: no agent figure reads them.

A sample is *checked* when its conversation has a user turn and the simulator's own call did
not fail (then the conversation stopped where it broke, and nothing is checked); scripted
users are checked for what a script can get wrong (``user_checks.SCRIPTED_KINDS``). The
share's interval is Wilson's over the checked samples, each one unit, as the harness gives
every share of samples (samples of one scenario are not independent; the counts beside it say
how much lies behind it).
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict

from harness.runs.sample import SampleRecord
from harness.simulation.user_checks import FINDING_KINDS, FindingKind
from harness.stats.estimate import Estimate
from harness.stats.sampling import wilson_interval

MAX_EXAMPLES = 20
_METHOD = "Wilson score interval over the checked samples (each sample one unit)"


class SimulatorExample(BaseModel):
    """One finding to open: the sample (scenario and epoch), its kind and user turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_id: str
    epoch: int
    kind: FindingKind
    turn: int


class SimulatorFigures(BaseModel):
    """The ``simulator`` section (module docstring: what is counted). ``by_kind`` has every
    kind, 0 included; ``samples_by_kind`` counts the samples with at least one finding of
    each; ``examples`` lists the first :data:`MAX_EXAMPLES` findings in sample order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    samples_checked: int
    samples_with_findings: int
    share_with_findings: Estimate
    findings: int
    by_kind: dict[FindingKind, int]
    samples_by_kind: dict[FindingKind, int]
    examples: list[SimulatorExample]


def checked(record: SampleRecord) -> bool:
    """Whether the simulator checks read this sample's conversation."""
    t = record.transcript
    return t.stop_reason != "simulator_error" and any(m.role == "user" for m in t.messages)


class SimulatorCollector:
    """The simulator figures gathered one sample at a time, then summarised by
    :meth:`figures`."""

    def __init__(self) -> None:
        self.checked = 0
        self.with_findings = 0
        self.scenarios: set[str] = set()
        self.by_kind: Counter[str] = Counter()
        self.samples_by_kind: Counter[str] = Counter()
        self.examples: list[SimulatorExample] = []

    def add(self, record: SampleRecord) -> None:
        if not checked(record):
            return
        self.checked += 1
        self.scenarios.add(record.scenario_id)
        findings = record.simulator_findings
        if not findings:
            return
        self.with_findings += 1
        self.by_kind.update(f.kind for f in findings)
        self.samples_by_kind.update({f.kind for f in findings})
        for f in findings[:max(0, MAX_EXAMPLES - len(self.examples))]:
            self.examples.append(SimulatorExample(scenario_id=record.scenario_id,
                                                  epoch=record.epoch, kind=f.kind,
                                                  turn=f.turn))

    def figures(self, confidence: float) -> SimulatorFigures | None:
        """The section, or ``None`` when no sample was checked."""
        if not self.checked:
            return None
        low, high = wilson_interval(self.with_findings, self.checked, confidence)
        share = Estimate(value=self.with_findings / self.checked, stderr=None, ci_low=low,
                         ci_high=high, confidence=confidence, df=None, n=self.checked,
                         n_clusters=len(self.scenarios), method=_METHOD)
        return SimulatorFigures(
            samples_checked=self.checked, samples_with_findings=self.with_findings,
            share_with_findings=share, findings=sum(self.by_kind.values()),
            by_kind={k: self.by_kind[k] for k in FINDING_KINDS},
            samples_by_kind={k: self.samples_by_kind[k] for k in FINDING_KINDS},
            examples=self.examples)
