"""Coverage of the corrected (PPI++) suite figures of issue 27, beside the judge's own interval
and the labels-only one, on simulated suites whose human truth is known.

Each run draws C scenarios with a true human level ``mu ~ Beta(a, b)``, E epochs each with a
human score on a 5-point scale (``Binomial(4, mu) / 4``; passed = 0.75 or more) and a judge
score on the same scale with a known error, then labels a random share of the samples. The
truth is the population's human figure (the mean ``a / (a + b)``, the pass rate from the
beta-binomial), so an interval covers when it contains it (the scenarios are a sample, as in
``benchmarks/interval_coverage.py``).

Judges (each with a scenario-level error of sd ``s`` on top, where the design says so):
``lenient`` (+0.15 and noise), ``harsh`` (-0.2 and noise), ``label-dependent`` (0.4 + 0.5 Y:
lenient on bad answers, harsh on good ones), ``noisy`` (sd 0.3, no bias), ``useless``
(uniform, unrelated to Y). Scenario effects are ``moderate`` (Beta(2, 2), s = 0.1) or
``strong`` (Beta(0.5, 0.5), s = 0.25).

Intervals (95%):

- ``corrected (harness)``: ``harness.stats.corrected.corrected_figure`` as shipped (lambda
  cross-fitted).
- ``same-label lambda``: the same with lambda tuned on the very labels it corrects with.
- ``iid PPI++``: ``harness.calibration.ppi.ppi_mean`` (labelled and judge-only samples as
  independent items, no clustering).
- ``judge``: the judge's own clustered t interval (the suite figure without labels).
- ``labels only``: the labelled samples alone, clustered (lambda = 0).

Usage: python benchmarks/ppi_coverage.py [--runs 1000] [--seed 0] [--quick]
(``--quick``: 200 runs a design; 1,000 take about two minutes on a busy 2-core machine).
Every design with at least 20 labels (what the harness ships for) is held to the goal,
93.5-96.5%: those outside it are listed, and the exit status is 1 if one is outside it by more
than two Monte Carlo standard errors (so a design at the edge does not fail by chance).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from harness.calibration.ppi import ppi_mean
from harness.stats.corrected import MIN_LABELS, corrected_figure, power_tuned_lambda

CONFIDENCE = 0.95
GOAL = (0.935, 0.965)
DEFAULT_FROM_LABELS = 20  # designs with at least this many labels must meet GOAL
EFFECTS = {"moderate": (2.0, 2.0, 0.1), "strong": (0.5, 0.5, 0.25)}
JUDGES = ("lenient", "harsh", "label-dependent", "noisy", "useless")


@dataclass(frozen=True)
class Design:
    scenarios: int
    epochs: int
    share: float
    judge: str
    effects: str

    @property
    def n_labels(self) -> int:
        return round(self.share * self.scenarios * self.epochs)

    def truth(self, figure: str) -> float:
        a, b, _ = EFFECTS[self.effects]
        if figure == "mean":
            return a / (a + b)
        return float(sps.betabinom(4, a, b).pmf([3, 4]).sum())

    def __str__(self) -> str:
        return (f"{self.scenarios} x {self.epochs}, {self.share:.0%} labelled "
                f"({self.n_labels}), {self.judge} judge, {self.effects} scenario effects")


DESIGNS = [
    Design(10, 10, 0.2, "lenient", "strong"), Design(20, 5, 0.2, "harsh", "strong"),
    Design(100, 5, 0.05, "lenient", "strong"), Design(200, 10, 0.02, "label-dependent",
                                                      "strong"),
    Design(30, 10, 0.1, "noisy", "strong"), Design(50, 5, 0.1, "useless", "strong"),
    Design(200, 1, 0.1, "lenient", "moderate"), Design(100, 5, 0.05, "label-dependent",
                                                       "moderate"),
    Design(30, 10, 0.1, "harsh", "moderate"), Design(50, 2, 0.2, "noisy", "moderate"),
    Design(100, 3, 0.2, "lenient", "moderate"), Design(200, 5, 0.2, "harsh", "strong"),
    Design(50, 1, 0.2, "lenient", "moderate"), Design(10, 3, 0.2, "harsh", "moderate"),
    Design(10, 1, 0.2, "lenient", "moderate"),
]


def _draw(design: Design, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One suite: human and judge scores on the 5-point scale, scenario by scenario."""
    c, e = design.scenarios, design.epochs
    a, b, s = EFFECTS[design.effects]
    mu = np.repeat(rng.beta(a, b, c), e)
    human = rng.binomial(4, mu) / 4
    offset = np.repeat(rng.normal(0, s, c), e)
    noise = rng.normal(0, 0.1, c * e)
    judge = {
        "lenient": lambda: human + 0.15 + offset + noise,
        "harsh": lambda: human - 0.2 + offset + noise,
        "label-dependent": lambda: 0.4 + 0.5 * human + offset + noise,
        "noisy": lambda: human + rng.normal(0, 0.3, c * e),
        "useless": lambda: rng.random(c * e),
    }[design.judge]()
    return human, np.round(np.clip(judge, 0, 1) * 4) / 4


