"""The runner's garbage-collector tuning: asked for by `harness run` (its process exists for
the run), it applies inside the run only and is always undone."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.run_cmd import RunProgress
from harness.runs import api
from harness.runs.engine import RUN_GC_THRESHOLD, collector_tuned_for_run
from tests.helpers.cli import run_cli

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def test_tuned_inside_and_restored_after_errors_too() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), collector_tuned_for_run():
        assert gc.get_threshold()[0] == max(before[0], RUN_GC_THRESHOLD)
        assert gc.get_threshold()[1:] == before[1:]
        assert gc.get_freeze_count() > 0  # what existed at the start is left out of passes
        raise RuntimeError("a run that fails")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_garbage_made_inside_is_still_collected() -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    with collector_tuned_for_run():
        Node()  # an unreachable cycle
        assert gc.collect() >= 1


def test_a_run_is_tuned_from_before_its_workers_fork_until_its_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`harness run`: worker processes forked from the parent inherit its frozen objects (no
    full pass over them in the parent holds up the first samples, none in the workers copies
    their pages), and the summary runs tuned too; afterwards everything is as it was."""
    before = gc.get_threshold()
    seen: dict[str, tuple[int, int]] = {}
    summarise = api.summarise
    start = RunProgress.start

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen["summary"] = (gc.get_freeze_count(), gc.get_threshold()[0])
        return summarise(*args, **kwargs)

    def started(progress: RunProgress, runner: Any) -> None:
        seen["started"] = (gc.get_freeze_count(), gc.get_threshold()[0])
        start(progress, runner)

    monkeypatch.setattr(api, "summarise", watched)
    monkeypatch.setattr(RunProgress, "start", started)
    done = run_cli("run", SCENARIOS, "--offline", "--epochs", "1", "--workers", "2",
                   "--cache-mode", "off", "--out", tmp_path / "run", "--json")

    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert done.returncode == 0, done.stderr
    assert summary["counts"]["samples"] == summary["counts"]["samples_planned"] > 0
    for when in ("started", "summary"):  # on_start: the workers are forked by then
        frozen, young = seen[when]
        assert frozen > 0, when
        assert young == max(before[0], RUN_GC_THRESHOLD), when
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
