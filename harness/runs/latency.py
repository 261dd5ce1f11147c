"""Latency figures of a run: per episode, per user turn, per tool call and per model call,
overall and per scenario, computed once here for ``summary.json``, the terminal and the HTML
report.

What each duration is (seconds, wall clock):

- **episode**: the conversation, from the first turn to the stop (``Transcript.duration_s``):
  the simulator's and the agent's model calls and the tool calls. Checks and judging are
  *not* included (they are the harness's work, not the agent's). Samples with no timed
  conversation (imported transcripts, an internal error before the episode ran) add none.
- **user turn**: what one user turn cost the agent, its model calls plus its tool calls
  (:meth:`~harness.transcript.Transcript.turn_latencies`, which the ``latency_budget`` check
  reads too); the simulator's time is not in it.
- **tool call**: one mocked tool call.
- **model call**: one step, per role: ``agent`` (one model call of the agent, or one request
  to an HTTP agent) and ``simulator`` (one model call of the simulator); the terminal and the
  HTML report call them "agent call" and "simulator call".

Every sample with a timed conversation counts, errored ones included (a time-limited episode
is part of how slow the agent is). Percentiles are numpy's (linear interpolation).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from harness.runs.sample import SampleRecord


class LatencySpread(BaseModel):
    """Mean, median, 95th percentile and maximum of some durations (seconds) and how many;
    all ``None`` when there were none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    mean: float | None = None
    median: float | None = None
    p95: float | None = None
    max: float | None = None


def spread(values: Sequence[float]) -> LatencySpread:
    """The :class:`LatencySpread` of ``values`` (numpy's percentiles, linear
    interpolation)."""
    if not values:
        return LatencySpread(n=0)
    median, p95 = np.percentile(values, [50, 95])
    return LatencySpread(n=len(values), mean=float(np.mean(values)), median=float(median),
                         p95=float(p95), max=float(max(values)))


class LatencyFigures(BaseModel):
    """The spreads of one group of samples (the run, or one scenario)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    episode: LatencySpread = Field(
        description="the conversation (simulator, agent, tools); checks and judging excluded")
    user_turn: LatencySpread = Field(
        description="the agent's model calls plus its tool calls in one user turn")
    tool_call: LatencySpread
    model_call: dict[str, LatencySpread] = Field(
        default_factory=dict, description="one model call, per role")


class RunLatency(BaseModel):
    """A run's latency figures, overall and per scenario (by scenario id)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    overall: LatencyFigures
    scenarios: dict[str, LatencyFigures]


@dataclass
class _Durations:
    episodes: list[float] = field(default_factory=list)
    turns: list[float] = field(default_factory=list)
    tool_calls: list[float] = field(default_factory=list)
    model_calls: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def figures(self) -> LatencyFigures:
        return LatencyFigures(
            episode=spread(self.episodes), user_turn=spread(self.turns),
            tool_call=spread(self.tool_calls),
            model_call={role: spread(v) for role, v in sorted(self.model_calls.items())})


class LatencyCollector:
    """Durations gathered one sample at a time (a transcript is not kept), then
    summarised by :meth:`latency`."""

    def __init__(self) -> None:
        self._overall = _Durations()
        self._scenarios: dict[str, _Durations] = defaultdict(_Durations)

    def add(self, record: SampleRecord) -> None:
        t = record.transcript
        if t.duration_s <= 0:
            return
        turns = list(t.turn_latencies().values())
        calls = [c.latency_s for c in t.tool_calls]
        for durations in (self._overall, self._scenarios[record.scenario_id]):
            durations.episodes.append(t.duration_s)
            durations.turns.extend(turns)
            durations.tool_calls.extend(calls)
            for step in t.steps:
                durations.model_calls[step.role].append(step.latency_s)

    def latency(self) -> RunLatency | None:
        """The figures, or ``None`` when no sample had a timed conversation."""
        if not self._scenarios:
            return None
        scenarios = {sid: d.figures() for sid, d in sorted(self._scenarios.items())}
        return RunLatency(overall=self._overall.figures(), scenarios=scenarios)
