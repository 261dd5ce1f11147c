"""The response cache shared by worker processes: each process opening the SQLite file itself
(WAL mode, SQLite's busy timeout as the retry on a locked database), or the parent process
serving the cache to the workers over pipes. Which is faster?

Each of ``--processes`` processes makes ``--calls`` model calls' worth of cache traffic, as a
run does: a first pass where every lookup misses and the answer is stored (a run filling the
cache), then a second where every lookup hits (a re-run). Payloads are the size of a real
cached answer (``--payload-bytes``). For each design it prints the wall time of each pass,
lookups per second over all processes, and whether every answer came back (a lost write or
a lookup that failed under contention would show as a miss in the second pass).

    python benchmarks/cache_processes.py                  # 2 processes x 5,000 calls
    python benchmarks/cache_processes.py --processes 4 --calls 2000
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import tempfile
import time
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from harness.models.cache import ResponseCache


def _payload(size: int, key: str) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": (key * (size // 64 + 1))[:size]},
            "finish_reason": "stop", "usage": [700, 40], "cost_usd": 0.0}


def _keys(worker: int, calls: int) -> list[str]:
    return [hashlib.sha256(f"{worker}:{i}".encode()).hexdigest() for i in range(calls)]


# --- design 1: every process opens the cache (WAL) ---------------------------------------


def _direct(worker: int, calls: int, size: int, path: str, start: Any,
            out: Connection) -> None:
    cache = ResponseCache(path)
    keys = _keys(worker, calls)
    start.wait()
    t0 = time.perf_counter()
    for key in keys:
        if cache.get(key) is None:
            cache.put(key, kind="chat", model="openai:bench", payload=_payload(size, key))
    t1 = time.perf_counter()
    hits = sum(cache.get(key) is not None for key in keys)
    t2 = time.perf_counter()
    cache.close()
    out.send((t1 - t0, t2 - t1, hits))


# --- design 2: the parent serves the cache --------------------------------------------------


def _client(worker: int, calls: int, size: int, conn: Connection, start: Any,
            out: Connection) -> None:
    keys = _keys(worker, calls)

    def get(key: str) -> Any:
        conn.send(("get", key))
        return conn.recv()

    start.wait()
    t0 = time.perf_counter()
    for key in keys:
        if get(key) is None:
            conn.send(("put", key, _payload(size, key)))  # no answer awaited
    t1 = time.perf_counter()
    hits = sum(get(key) is not None for key in keys)
    t2 = time.perf_counter()
    conn.send(("bye",))
    out.send((t1 - t0, t2 - t1, hits))


def _serve(path: str, conns: list[Connection]) -> None:
    cache = ResponseCache(path)
    open_ = set(conns)
    while open_:
        for conn in wait(list(open_)):
            assert isinstance(conn, Connection)
            message = conn.recv()
            if message[0] == "get":
                conn.send(cache.get(message[1]))
            elif message[0] == "put":
                cache.put(message[1], kind="chat", model="openai:bench", payload=message[2])
            else:
                open_.discard(conn)
    cache.close()


# --- the driver -------------------------------------------------------------------------


def _measure(design: str, args: argparse.Namespace, folder: Path) -> None:
    context = multiprocessing.get_context("spawn")
    path = str(folder / f"{design}.sqlite")
    ResponseCache(path).close()  # created before the clocks start, as a run's would be
    start = context.Event()
    results, processes, served = [], [], []
    for worker in range(args.processes):
        ours, theirs = context.Pipe()
        results.append(ours)
        if design == "wal":
            target: Any = _direct
            extra: tuple[Any, ...] = (path,)
        else:
            parent_end, child_end = context.Pipe()
            served.append(parent_end)
            target, extra = _client, (child_end,)
        process = context.Process(target=target, args=(worker, args.calls,
                                                       args.payload_bytes, *extra, start,
                                                       theirs))
        process.start()
        processes.append(process)
    time.sleep(2)  # every process started and waiting
    start.set()
    if design == "parent":
        _serve(path, served)
    figures = [conn.recv() for conn in results]
    for process in processes:
        process.join()
    fill = max(f[0] for f in figures)
    replay = max(f[1] for f in figures)
    hits = sum(f[2] for f in figures)
    total = args.processes * args.calls
    print(f"{design:>6}: fill {fill:.2f} s ({total / fill:,.0f} calls/s), replay {replay:.2f} s "
          f"({total / replay:,.0f} lookups/s), {hits}/{total} answers found on replay")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--payload-bytes", type=int, default=1500)
    args = parser.parse_args()
    print(f"{args.processes} processes x {args.calls} calls, payloads of "
          f"{args.payload_bytes} bytes; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="harness-cache-bench-") as tmp:
        for design in ("wal", "parent"):
            _measure(design, args, Path(tmp))


if __name__ == "__main__":
    main()
