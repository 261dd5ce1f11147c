"""Does the simulator panel's paired difference cover a difference known by construction
(issue 28, item 4)?

**The panel itself.** A suite of ``--scenarios`` scenarios is written to a temporary folder,
each an order-status request with one known fact (``order_id: A-<i>``) and an expected
``get_order`` call, answered by a Python agent (written beside it): the agent first asks for
the order id; given it, it calls ``get_order`` with probability ``p_i`` and fails otherwise.
Each repetition draws every scenario's ``p_i`` from Beta(a, b) (the scenarios are a sample of
a population, as the harness's intervals assume) and every call's success afresh. The panel is
``harness run --simulator mock:simulator --simulator mock:simulator-faulty`` (the command,
in process, with ``--json``): ``mock:simulator`` answers the agent's question, so a sample
passes with probability ``p_i``; ``mock:simulator-faulty`` walks out in every odd epoch as
soon as the agent waits on the user (harness/simulation/offline.py), so those samples fail
and the even ones pass with ``p_i``. With an even number of epochs the agent's expected mean
score under the faulty simulator is half of it under the other, and the population's paired
difference is known: ``-a / (a + b) / 2``. Printed: how often the panel's interval for the
difference (``simulator_panel.json``, ``differences[0]``) holds it, its Monte Carlo standard
error, the mean width and the mean estimate, and the mean variance shares.

**The statistics alone.** The same difference, drawn as per-scenario scores without running
anything, goes through the functions ``harness compare`` uses
(:func:`harness.stats.compare.compare_runs`) ``--synthetic`` times per design, for a
precise coverage figure over several numbers of scenarios and epochs.

Usage: python benchmarks/simulator_panel.py [--runs 100] [--scenarios 20] [--epochs 4]
                                            [--synthetic 2000] [--seed 0]
Exit status 1 if a coverage is more than three Monte Carlo standard errors below 95%.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from harness.cli import main as harness_main
from harness.stats.compare import compare_runs

CONFIDENCE = 0.95
BETA = (2.0, 2.0)  # p_i ~ Beta(a, b): mean 0.5, the spread of a varied suite
SEED_VARIABLE = "PANEL_BENCH_SEED"
BETA_VARIABLE = "PANEL_BENCH_BETA"

AGENT = '''\
"""The benchmark's agent: asks for the order id, then calls get_order with probability p_i
(drawn per repetition and scenario from Beta(a, b)), every call's success drawn afresh."""

import os
import re

import numpy as np

_ID = re.compile(r"\\bA-(\\d+)\\b")
_CALLS: dict[tuple[int, int], int] = {}


def answer(messages, toolbox):
    said = " ".join(m.content for m in messages if m.role == "user")
    found = _ID.search(said)
    if found is None:
        return "Can you tell me your order id?"
    i = int(found.group(1))
    seed = int(os.environ["PANEL_BENCH_SEED"])
    a, b = map(float, os.environ["PANEL_BENCH_BETA"].split(","))
    p = np.random.default_rng([seed, i]).beta(a, b)
    k = _CALLS[(seed, i)] = _CALLS.get((seed, i), -1) + 1
    if np.random.default_rng([seed, i, k, 1]).random() < p:
        toolbox.call("get_order", order_id=f"A-{i}")
        return f"Order A-{i} is pending."
    return "I could not find that order."
