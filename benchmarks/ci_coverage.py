"""Coverage of the suite confidence intervals, by simulation.

A suite has 50 scenarios whose true success probabilities come from a Beta distribution;
each scenario is run for 5 epochs (pass = 1, fail = 0). Over 2,000 simulated runs we count
how often each 95% interval contains the true value.

Two framings, both printed:

- Scenarios drawn afresh in every run (Miller 2024's framing, the one the harness's
  clustered interval is built for): the estimand is the mean success probability of the
  population the scenarios come from, Beta mean a / (a + b). The clustered interval must
  cover it 93.5-96.5% of the time; the naive interval that treats all 250 samples as
  independent under-covers when scenario difficulty varies.
- Scenarios held fixed (drawn once), only the epochs redrawn: the estimand is the mean of
  those 50 scenarios' probabilities. The clustered interval then over-covers (it includes
  scenario-to-scenario variance that no longer varies); the interval for fixed scenarios,
  sqrt(sum_c s_c^2 / n_c) / C, is the one that targets this estimand.

Everything is vectorised with numpy except the BCa cluster bootstrap, which calls the
harness's own function once per run. The first runs are also checked against
``harness.stats.suite_stats`` so the vectorised formulas are the library's.

Usage: python benchmarks/ci_coverage.py [--runs 2000] [--seed 0]
Exit status 1 if the clustered interval's coverage is outside 93.5-96.5%.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from scipy import stats as sps

from harness.stats import cluster_bootstrap_interval, suite_stats

N_SCENARIOS = 50
EPOCHS = 5
CONFIDENCE = 0.95


def _intervals(x: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """x: (runs, scenarios, epochs) of 0/1. Returns name -> (low, high) arrays per run."""
    runs, c, k = x.shape
    means = x.mean(axis=2)
    centre = means.mean(axis=1)
    t = sps.t.ppf(0.5 + CONFIDENCE / 2, c - 1)
    z = sps.norm.ppf(0.5 + CONFIDENCE / 2)
    clustered_se = means.std(axis=1, ddof=1) / math.sqrt(c)
    flat = x.reshape(runs, c * k)
    naive_se = flat.std(axis=1, ddof=1) / math.sqrt(c * k)
    fixed_se = np.sqrt((x.var(axis=2, ddof=1) / k).sum(axis=1)) / c
    return {
        "clustered (t, C-1 df)": (centre - t * clustered_se, centre + t * clustered_se),
        "naive (samples independent)": (centre - z * naive_se, centre + z * naive_se),
        "fixed-scenario (stratified)": (centre - z * fixed_se, centre + z * fixed_se),
    }


def _check_against_library(x: np.ndarray, n: int = 20) -> None:
    intervals = _intervals(x[:n])
    low, high = intervals["clustered (t, C-1 df)"]
    for i in range(n):
        scores = {f"s{c}": list(x[i, c]) for c in range(x.shape[1])}
        suite = suite_stats(scores, bootstrap_resamples=0)
        assert suite.mean.ci_low is not None and suite.mean.ci_high is not None
        if not (math.isclose(suite.mean.ci_low, low[i], abs_tol=1e-12)
                and math.isclose(suite.mean.ci_high, high[i], abs_tol=1e-12)):
            raise SystemExit("vectorised clustered interval differs from harness.stats")


def _report(title: str, truth: np.ndarray | float,
            intervals: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    print(f"\n{title}")
    print(f"  {'interval':<34}{'coverage':>10}{'MC s.e.':>9}{'mean width':>12}")
    coverage = {}
    for name, (low, high) in intervals.items():
        hit = (low <= truth) & (truth <= high)
        p = float(hit.mean())
        se = math.sqrt(p * (1 - p) / hit.size)
        coverage[name] = p
        print(f"  {name:<34}{p:>9.1%}{se:>9.1%}{float(np.mean(high - low)):>12.4f}")
    return coverage


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap-resamples", type=int, default=1999)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(f"{args.runs} simulated runs, {N_SCENARIOS} scenarios x {EPOCHS} epochs, "
          f"{CONFIDENCE:.0%} intervals, seed {args.seed}")

    failures = []
    populations = [("varied difficulty, Beta(0.5, 0.5)", 0.5, 0.5),
                   ("similar difficulty, Beta(20, 20)", 20.0, 20.0)]
    for label, a, b in populations:
        # Framing 1: each run draws its scenarios, then its epochs.
        p = rng.beta(a, b, size=(args.runs, N_SCENARIOS))
        x = (rng.random((args.runs, N_SCENARIOS, EPOCHS)) < p[..., None]).astype(float)
        if a == populations[0][1]:
            _check_against_library(x)
        intervals = _intervals(x)
        if a == populations[0][1] and args.bootstrap_resamples > 0:
            boot = [cluster_bootstrap_interval(x[i].mean(axis=1), confidence=CONFIDENCE,
                                               n_resamples=args.bootstrap_resamples, seed=i)
                    for i in range(args.runs)]
            intervals["cluster bootstrap (BCa)"] = (
                np.array([r.ci_low for r in boot]), np.array([r.ci_high for r in boot]))
        cov = _report(
            f"{label}; scenarios drawn afresh each run; estimand = population mean "
            f"{a / (a + b):.3f}", a / (a + b), intervals)
        clustered = cov["clustered (t, C-1 df)"]
        if not 0.935 <= clustered <= 0.965:
            failures.append(f"{label}: clustered coverage {clustered:.1%} outside 93.5-96.5%")

        # Framing 2: the same 50 scenarios in every run; only epochs vary.
        fixed_p = rng.beta(a, b, size=N_SCENARIOS)
        x = (rng.random((args.runs, N_SCENARIOS, EPOCHS)) < fixed_p[None, :, None]).astype(
            float)
        _report(f"{label}; scenarios held fixed; estimand = mean of these scenarios "
                f"{fixed_p.mean():.3f}", float(fixed_p.mean()), _intervals(x))

    print(f"\nwall time {time.perf_counter() - started:.1f} s")
    if failures:
        print("FAIL: " + "; ".join(failures))
        return 1
    print("PASS: clustered interval coverage within 93.5-96.5% when scenarios are drawn "
          "from the population")
    return 0


if __name__ == "__main__":
    sys.exit(main())
