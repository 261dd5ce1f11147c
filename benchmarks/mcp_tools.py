"""The mocked tools over MCP (harness.mcp.ToolServer): what serving an episode costs the run,
and what a tool call costs an agent, in both protocol eras the SDK speaks.

Printed: the time to open and close an episode's path (its own MCP server and session
manager), the time for the official client to connect and disconnect, the median and p95 of
one tools/call over a kept-alive connection, and the same calls from 20 episodes at once.
Target: a call under 10 ms at the median on the project's 2-core machines (a call once took
~45 ms, Nagle's algorithm waiting on the client's delayed ACK: see bind_loopback).

Usage: python benchmarks/mcp_tools.py [--calls 200]
Exit status 1 if a median call is over 10 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time

from mcp import Client

from harness.mcp import ToolServer
from harness.scenarios.loading import parse_scenario
from harness.tools import Toolbox

TARGET_MS = 10.0
SCENARIO = parse_scenario({
    "id": "bench", "user": {"persona": "p", "goal": "g", "script": ["hi"]},
    "agent": {"model": "mock:agent"},
    "tools": [{"name": "get_weather", "description": "Weather for a city.",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]},
               "returns": {"city": "${args.city}", "temperature_c": 18}}],
})


async def _calls(url: str, mode: str, count: int) -> list[float]:
    times = []
    async with Client(url, mode=mode) as client:
        for _ in range(count):
            started = time.perf_counter()
            await client.call_tool("get_weather", {"city": "Paris"})
            times.append((time.perf_counter() - started) * 1000)
    return times


async def main(calls: int) -> int:
    worst = 0.0
    async with ToolServer() as server:
        started = time.perf_counter()
        for _ in range(calls):
            async with server.episode(Toolbox.for_scenario(SCENARIO)):
                pass
        print(f"episode path open+close: {(time.perf_counter() - started) / calls * 1000:.2f} ms")
        async with server.episode(Toolbox.for_scenario(SCENARIO)) as url:
            for mode in ("auto", "legacy"):
                started = time.perf_counter()
                for _ in range(10):
                    async with Client(url, mode=mode):
                        pass
                print(f"{mode}: client connect+close "
                      f"{(time.perf_counter() - started) / 10 * 1000:.1f} ms (mostly the "
                      "client's own HTTP client set-up)")
                times = await _calls(url, mode, calls)
                median = statistics.median(times)
                worst = max(worst, median)
                p95 = statistics.quantiles(times, n=20)[-1]
                print(f"{mode}: tools/call median {median:.2f} ms, p95 {p95:.2f} ms")
        async with contextlib.AsyncExitStack() as episodes:
            urls = [await episodes.enter_async_context(
                server.episode(Toolbox.for_scenario(SCENARIO))) for _ in range(20)]
            results = await asyncio.gather(*(_calls(url, "legacy", calls // 10)
                                             for url in urls))
        concurrent = [t for times in results for t in times]
        print(f"20 episodes at once: tools/call median {statistics.median(concurrent):.2f} ms")
    ok = worst <= TARGET_MS
    print(f"{'ok' if ok else 'SLOW'}: median call {worst:.2f} ms (target {TARGET_MS:g} ms)")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    sys.exit(asyncio.run(main(parser.parse_args().calls)))
