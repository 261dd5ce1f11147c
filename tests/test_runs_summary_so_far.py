"""`summary_so_far`: the summary of what a run's store holds now, as `harness view` shows a
run that is still going or stopped before writing summary.json. On a finished run it is the
run's own summary; a shard's session plans its own samples; samples stored later count."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from harness.runs.store import RunStore
from harness.runs.summary import read_summary, summary_so_far
from tests.helpers.labelled_runs import offline_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return offline_run(tmp_path_factory.mktemp("so-far") / "run", epochs=3)


def _same_figures(now: dict, written: dict) -> None:
    for key in ("counts", "score", "metrics", "errors", "failure_analysis", "tags", "tools",
                "roles", "offline", "notice", "error_policy"):
        assert now[key] == written[key], key


def test_a_finished_run_so_far_is_its_summary(run_dir: Path) -> None:
    written = read_summary(run_dir)
    with RunStore.open(run_dir, read_only=True) as store:
        now = summary_so_far(store)
    assert now.stopped is None and now.adaptive is None
    assert now.counts.scenarios == written.counts.scenarios == 6
    assert now.counts.samples_planned == written.counts.samples_planned == 18
    _same_figures(now.model_dump(mode="json"), written.model_dump(mode="json"))


def test_a_run_missing_samples_counts_what_it_holds(run_dir: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    db = sqlite3.connect(run / "run.sqlite")
    with db:
        db.execute("DELETE FROM samples WHERE epoch = 2")
    db.close()
    with RunStore.open(run, read_only=True) as store:
        now = summary_so_far(store)
    assert now.counts.samples_planned == 18  # the suite's plan: 6 scenarios x 3 epochs
    assert now.counts.scored + now.counts.errored == 12
    assert now.score is not None and now.score.n_samples == 12


def test_a_shard_session_plans_its_own_samples(run_dir: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    with RunStore.open(run) as store:
        store.record_session_start(planned=4)
        now = summary_so_far(store)
        assert now.counts.samples_planned == 4
        store.record_session_start(planned=None)  # adaptive: no plan recorded
        assert summary_so_far(store).counts.samples_planned == 18
