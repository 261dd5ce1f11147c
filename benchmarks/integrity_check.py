"""What checking a store or cache for damage costs when it is opened.

``RunStore.open`` (resume, compare, pairwise) and ``ResponseCache`` (any command with a cache)
run SQLite's ``PRAGMA quick_check``, which reads the whole file. This prints the file size and
the time to open it (with the check), to run the check alone, and to connect bare (no check),
best of three from a warm page cache, for:

- run stores of 1,000 and 10,000 samples, copies of the largest sample of a real offline run of
  the example scenarios (transcript, checks and judgments included);
- response caches of 10,000 and 100,000 answers of 2 kB each.

    python benchmarks/integrity_check.py
    python benchmarks/integrity_check.py --samples 1000 --answers 10000   # quick look
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness.files import connect_read_only, sqlite_damage
from harness.models.cache import ResponseCache
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore

WEATHER = Path(__file__).resolve().parents[1] / "scenarios" / "weather.yaml"


def _real_sample(directory: Path) -> SampleRecord:
    """One sample of a real offline run of the example weather scenarios."""
    config = RunConfig(scenario_paths=[str(WEATHER)], offline=True, epochs=1, cache_mode="off")
    asyncio.run(run_suite(config, directory / "source"))
    with RunStore.open(directory / "source") as store:
        return max(store.iter_samples(), key=lambda r: len(r.model_dump_json()))


def _best_of_three(action: Callable[[], None]) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def _check_only(path: Path) -> None:
    db = connect_read_only(path)
    try:
        assert sqlite_damage(db) == ""
    finally:
        db.close()


def _bare_open(path: Path) -> None:
    sqlite3.connect(path).close()


def _report(label: str, path: Path, open_checked: Callable[[], None]) -> None:
    size_mb = path.stat().st_size / 1e6
    checked = _best_of_three(open_checked)
    check = _best_of_three(lambda: _check_only(path))
    bare = _best_of_three(lambda: _bare_open(path))
    print(f"{label:<32} {size_mb:8.1f} MB   open {checked * 1e3:8.1f} ms   "
          f"quick_check {check * 1e3:8.1f} ms   bare connect {bare * 1e3:6.2f} ms")


def store_figures(n_samples: int, directory: Path, sample: SampleRecord) -> None:
    run_dir = directory / f"run-{n_samples}"
    with RunStore.create(run_dir, {"benchmark": True}) as store:
        for i in range(n_samples):
            store.write_sample(sample.model_copy(update={"scenario_id": f"s{i // 5}",
                                                         "epoch": i % 5}))

    def open_store() -> None:
        RunStore.open(run_dir).close()

    _report(f"run store, {n_samples:,} samples", run_dir / "run.sqlite", open_store)


def cache_figures(n_answers: int, directory: Path) -> None:
    path = directory / f"cache-{n_answers}.sqlite"
    cache = ResponseCache(path)
    payload = {"text": "x" * 2000}
    for i in range(n_answers):
        cache.put(f"{i:064x}", kind="chat", model="openai:bench", payload=payload)
    cache.close()
    _report(f"response cache, {n_answers:,} answers", path,
            lambda: ResponseCache(path).close())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--answers", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sample = _real_sample(Path(tmp))
        print(f"each stored sample: {len(sample.model_dump_json()):,} bytes of JSON")
        for n in args.samples:
            store_figures(n, Path(tmp), sample)
        for n in args.answers:
            cache_figures(n, Path(tmp))


if __name__ == "__main__":
    main()
