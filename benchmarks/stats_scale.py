"""Time and peak memory of ``harness stats FILE --json`` on large files (issue 11).

Writes two JSONL files of sample scores in a temporary directory (100,000 lines: 1,000
scenarios x 100 epochs; 1,000,000 lines: 10,000 scenarios x 100 epochs; pass probabilities
from Beta(1, 1)), then for each:

- runs the console command ``python -m harness stats FILE --json`` (default cluster
  bootstrap, 9,999 resamples) in a fresh process, output to /dev/null, and reports its wall
  time, CPU time and peak resident memory (``os.wait4`` on that process alone);
- runs the same analysis inside a fresh process and reports where the time goes: importing
  the CLI, reading the file, computing the statistics, writing the JSON.

Targets: 1M lines under 500 MB peak and under 10 s; 100k lines, bootstrap included, under
1 s of analysis. The machine is shared, so wall time is also shown as CPU time (user +
system), which other processes disturb less.

Usage: python benchmarks/stats_scale.py [--sizes 100000,1000000] [--keep DIR]
Exit status 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

EPOCHS = 100
MEMORY_TARGET_MB = 500
TARGETS_S = {100_000: 1.0, 1_000_000: 10.0}  # 100k: analysis; 1M: the whole command

PHASES = """
import io, json, sys, time
t0 = time.perf_counter()
import harness.cli  # everything the console command imports
from harness.stats.jsonl import read_sample_scores
from harness.stats.suite import suite_stats_from_columns
from harness.stats.summary import design_power, summary_head, write_summary_json
t1 = time.perf_counter()
table = read_sample_scores(sys.argv[1])
t2 = time.perf_counter()
suite = suite_stats_from_columns(table.columns)
t3 = time.perf_counter()
with open("/dev/null", "wb") as sink:
    write_summary_json(summary_head(suite, power=design_power(suite)), suite.scenarios.rows(),
                       sink)
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "read": t2 - t1, "stats": t3 - t2, "write": t4 - t3}))
"""


def write_file(path: Path, n_lines: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    n_scenarios = n_lines // EPOCHS
    p = rng.beta(1.0, 1.0, n_scenarios)
    with path.open("w", encoding="utf-8") as out:
        for s in range(n_scenarios):
            passes = rng.random(EPOCHS) < p[s]
            out.write("".join(
                f'{{"scenario_id": "scenario-{s:05d}", "epoch": {e}, "score": '
                f'{1.0 if passes[e] else 0.0}}}\n' for e in range(EPOCHS)))


def measure(args: list[str]) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one child process, and its stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own resource usage
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(args)} failed: {err.read().decode()}")
        out.seek(0)
        text = out.read().decode()
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        wall, cpu, rss, _ = measure([sys.executable, "-c", "import harness.cli"])
        print(f"import of the CLI alone: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MB")
        print(f"\n{'lines':>10}{'wall s':>9}{'CPU s':>8}{'peak MB':>9}   in-process: import, "
              "read, stats, write (s)")
        for n in sizes:
            path = folder / f"scores-{n}.jsonl"
            if not path.exists():
                write_file(path, n)
            wall, cpu, rss, _ = measure([sys.executable, "-m", "harness", "stats", str(path),
                                         "--json"])
            _, _, _, text = measure([sys.executable, "-c", PHASES, str(path)])
            phases = json.loads(text)
            analysis = phases["read"] + phases["stats"] + phases["write"]
            print(f"{n:>10,}{wall:>9.2f}{cpu:>8.2f}{rss:>9.0f}   {phases['import']:.2f}, "
                  f"{phases['read']:.2f}, {phases['stats']:.2f}, {phases['write']:.2f} "
                  f"(analysis {analysis:.2f})")
            if rss > MEMORY_TARGET_MB:
                failures.append(f"{n:,} lines: peak {rss:.0f} MB > {MEMORY_TARGET_MB} MB")
            target = TARGETS_S.get(n)
            measured = analysis if n < 1_000_000 else wall
            if target is not None and measured > target:
                failures.append(f"{n:,} lines: {measured:.2f} s > {target:g} s")
        print(f"\ntargets: 1M lines < {MEMORY_TARGET_MB} MB peak and < 10 s for the command; "
              "100k lines < 1 s of analysis (bootstrap included); the import of the CLI comes "
              "on top of every command")
    if failures:
        print("MISSED: " + "; ".join(failures))
        return 1
    print("MET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