'''


def write_suite(folder: Path, scenarios: int) -> Path:
    """The suite and its agent in ``folder``; returns the suite's file."""
    (folder / "panel_bench_agent.py").write_text(AGENT, encoding="utf-8")
    lines = []
    for i in range(scenarios):
        lines.append(
            f"- id: order-{i:03d}\n"
            "  user:\n"
            "    goal: know the status of my order\n"
            "    opening_message: Hello, I need help with my order.\n"
            f"    known_facts: {{order_id: A-{i}}}\n"
            "  agent: {callable: 'panel_bench_agent:answer'}\n"
            "  tools:\n"
            "    - {name: get_order, returns: {status: pending}}\n"
            "  expectations:\n"
            "    tool_calls:\n"
            f"      - {{name: get_order, args: {{order_id: A-{i}}}}}\n")
    suite = folder / "suite.yaml"
    suite.write_text("".join(lines), encoding="utf-8")
    return suite


def run_panel(suite: Path, out: Path, epochs: int, seed: int) -> dict[str, Any]:
    """``harness run SUITE --simulator mock:simulator --simulator mock:simulator-faulty
    --json`` in this process; the panel's JSON."""
    os.environ[SEED_VARIABLE] = str(seed)
    os.environ[BETA_VARIABLE] = ",".join(map(str, BETA))
    argv = ["harness", "run", str(suite), "--simulator", "mock:simulator", "--simulator",
            "mock:simulator-faulty", "--epochs", str(epochs), "--seed", str(seed),
            "--cache-mode", "off", "--json", "--out", str(out)]
    stdout, stderr, old = io.StringIO(), io.StringIO(), sys.argv
    sys.argv = argv
    try:
        with (contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr),
              contextlib.suppress(SystemExit)):
            harness_main()
    finally:
        sys.argv = old
    try:
        data: dict[str, Any] = json.loads(stdout.getvalue())
    except ValueError:
        sys.exit(f"the panel printed no JSON:\n{stderr.getvalue()}")
    return data


def coverage_line(name: str, covered: list[bool], widths: list[float],
                  estimates: list[float]) -> tuple[str, float, float]:
    n = len(covered)
    rate = sum(covered) / n
    se = math.sqrt(rate * (1 - rate) / n) if 0 < rate < 1 else math.sqrt(0.25 / n)
    return (f"{name:<28} coverage {rate:6.1%} (MC SE {se:.1%}, n {n}), mean width "
            f"{np.mean(widths):.3f}, mean estimate {np.mean(estimates):+.3f}", rate, se)


def panel_part(args: argparse.Namespace) -> tuple[float, float]:
    known = -BETA[0] / (BETA[0] + BETA[1]) / 2
    print(f"The panel: {args.scenarios} scenarios x {args.epochs} epochs x 2 simulators, "
          f"p_i ~ Beta{BETA}, {args.runs} repetitions; known difference {known:+.3f}")
    covered, widths, estimates = [], [], []
    shares: list[dict[str, float]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        suite = write_suite(Path(tmp), args.scenarios)
        for r in range(args.runs):
            panel = run_panel(suite, Path(tmp) / f"run-{r}", args.epochs, args.seed + r)
            d = panel["differences"][0]["difference"]
            covered.append(d["ci_low"] <= known <= d["ci_high"])
            widths.append(d["ci_high"] - d["ci_low"])
            estimates.append(d["value"])
            if panel["variance"] is not None:
                shares.append(panel["variance"]["shares"])
    elapsed = time.perf_counter() - started
    line, rate, se = coverage_line("panel (harness run)", covered, widths, estimates)
    print(line)
    mean_shares = {k: float(np.mean([s[k] for s in shares])) for k in shares[0]}
    print("mean variance shares: " + ", ".join(f"{k} {v:.0%}" for k, v in mean_shares.items())
          + f" ({len(shares)} of {args.runs} runs balanced)")
    print(f"{elapsed:.0f} s, {elapsed / args.runs:.2f} s a panel of "
          f"{2 * args.scenarios * args.epochs} samples")
    return rate, se


def synthetic_part(args: argparse.Namespace) -> list[tuple[float, float]]:
    """Scores drawn as the panel's agent makes them, compared by compare_runs."""
    known = -BETA[0] / (BETA[0] + BETA[1]) / 2
    print(f"\nThe statistics alone (compare_runs), p_i ~ Beta{BETA}, {args.synthetic} "
          f"suites a design; known difference {known:+.3f}")
    rng = np.random.default_rng(args.seed)
    results = []
    for scenarios, epochs in ((5, 4), (10, 4), (20, 4), (20, 10), (50, 2)):
        covered, widths, estimates = [], [], []
        for _ in range(args.synthetic):
            p = rng.beta(*BETA, size=scenarios)
            plain = rng.random((scenarios, epochs)) < p[:, None]
            faulty = rng.random((scenarios, epochs)) < p[:, None]
            faulty[:, 1::2] = False  # odd epochs: the user walked out
            ids = [f"s{i}" for i in range(scenarios)]
            base = {sid: plain[i].astype(float).tolist() for i, sid in enumerate(ids)}
            cand = {sid: faulty[i].astype(float).tolist() for i, sid in enumerate(ids)}
            # the interval does not depend on the permutation test's resamples: few suffice
            d = compare_runs(base, cand, alpha=1 - CONFIDENCE,
                             permutation_resamples=99).difference
            assert d.ci_low is not None and d.ci_high is not None
            covered.append(d.ci_low <= known <= d.ci_high)
            widths.append(d.ci_high - d.ci_low)
            estimates.append(d.value)
        line, rate, se = coverage_line(f"{scenarios} scenarios x {epochs} epochs", covered,
                                       widths, estimates)
        print(line)
        results.append((rate, se))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--synthetic", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.epochs % 2:
        parser.error("--epochs must be even: the faulty simulator misbehaves in odd epochs")
    figures = [panel_part(args)] if args.runs else []
    figures += synthetic_part(args) if args.synthetic else []
    low = [rate for rate, se in figures if rate < CONFIDENCE - 3 * se]
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
