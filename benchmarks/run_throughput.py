"""Throughput of the whole runner against the loopback model server.

A 3-turn scenario (a simulator model plays the user, the agent answers with one tool call per
turn, one judge scores the final response), in 10 versions that differ in their prompts (so no
call of one is answered from the cache by another's), is run for 1,000 episodes at 50 and at 200
episodes in flight, each with 1 worker process, 2 and ``auto`` (``--workers``), with every
reply sent 200 ms after the server read its request. The server runs in its own process, so
only the harness's CPU is measured. For each setting it prints:

- wall time (worker start-up included) and its ratio to the ideal: ceil(episodes /
  concurrency) x (sequential model calls per episode) x latency;
- CPU milliseconds per model call, the parent's and its worker processes' together,
  everything included (SDK, instructor, cache and store writes, checks, judging, summary,
  the samples sent to the parent);
- peak memory (RSS) of the parent, and of the largest worker (which counts the pages it
  shares with the process it was forked from);
- the re-run of the same 1,000 episodes from the response cache (replay mode: a miss would be
  an error), with its model requests (must be 0). The measured run fills the cache in refresh
  mode, so that every one of its calls reaches the server.

Then 10,000 episodes (no artificial latency) for peak memory.

Shared virtual machines change speed from minute to minute: the same code's CPU per model
call then moves with the ratio (on the 2-core machine of issue 16, five runs of 2 workers at
200 in flight: 1.37 to 1.62 ms a call, 0.79 to 0.74 of ideal). ``--repeat N`` measures each
setting N times and prints the median and the range of its ratio.

Each measurement runs in a fresh Python process so CPU and memory figures are its own.

    python benchmarks/run_throughput.py                 # the full set (a few minutes)
    python benchmarks/run_throughput.py --episodes 200 --memory-episodes 0   # quick look
    python benchmarks/run_throughput.py --workers 1 2 --concurrency 200      # a subset
    python benchmarks/run_throughput.py --workers 2 --concurrency 200 --repeat 5 \
        --memory-episodes 0                                                     # the target
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCENARIO = """\
- id: bench-{i}
  description: A three-turn support conversation for the throughput benchmark.
  user:
    persona: A customer of shop {i} with three questions about their order.
    goal: Get answers to three questions about order A-1.
    model: openai:bench-simulator
  agent:
    model: openai:bench-agent
    system_prompt: Shop {i}. You answer order questions; look orders up with get_order first.
  tools:
    - name: get_order
      description: Look up an order by id.
      parameters:
        type: object
        properties: {{order_id: {{type: string}}}}
        required: [order_id]
      returns: {{order_id: A-1, status: shipped, eta_days: 2}}
  limits: {{max_user_turns: 3, max_agent_steps: 3, max_tool_calls: 10}}
  expectations:
    tool_calls:
      - {{name: get_order, args: {{order_id: A-1}}}}
  rubrics: [final_response_quality]
