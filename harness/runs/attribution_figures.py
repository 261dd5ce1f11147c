"""The ``attribution`` section of ``summary.json``: how many failed (or errored) samples each
party is blamed for (:mod:`harness.runs.failure_attribution`), each share with its Wilson
interval over the failed samples, a few examples to open, and the agent's suite figures
computed again without the samples blamed on the simulated user.

Both sets of the agent's figures are kept and labelled: the run's own (``score`` in the
summary, every sample under the error policy) and these (``without_simulator``), which leave
out exactly the samples attributed to the simulator and nothing else. Neither replaces the
other: the gate reads the run's own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from harness.runs.attribution import PARTIES, Attribution, Party
from harness.runs.sample import SampleRecord
from harness.stats.estimate import Estimate
from harness.stats.sampling import wilson_interval
from harness.stats.suite import suite_stats

MAX_EXAMPLES = 5  # per party, in sample order
_METHOD = "Wilson score interval over the failed and errored samples (each sample one unit)"


class AttributionExample(BaseModel):
    """One attributed sample to open: which one, the party and the one-line reason."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_id: str
    epoch: int
    party: Party
    reason: str


class WithoutSimulatorFigures(BaseModel):
    """The agent's mean and pass rate over every sample but those whose failure is
    attributed to the simulator (computed as the suite's, by the same function). ``mean`` and
    ``pass_rate`` are ``None`` when no sample is left."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    samples_left_out: int
    scenarios_left_out: int
    mean: Estimate | None
    pass_rate: Estimate | None


class AttributionFigures(BaseModel):
    """The ``attribution`` section (module docstring). ``by_party`` and ``shares`` have every
    party, 0 included; ``examples`` the first :data:`MAX_EXAMPLES` samples of each party;
    ``without_simulator`` is ``None`` when no sample is attributed to the simulator (the run's
    own figures are then the only ones). ``shares`` is empty when no sample failed (a run
    whose only news is its reruns)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    failed_samples: int
    by_party: dict[Party, int]
    shares: dict[Party, Estimate]
    examples: list[AttributionExample]
    without_simulator: WithoutSimulatorFigures | None = None
    reruns: int = Field(default=0, description="samples run again in place of one the "
                        "simulator spoiled (--rerun-simulator-faults)")
    reruns_blamed_again: int = Field(default=0, description="of those, the reruns the "
                                     "simulator spoiled again")


class AttributionCollector:
    """The attributions gathered one sample at a time, then summarised by :meth:`figures`."""

    def __init__(self) -> None:
        self.by_party: Counter[str] = Counter()
        self.scenarios: set[str] = set()
        self.examples: list[AttributionExample] = []
        self.simulator_samples: dict[str, int] = Counter()
        self.reruns = 0
        self.reruns_blamed_again = 0

    def add(self, record: SampleRecord, attribution: Attribution | None) -> None:
        blamed = attribution is not None and attribution.party == "simulator"
        if record.rerun is not None:
            self.reruns += 1
            self.reruns_blamed_again += blamed
        if attribution is None:
            return
        self.by_party[attribution.party] += 1
        self.scenarios.add(record.scenario_id)
        if attribution.party == "simulator":
            self.simulator_samples[record.scenario_id] += 1
        if sum(e.party == attribution.party for e in self.examples) < MAX_EXAMPLES:
            self.examples.append(AttributionExample(
                scenario_id=record.scenario_id, epoch=record.epoch, party=attribution.party,
                reason=attribution.reason))

    def figures(self, without_simulator: WithoutSimulatorFigures | None,
                confidence: float) -> AttributionFigures | None:
        """The section, or ``None`` when no sample failed and none was re-run;
        ``without_simulator`` is given only when the simulator is blamed for a sample."""
        n = sum(self.by_party.values())
        if not n and not self.reruns:
            return None
        shares = {}
        for party in PARTIES if n else ():
            low, high = wilson_interval(self.by_party[party], n, confidence)
            shares[party] = Estimate(value=self.by_party[party] / n, stderr=None, ci_low=low,
                                     ci_high=high, confidence=confidence, df=None, n=n,
                                     n_clusters=len(self.scenarios), method=_METHOD)
        return AttributionFigures(
            failed_samples=n, by_party={p: self.by_party[p] for p in PARTIES}, shares=shares,
            examples=self.examples,
            without_simulator=without_simulator,
            reruns=self.reruns, reruns_blamed_again=self.reruns_blamed_again)


def without_simulator_figures(
    scores: Mapping[str, Sequence[float]], passed: Mapping[str, Sequence[bool]],
    simulator_fault: Mapping[str, Sequence[bool]], *, confidence: float, seed: int,
) -> WithoutSimulatorFigures:
    """The suite's mean and pass rate from ``scores``/``passed`` (per scenario, in epoch
    order, as the suite's figures are computed) leaving out the entries whose
    ``simulator_fault`` flag is set (the lists line up)."""
    kept_scores: dict[str, list[float]] = {}
    kept_passed: dict[str, list[bool]] = {}
    left_out = 0
    for sid, xs in scores.items():
        flags = simulator_fault.get(sid) or [False] * len(xs)
        keep = [i for i, fault in enumerate(flags) if not fault]
        left_out += len(xs) - len(keep)
        if keep:
            kept_scores[sid] = [xs[i] for i in keep]
            kept_passed[sid] = [passed[sid][i] for i in keep]
    suite = (suite_stats(kept_scores, kept_passed, confidence=confidence, seed=seed,
                         bootstrap_resamples=0) if kept_scores else None)
    return WithoutSimulatorFigures(
        samples_left_out=left_out,
        scenarios_left_out=sum(1 for sid, xs in scores.items() if xs and sid not in kept_scores),
        mean=None if suite is None else suite.mean,
        pass_rate=None if suite is None else suite.pass_rate)
