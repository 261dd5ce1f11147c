"""Start-up time of the console command: how long `harness --help`, `harness version` and
`harness validate` take before they do anything, and which heavy libraries they import.

A command that only prints help or checks files should not pay for scipy, numpy, the model
SDKs or instructor; those are imported where they are used. Target: under 0.3 s each on the
project's 2-core machines.

Each command runs as a fresh process `--repeat` times (default 7); the median and the fastest
wall-clock times are printed, beside a bare `python -c pass` for the interpreter's own share,
and the heavy modules that `python -X importtime` shows each command importing.

Usage: python benchmarks/startup.py [--repeat 7]
Exit status 1 if any command's median is over 0.3 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 0.3
HEAVY = ("scipy", "numpy", "openai", "anthropic", "instructor", "httpx2", "jinja2", "sklearn",
         "rouge_score", "aiohttp")

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "harness --help": [sys.executable, "-m", "harness", "--help"],
    "harness version": [sys.executable, "-m", "harness", "version"],
    "harness run --help": [sys.executable, "-m", "harness", "run", "--help"],
    "harness validate scenarios/": [sys.executable, "-m", "harness", "validate",
                                    str(ROOT / "scenarios"), "--no-imports"],
}


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-500:]}")
    return elapsed


def _heavy_imports(argv: list[str]) -> list[str]:
    done = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True,
                          text=True, cwd=ROOT, check=False)
    top = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            top.add(name.split(".")[0])
    return sorted(top.intersection(HEAVY))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    slow = []
    print(f"{'command':32} {'median':>8} {'fastest':>8}  heavy imports")
    for label, argv in COMMANDS.items():
        times = [_time(argv) for _ in range(args.repeat)]
        median = statistics.median(times)
        heavy = _heavy_imports(argv)
        print(f"{label:32} {median:7.3f}s {min(times):7.3f}s  {', '.join(heavy) or '-'}")
        if label.startswith("harness") and median > TARGET_S:
            slow.append(label)
    if slow:
        print(f"over the {TARGET_S} s target: {', '.join(slow)}")
        return 1
    print(f"every command under the {TARGET_S} s target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
