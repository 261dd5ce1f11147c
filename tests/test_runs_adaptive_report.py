"""What an adaptive run (``--target-ci-width``) reports about itself, beyond where its
samples went: the pilot it ran, the confidence its width is measured at (the run's, not a
default), the cap on epochs per scenario, the method, and the model calls it saved when a
sample costs more than one call. Two scenarios, the fewest that give a suite interval.

The width is recomputed from the stored samples with scipy (a clustered t interval over the
scenario means), the calls from the run's ledger."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from harness.models.mock import register_mock, unregister_mock
from harness.models.request import ModelRequest
from harness.models.types import Message, T
from harness.runs.api import run_suite
from harness.runs.config import AdaptiveSettings, RunConfig
from harness.runs.summary_model import AdaptiveReport
from tests.helpers.bound_mocks import ContextBound

PHRASES = [f"[p{i:02d}]" for i in range(10)]
# Per scenario, the share of phrases the agent says, by epoch (cycled).
CYCLES = {"steady": [0.9, 0.8], "noisy": [1.0, 0.3, 0.6],
          **{f"settled-{i}": [0.8] for i in range(4)},
          **{f"varied-{i}": [0.9, 0.7, 0.8, 1.0][i:] + [0.9, 0.7, 0.8, 1.0][:i] for i in range(4)}}


class TwoTurnAgent(ContextBound):
    """Answers each of the user's two lines; the last answer carries the phrases."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def chat(self, request: ModelRequest) -> Message:
        cycle = CYCLES[str(self.scenario_id)]
        share = cycle[request.sample_index % len(cycle)]
        return Message(role="assistant", content=" ".join(PHRASES[:round(share * 10)]))

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        raise AssertionError("never asked for structured output")


@pytest.fixture
def agent() -> Iterator[None]:
    register_mock("two-turn", TwoTurnAgent)
    yield
    unregister_mock("two-turn")


def _suite(path: Path, ids: list[str]) -> Path:
    scenarios = [{"id": sid, "user": {"goal": "answer", "script": ["go", "again"]},
                  "agent": {"model": "mock:two-turn"},
                  "expectations": {"required_phrases": PHRASES}} for sid in ids]
    path.write_text(json.dumps(scenarios))  # JSON is YAML
    return path


def _stored(run_dir: Path) -> dict[str, list[float]]:
    per: dict[str, list[float]] = defaultdict(list)
    for line in (run_dir / "samples.jsonl").read_text().splitlines():
        x = json.loads(line)
        per[x["scenario_id"]].append(x["score"])
    return per


def _width(per: dict[str, list[float]], confidence: float) -> float:
    """Full width of the clustered t interval over the scenario means."""
    means = [float(np.mean(xs)) for xs in per.values()]
    c = len(means)
    return float(2 * sps.t.ppf(0.5 + confidence / 2, c - 1) * np.std(means, ddof=1)
                 / np.sqrt(c))


async def _run(tmp_path: Path, ids: list[str], settings: AdaptiveSettings
               ) -> tuple[AdaptiveReport, dict[str, list[float]], dict[str, float]]:
    config = RunConfig(scenario_paths=[str(_suite(tmp_path / "suite.yaml", ids))],
                       cache_mode="off", bootstrap_resamples=0, confidence=0.9,
                       adaptive=settings)
    result = await run_suite(config, tmp_path / "run")
    assert result.summary.adaptive is not None
    return result.summary.adaptive, _stored(tmp_path / "run"), result.ledger["total"]


async def test_two_scenarios_stop_at_the_cap_with_the_runs_confidence(
        tmp_path: Path, agent: None) -> None:
    # Two scenarios: a t interval on 1 degree of freedom never gets narrow; the cap stops it.
    settings = AdaptiveSettings(target_width=0.05, pilot_epochs=2, max_epochs_per_scenario=5)
    adaptive, per, ledger = await _run(tmp_path, ["steady", "noisy"], settings)
    assert {sid: len(xs) for sid, xs in per.items()} == {"steady": 5, "noisy": 5}
    assert adaptive.pilot_epochs == 2
    pilot = {sid: xs[:2] for sid, xs in per.items()}
    assert adaptive.rounds[0].current_width == pytest.approx(
        _width(pilot, 0.9))
    assert adaptive.final_width == pytest.approx(_width(per, 0.9))
    assert adaptive.final_reason == adaptive.rounds[-1].reason
    # Each round says how wide the interval would be after its allocations.
    assert all(r.projected_width is not None and r.projected_width > 0
               for r in adaptive.rounds)
    assert adaptive.method is not None
    assert adaptive.method.startswith("Neyman allocation")
    assert adaptive.samples_used == 10
    # Two answers per sample: the report says so, from the ledger.
    savings = adaptive.savings
    assert savings is not None
    assert savings.model_calls_per_sample == ledger["calls"] / 10 == 2.0


async def test_saved_model_calls_are_saved_samples_times_calls_per_sample(
        tmp_path: Path, agent: None) -> None:
    ids = [s for s in CYCLES if s.startswith(("settled", "varied"))]
    settings = AdaptiveSettings(target_width=0.06, pilot_epochs=2, max_epochs_per_scenario=30)
    adaptive, per, ledger = await _run(tmp_path, ids, settings)
    epochs = {sid: len(xs) for sid, xs in per.items()}
    # Unanimous scenarios stay at the pilot's two epochs; the varied ones get more.
    assert all(epochs[s] == 2 for s in ids if s.startswith("settled"))
    assert all(epochs[s] > 2 for s in ids if s.startswith("varied"))
    assert adaptive.final_reason == "target_reached"
    assert adaptive.final_width == pytest.approx(_width(per, 0.9))
    assert _width(per, 0.9) <= 0.06
    savings = adaptive.savings
    used = sum(epochs.values())
    per_sample = ledger["calls"] / used
    assert savings is not None and savings.saved_samples is not None
    assert per_sample == 2.0 and savings.saved_samples != 0
    assert savings.saved_model_calls == round(savings.saved_samples * per_sample)


async def test_a_budget_that_stops_the_pilot_reports_no_plan(
        tmp_path: Path, agent: None) -> None:
    """Stopped before any round was planned: the fields that need a plan are empty, the run
    does not fail on them, and what was stored is counted."""
    settings = AdaptiveSettings(target_width=0.05, pilot_epochs=3)
    config = RunConfig(scenario_paths=[str(_suite(tmp_path / "suite.yaml", ["steady", "noisy"]))],
                       cache_mode="off", bootstrap_resamples=0, adaptive=settings,
                       max_calls=4, concurrency=1)
    result = await run_suite(config, tmp_path / "run")
    adaptive = result.summary.adaptive
    assert result.summary.stopped is not None and result.summary.stopped.reason == "budget"
    assert adaptive is not None and adaptive.rounds == []
    assert (adaptive.final_reason, adaptive.final_width, adaptive.method) == (None, None, None)
    assert adaptive.pilot_epochs == 3
    assert adaptive.samples_used == sum(len(v) for v in _stored(tmp_path / "run").values())
