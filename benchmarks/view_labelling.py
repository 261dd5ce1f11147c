"""What the random queue's progress towards corrected figures costs the labelling page of
``harness view`` on a large run (issue 27).

Makes one offline run of the example weather scenarios, then a run of 1,000 samples (default:
100 scenarios x 10 epochs, each a copy of one stored sample with its own score and verdict)
and gives it N random labels (0, 10, 100, 500 by default: pass/fail and score, on the queue's
first N samples). For each N it times, in process, the page's label state
(:func:`harness.view.labelling.label_state`, called when the page is drawn and after every
saved label) with and without the progress, and the progress alone
(:func:`harness.view.label_progress.labels_progress`); then over HTTP from a real server,
``GET /label/<run>?queue=random`` and one label saved (``POST /api/label/<run>``). Medians of
``--repeat`` tries.

Usage: python benchmarks/view_labelling.py [--scenarios C] [--epochs K] [--labels 0,10,100]
Target: the progress adds under 50 ms to a page or a save of a 1,000-sample run.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from harness.resources import data_dir
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.runs.labels import Label, random_queue
from harness.runs.store import RunStore
from harness.view import label_progress, labelling


def make_run(base: Path, scenarios: int, epochs: int) -> Path:
    """A run of ``scenarios`` x ``epochs`` samples, copies of one offline sample with
    scores spread over [0, 1] (the judge passing those at 0.5 or more)."""
    source = base / "source"
    config = RunConfig(scenario_paths=[str(data_dir("scenarios") / "weather.yaml")],
                       offline=True, epochs=1, cache_mode="off", bootstrap_resamples=0)
    asyncio.run(run_suite(config, source))
    with RunStore.open(source, read_only=True) as store:
        record = next(store.iter_samples())
        stored = store.config
    out = base / "runs" / "big"
    with RunStore.create(out, stored) as store:
        for c in range(scenarios):
            for e in range(epochs):
                score = ((c * 7 + e * 3) % 10) / 9
                store.write_sample(record.model_copy(update={
                    "scenario_id": f"s{c:03d}", "epoch": e, "score": score,
                    "passed": score >= 0.5, "finished_at": time.time()}))
    return out


def add_labels(run_dir: Path, upto: int) -> None:
    """Random labels (pass/fail, score) of the queue's first ``upto`` samples, one in four
    disagreeing with the judge."""
    with RunStore.open(run_dir) as store:
        queue = random_queue(store)
        have = {(lb.scenario_id, lb.epoch) for lb in store.labels()}
        rows = {(s, e): (score, ok) for s, e, _, score, ok in store.score_rows()}
        new = []
        for i, key in enumerate(queue[:upto]):
            if key in have:
                continue
            score, ok = rows[key]
            new += [Label(scenario_id=key[0], epoch=key[1], annotator="ana", target="passed",
                          value=bool(ok) != (i % 4 == 0), random=True),
                    Label(scenario_id=key[0], epoch=key[1], annotator="ana", target="score",
                          value=round(0.8 * (score or 0.0), 3), random=True)]
        store.add_labels(new)


def median_time(work: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def in_process(run_dir: Path, repeat: int) -> tuple[float, float, float]:
    """Seconds for the label state with the progress, without it, and the progress alone."""
    queue = labelling.queue_order(run_dir)
    key = queue[0]
    with RunStore.open(run_dir, read_only=True) as store:
        with_it = median_time(lambda: labelling.label_state(store, *key, queue), repeat)
        alone = median_time(lambda: label_progress.labels_progress(store), repeat)
        real = labelling.labels_progress
        labelling.labels_progress = lambda *a, **k: label_progress.LabelsProgress(  # type: ignore[assignment]
            half_width=0.05, confidence=0.95, figures=[])
        try:
            without = median_time(lambda: labelling.label_state(store, *key, queue), repeat)
        finally:
            labelling.labels_progress = real  # type: ignore[assignment]
    return with_it, without, alone


def over_http(root: Path, run_dir: Path, repeat: int) -> tuple[float, float]:
    """Seconds for the labelling page and for one label saved, from a real server."""
    from harness.view import serve

    ready = threading.Event()
    found: list[Any] = []

    def run() -> None:
        asyncio.run(serve(root, host="127.0.0.1", port=0,
                          on_ready=lambda guard: (found.append(guard), ready.set())))

    threading.Thread(target=run, daemon=True).start()
    ready.wait(60)
    guard = found[0]
    port = guard.port
    headers = {"Host": f"127.0.0.1:{port}", "Origin": f"http://127.0.0.1:{port}",
               "Cookie": f"{guard.cookie_name}={guard.token}",
               "Content-Type": "application/json"}
    key = labelling.queue_order(run_dir)[0]

    def request(method: str, path: str, body: bytes | None = None) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, (response.status, path)
        connection.close()

    page = median_time(lambda: request("GET", f"/label/{run_dir.name}?queue=random"), repeat)
    body = json.dumps({"scenario_id": key[0], "epoch": key[1], "annotator": "bench",
                       "random": True, "labels": [{"target": "passed", "value": True}]})
    save = median_time(lambda: request("POST", f"/api/label/{run_dir.name}", body.encode()),
                       repeat)
    return page, save


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--labels", default="0,10,100,500")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="view-labelling-"))
    try:
        run_dir = make_run(base, args.scenarios, args.epochs)
        print(f"a run of {args.scenarios} scenarios x {args.epochs} epochs at {run_dir}")
        for upto in (int(n) for n in args.labels.split(",")):
            add_labels(run_dir, upto)
            with_it, without, alone = in_process(run_dir, args.repeat)
            page, save = over_http(run_dir.parent, run_dir, args.repeat)
            print(f"{upto:>4} random labels: label state {1000 * with_it:.1f} ms with the "
                  f"progress, {1000 * without:.1f} ms without (the progress alone "
                  f"{1000 * alone:.1f} ms); GET page {1000 * page:.0f} ms, POST a label "
                  f"{1000 * save:.0f} ms")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
