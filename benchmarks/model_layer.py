"""Benchmark: the model layer against the bare OpenAI SDK, on the loopback server.

The server runs in its own process (so its CPU is not counted here) with 200 ms latency per
reply. For each load (1,000 calls at 50 concurrent, 2,000 at 200) the same calls are made, in
the same run, through

- **bare**: ``openai.AsyncOpenAI`` with its default client and a plain ``asyncio.Semaphore``;
- **harness**: ``ModelHub.get("openai:...").chat(ModelRequest(...))`` (cache off, same
  concurrency bound).

Printed per phase: wall time, its ratio to the ideal ``ceil(calls / concurrency) x latency``,
the harness/bare wall ratio, and process CPU milliseconds per call (``time.process_time``).
Targets: harness wall <= 1.15 x bare, and harness CPU <= bare CPU + 1 ms per call.

    python benchmarks/model_layer.py                 # both loads
    python benchmarks/model_layer.py --repeat 2      # each phase twice, interleaved
    python benchmarks/model_layer.py --profile       # cProfile the harness phase too
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import math
import pstats
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import openai

from harness.models.config import CacheConfig, ModelsConfig, ProviderConfig
from harness.models.hub import ModelHub
from harness.models.request import ModelRequest
from harness.models.types import GenerationParams, Message

LATENCY_S = 0.2
LOADS = [(1000, 50), (2000, 200)]
MODEL = "bench-model"
SYSTEM = "You are a concise assistant for a travel agency."
QUESTION = "Which documents do I need to travel from Oslo to Tokyo for two weeks?"


@dataclass
class Phase:
    name: str
    calls: int
    concurrency: int
    wall_s: float
    cpu_s: float

    @property
    def ideal_s(self) -> float:
        return math.ceil(self.calls / self.concurrency) * LATENCY_S

    @property
    def cpu_ms_per_call(self) -> float:
        return self.cpu_s * 1000 / self.calls


def start_server() -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.testing.server", "--latency", str(LATENCY_S)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


async def measure(name: str, calls: int, concurrency: int,
                  one_call: Callable[[], Awaitable[object]]) -> Phase:
    gc.collect()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one_call() for _ in range(calls)))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return Phase(name, calls, concurrency, wall, cpu)


async def bare_phase(base_url: str, calls: int, concurrency: int) -> Phase:
    client = openai.AsyncOpenAI(api_key="sk-bench", base_url=base_url, max_retries=0)
    semaphore = asyncio.Semaphore(concurrency)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]

    async def one_call() -> object:
        async with semaphore:
            return await client.chat.completions.create(model=MODEL, messages=messages,
                                                        max_tokens=256)

    await asyncio.gather(*(one_call() for _ in range(min(concurrency, 50))))  # warm up
    phase = await measure("bare", calls, concurrency, one_call)
    await client.close()
    return phase


async def harness_phase(base_url: str, calls: int, concurrency: int,
                        profile: bool) -> tuple[Phase, str]:
    config = ModelsConfig(
        openai=ProviderConfig(base_url=base_url, concurrency=concurrency),
        cache=CacheConfig(mode="off"),
    )
    hub = ModelHub(config, environ={})
    model = hub.get(f"openai:{MODEL}")
    messages = [Message(role="system", content=SYSTEM), Message(role="user", content=QUESTION)]
    params = GenerationParams(max_tokens=256)

    async def one_call() -> object:
        return await model.chat(ModelRequest(messages, "agent", params=params))

    await asyncio.gather(*(one_call() for _ in range(min(concurrency, 50))))  # warm up
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    phase = await measure("harness", calls, concurrency, one_call)
    report = ""
    if profiler:
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        report = out.getvalue()
    assert hub.ledger.total.errors == 0
    await hub.aclose()
    return phase, report


def print_table(rows: list[tuple[Phase, Phase]]) -> None:
    header = (f"{'load':>12} {'path':>8} {'wall s':>8} {'ideal s':>8} {'/ideal':>7} "
              f"{'/bare':>7} {'CPU ms/call':>12} {'+CPU ms':>8}")
    print(header)
    print("-" * len(header))
    for bare, ours in rows:
        load = f"{bare.calls}@{bare.concurrency}"
        for phase in (bare, ours):
            ratio = phase.wall_s / bare.wall_s
            extra = phase.cpu_ms_per_call - bare.cpu_ms_per_call
            print(f"{load:>12} {phase.name:>8} {phase.wall_s:8.2f} {phase.ideal_s:8.2f} "
                  f"{phase.wall_s / phase.ideal_s:7.2f} {ratio:7.3f} "
                  f"{phase.cpu_ms_per_call:12.2f} {extra:+8.2f}")
    print()
    for bare, ours in rows:
        wall_ok = ours.wall_s <= 1.15 * bare.wall_s
        cpu_ok = ours.cpu_ms_per_call <= bare.cpu_ms_per_call + 1.0
        print(f"{bare.calls}@{bare.concurrency}: wall {ours.wall_s / bare.wall_s:.3f}x bare "
              f"({'ok' if wall_ok else 'OVER'} <= 1.15x); CPU "
              f"{ours.cpu_ms_per_call - bare.cpu_ms_per_call:+.2f} ms/call "
              f"({'ok' if cpu_ok else 'OVER'} <= +1 ms)")


async def main(repeat: int, profile: bool) -> None:
    process, port = start_server()
    base_url = f"http://127.0.0.1:{port}/v1"
    rows: list[tuple[Phase, Phase]] = []
    try:
        for calls, concurrency in LOADS:
            for _ in range(repeat):
                bare = await bare_phase(base_url, calls, concurrency)
                ours, report = await harness_phase(base_url, calls, concurrency, profile)
                rows.append((bare, ours))
                if report:
                    print(f"--- harness profile, {calls}@{concurrency} ---\n{report}")
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    print(f"loopback server latency {LATENCY_S * 1000:.0f} ms, in a separate process; "
          f"python {sys.version.split()[0]}, openai {openai.__version__}")
    print_table(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="run each phase N times")
    parser.add_argument("--profile", action="store_true", help="cProfile the harness phases")
    args = parser.parse_args()
    asyncio.run(main(args.repeat, args.profile))
