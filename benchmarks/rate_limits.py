"""Benchmark: a batch of model calls against a provider's rate limits, held or only retried.

The loopback server runs in its own process enforcing a requests-per-minute and a
tokens-per-minute limit (continuous buckets holding one second's worth, 429 with Retry-After
over them, 200 ms a reply). The same batch of calls goes through ``ModelHub`` at concurrency 32
in each phase, each against a fresh server:

- **configured**: the limits in the models config (``requests_per_minute``,
  ``tokens_per_minute``);
- **adopted**: no limits configured; the server's ``x-ratelimit-*`` headers state them;
- **retry-only**: no limits configured and a server that sends no rate-limit headers, so a 429
  and its Retry-After are all the client learns (the endpoint pauses and halves its bound).

Printed per phase: wall time, the throughput as a share of the limit (successful calls a
second over the requests limit's rate, and tokens a second over the tokens limit's; goal
>= 0.9 of the binding one), the share of requests the server refused with 429 (goal < 2%),
and the calls that failed after their retries.

    python benchmarks/rate_limits.py                       # 600 calls at 600 rpm, ~3 minutes
    python benchmarks/rate_limits.py --calls 300 --phases configured

Today's behaviour before this change (a semaphore, retries only) is measured by running the
retry-only phase on that checkout: ``PYTHONPATH=OLD python benchmarks/rate_limits.py --phases
retry-only`` (the server is always this checkout's: it is started with this file's tree first
on its path).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.models.config import ModelsConfig
from harness.models.hub import ModelHub
from harness.models.request import ModelRequest
from harness.models.types import GenerationParams, Message

LATENCY_S = 0.2
CONCURRENCY = 32
MODEL = "bench-model"
SYSTEM = "You are a careful judge of customer-support conversations for a travel agency."
QUESTION = ("The agent booked a flight from Oslo to Tokyo and confirmed the dates twice. "
            "Did it answer the customer's question about visas? Reply in one sentence.")
PHASES = ("configured", "adopted", "retry-only")
SOURCE_TREE = Path(__file__).resolve().parents[1]


@dataclass
class Phase:
    name: str
    calls: int
    succeeded: int
    wall_s: float
    tokens: int
    admitted: int
    refused: int
    rpm: int
    tpm: int

    @property
    def request_share(self) -> float:
        return self.succeeded / self.wall_s / (self.rpm / 60.0)

    @property
    def token_share(self) -> float:
        return self.tokens / self.wall_s / (self.tpm / 60.0)

    @property
    def refused_share(self) -> float:
        sent = self.admitted + self.refused
        return self.refused / sent if sent else 0.0


def start_server(rpm: int, tpm: int, headers: bool) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "harness.testing.server", "--latency", str(LATENCY_S),
               "--rpm", str(rpm), "--tpm", str(tpm)]
    if not headers:
        command.append("--no-limit-headers")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(SOURCE_TREE), *filter(None, [os.environ.get("PYTHONPATH")])])}
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env=env)
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def stop_server(process: subprocess.Popen[str]) -> dict[str, int]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.close()
    out = process.stdout.read()
    process.wait(timeout=10)
    counts: dict[str, int] = json.loads(out.strip().splitlines()[-1])
    return counts


def models_config(base_url: str, limits: dict[str, int]) -> ModelsConfig:
    # Built from a mapping, so the retry-only phase also runs on a checkout whose config has
    # no rate-limit fields (today's behaviour, for comparison).
    return ModelsConfig.model_validate({
        "openai": {"base_url": base_url, "concurrency": CONCURRENCY, **limits},
        "cache": {"mode": "off"},
        "retry": {"max_attempts": 5, "backoff_initial_s": 0.5, "backoff_max_s": 8,
                  "retry_after_cap_s": 30},
    })


async def run_phase(name: str, calls: int, rpm: int, tpm: int) -> Phase:
    process, port = start_server(rpm, tpm, headers=name != "retry-only")
    limits = {"requests_per_minute": rpm, "tokens_per_minute": tpm} if name == "configured" \
        else {}
    try:
        hub = ModelHub(models_config(f"http://127.0.0.1:{port}/v1", limits), environ={})
        model = hub.get(f"openai:{MODEL}")
        messages = [Message(role="system", content=SYSTEM),
                    Message(role="user", content=QUESTION)]
        params = GenerationParams(max_tokens=120)
        started = time.perf_counter()
        results: list[Any] = await asyncio.gather(
            *(model.chat(ModelRequest(messages, "judge", params=params)) for _ in range(calls)),
            return_exceptions=True)
        wall = time.perf_counter() - started
        await hub.aclose()
    finally:
        counts = stop_server(process)
    replies = [r for r in results if not isinstance(r, BaseException)]
    tokens = sum(r.usage.input_tokens + r.usage.output_tokens for r in replies)
    return Phase(name, calls, len(replies), wall, tokens, counts["admitted"],
                 counts["rate_limited"], rpm, tpm)


def print_table(phases: list[Phase]) -> None:
    header = (f"{'phase':>11} {'calls':>6} {'failed':>6} {'wall s':>7} {'req share':>9} "
              f"{'tok share':>9} {'429s':>6} {'429 share':>9}")
    print(header)
    print("-" * len(header))
    for p in phases:
        print(f"{p.name:>11} {p.calls:6d} {p.calls - p.succeeded:6d} {p.wall_s:7.1f} "
              f"{p.request_share:9.3f} {p.token_share:9.3f} {p.refused:6d} "
              f"{p.refused_share:9.2%}")
    print()
    for p in phases:
        share = max(p.request_share, p.token_share)
        print(f"{p.name}: throughput {share:.3f} of the limit "
              f"({'ok' if share >= 0.9 else 'UNDER'} >= 0.9), 429s {p.refused_share:.2%} "
              f"({'ok' if p.refused_share < 0.02 else 'OVER'} < 2%)")


async def main(calls: int, rpm: int, tpm: int, phases: list[str]) -> None:
    print(f"loopback server in its own process: {rpm} rpm, {tpm} tpm, one second's burst, "
          f"{LATENCY_S * 1000:.0f} ms a reply; {calls} calls at concurrency {CONCURRENCY}; "
          f"python {sys.version.split()[0]}")
    results = [await run_phase(name, calls, rpm, tpm) for name in phases]
    print_table(results)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--rpm", type=int, default=600)
    parser.add_argument("--tpm", type=int, default=90_000)
    parser.add_argument("--phases", default=",".join(PHASES),
                        help=f"comma-separated, of {', '.join(PHASES)}")
    args = parser.parse_args()
    chosen = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(PHASES))
    if unknown:
        parser.error(f"--phases: unknown {', '.join(unknown)}; expected {', '.join(PHASES)}")
    asyncio.run(main(args.calls, args.rpm, args.tpm, chosen))
