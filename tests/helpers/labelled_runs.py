"""A small offline run to label: the example weather scenarios, judged by ``mock:judge``
(:func:`offline_run`), and labels for it (:func:`label`)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

from harness.resources import data_dir
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.runs.labels import Label

WEATHER = data_dir("scenarios") / "weather.yaml"
_MADE: dict[int, Path] = {}


def offline_run(run_dir: Path, *, epochs: int = 2, scenarios: str | Path = WEATHER) -> Path:
    """An offline run of ``scenarios`` in ``run_dir`` (made once per process and copied
    after that for the default suite)."""
    key = epochs if scenarios == WEATHER else -1
    cached = _MADE.get(key)
    if cached is not None and cached.exists():
        shutil.copytree(cached, run_dir)
        return run_dir
    config = RunConfig(scenario_paths=[str(scenarios)], offline=True, epochs=epochs,
                       cache_mode="off", bootstrap_resamples=0)
    asyncio.run(run_suite(config, run_dir))
    if scenarios == WEATHER:
        keep = Path(tempfile.mkdtemp(prefix="labelled-run-")) / "run"
        shutil.copytree(run_dir, keep)
        _MADE[key] = keep
    return run_dir


def label(scenario_id: str = "weather-current-paris", epoch: int = 0, *,
          annotator: str = "ana", target: str = "passed", value: Any = True,
          random: bool = True, **more: Any) -> Label:
    """A label with defaults for the fields a test does not care about."""
    return Label(scenario_id=scenario_id, epoch=epoch, annotator=annotator, target=target,
                 value=value, random=random, **more)


def write_labels_repeatedly(run_dir: str, annotator: str, count: int, start: Any) -> None:
    """In a process of its own: ``count`` labels by ``annotator``, one transaction each, from
    when every writer has reached ``start`` (a barrier; the writer of the concurrency test)."""
    from harness.runs.store import RunStore

    with RunStore.open(Path(run_dir)) as store:
        start.wait()
        for n in range(count):
            store.add_labels([label(annotator=annotator, target="score", value=n / count,
                                    comment=f"version {n}")])
