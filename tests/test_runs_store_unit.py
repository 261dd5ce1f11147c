"""The run store's parts that ``harness merge``, ``compare --tag`` and the labelling pages
lean on, on hand-made stores: events copied with their shard (as deep as a store keeps them,
and the source named when deeper), the two refusals of a copy word for word, tags read
without parsing whole records, and a store of an older harness read from its scenario and
rubric paths (an unknown rubric refused, a failed read named). The store's own contract is in
tests/test_runs_store.py.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError
from harness.runs.config import RunConfig
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore, StoreError
from harness.transcript import Transcript


def _store(run_dir: Path, samples: list[tuple[str, int]] = [],  # noqa: B006 - never mutated
           **fields: object) -> Path:
    config = RunConfig.model_validate({"scenario_paths": ["/s"], "offline": True, **fields})
    with RunStore.create(run_dir, {"run": config.model_dump(mode="json")}) as store:
        for sid, epoch in samples:
            store.write_sample(SampleRecord(
                scenario_id=sid, epoch=epoch, status="scored", score=1.0, passed=True,
                tags=[f"tag-of-{sid}"],
                transcript=Transcript(scenario_id=sid, epoch=epoch, stop_reason="goal_met")))
    return run_dir


def _nested(depth: int) -> dict[str, Any]:
    """A dict whose value nests ``depth`` objects in all."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"in": value}
    return value


def test_events_as_deep_as_a_store_keeps_are_copied_with_their_shard(tmp_path: Path) -> None:
    source = _store(tmp_path / "one", [("a", 0)])
    with RunStore.open(source) as store:
        store.log_event("deep", _nested(150))  # deeper than a file may nest, as a store may
    with RunStore.open(source) as src, RunStore.create(tmp_path / "m", {"run": {}}) as target:
        target.copy_from(src, shard="1/2")
        [event] = target.events()
    assert event["kind"] == "deep" and event["shard"] == "1/2"
    inner, depth = event, 1
    while inner.get("in") is not None:
        inner, depth = inner["in"], depth + 1
    assert depth == 150


def test_an_event_too_deep_to_read_names_the_store_it_came_from(tmp_path: Path) -> None:
    source = _store(tmp_path / "one")
    with RunStore.open(source) as store:
        store.log_event("too-deep", _nested(250))
    with RunStore.open(source) as src, RunStore.create(tmp_path / "m", {"run": {}}) as target:
        with pytest.raises(InputError) as raised:
            target.copy_from(src, shard="1/2")
        assert str(raised.value).startswith(f"{src.path}:")
        assert "JSON nested more than 200 levels deep" in str(raised.value)


def test_a_sample_already_in_the_target_names_both_stores(tmp_path: Path) -> None:
    source = _store(tmp_path / "one", [("a", 0)])
    with RunStore.open(source) as src, RunStore.open(_store(tmp_path / "two", [("a", 0)])
                                                     ) as target:
        with pytest.raises(StoreError) as raised:
            target.copy_from(src, shard="1/2")
        assert str(raised.value).startswith(
            f"{target.path}: a sample of {src.path} is stored here already (UNIQUE constraint")


def test_a_target_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    source = _store(tmp_path / "one", [("a", 0)])
    target_dir = _store(tmp_path / "two")
    with RunStore.open(source) as src, RunStore.open(target_dir, read_only=True) as target:
        with pytest.raises(StoreError) as raised:
            target.copy_from(src, shard="1/2")
        assert str(raised.value).startswith(f"{target.path}: cannot write to the run store (")
        assert "readonly" in str(raised.value)


def test_tags_are_read_from_a_sample_whose_record_no_longer_parses(tmp_path: Path) -> None:
    run_dir = _store(tmp_path / "one", [("a", 0), ("b", 0)])
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        (text,) = db.execute("SELECT record FROM samples WHERE scenario_id = 'b'").fetchone()
        record = json.loads(text)
        record["status"] = "from a newer harness"  # valid JSON, no longer a SampleRecord
        db.execute("UPDATE samples SET record = ? WHERE scenario_id = 'b'",
                   (json.dumps(record),))
    db.close()
    with RunStore.open(run_dir) as store:
        assert store.scenario_tags() == {"a": ["tag-of-a"], "b": ["tag-of-b"]}


SCENARIO = """\
- id: alpha
  user:
    goal: Learn the capital of France.
    opening_message: What is the capital of France?
  agent:
    model: mock:agent
  rubrics: [{rubric}]
"""


def test_an_older_store_reads_its_scenarios_from_the_stored_paths(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(SCENARIO.format(rubric="task_completion"), encoding="utf-8")
    with RunStore.open(_store(tmp_path / "one", scenario_paths=[str(path)])) as store:
        assert list(store.scenario_definitions()) == ["alpha"]


def test_an_older_store_whose_scenario_names_an_unknown_rubric_is_refused(
        tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(SCENARIO.format(rubric="no_such_rubric"), encoding="utf-8")
    with (RunStore.open(_store(tmp_path / "one", scenario_paths=[str(path)])) as store,
          pytest.raises(StoreError) as raised):
        store.scenario_definitions()
    text = str(raised.value)
    assert text.startswith(f"{store.path}: the run's scenarios were not recorded (a store from "
                           "an older harness), and reading them from the stored paths failed: ")
    assert "no_such_rubric" in text


def test_an_older_store_whose_rubric_paths_are_gone_names_the_failure(tmp_path: Path) -> None:
    gone = tmp_path / "rubrics-gone"
    with (RunStore.open(_store(tmp_path / "one", rubric_paths=[str(gone)])) as store,
          pytest.raises(StoreError) as raised):
        store.rubrics()
    text = str(raised.value)
    assert text.startswith(f"{store.path}: the run's rubrics were not recorded (a store from "
                           "an older harness), and reading them from the stored paths failed: ")
    assert str(gone) in text
