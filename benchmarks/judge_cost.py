"""What the judges of a run cost plain, and through batch APIs with prompt caches (issue 30).

The example suite runs twice against the loopback model server, with the offline agent and
simulated user and a panel of two real-SDK judges at their list prices
(``openai:gpt-4.1-mini`` and ``anthropic:claude-sonnet-4-5``), each asked for
``--judge-samples`` samples of every rubric:

1. **plain**: every judge request sent live, and the server playing no prompt cache (what a
   run cost before the judge prompts were ordered for caching and batching existed); it
   counts input tokens over the whole prompt all the same, so both runs count alike;
2. **batch + cache**: ``--judge-batch``, and the server playing the providers' prompt caches
   (Anthropic's ``cache_control`` marks, OpenAI's automatic prefix cache), inside the batches
   as well, as both providers do on a best-effort basis.

The judge gives verdicts that are a function of its prompt (``harness.testing.verdicts``), so
the two runs must agree score for score. One epoch: a second epoch of the deterministic
offline agent asks the same judge requests again, which the batch queue sends once, and the
ratio would then count that saving too.

Between them, for the share of each: **cache** (live, caches played) and **batch**
(``--judge-batch``, no cache). Printed: each run's judge calls, tokens, the share the prompt
cache served, the cost and the wall time (the loopback answers at once, and its batches end
at once: a provider's take minutes to hours, so the wall time shows the harness's own
overhead only), whether the verdicts agree, and on the last line
``judge cost ratio (batch + cache / plain): R`` (goal: R <= 0.5).

Usage: python benchmarks/judge_cost.py [--judge-samples 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cost_estimate import harness  # type: ignore[import-not-found]  # benchmarks/ is on sys.path

from harness.testing.hub import loopback_environ
from harness.testing.server import LoopbackServer
from harness.testing.verdicts import varied_verdicts

SUITE = Path(__file__).resolve().parents[1] / "scenarios"
JUDGES = ["--judge", "openai:gpt-4.1-mini", "--judge", "anthropic:claude-sonnet-4-5"]


def scores(run_dir: Path) -> dict[tuple[str, int], dict[str, Any]]:
    out = {}
    for line in (run_dir / "samples.jsonl").read_text().splitlines():
        record = json.loads(line)
        out[(record["scenario_id"], record["epoch"])] = {
            k: v for k, v in record["metrics"].items() if k.startswith("rubric:")}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge-samples", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, LoopbackServer() as server:
        os.environ.update(loopback_environ(server))
        server.set_responder(varied_verdicts)
        models = Path(scratch) / "models.yaml"
        models.write_text("batch: {poll_interval_s: 0.05, max_wait_s: 0.2}\n")
        common = [str(SUITE), "--offline", *JUDGES, "--judge-samples", str(args.judge_samples),
                  "--epochs", "1", "--models-config", str(models), "--json"]
        runs: dict[str, tuple[dict[tuple[str, int], dict[str, Any]], dict[str, Any], float]] = {}
        for label, extra, caches in (
                ("plain", ["--cache-mode", "off"], False),
                ("cache", ["--cache-mode", "off"], True),
                ("batch", ["--judge-batch", "--cache", f"{scratch}/batch.db"], False),
                ("batch + cache", ["--judge-batch", "--cache", f"{scratch}/both.db"], True)):
            # Both count a request's input over its whole prompt; only the second caches.
            server.play_prompt_caches(stores=caches)
            run_dir = Path(scratch) / label.replace(" + ", "-")
            started = time.perf_counter()
            code, text = harness("run", *common, *extra, "--out", str(run_dir))
            wall = time.perf_counter() - started
            if code not in (0, 1):
                sys.exit(f"the {label} run failed ({code}): {text[-2000:]}")
            runs[label] = (scores(run_dir), json.loads(text)["usage"]["by_role"]["judge"], wall)

    print(f"example suite, 1 epoch, a panel of 2 judges x {args.judge_samples} samples per "
          "rubric, list prices, loopback server")
    print(f"{'run':<15}{'calls':>7}{'batched':>9}{'input tok':>11}{'from cache':>12}"
          f"{'output tok':>12}{'cost USD':>11}{'wall s':>8}")
    for label, (_, judge, wall) in runs.items():
        share = (judge["prompt_cache_read_tokens"] / judge["input_tokens"]
                 if judge["input_tokens"] else 0.0)
        print(f"{label:<15}{judge['calls']:>7}{judge['batched_calls']:>9}"
              f"{judge['input_tokens']:>11}{share:>11.0%} {judge['output_tokens']:>11}"
              f"{judge['cost_usd']:>11.4f}{wall:>8.1f}")
    plain, cheap = runs["plain"], runs["batch + cache"]
    same = all(run[0] == plain[0] for run in runs.values())
    count = sum(len(v) for v in plain[0].values())
    print(f"verdicts: {'the same in every run' if same else 'DIFFERENT'} ({count} rubric "
          "scores each)")
    ratio = cheap[1]["cost_usd"] / plain[1]["cost_usd"]
    print(f"judge cost ratio (batch + cache / plain): {ratio:.3f}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
