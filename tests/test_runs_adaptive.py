"""Adaptive sampling through the runner: a pilot, then Neyman-allocated rounds that go to the
noisy scenarios, none to the settled ones, and a saving against fixed epochs that agrees with
what the store holds.

The suite is built so that epochs can shrink the interval. The suite interval is clustered by
scenario, so differences between scenario means set a floor no number of epochs removes; here
every scenario but one has a true mean of 0.9, so the floor is low and the width is mostly
epoch noise. A mock agent answers with a share of the 20 required phrases set by the scenario
and the epoch (the score is that share), following a fixed cycle per scenario:

- ``pass-0``: always 1.0 (always passes);
- ``fail-*``: always 0.9 (19 of 20 phrases: never passes, never varies);
- ``wide-*``: cycle 1.0, 0.7, 0.9, 1.0, rotated (mean 0.9, sd 0.122);
- ``narrow-*``: cycle 0.95, 0.85, 0.9, 0.9, rotated (mean 0.9, sd 0.035).

A 3-epoch pilot sees most of a cycle: its variances are representative, and its scenario
means scatter enough around 0.9 that the observed pilot interval is wider than the target.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from harness.models.mock import register_mock, unregister_mock
from harness.models.request import ModelRequest
from harness.models.types import Message, T
from harness.runs.api import resume_run, run_suite
from harness.runs.config import AdaptiveSettings, RunConfig
from tests.helpers.bound_mocks import ContextBound

PHRASES = [f"[k{i:02d}]" for i in range(20)]
PILOT = 3
TARGET = 0.03


def _rot(cycle: list[float], k: int) -> list[float]:
    return cycle[k:] + cycle[:k]


CYCLES: dict[str, list[float]] = {
    "pass-0": [1.0],
    **{f"fail-{i}": [0.9] for i in range(7)},
    **{f"wide-{i}": _rot([1.0, 0.7, 0.9, 1.0], i) for i in range(4)},
    **{f"narrow-{i}": _rot([0.95, 0.85, 0.9, 0.9], i) for i in range(4)},
}
SETTLED = {sid for sid in CYCLES if sid.startswith(("pass", "fail"))}
WIDE = [sid for sid in CYCLES if sid.startswith("wide")]
NARROW = [sid for sid in CYCLES if sid.startswith("narrow")]


class GradedAgent(ContextBound):
    """Replies with the first round(20 * score) phrases, score from the scenario's cycle."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def chat(self, request: ModelRequest) -> Message:
        cycle = CYCLES[str(self.scenario_id)]
        share = cycle[request.sample_index % len(cycle)]
        return Message(role="assistant", content=" ".join(PHRASES[:round(share * 20)]))

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        raise AssertionError("the graded agent is never asked for structured output")


@pytest.fixture
def graded_suite(tmp_path: Path) -> Iterator[Path]:
    register_mock("graded", GradedAgent)
    scenarios = [
        {"id": sid, "user": {"goal": "answer", "script": ["go"]},
         "agent": {"model": "mock:graded"},
         "expectations": {"required_phrases": PHRASES}}
        for sid in CYCLES
    ]
    path = tmp_path / "graded.yaml"
    path.write_text(json.dumps(scenarios))  # JSON is YAML
    yield path
    unregister_mock("graded")


def _config(path: Path, **overrides: Any) -> RunConfig:
    fields: dict[str, Any] = {"scenario_paths": [str(path)], "cache_mode": "off",
                              "bootstrap_resamples": 0, "concurrency": 8}
    fields.update(overrides)
    return RunConfig(**fields)


