"""Latency figures (harness/runs/latency.py) on the small fixed store of
tests/helpers/latency_runs.py, worked out by hand, and the spread cross-checked against numpy
and the statistics module."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from harness.checks.run import run_checks
from harness.checks.spec import Expectations
from harness.runs.latency import LatencyCollector, LatencySpread, spread
from harness.runs.summary import read_summary
from tests.helpers.latency_runs import fixed_run, records


@pytest.mark.parametrize("values", [[0.3], [1.0, 2.0], [5, 1, 4, 2, 3], list(range(101)),
                                    [0.01 * i ** 1.5 for i in range(37)]])
def test_spread_matches_numpy_and_the_statistics_module(values: list[float]) -> None:
    s = spread(values)
    assert s.n == len(values)
    assert s.mean == pytest.approx(statistics.fmean(values))
    assert s.median == pytest.approx(statistics.median(values))
    assert s.median == pytest.approx(np.percentile(values, 50))
    assert s.p95 == pytest.approx(np.percentile(values, 95))
    if len(values) > 1:  # 'inclusive' is the linear interpolation numpy uses by default
        assert s.p95 == pytest.approx(statistics.quantiles(values, n=20,
                                                           method="inclusive")[-1])
    assert s.max == max(values)


def test_spread_of_nothing_is_empty() -> None:
    assert spread([]) == LatencySpread(n=0, mean=None, median=None, p95=None, max=None)


def test_p95_by_hand() -> None:
    # rank 0.95 * (5 - 1) = 3.8: 4 + 0.8 * (9 - 4)
    assert spread([4.0, 3.0, 2.0, 1.0, 9.0]).p95 == pytest.approx(8.0)


def test_the_fixed_store_by_hand(tmp_path: Path) -> None:
    latency = fixed_run(tmp_path).latency
    assert latency is not None
    overall = latency.overall
    # every sample with a timed conversation, the errored one (9 s) too; judging is not in
    # it (finished_at - started_at is 50 s longer in every sample)
    assert overall.episode == spread([4.0, 3.0, 2.0, 1.0, 9.0])
    assert (overall.episode.mean, overall.episode.median, overall.episode.max) == (
        pytest.approx(3.8), 3.0, 9.0)
    # agent steps plus tool calls per turn; the simulator's 0.25 s is not in a turn
    turns = [1.0 + 0.5 + 0.1 + 0.3, 2.0 + 0.2, 1.5 + 0.5 + 0.0, 0.6 + 0.4, 0.9, 2.0 + 7.0]
    assert overall.user_turn.n == 6
    assert overall.user_turn.mean == pytest.approx(sum(turns) / 6)
    assert overall.user_turn.median == pytest.approx((1.9 + 2.0) / 2)
    assert overall.user_turn.max == pytest.approx(9.0)
    assert overall.tool_call == spread([0.1, 0.3, 0.2, 0.5, 0.0, 0.4, 7.0])
    assert overall.tool_call.median == pytest.approx(0.3)
    assert overall.model_call["agent"] == spread([1.0, 0.5, 2.0, 1.5, 0.6, 0.9, 2.0])
    assert overall.model_call["simulator"] == spread([0.25])
    assert list(latency.scenarios) == ["s1", "s2"]
    s2 = latency.scenarios["s2"]
    assert s2.episode == spread([2.0, 1.0, 9.0])
    assert s2.user_turn.median == pytest.approx(1.0)
    assert s2.tool_call == spread([0.4, 7.0])
    assert "simulator" not in s2.model_call


def test_the_figures_read_back_from_summary_json(tmp_path: Path) -> None:
    written = fixed_run(tmp_path)
    assert read_summary(tmp_path).latency == written.latency
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["latency"]["overall"]["episode"]["p95"] == pytest.approx(8.0)


def test_a_sample_with_no_timed_conversation_adds_nothing() -> None:
    collector = LatencyCollector()
    assert collector.latency() is None
    imported = records()[0].model_copy(deep=True)
    imported.transcript.duration_s = 0.0
    collector.add(imported)
    assert collector.latency() is None


def test_the_latency_budget_check_reads_the_same_turn_times() -> None:
    transcript = records()[0].transcript
    assert transcript.turn_latencies() == pytest.approx({0: 1.9, 1: 2.2})
    check = run_checks(transcript, Expectations(latency_budget_s=2.0)).get("latency_budget")
    assert check.details["turn_latency_s"] == pytest.approx({"0": 1.9, "1": 2.2})
    assert check.details["over_budget_turns"] == [1]


def test_tool_calls_inside_a_step_are_not_counted_twice() -> None:
    # A Python agent's call (or an HTTP agent's request that reached its tools over MCP)
    # already lasted while its tools ran; a model agent's tools run between its steps.
    transcript = records()[0].transcript.model_copy(deep=True)
    by_turn = {0: 1.9, 1: 2.2}
    assert transcript.turn_latencies() == pytest.approx(by_turn)
    tools_in_turn_0 = sum(c.latency_s for c in transcript.tool_calls if c.turn == 0)
    assert tools_in_turn_0 > 0
    for step in transcript.steps:
        if step.role == "agent" and step.turn == 0:
            step.includes_tool_time = True
    assert transcript.turn_latencies() == pytest.approx(
        {0: by_turn[0] - tools_in_turn_0, 1: by_turn[1]})
