"""The figures of a selection of a stored run (``harness report RUN --tag T``), computed in
process: a run a budget stopped still says so when a selection of it is shown, a tag that
selects nothing names the run directory, and the stored scenarios' tags are the same when
the SQLite at hand has no JSON functions (read from the records instead)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.runs.store import RunStore
from harness.runs.summary import read_summary, summarise_selection, summary_so_far
from harness.scenarios.loading import load_scenarios
from harness.scenarios.selectors import ScenarioFilter
from tests.helpers.labelled_runs import offline_run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example suite, 2 epochs, stopped by a budget of 150 model calls part-way."""
    run_dir = tmp_path_factory.mktemp("stopped") / "run"
    config = RunConfig(scenario_paths=[str(ROOT / "scenarios")], offline=True, epochs=2,
                       cache_mode="off", max_calls=150, bootstrap_resamples=0)
    result = asyncio.run(run_suite(config, run_dir))
    assert result.summary.stopped is not None and result.summary.stopped.reason == "budget"
    return run_dir


def _stored_tags(run_dir: Path) -> dict[str, list[str]]:
    """The tags of the scenarios with a stored sample, from the scenario files."""
    stored = {json.loads(line)["scenario_id"] for line in
              (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()}
    return {s.id: list(s.tags) for s in load_scenarios([ROOT / "scenarios"])
            if s.id in stored}


def test_a_selection_of_a_stopped_run_still_says_it_stopped(stopped_run: Path) -> None:
    selected = summarise_selection(stopped_run, ScenarioFilter(tags=["weather"]))
    assert selected.stopped is not None
    assert selected.stopped.reason == "budget"
    assert selected.stopped.message.startswith("call budget of 150 model calls reached")
    weather = {sid for sid, tags in _stored_tags(stopped_run).items() if "weather" in tags}
    assert selected.counts.scenarios == len(weather)
    assert {s.scenario_id for s in selected.score.scenarios} == weather  # type: ignore[union-attr]


def test_a_tag_that_selects_nothing_names_the_run_directory(stopped_run: Path) -> None:
    with pytest.raises(InputError) as err:
        summarise_selection(stopped_run, ScenarioFilter(tags=["weathr"]))
    assert str(err.value).startswith(f"{stopped_run}: no scenario has the tag weathr (tags: ")


class _NoJsonFunctions:
    """An SQLite connection as built without the JSON functions."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if "json_extract" in sql:
            raise sqlite3.OperationalError("no such function: json_extract")
        return self._db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def test_tags_are_the_same_without_the_json_functions(stopped_run: Path) -> None:
    expected = _stored_tags(stopped_run)
    with RunStore.open(stopped_run) as store:
        assert store.scenario_tags() == expected
        assert store.count() == sum(
            1 for _ in (stopped_run / "samples.jsonl").open(encoding="utf-8"))
        real = store._db
        store._db = _NoJsonFunctions(real)  # type: ignore[assignment]
        try:
            assert store.scenario_tags() == expected
        finally:
            store._db = real


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in
            (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


def test_models_and_calls_per_role_are_the_stored_ones_with_or_without_json_functions(
        stopped_run: Path) -> None:
    """What compare and report print as "models used" and "calls" per role: every stored
    sample's usage summed, and the same when read from whole records."""
    records = _records(stopped_run)
    calls: dict[str, int] = {}
    for record in records:
        for role, usage in record["usage"].items():
            calls[role] = calls.get(role, 0) + usage["calls"]
    with RunStore.open(stopped_run) as store:
        real = store._db
        for db in (real, _NoJsonFunctions(real)):
            store._db = db  # type: ignore[assignment]
            try:
                roles = store.model_roles()
                assert {role: r.calls for role, r in roles.items()} == calls
                assert roles["simulator"].offline_models == ["mock:simulator"]
                assert store.offline_count() == sum(r["offline"] for r in records) > 0
            finally:
                store._db = real


# -- summary_so_far: what harness view shows of a run still going ---------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return offline_run(tmp_path_factory.mktemp("so-far") / "run", epochs=3)


def _same_figures(now: dict, written: dict) -> None:
    for key in ("counts", "score", "metrics", "errors", "failure_analysis", "tags", "tools",
                "roles", "offline", "notice", "error_policy"):
        assert now[key] == written[key], key


def test_a_finished_run_so_far_is_its_summary(finished_run: Path) -> None:
    written = read_summary(finished_run)
    with RunStore.open(finished_run, read_only=True) as store:
        now = summary_so_far(store)
    assert now.stopped is None and now.adaptive is None
    assert now.counts.scenarios == written.counts.scenarios == 6
    assert now.counts.samples_planned == written.counts.samples_planned == 18
    _same_figures(now.model_dump(mode="json"), written.model_dump(mode="json"))


def test_a_run_missing_samples_counts_what_it_holds(finished_run: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(finished_run, tmp_path / "run"))
    db = sqlite3.connect(run / "run.sqlite")
    with db:
        db.execute("DELETE FROM samples WHERE epoch = 2")
    db.close()
    with RunStore.open(run, read_only=True) as store:
        now = summary_so_far(store)
    assert now.counts.samples_planned == 18  # the suite's plan: 6 scenarios x 3 epochs
    assert now.counts.scored + now.counts.errored == 12
    assert now.score is not None and now.score.n_samples == 12


def test_a_shard_session_plans_its_own_samples(finished_run: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(finished_run, tmp_path / "run"))
    with RunStore.open(run) as store:
        store.record_session_start(planned=4)
        now = summary_so_far(store)
        assert now.counts.samples_planned == 4
        store.record_session_start(planned=None)  # adaptive: no plan recorded
        assert summary_so_far(store).counts.samples_planned == 18