def _judge_interval(judge: np.ndarray, c: int) -> tuple[float, float]:
    means = judge.reshape(c, -1).mean(axis=1)
    half = sps.t.ppf(0.5 + CONFIDENCE / 2, c - 1) * means.std(ddof=1) / math.sqrt(c)
    return means.mean() - half, means.mean() + half


def _intervals(design: Design, human: np.ndarray, judge: np.ndarray, labelled: np.ndarray,
               figure: str, seed: int) -> dict[str, tuple[float, float]]:
    c = design.scenarios
    offsets = np.arange(0, human.size + 1, design.epochs)
    target = "mean" if figure == "mean" else "pass_rate"
    y = human[labelled]
    got = corrected_figure(judge, offsets, labelled, y, target=target, seed=seed)
    if got.withheld is not None:
        return {}
    lam = power_tuned_lambda(y, judge[labelled], float(np.var(judge, ddof=1)),
                             labelled.size / human.size)
    same = corrected_figure(judge, offsets, labelled, y, target=target, lam=lam)
    rest = np.setdiff1d(np.arange(human.size), labelled)
    iid = ppi_mean(y, judge[labelled], judge[rest], CONFIDENCE)
    assert got.ci_low is not None and got.ci_high is not None and got.labels_only is not None
    assert same.ci_low is not None and same.ci_high is not None
    return {
        "corrected (harness)": (got.ci_low, got.ci_high),
        "same-label lambda": (same.ci_low, same.ci_high),
        "iid PPI++": (iid.ci_low, iid.ci_high),
        "judge": _judge_interval(judge, c),
        "labels only": (got.labels_only.ci_low, got.labels_only.ci_high),
    }


def run_design(design: Design, runs: int, rng: np.random.Generator) -> dict[str, float]:
    """Print one design's table; return the harness's coverage per figure."""
    n = design.n_labels
    print(f"\n{design}")
    if n < MIN_LABELS:
        print(f"  withheld: {n} labels, fewer than {MIN_LABELS} (the harness gives no figure)")
        return {}
    hits: dict[str, dict[str, list[float]]] = {"mean": {}, "pass": {}}
    for i in range(runs):
        human, judge = _draw(design, rng)
        labelled = np.sort(rng.choice(human.size, n, replace=False))
        for figure in hits:
            h, j = (human, judge) if figure == "mean" else (
                (human >= 0.75).astype(float), (judge >= 0.75).astype(float))
            truth = design.truth(figure)
            for name, (low, high) in _intervals(design, h, j, labelled, figure, i).items():
                got = hits[figure].setdefault(name, [0.0, 0.0, 0.0])
                got[0] += low <= truth <= high
                got[1] += high - low
                got[2] += 1
    print(f"  {'interval':<22}{'mean: cover':>12}{'width':>8}{'pass rate: cover':>18}"
          f"{'width':>8}")
    for name in hits["mean"]:
        row = f"  {name:<22}"
        for figure, width in (("mean", 12), ("pass", 18)):
            hit, total_width, count = hits[figure][name]
            row += f"{hit / count:>{width}.1%}{total_width / count:>8.3f}"
        print(row)
    se = math.sqrt(0.95 * 0.05 / runs)
    print(f"  (Monte Carlo s.e. of a coverage near 95%: {se:.1%})")
    return {f: v["corrected (harness)"][0] / v["corrected (harness)"][2] for f, v in hits.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="200 runs a design")
    args = parser.parse_args()
    runs = 200 if args.quick else args.runs
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(f"Corrected figures: {runs} runs a design, {CONFIDENCE:.0%} intervals; goal "
          f"{GOAL[0]:.1%}-{GOAL[1]:.1%} for the harness's interval from {DEFAULT_FROM_LABELS} "
          "labels")
    outside, failed = [], False
    margin = 2 * math.sqrt(0.95 * 0.05 / runs)
    for design in DESIGNS:
        for figure, coverage in run_design(design, runs, rng).items():
            if design.n_labels >= DEFAULT_FROM_LABELS and not GOAL[0] <= coverage <= GOAL[1]:
                outside.append(f"{design}, {figure}: {coverage:.1%}")
                failed |= not GOAL[0] - margin <= coverage <= GOAL[1] + margin
    print(f"\nwall time {time.perf_counter() - started:.1f} s")
    if outside:
        print(f"outside the goal {GOAL[0]:.1%}-{GOAL[1]:.1%}:\n  " + "\n  ".join(outside))
    if failed:
        print(f"FAIL: outside the goal by more than {margin:.1%} (two Monte Carlo standard "
              "errors)")
        return 1
    print(f"PASS: every default design within {margin:.1%} of the goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
