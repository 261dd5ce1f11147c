"""How fast ``harness view`` lists a folder of many runs.

Makes one offline run of the example scenarios (``harness run scenarios --offline``), copies
it N times (default 500) into a nested folder (50 runs a sub-folder), then prints the time to
list them:

- in process, :meth:`harness.view.catalog.Catalog.entries` cold (every store and summary
  read) and warm (nothing changed: every entry from the cache), then warm again after one
  run's summary changed (that run read again);
- over HTTP from a real server on 127.0.0.1: ``GET /api/runs`` and the index page ``GET /``,
  the first request (sent as soon as the server is listening, while it reads every run in
  the background) and then (the median of five), and a second server's first request 3 s
  after it started (the time to open its address);
- what reading costs a run that is writing: the time to store 1,000 samples (one commit
  each, as a run stores them) alone, then while another process lists the folder and reads
  the run's progress without a pause, and 10 times a second (a page polls every 2 s);
  alternating, three times each.

Usage: python benchmarks/view_index.py [--runs N] [--epochs K] [--keep DIR]
Target (issue 26): a folder of 500 runs lists in under a second.
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from harness.view.catalog import Catalog

ROOT = Path(__file__).resolve().parent.parent
PER_FOLDER = 50


def make_folder(base: Path, runs: int, epochs: int) -> Path:
    """``base/runs`` holding ``runs`` copies of one offline run, 50 a sub-folder."""
    source = base / "source"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", str(ROOT / "scenarios"), "--offline",
         "--epochs", str(epochs), "--cache-mode", "off", "--out", str(source)],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the source run failed: {done.stderr}")
    root = base / "runs"
    for i in range(runs):
        shutil.copytree(source, root / f"group-{i // PER_FOLDER:02d}" / f"run-{i:04d}",
                        ignore=shutil.ignore_patterns("report.html", "samples.jsonl"))
    return root


def timed(work: object) -> float:
    start = time.perf_counter()
    work()  # type: ignore[operator]
    return time.perf_counter() - start


def get(port: int, path: str) -> float:
    def fetch() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status
        connection.close()

    return timed(fetch)


def serve_in_thread(root: Path) -> tuple[int, threading.Thread]:
    import asyncio

    from harness.view import serve

    ready = threading.Event()
    port: list[int] = []

    def run() -> None:
        asyncio.run(serve(root, host="127.0.0.1", port=0,
                          on_ready=lambda guard: (port.append(guard.port), ready.set())))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(60)
    return port[0], thread


def _read_in_a_loop(root: Path, out: Path, stop: Any, pause: float) -> None:
    from harness.view.runs_pages import progress

    catalog = Catalog(root)
    while not stop.is_set():
        catalog.entries()
        if (out / "run.sqlite").exists():
            progress(out, root, 0.0)
        time.sleep(pause)


def writer_cost(root: Path, pause: float,
                samples: int = 1000) -> tuple[list[float], list[float]]:
    """Seconds to store ``samples`` samples into a new run under ``root``, alone and while
    another process (as ``harness view`` is) lists the folder and reads the run's progress
    in a loop with ``pause`` seconds between reads (a page polls every 2 s), three times
    each, alternating."""
    import multiprocessing

    from harness.runs.store import RunStore

    source = next(root.rglob("run.sqlite")).parent
    with RunStore.open(source, read_only=True) as store:
        record = next(store.iter_samples())
        config = store.config
    alone: list[float] = []
    read: list[float] = []
    spawn = multiprocessing.get_context("spawn")
    for attempt in range(6):
        out = root / "writing" / f"run-{attempt}"
        writer = RunStore.create(out, config)
        stop = spawn.Event()
        reader = None
        if attempt % 2:
            reader = spawn.Process(target=_read_in_a_loop, args=(root, out, stop, pause))
            reader.start()
            time.sleep(2)  # its imports done, reading
        start = time.perf_counter()
        for i in range(samples):
            writer.write_sample(record.model_copy(update={"scenario_id": f"s{i}",
                                                          "finished_at": time.time()}))
        (read if attempt % 2 else alone).append(time.perf_counter() - start)
        stop.set()
        if reader is not None:
            reader.join()
        writer.close()
        shutil.rmtree(out)
    return alone, read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="make the folder here and keep it")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="view-index-"))
    try:
        root = make_folder(base, args.runs, args.epochs)
        print(f"{args.runs} runs of 11 scenarios x {args.epochs} epochs under {root}")
        catalog = Catalog(root)
        cold = timed(catalog.entries)
        warm = statistics.median(timed(catalog.entries) for _ in range(5))
        summary = next(root.rglob("summary.json"))
        summary.write_text(summary.read_text())
        one_changed = timed(catalog.entries)
        assert len(catalog.entries()) == args.runs
        print(f"in process: cold {cold:.3f} s, warm {warm:.3f} s (median of 5), "
              f"one run changed {one_changed:.3f} s")
        port, _ = serve_in_thread(root)
        for path in ("/api/runs", "/"):
            first = get(port, path)
            again = statistics.median(get(port, path) for _ in range(5))
            print(f"GET {path}: first {first:.3f} s, then {again:.3f} s (median of 5)")
        port, _ = serve_in_thread(root)
        time.sleep(3)  # the time to open the printed address
        print(f"GET /api/runs 3 s after another server started: {get(port, '/api/runs'):.3f} s")
        for pause, how in ((0.0, "without a pause"), (0.1, "10 times a second")):
            alone, read = writer_cost(root, pause)
            print("storing 1,000 samples: alone " + ", ".join(f"{t:.2f}" for t in alone)
                  + f" s; while another process reads {how} "
                  + ", ".join(f"{t:.2f}" for t in read) + " s")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
