"""Coverage of the suite's intervals where they are weakest: near 0 and 1, and with few
scenarios (issue 11).

Each design draws its scenarios' true pass probabilities from a Beta population, then the
epochs (pass = 1, fail = 0), ``--runs`` times (1,000 by default); an interval covers when it
contains the population value (Miller 2024's framing: the scenarios are a sample). Printed
per design: the coverage of each candidate 95% interval, its Monte Carlo standard error and
its mean width.

Candidates for pass@k, pass^k and the pass rate:

- ``t, clipped`` what the harness did before: a t interval on per-scenario values, clipped.
- ``bootstrap pct`` a percentile cluster bootstrap of the per-scenario values (999
  resamples). On a transformed scale (logit) a bootstrap is undefined when every scenario is
  at 0 or 1, the very case that fails, so it is not a candidate.
- ``Wilson n*, z`` the Wilson score interval on the effective sample size p(1-p)/SE^2 (capped
  at the k-attempt trials), normal quantile; exact bound when every scenario agrees.
- ``Clopper-Pearson n*, t`` Korn & Graubard's (1998) own form: the exact binomial interval
  on the effective sample size scaled by (z/t)^2 for C-1 degrees of freedom.
- ``Wilson n*, t (harness)`` the Wilson interval with the t quantile on C-1 df (the same
  degrees-of-freedom adjustment): the harness's interval, computed by
  ``harness.stats.bounded.proportion_mean_intervals`` itself, and checked against
  ``harness.stats.suite_stats`` on the first runs of every design.

Then the cluster bootstrap (BCa) of the mean against the t interval by number of scenarios,
which sets the harness's minimum of 20 scenarios for the bootstrap, and the smallest p-value
a sign-flip permutation test can reach.

Usage: python benchmarks/interval_coverage.py [--runs 1000] [--seed 0]
Exit status 1 if the harness's interval covers less than 93% in any pass@k/pass^k design.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps
from scipy.special import ndtr, ndtri

from harness.stats import suite_stats
from harness.stats.bounded import EFFECTIVE_WILSON, proportion_mean_intervals, wilson_bounds
from harness.stats.sampling import pass_at_k_table, pass_hat_k_table
from harness.stats.suite import MIN_BOOTSTRAP_SCENARIOS, cluster_bootstrap_interval

CONFIDENCE = 0.95
FLOOR = 0.93


@dataclass(frozen=True)
class Design:
    scenarios: int
    epochs: int
    k: int
    figure: str  # "pass^" or "pass@"
    a: float
    b: float

    @property
    def truth(self) -> float:
        """The population value: E[p^k] (pass^k) or 1 - E[(1-p)^k] (pass@k), p ~ Beta(a, b)."""
        if self.figure == "pass^":
            return math.prod((self.a + i) / (self.a + self.b + i) for i in range(self.k))
        return 1 - math.prod((self.b + i) / (self.a + self.b + i) for i in range(self.k))

    def __str__(self) -> str:
        return (f"{self.figure}{self.k}, {self.scenarios} scenarios x {self.epochs} epochs, "
                f"Beta({self.a:g}, {self.b:g})")


# The designs first, then the pass rate near the ends and with few scenarios.
DESIGNS = [
    Design(10, 5, 5, "pass^", 1, 9), Design(50, 5, 5, "pass^", 1, 3),
    Design(10, 5, 2, "pass^", 1, 9), Design(5, 20, 20, "pass@", 1, 3),
    Design(5, 20, 20, "pass^", 1, 3), Design(5, 20, 20, "pass@", 0.5, 0.5),
    Design(5, 20, 20, "pass^", 0.5, 0.5), Design(200, 5, 5, "pass^", 1, 3),
    Design(20, 10, 3, "pass@", 1, 3), Design(10, 5, 5, "pass^", 0.3, 0.3),
    Design(5, 5, 1, "pass^", 20, 1), Design(50, 5, 1, "pass^", 49, 1),
    Design(5, 5, 1, "pass^", 1, 1), Design(3, 5, 1, "pass^", 1, 1),
    Design(5, 5, 2, "pass^", 2, 2), Design(50, 5, 1, "pass^", 1, 1),
]


def _values(design: Design, passes: np.ndarray) -> np.ndarray:
    """Per-scenario pass@k or pass^k of ``passes`` (runs x scenarios), from the library's
    tables over every possible pass count."""
    counts = np.arange(design.epochs + 1)
    n = np.full(counts.shape, design.epochs)
    table = (pass_hat_k_table if design.figure == "pass^" else pass_at_k_table)(
        n, counts, design.k)[:, design.k - 1]
    if design.k == 1:
        table = counts / design.epochs
    return table[passes]


def _candidates(design: Design, y: np.ndarray, rng: np.random.Generator
                ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    c = y.shape[1]
    mean = y.mean(axis=1)
    stderr = y.std(axis=1, ddof=1) / math.sqrt(c)
    spread = np.ptp(y, axis=1) > 0
    t = float(sps.t.ppf(0.5 + CONFIDENCE / 2, c - 1))
    z = float(sps.norm.ppf(0.5 + CONFIDENCE / 2))
    trials = c * (design.epochs // design.k)
    out = {"t, clipped": (np.clip(mean - t * stderr, 0, 1), np.clip(mean + t * stderr, 0, 1))}
    idx = rng.integers(0, c, (999, c))
    boot = np.array([np.quantile(row[idx].mean(axis=1), [0.025, 0.975]) for row in y])
    out["bootstrap pct"] = (boot[:, 0], boot[:, 1])
    harness = proportion_mean_intervals(mean, stderr, spread, n_clusters=c, max_trials=trials,
                                        confidence=CONFIDENCE)
    # The same with the normal quantile: differs only where rule 1 (Wilson on n*) applied.
    z_low, z_high = wilson_bounds(mean, np.nan_to_num(harness.effective_n, nan=1.0), z)
    wilson = harness.rule == EFFECTIVE_WILSON
    out["Wilson n*, z"] = (np.where(wilson, z_low, harness.low),
                           np.where(wilson, z_high, harness.high))
    # Korn & Graubard's own form: Clopper-Pearson on n* scaled by (z/t)^2.
    n_adj = np.nan_to_num(harness.effective_n, nan=1.0) * (z / t) ** 2
    x = mean * n_adj
    with np.errstate(invalid="ignore"):
        cp_low = np.nan_to_num(sps.beta.ppf((1 - CONFIDENCE) / 2, x, n_adj - x + 1))
        cp_high = np.nan_to_num(sps.beta.ppf((1 + CONFIDENCE) / 2, x + 1, n_adj - x), nan=1.0)
    out["Clopper-Pearson n*, t"] = (np.where(wilson, cp_low, harness.low),
                                    np.where(wilson, cp_high, harness.high))
    out["Wilson n*, t (harness)"] = (harness.low, harness.high)
    return out


def _check_against_library(design: Design, passes: np.ndarray, low: np.ndarray,
                           high: np.ndarray, n: int = 10) -> None:
    for i in range(min(n, passes.shape[0])):
        scores = {f"s{s}": [1.0] * int(passes[i, s]) + [0.0] * (design.epochs - int(passes[i, s]))
                  for s in range(design.scenarios)}
        suite = suite_stats(scores, bootstrap_resamples=0)
        est = (suite.pass_hat_k if design.figure == "pass^" else suite.pass_at_k)[design.k]
        if not (math.isclose(est.ci_low or 0.0, low[i], abs_tol=1e-12)
                and math.isclose(est.ci_high or 0.0, high[i], abs_tol=1e-12)):
            raise SystemExit(f"{design}: the benchmark's interval differs from suite_stats")


def _print_row(name: str, low: np.ndarray, high: np.ndarray, truth: float) -> float:
    hit = (low <= truth) & (truth <= high)
    p = float(hit.mean())
    se = math.sqrt(p * (1 - p) / hit.size)
    print(f"  {name:<26}{p:>9.1%}{se:>9.1%}{float(np.mean(high - low)):>12.3f}")
    return p


def pass_k_coverage(runs: int, rng: np.random.Generator) -> list[str]:
    failures = []
    print(f"pass@k / pass^k / pass rate: {runs} runs per design, {CONFIDENCE:.0%} intervals")
    for design in DESIGNS:
        p = rng.beta(design.a, design.b, (runs, design.scenarios))
        passes = rng.binomial(design.epochs, p)
        y = _values(design, passes)
        intervals = _candidates(design, y, rng)
        _check_against_library(design, passes, *intervals["Wilson n*, t (harness)"])
        agree = float(np.mean(np.ptp(y, axis=1) == 0))
        print(f"\n{design}: truth {design.truth:.4f}; every scenario equal in {agree:.0%} of "
              "runs")
        print(f"  {'interval':<26}{'coverage':>9}{'MC s.e.':>9}{'mean width':>12}")
        for name, (low, high) in intervals.items():
            coverage = _print_row(name, low, high, design.truth)
            if name.endswith("(harness)") and coverage < FLOOR:
                failures.append(f"{design}: {coverage:.1%}")
    return failures


def _bca(means: np.ndarray, seed: int, n_resamples: int) -> tuple[float, float]:
    """BCa for the mean of ``means`` with scipy's draws for this seed (the library's
    interval, vectorised here for speed; checked against it below)."""
    c = means.size
    boot = means[np.random.default_rng(seed).integers(0, c, (n_resamples, c))].mean(axis=1)
    theta = means.mean()
    z0 = ndtri(((boot < theta).sum() + (boot <= theta).sum()) / (2 * n_resamples))
    jack = (means.sum() - means) / (c - 1)
    d = jack.mean() - jack
    denom = 6 * (d @ d) ** 1.5
    accel = (d**3).sum() / denom if denom > 0 else 0.0
    z = ndtri((1 - CONFIDENCE) / 2)
    lo = ndtr(z0 + (z0 + z) / (1 - accel * (z0 + z)))
    hi = ndtr(z0 + (z0 - z) / (1 - accel * (z0 - z)))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return math.nan, math.nan
    low, high = np.quantile(boot, [lo, hi])
    return float(low), float(high)


def bootstrap_coverage(runs: int, rng: np.random.Generator, resamples: int) -> None:
    print(f"\nThe mean (5 epochs per scenario): cluster bootstrap (BCa, {resamples} resamples) "
          f"against the t interval, {runs} runs each")
    print(f"  {'population':<16}{'scenarios':>10}{'BCa':>9}{'t':>9}")
    for a, b in ((0.5, 0.5), (1, 3), (1, 9), (5, 5)):
        for c in (5, 10, 15, 20, 30):
            p = rng.beta(a, b, (runs, c))
            means = rng.binomial(5, p) / 5
            truth = a / (a + b)
            bca = np.array([_bca(means[i], i, resamples) for i in range(runs)])
            for i in range(3):  # the vectorised BCa is the library's
                if np.ptp(means[i]) > 0:
                    lib = cluster_bootstrap_interval(means[i], n_resamples=resamples, seed=i)
                    if not np.allclose((lib.ci_low, lib.ci_high), bca[i], atol=1e-12):
                        raise SystemExit("vectorised BCa differs from the library's")
            se = means.std(axis=1, ddof=1) / math.sqrt(c)
            half = sps.t.ppf(0.5 + CONFIDENCE / 2, c - 1) * se
            centre = means.mean(axis=1)
            cover_t = np.mean((centre - half <= truth) & (truth <= centre + half))
            cover_bca = np.mean((bca[:, 0] <= truth) & (truth <= bca[:, 1]))
            mark = "  (bootstrap withheld)" if c < MIN_BOOTSTRAP_SCENARIOS else ""
            print(f"  Beta({a:g}, {b:g}){'':<{16 - len(f'Beta({a:g}, {b:g})')}}{c:>10}"
                  f"{cover_bca:>9.1%}{cover_t:>9.1%}{mark}")


def permutation_floor() -> None:
    print("\nSign-flip permutation test: the smallest two-sided p-value with C scenarios that "
          "differ is 2/2^C")
    for c in range(2, 9):
        p = 2 / 2**c
        print(f"  C = {c}: {p:.4f}{'  (cannot reject at 0.05)' if p >= 0.05 else ''}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap-resamples", type=int, default=1999)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    failures = pass_k_coverage(args.runs, rng)
    bootstrap_coverage(args.runs, rng, args.bootstrap_resamples)
    permutation_floor()
    print(f"\nwall time {time.perf_counter() - started:.1f} s")
    if failures:
        print(f"FAIL: the harness's interval covers less than {FLOOR:.0%}: " + "; ".join(failures))
        return 1
    print(f"PASS: the harness's pass@k/pass^k intervals cover at least {FLOOR:.0%} in every "
          "design")
    return 0


if __name__ == "__main__":
    sys.exit(main())
