"""The run store keeps every sample, resumes, and refuses what is not its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness.runs.sample import SampleRecord
from harness.runs.store import STORE_FILENAME, RunStore, StoreError
from harness.transcript import ErrorInfo, Transcript


def _sample(scenario: str, epoch: int, *, errored: bool = False) -> SampleRecord:
    transcript = Transcript(
        scenario_id=scenario, epoch=epoch, stop_reason="agent_error" if errored else "goal_met"
    )
    if errored:
        return SampleRecord(
            scenario_id=scenario, epoch=epoch, status="errored", transcript=transcript,
            error=ErrorInfo(kind="ModelUnavailableError", message="503 after 4 attempts"),
        )
    return SampleRecord(
        scenario_id=scenario, epoch=epoch, status="scored", score=0.5 + epoch / 10,
        passed=epoch % 2 == 0, transcript=transcript, metrics={"trajectory_recall": 1.0},
    )


def test_samples_survive_reopening_and_resume_keys(tmp_path: Path) -> None:
    with RunStore.create(tmp_path, {"epochs": 3}) as store:
        store.write_sample(_sample("a", 0))
        store.write_sample(_sample("a", 1, errored=True))
        store.write_sample(_sample("b", 0))
    with RunStore.open(tmp_path) as store:
        assert store.config == {"epochs": 3}
        assert store.finished_keys() == {("a", 0), ("a", 1), ("b", 0)}
        assert store.finished_keys(include_errored=False) == {("a", 0), ("b", 0)}
        samples = list(store.iter_samples())
    assert [(s.scenario_id, s.epoch, s.status) for s in samples] == [
        ("a", 0, "scored"), ("a", 1, "errored"), ("b", 0, "scored")
    ]
    assert samples[0] == _sample("a", 0)
    assert samples[1].error is not None and samples[1].score is None


def test_rewriting_a_sample_replaces_it(tmp_path: Path) -> None:
    with RunStore.create(tmp_path, {}) as store:
        store.write_sample(_sample("a", 1, errored=True))
        store.write_sample(_sample("a", 1))
        assert store.count() == 1
        assert next(store.iter_samples()).status == "scored"


def test_create_refuses_an_existing_run(tmp_path: Path) -> None:
    RunStore.create(tmp_path, {}).close()
    with pytest.raises(StoreError, match="already holds a run.*--resume"):
        RunStore.create(tmp_path, {})


def test_a_corrupted_store_is_a_clear_error_and_is_not_changed(tmp_path: Path) -> None:
    path = tmp_path / STORE_FILENAME
    path.write_bytes(b"this is not sqlite at all" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a readable run store"):
        RunStore.open(tmp_path)
    assert path.read_bytes() == before


def test_another_sqlite_file_is_refused_without_changing_it(tmp_path: Path) -> None:
    path = tmp_path / STORE_FILENAME
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a harness run store"):
        RunStore.open(tmp_path)
    assert path.read_bytes() == before


def test_a_store_from_another_schema_version_is_refused(tmp_path: Path) -> None:
    RunStore.create(tmp_path, {}).close()
    db = sqlite3.connect(tmp_path / STORE_FILENAME)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="schema version 99.*nothing was changed"):
        RunStore.open(tmp_path)


def test_missing_store_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no run store found"):
        RunStore.open(tmp_path / "nope")


def test_events_are_kept_in_order(tmp_path: Path) -> None:
    with RunStore.create(tmp_path, {}) as store:
        store.log_event("budget_reached", {"budget": "max_calls", "limit": 10})
        store.log_event("resumed", {"remaining": 4})
        assert [e["kind"] for e in store.events()] == ["budget_reached", "resumed"]
        assert store.events()[0]["limit"] == 10