"""

N_SCENARIOS = 10


# --- the server side (its own process) --------------------------------------------------


def bench_responder(request: Any) -> Any:
    """Simulator calls: keep asking until the agent has answered three times, then end the
    conversation; everything else: the server's automatic answer (a tool call when tools are
    offered after a user turn, text after a tool result, schema-valid JSON for the judge)."""
    from harness.testing.replies import Reply

    if "SimulatorTurn" in json.dumps(request.body.get("tool_choice")):
        text = json.dumps(request.messages)
        if text.count("Assistant:") >= 3:
            return Reply.json({"message": "", "done": True, "stop_reason": "goal_met"})
        return Reply.json({"message": "And what about my order A-1?", "done": False})
    return None


def serve(latency: float) -> None:
    from harness.testing.server import LoopbackServer

    server = LoopbackServer(latency=latency, responder=bench_responder, record=False).start()
    print(server.port, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    server.stop()


# --- one measured run (its own process) -------------------------------------------------


def measure(args: argparse.Namespace) -> None:
    from harness.runs import event_loop
    from harness.runs.api import run_suite
    from harness.runs.config import RunConfig

    work = Path(args.work)
    epochs = args.episodes // N_SCENARIOS
    models_yaml = work / "models.yaml"
    models_yaml.write_text(
        f"openai: {{base_url: 'http://127.0.0.1:{args.port}/v1', concurrency: "
        f"{max(args.concurrency * 2, 16)}}}\n"
        "timeout_s: 60\nretry: {max_attempts: 3, backoff_initial_s: 0.1}\n"
    )
    os.environ["OPENAI_API_KEY"] = "sk-benchmark-not-a-real-key"
    config = RunConfig(
        scenario_paths=[str(work / "scenarios.yaml")], judges=["openai:bench-judge"],
        epochs=epochs, concurrency=args.concurrency, models_config=str(models_yaml),
        workers="auto" if args.workers == "auto" else int(args.workers),
        cache_path=None if args.cache_mode == "off" else str(work / "cache.sqlite"),
        cache_mode=args.cache_mode, bootstrap_resamples=2000,
    )
    out = work / f"run-{args.label}"
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    left: list[str] = []  # what each worker process reported when it left
    reporter = logging.Handler(logging.INFO)
    reporter.emit = lambda record: left.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("harness.runs.workers").addHandler(reporter)
    logging.getLogger("harness.runs.workers").setLevel(logging.INFO)
    # Tuned as `harness run` tunes its process (a library caller's is left as it is).
    result = event_loop.run(run_suite(config, out, tune_collector=True))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    # The worker processes' CPU and memory, as each reported when it left. Workers forked
    # from this process are its children, waited for, so their CPU is in RUSAGE_CHILDREN;
    # workers forked from multiprocessing's fork server are not, so their reports count, and
    # the fork server's own CPU (its imports, made once for all workers; it lives on until we
    # exit).
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = "\n".join(left)
    reports = [(float(cpu_s), float(rss)) for cpu_s, rss in re.findall(
        r"worker process \d+ left: ([\d.]+) s of CPU, peak RSS ([\d.]+) MB", log)]
    workers_cpu = ((children.ru_utime - children0.ru_utime)
                   + (children.ru_stime - children0.ru_stime))
    if ", fork)" not in log:
        workers_cpu += sum(c for c, _ in reports) + _fork_server_cpu()
    total = result.ledger["total"]
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    # Sequential model calls in one episode: simulator turns + agent steps + the judge call.
    sequential = [sum(x["usage"][role]["calls"] for role in x["usage"]) for x in lines]
    print(json.dumps({
        "wall_s": wall, "cpu_s": cpu + workers_cpu, "parent_cpu_s": cpu,
        "calls": total["calls"], "requests": total["requests"],
        "cached_calls": total["cached_calls"], "episodes": len(lines),
        "errored": result.summary.counts.errored,
        "sequential_calls_per_episode": max(sequential) if sequential else 0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "worker_peak_rss_mb": max((r for _, r in reports), default=None),
    }))


def _fork_server_cpu() -> float:
    """CPU seconds of this process's children still running (the fork server), from /proc
    (0 where there is none)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # ppid
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


# --- the driver -------------------------------------------------------------------------


def _child(*extra: str, work: Path, port: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--measure", "--work", str(work), "--port", str(port),
         *extra], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"measurement failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _server(latency: float) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", "--latency", str(latency)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def _ideal(r: dict[str, Any], *, concurrency: int, latency: float) -> float:
    return float(math.ceil(r["episodes"] / concurrency) * r["sequential_calls_per_episode"]
                 * latency)


def _ratio(r: dict[str, Any], *, concurrency: int, latency: float) -> float:
    ideal = _ideal(r, concurrency=concurrency, latency=latency)
    return ideal / r["wall_s"] if r["wall_s"] else float("nan")


