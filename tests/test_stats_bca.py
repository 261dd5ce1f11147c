"""The suite's default cluster bootstrap (BCa) against a BCa interval computed here from
Efron's formulas (Efron & Tibshirani 1993, 14.3 and 14.15), not through scipy: bias
correction z0 from the bootstrap distribution, acceleration from the jackknife of the
scenario means, then the adjusted percentiles.

The resamples are the only thing shared with scipy: ``scipy.stats.bootstrap`` draws them in
one batch as ``rng.integers(0, C, (B, C))``, so the same generator gives the same resamples
and the intervals must agree to rounding. A second check uses draws of its own and agrees
within Monte Carlo error, so the first does not hinge on that detail alone.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats as sps

from harness.models.mock import register_mock, unregister_mock
from harness.models.request import ModelRequest
from harness.models.types import Message, T
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.stats.suite import MIN_BOOTSTRAP_SCENARIOS, cluster_bootstrap_interval, suite_stats
from tests.helpers.bound_mocks import ContextBound

NORMAL = NormalDist()

# Right-skewed scenario means (most scenarios rarely succeed, one nearly always): here BCa
# and the percentile interval differ by far more than Monte Carlo error.
SKEWED = [0.02, 0.03, 0.05, 0.05, 0.1, 0.1, 0.15, 0.2, 0.4, 0.9]


def bca_from_resamples(means: np.ndarray, boot: np.ndarray, confidence: float
                       ) -> tuple[float, float]:
    """BCa interval for the mean of ``means`` from the bootstrap means ``boot``."""
    c, b = means.size, boot.size
    theta = means.mean()
    # z0: the normal quantile of the share of bootstrap means below the estimate (ties
    # counted half, as scipy does; Efron counts strictly below, the same without ties).
    z0 = NORMAL.inv_cdf(((boot < theta).sum() + (boot <= theta).sum()) / (2 * b))
    jack = (means.sum() - means) / (c - 1)  # leave-one-scenario-out means
    d = jack.mean() - jack
    accel = (d ** 3).sum() / (6 * ((d ** 2).sum()) ** 1.5)
    z = NORMAL.inv_cdf((1 - confidence) / 2)
    lo = NORMAL.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
    hi = NORMAL.cdf(z0 + (z0 - z) / (1 - accel * (z0 - z)))
    low, high = np.quantile(boot, [lo, hi])  # linear interpolation, numpy's default
    return float(low), float(high)


def bca_direct(means: list[float], *, n_resamples: int, seed: int, confidence: float
               ) -> tuple[float, float]:
    m = np.asarray(means, dtype=float)
    idx = np.random.default_rng(seed).integers(0, m.size, (n_resamples, m.size))
    return bca_from_resamples(m, m[idx].mean(axis=1), confidence)


@pytest.mark.parametrize(("seed", "n_resamples", "confidence"),
                         [(0, 999, 0.95), (3, 4000, 0.95), (11, 2000, 0.9)])
def test_bca_equals_the_direct_computation_with_the_same_draws(
        seed: int, n_resamples: int, confidence: float) -> None:
    got = cluster_bootstrap_interval(SKEWED, confidence=confidence, n_resamples=n_resamples,
                                     seed=seed)
    want = bca_direct(SKEWED, n_resamples=n_resamples, seed=seed, confidence=confidence)
    assert (got.ci_low, got.ci_high) == pytest.approx(want, abs=1e-12)
    assert "BCa" in got.method and "percentile used" not in got.method
    # And scipy's own BCa with the same generator, as the design says.
    res = sps.bootstrap((np.asarray(SKEWED),), np.mean, n_resamples=n_resamples,
                        confidence_level=confidence, method="BCa",
                        rng=np.random.default_rng(seed))
    assert (got.ci_low, got.ci_high) == pytest.approx(
        (res.confidence_interval.low, res.confidence_interval.high), abs=1e-12)


def test_bca_is_not_the_percentile_interval_on_skewed_means() -> None:
    m = np.asarray(SKEWED)
    got = cluster_bootstrap_interval(SKEWED, n_resamples=4000, seed=3)
    idx = np.random.default_rng(3).integers(0, m.size, (4000, m.size))
    pct = np.quantile(m[idx].mean(axis=1), [0.025, 0.975])
    # Skewed right: BCa moves both ends up, the upper one a lot.
    assert got.ci_high - pct[1] > 0.05 and got.ci_low >= pct[0]


def test_bca_agrees_with_independent_draws_within_monte_carlo_error() -> None:
    got = cluster_bootstrap_interval(SKEWED, n_resamples=20_000, seed=1)
    m = np.asarray(SKEWED)
    rng = np.random.Generator(np.random.PCG64(987_654))
    boot = np.concatenate([m[rng.integers(0, m.size, (50_000, m.size))].mean(axis=1)
                           for _ in range(4)])
    want = bca_from_resamples(m, boot, 0.95)
    assert got.ci_low == pytest.approx(want[0], abs=0.01)
    assert got.ci_high == pytest.approx(want[1], abs=0.02)


def test_suite_stats_default_bootstrap_is_bca_over_scenario_means() -> None:
    rng = np.random.default_rng(5)
    probs = [0.05, 0.1, 0.1, 0.2, 0.3, 0.9, 0.95] * 3
    scores = {f"s{i}": [float(x) for x in rng.random(4 + i % 3) < p]
              for i, p in enumerate(probs)}
    suite = suite_stats(scores, seed=7, bootstrap_resamples=1500)
    assert suite.bootstrap is not None
    means = [float(np.mean(v)) for v in scores.values()]
    want = bca_direct(means, n_resamples=1500, seed=7, confidence=0.95)
    assert (suite.bootstrap.ci_low, suite.bootstrap.ci_high) == pytest.approx(want, abs=1e-12)


def test_below_twenty_scenarios_the_bootstrap_is_withheld_with_a_note() -> None:
    rng = np.random.default_rng(6)

    def binary_suite(n_scenarios: int) -> dict[str, list[float]]:
        return {f"s{i}": [float(x) for x in rng.random(5) < rng.random()]
                for i in range(n_scenarios)}

    few = suite_stats(binary_suite(MIN_BOOTSTRAP_SCENARIOS - 1), bootstrap_resamples=500)
    assert few.bootstrap is None and few.mean.ci_low is not None  # the t interval remains
    assert any(f"cluster bootstrap not computed: with {MIN_BOOTSTRAP_SCENARIOS - 1} scenarios"
               in n and "use the t interval" in n for n in few.notes)
    enough = suite_stats(binary_suite(MIN_BOOTSTRAP_SCENARIOS), bootstrap_resamples=500)
    assert enough.bootstrap is not None
    assert not any("cluster bootstrap not computed" in n for n in enough.notes)


class Varied(ContextBound):
    """Passes unless (epoch + scenario number) % (2 + scenario number % 3) == 0, so the
    scenario means differ."""

    def __init__(self, name: str) -> None:
        pass

    async def chat(self, request: ModelRequest) -> Message:
        i = int(str(self.scenario_id)[1:])
        ok = (request.sample_index + i) % (2 + i % 3) != 0
        return Message(role="assistant", content="DONE" if ok else "sorry")

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        raise AssertionError("not used")


async def test_a_runs_summary_bootstrap_is_bca_on_its_scenario_means(tmp_path: Path) -> None:
    register_mock("varied", Varied)
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text(json.dumps([
        {"id": f"s{i}", "user": {"goal": "g", "script": ["go"]},
         "agent": {"model": "mock:varied"}, "expectations": {"required_phrases": ["DONE"]}}
        for i in range(MIN_BOOTSTRAP_SCENARIOS + 2)]))
    try:
        config = RunConfig(scenario_paths=[str(suite_file)], epochs=3, cache_mode="off",
                           seed=13, bootstrap_resamples=700)
        await run_suite(config, tmp_path / "run")
    finally:
        unregister_mock("varied")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    per: dict[str, list[float]] = defaultdict(list)
    for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines():
        x = json.loads(line)
        if x["status"] == "scored":
            per[x["scenario_id"]].append(x["score"])
    boot = summary["score"]["bootstrap"]
    assert (boot["n_resamples"], boot["seed"]) == (700, 13)
    # Scenario order: the store's, which is the order samples.jsonl lists them in.
    means = [float(np.mean(v)) for v in per.values()]
    assert len(means) == MIN_BOOTSTRAP_SCENARIOS + 2 and np.ptp(means) > 0
    want = bca_direct(means, n_resamples=700, seed=13, confidence=0.95)
    assert (boot["ci_low"], boot["ci_high"]) == pytest.approx(want, abs=1e-12)