def _per_scenario(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    per: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for line in (run_dir / "samples.jsonl").read_text().splitlines():
        x = json.loads(line)
        assert x["status"] == "scored"
        per[x["scenario_id"]].append((x["epoch"], x["score"]))
    return per


def _clustered_width(means: Sequence[float]) -> float:
    c = len(means)
    return float(2 * sps.t.ppf(0.975, c - 1) * np.std(means, ddof=1) / np.sqrt(c))


async def test_adaptive_rounds_go_to_noisy_scenarios_and_save_samples(
        tmp_path: Path, graded_suite: Path) -> None:
    settings = AdaptiveSettings(target_width=TARGET, pilot_epochs=PILOT,
                                max_epochs_per_scenario=30)
    result = await run_suite(_config(graded_suite, adaptive=settings), tmp_path / "run")
    summary = result.summary
    adaptive = summary.adaptive
    per = _per_scenario(tmp_path / "run")
    epochs = {sid: len(v) for sid, v in per.items()}
    assert set(epochs) == set(CYCLES)
    # The agent did what the cycles say (so the figures below rest on known data).
    for sid, rows in per.items():
        assert sorted(e for e, _ in rows) == list(range(len(rows))), "epochs are contiguous"
        for e, score in rows:
            assert score == pytest.approx(CYCLES[sid][e % len(CYCLES[sid])])

    # At least one allocation round ran after the pilot, and the store holds exactly the
    # pilot plus what the rounds handed out.
    allocating = [r for r in adaptive.rounds if r.allocations]
    assert len(adaptive.rounds) > 1 and allocating
    assert all(r.reason == "continue" for r in allocating)
    handed_out: dict[str, int] = defaultdict(int)
    for r in allocating:
        for sid, k in r.allocations.items():
            handed_out[sid] += k
    for sid, n in epochs.items():
        assert n == PILOT + handed_out.get(sid, 0), sid

    # Settled scenarios got nothing beyond the pilot; every noisy one got more; the wide
    # ones (sd 0.122) more than the narrow ones (sd 0.035).
    assert all(epochs[sid] == PILOT for sid in SETTLED)
    assert not set(handed_out) & SETTLED
    assert all(epochs[sid] > PILOT for sid in WIDE + NARROW)
    assert min(epochs[s] for s in WIDE) >= max(epochs[s] for s in NARROW)
    assert sum(epochs[s] for s in WIDE) > sum(epochs[s] for s in NARROW)

    # It stopped because the target was reached, and the suite interval (recomputed here
    # from the samples) is narrower than the target.
    assert adaptive.final_reason == "target_reached"
    assert summary.stopped is None
    means = [float(np.mean([s for _, s in per[sid]])) for sid in CYCLES]
    width = _clustered_width(means)
    assert width <= TARGET
    score = summary.score
    assert score.ci_high - score.ci_low == pytest.approx(width)
    assert adaptive.final_width == pytest.approx(width)
    # ... while the pilot's own interval was wider than the target (so the rounds mattered).
    pilot_means = [float(np.mean([c[e % len(c)] for e in range(PILOT)]))
                   for c in CYCLES.values()]
    pilot_width = _clustered_width(pilot_means)
    assert pilot_width > TARGET
    assert adaptive.rounds[0].current_width == pytest.approx(pilot_width)

    # The saving against fixed epochs is positive and agrees with the store.
    used = sum(epochs.values())
    savings = adaptive.savings
    assert adaptive.samples_used == savings.adaptive_samples == used
    assert savings.fixed_samples == savings.fixed_epochs_per_scenario * len(CYCLES)
    assert savings.saved_samples == savings.fixed_samples - used > 0
    assert savings.saved_fraction == pytest.approx(savings.saved_samples
                                                      / savings.fixed_samples)
    # One agent call per episode (scripted user, no judge), so calls saved = samples saved.
    assert savings.model_calls_per_sample == pytest.approx(1.0)
    assert result.ledger["total"]["calls"] == used
    assert savings.saved_model_calls == savings.saved_samples


async def test_fixed_epochs_at_the_reported_count_do_reach_the_width(
        tmp_path: Path, graded_suite: Path) -> None:
    """The fixed design the saving is measured against is real: running every scenario for
    the reported number of epochs gives an interval no wider than the target."""
    settings = AdaptiveSettings(target_width=TARGET, pilot_epochs=PILOT,
                                max_epochs_per_scenario=30)
    adaptive = (await run_suite(_config(graded_suite, adaptive=settings),
                                tmp_path / "adaptive")).summary.adaptive
    k = adaptive.savings.fixed_epochs_per_scenario
    fixed = (await run_suite(_config(graded_suite, epochs=k), tmp_path / "fixed")).summary
    assert fixed.counts.samples == k * len(CYCLES) == adaptive.savings.fixed_samples
    assert fixed.score.ci_high - fixed.score.ci_low <= TARGET + 1e-12


async def test_resuming_a_finished_adaptive_run_adds_nothing_and_measures_no_calls(
        tmp_path: Path, graded_suite: Path) -> None:
    """Nothing is left to run, so no sample and no model call happen in the resumed session:
    the savings keep their sample counts, and the calls per sample, which only this session's
    ledger could measure, are unknown (None), not a division by zero."""
    settings = AdaptiveSettings(target_width=TARGET, pilot_epochs=PILOT,
                                max_epochs_per_scenario=30)
    first = await run_suite(_config(graded_suite, adaptive=settings), tmp_path / "run")
    again = await resume_run(tmp_path / "run")
    assert again.state.finished == 0 and again.ledger["total"]["calls"] == 0
    before, after = first.summary.adaptive, again.summary.adaptive
    assert before is not None and after is not None
    assert after.samples_used == before.samples_used
    assert after.savings.saved_samples == before.savings.saved_samples
    assert before.savings.model_calls_per_sample == pytest.approx(1.0)
    assert after.savings.model_calls_per_sample is None
    assert after.savings.saved_model_calls is None
    assert after.final_reason == before.final_reason == "target_reached"


class ErringGradedAgent(GradedAgent):
    """The graded agent, failing every third sample of every scenario."""

    async def chat(self, request: ModelRequest) -> Message:
        if request.sample_index % 3 == 2:
            raise RuntimeError("the agent fell over")
        return await super().chat(request)


async def test_errored_samples_count_as_failures_in_the_rounds_when_the_policy_says_so(
        tmp_path: Path) -> None:
    """Under --errors-as-failures the adaptive rounds, and the samples they say were used,
    take the errored samples in as score 0; under the default policy they leave them out."""
    register_mock("graded-erring", ErringGradedAgent)
    try:
        path = tmp_path / "erring.yaml"
        path.write_text(json.dumps([
            {"id": sid, "user": {"goal": "answer", "script": ["go"]},
             "agent": {"model": "mock:graded-erring"},
             "expectations": {"required_phrases": PHRASES}} for sid in CYCLES]))
        settings = AdaptiveSettings(target_width=TARGET, pilot_epochs=PILOT,
                                    max_epochs_per_scenario=12)
        used = {}
        for policy in ("as_failures", "exclude"):
            result = await run_suite(_config(path, adaptive=settings, error_policy=policy),
                                     tmp_path / policy)
            lines = [json.loads(line) for line in
                     (tmp_path / policy / "samples.jsonl").read_text().splitlines()]
            errored = sum(line["status"] == "errored" for line in lines)
            assert errored > 0
            adaptive = result.summary.adaptive
            assert adaptive is not None
            used[policy] = adaptive.samples_used
            expected = len(lines) if policy == "as_failures" else len(lines) - errored
            assert adaptive.samples_used == adaptive.savings.adaptive_samples == expected
            # The rounds plan from the samples as the policy counts them: errored pilot
            # epochs complete the pilot as failures, or leave it short, to be topped up first.
            assert adaptive.rounds[0].reason == (
                "continue" if policy == "as_failures" else "pilot")
        assert used["as_failures"] != used["exclude"]
    finally:
        unregister_mock("graded-erring")