def _report(label: str, r: dict[str, Any], *, concurrency: int, latency: float) -> None:
    ideal = _ideal(r, concurrency=concurrency, latency=latency)
    ratio = _ratio(r, concurrency=concurrency, latency=latency)
    print(f"{label}: {r['episodes']} episodes, {r['calls']} model calls "
          f"({r['sequential_calls_per_episode']} sequential per episode), "
          f"{r['errored']} errored")
    print(f"  wall {r['wall_s']:.1f} s, ideal {ideal:.1f} s -> {ratio:.2f} of ideal")
    per_call = 1000 / max(r["calls"], 1)
    workers = r.get("worker_peak_rss_mb")
    parent = (f" ({per_call * r['parent_cpu_s']:.2f} in the parent)" if workers else "")
    print(f"  CPU {per_call * r['cpu_s']:.2f} ms per model call{parent}, all included; peak RSS "
          f"{r['peak_rss_mb']:.0f} MB" + (f", largest worker {workers:.0f} MB" if workers else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--workers", nargs="+", default=["1", "2", "auto"],
                        help="worker process settings to measure (numbers or auto)")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--memory-episodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=1,
                        help="measure each setting this many times (median and range)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--label", default="run", help=argparse.SUPPRESS)
    # The measured run writes the cache without reading it: every call reaches the server.
    # (In read-write mode the judge's call of a later epoch, whose transcript the scripted
    # server makes identical to an earlier one's, would be answered from the cache, and its
    # episode would be one model call shorter than the ideal counts.)
    parser.add_argument("--cache-mode", default="refresh", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return
    if args.measure:
        args.concurrency = args.concurrency[0]
        args.workers = args.workers[0]
        measure(args)
        return

    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        work = Path(tmp)
        (work / "scenarios.yaml").write_text(
            "".join(SCENARIO.format(i=i) for i in range(N_SCENARIOS)))
        server, port = _server(args.latency)
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
              f"on {os.cpu_count()} cores")
        try:
            for c in args.concurrency:
                for w in args.workers:
                    ratios = []
                    for attempt in range(args.repeat):
                        label = f"c{c}-w{w}-{attempt}"
                        run = ("--episodes", str(args.episodes), "--concurrency", str(c),
                               "--workers", w)
                        first = _child(*run, "--label", label, work=work, port=port)
                        ratios.append(_ratio(first, concurrency=c, latency=args.latency))
                        _report(f"concurrency {c}, workers {w}", first, concurrency=c,
                                latency=args.latency)
                        again = _child(*run, "--label", label + "-replay", "--cache-mode",
                                       "replay", work=work, port=port)
                        print(f"  re-run from cache: {again['wall_s']:.1f} s, "
                              f"{again['requests']} model requests, "
                              f"{again['cached_calls']} cached calls")
                        for stale in work.glob("cache.sqlite*"):  # the -wal and -shm too
                            stale.unlink()
                    if len(ratios) > 1:
                        print(f"concurrency {c}, workers {w}, {len(ratios)} runs: median "
                              f"{statistics.median(ratios):.2f} of ideal (from "
                              f"{min(ratios):.2f} to {max(ratios):.2f})")
        finally:
            assert server.stdin is not None
            server.stdin.close()
            server.wait(timeout=30)

        if args.memory_episodes:
            server, port = _server(0.0)
            try:
                big = _child("--episodes", str(args.memory_episodes), "--concurrency", "200",
                             "--label", "memory", "--cache-mode", "off", work=work, port=port)
            finally:
                assert server.stdin is not None
                server.stdin.close()
                server.wait(timeout=30)
            print(f"memory: {big['episodes']} episodes ({big['calls']} model calls) in "
                  f"{big['wall_s']:.1f} s, peak RSS {big['peak_rss_mb']:.0f} MB, "
                  f"CPU {1000 * big['cpu_s'] / max(big['calls'], 1):.2f} ms per model call")


if __name__ == "__main__":
    main()
