"""The per-tool table of a run: for each tool, how often it is called, how well the calls
match the reference, how often they fail, and how long they take. It answers "which tool
does the agent misuse" at a glance.

Over the samples the checks scored (errored samples are reported apart and add nothing
here), for a tool ``T``:

- ``calls``: calls of ``T``; ``episodes``: the episodes that offered ``T`` (or called it);
  ``share_of_episodes``: the share of those that called it at least once.
- ``precision`` and ``recall`` restricted to ``T``: in an episode whose scenario has
  reference calls, ``matched_T / actual_T`` (when the agent called ``T``) and
  ``matched_T / reference_T`` (when the reference has ``T``), where ``matched_T`` counts
  the pairs of tool ``T`` in the trajectory check's one-to-one matching
  (:mod:`harness.checks.trajectory`). Only calls of equal names are compatible, so the
  matching falls apart into one independent matching per tool: its pairs of ``T`` are a
  maximum matching of ``T``'s calls against ``T``'s reference calls alone. An episode that
  neither called nor expected ``T`` says nothing about it and is left out (not counted 1).
- ``parameter_accuracy``: the mean score of the ``parameter_accuracy`` check's entries for
  ``T`` in an episode (a never-called expected tool scores 0), where the scenario has
  parameter expectations for ``T``.
- ``invalid_arguments`` and ``errors``: calls whose ``ToolCallRecord.error`` is
  ``invalid_arguments``, and calls with any error kind (``errors_by_kind``), with their
  rates over the tool's calls.
- ``latency``: the spread of its calls' durations.

Intervals: the share, precision, recall and parameter accuracy are per-episode figures, and
episodes of one scenario are not independent (same prompt, same tools), so each is the mean
of scenario means with the interval clustered by scenario
(:func:`~harness.stats.estimate.mean_of_cluster_means`, as every metric of the run); a
Wilson interval would treat the episodes as independent and be too narrow. With one
scenario there is no interval. The call rates are plain ratios of counts, with no interval:
calls cluster within episodes and scenarios, and the counts beside them say how much lies
behind them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.runs.latency import LatencySpread, spread
from harness.runs.sample import SampleRecord
from harness.stats.estimate import Estimate, mean_of_cluster_means

_METHOD = "mean of scenario means of per-episode figures; SE clustered by scenario; t interval"


class ToolFigures(BaseModel):
    """One tool's row of the per-tool table (module docstring: what each figure means)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: int
    episodes: int
    episodes_calling: int
    share_of_episodes: Estimate | None
    precision: Estimate | None = None
    recall: Estimate | None = None
    parameter_accuracy: Estimate | None = None
    invalid_arguments: int
    invalid_argument_rate: float | None
    errors: int
    error_rate: float | None
    errors_by_kind: dict[str, int]
    latency: LatencySpread


def _check(record: SampleRecord, name: str) -> dict[str, Any] | None:
    for report in record.checks:
        for result in report.get("results", []):
            if result.get("name") == name:
                details: dict[str, Any] = result.get("details") or {}
                return details
    return None


@dataclass
class _Tool:
    calls: int = 0
    episodes: int = 0
    calling: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    # per-episode figures by scenario
    called: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    precision: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    recall: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    parameters: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


def _estimate(per_scenario: dict[str, list[float]], confidence: float) -> Estimate | None:
    means = [sum(v) / len(v) for v in per_scenario.values() if v]
    if not means:
        return None
    return mean_of_cluster_means(means, confidence=confidence,
                                 n=sum(len(v) for v in per_scenario.values()),
                                 bounds=(0.0, 1.0), method=_METHOD)


class ToolCollector:
    """Per-tool figures gathered one sample at a time, then summarised by :meth:`tools`."""

    def __init__(self) -> None:
        self._tools: dict[str, _Tool] = defaultdict(_Tool)

    def add(self, record: SampleRecord) -> None:
        """Count one sample (an errored one adds nothing)."""
        if record.status == "errored":
            return
        t, sid = record.transcript, record.scenario_id
        calls_by_tool = Counter(c.name for c in t.tool_calls)
        for call in t.tool_calls:
            tool = self._tools[call.name]
            tool.calls += 1
            tool.latencies.append(call.latency_s)
            if call.error is not None:
                tool.errors[call.error] += 1
        for name in {s.name for s in t.tools} | set(calls_by_tool):
            tool = self._tools[name]
            tool.episodes += 1
            tool.calling += calls_by_tool[name] > 0
            tool.called[sid].append(float(calls_by_tool[name] > 0))
        trajectory = _check(record, "trajectory_any_order_match")
        # None: no reference calls, or a store from before checks kept the whole reference
        if trajectory is not None and trajectory.get("reference") is not None:
            expected = Counter(r["name"] for r in trajectory["reference"])
            matched = Counter(p["name"] for p in trajectory.get("pairs", []))
            for name in set(expected) | set(calls_by_tool):
                tool = self._tools[name]
                if calls_by_tool[name]:
                    tool.precision[sid].append(matched[name] / calls_by_tool[name])
                if expected[name]:
                    tool.recall[sid].append(matched[name] / expected[name])
        parameters = _check(record, "parameter_accuracy")
        if parameters is not None:
            scores: dict[str, list[float]] = defaultdict(list)
            for entry in parameters.get("calls", []):
                scores[entry["tool"]].append(entry["score"])
            for name, values in scores.items():
                self._tools[name].parameters[sid].append(sum(values) / len(values))

    def tools(self, confidence: float) -> dict[str, ToolFigures]:
        """Each tool's figures, by tool name (sorted)."""
        out: dict[str, ToolFigures] = {}
        for name in sorted(self._tools):
            tool = self._tools[name]
            invalid = tool.errors.get("invalid_arguments", 0)
            n_errors = sum(tool.errors.values())
            out[name] = ToolFigures(
                calls=tool.calls, episodes=tool.episodes, episodes_calling=tool.calling,
                share_of_episodes=_estimate(tool.called, confidence),
                precision=_estimate(tool.precision, confidence),
                recall=_estimate(tool.recall, confidence),
                parameter_accuracy=_estimate(tool.parameters, confidence),
                invalid_arguments=invalid,
                invalid_argument_rate=invalid / tool.calls if tool.calls else None,
                errors=n_errors, error_rate=n_errors / tool.calls if tool.calls else None,
                errors_by_kind=dict(sorted(tool.errors.items())),
                latency=spread(tool.latencies),
            )
        return out
