"""``harness merge`` in process on hand-made shard stores: each refusal word for word (an
``--out`` holding part of a run, one directory given twice, more shards than samples, designs,
splits or scenarios that differ, one shard twice), stores that did not record their grid, and
the mixed-judges note of a merge whose shard was itself judged by two judges. The end-to-end
behaviour through real shard runs is in tests/test_runs_merge.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.runs.config import RunConfig, RunExecution
from harness.runs.judge_record import (
    JudgeDefinition,
    JudgePart,
    JudgeRecord,
    RubricJudging,
    write_judge_record,
)
from harness.runs.merge import merge_runs
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore, StoreError
from harness.transcript import Transcript


def _store(run_dir: Path, *, shard: str | None = None, grid: list[str] | None = None,
           samples: Sequence[tuple[str, int]] = (), judge: JudgeRecord | None = None,
           **fields: object) -> Path:
    """A shard's store: its design (``fields``), the scenario grid it recorded (none when
    ``grid`` is None, as an older harness wrote), scored samples and a judge record."""
    config = RunConfig.model_validate({"scenario_paths": ["/s"], "offline": True,
                                       "shard": shard, **fields})
    with RunStore.create(run_dir, {"run": config.model_dump(mode="json")}) as store:
        if grid is not None:
            store.record_scenarios(grid)
        for sid, epoch in samples:
            store.write_sample(SampleRecord(
                scenario_id=sid, epoch=epoch, status="scored", score=1.0, passed=True,
                transcript=Transcript(scenario_id=sid, epoch=epoch, stop_reason="goal_met")))
        if judge is not None:
            write_judge_record(store, judge)
    return run_dir


def _refusal(run_dirs: list[Path], out: Path) -> str:
    with pytest.raises(HarnessError) as raised:
        merge_runs(run_dirs, out)
    assert not (out / "run.sqlite").exists()
    return str(raised.value)


@pytest.mark.parametrize("held", ["summary.json", "run.sqlite"])
def test_an_out_directory_holding_part_of_a_run_is_refused(tmp_path: Path, held: str) -> None:
    shard = _store(tmp_path / "one", shard="1/1")
    out = tmp_path / "out"
    out.mkdir()
    (out / held).write_text("kept", encoding="utf-8")
    with pytest.raises(StoreError) as raised:
        merge_runs([shard], out)
    assert str(raised.value) == (f"{out} already holds a run; choose another --out directory "
                                 "for the merged run")
    assert (out / held).read_text(encoding="utf-8") == "kept"
    assert [p.name for p in out.iterdir()] == [held]


def test_one_directory_given_twice_names_both_spellings(tmp_path: Path) -> None:
    shard = _store(tmp_path / "one", shard="1/2")
    again = tmp_path / "elsewhere" / ".." / "one"
    (tmp_path / "elsewhere").mkdir()
    assert _refusal([shard, again], tmp_path / "m") == (
        f"{shard} and {again} are the same run directory: each shard's run is merged once")


def test_a_split_into_more_shards_than_samples_is_refused(tmp_path: Path) -> None:
    # 2 scenarios x 2 epochs: 4 samples, so up to 4 shards.
    four = _store(tmp_path / "four", shard="3/4", grid=["a", "b"], epochs=2)
    summary = merge_runs([four], tmp_path / "m4")
    assert (summary.shards.count, summary.shards.held) == (4, [3])
    five = _store(tmp_path / "five", shard="1/5", grid=["a", "b"], epochs=2)
    assert _refusal([five], tmp_path / "m5") == (
        f"cannot merge {five}: its shard 1/5 splits a grid of 4 sample(s) into more shards "
        "than samples")


def test_designs_that_differ_name_both_stores_the_field_and_what_may_differ(
        tmp_path: Path) -> None:
    one = _store(tmp_path / "one", shard="1/2", seed=0)
    two = _store(tmp_path / "two", shard="2/2", seed=1)
    free = ", ".join(sorted({*RunExecution.model_fields, "shard"}))
    assert _refusal([one, two], tmp_path / "m") == (
        f"cannot merge {one} and {two}: their configurations differ in seed (0 vs 1); the "
        f"shards of one run differ only in {free}")


def test_shards_of_different_splits_are_refused_word_for_word(tmp_path: Path) -> None:
    one = _store(tmp_path / "one", shard="1/2")
    two = _store(tmp_path / "two", shard="2/3")
    assert _refusal([one, two], tmp_path / "m") == (
        f"cannot merge {one} and {two}: their configurations differ in shard (1/2 vs 2/3: "
        "shards of different splits)")


def test_scenarios_that_differ_name_the_first_one_missing_on_either_side(
        tmp_path: Path) -> None:
    one = _store(tmp_path / "one", shard="1/2", grid=["a", "b"])
    two = _store(tmp_path / "two", shard="2/2", grid=["a", "c"])
    assert _refusal([one, two], tmp_path / "m") == (
        f"cannot merge {one} and {two}: their scenarios differ ({one} has 'b', which {two} "
        "has not); run every shard on the same scenario files")
    fewer = _store(tmp_path / "fewer", shard="1/2", grid=["a"])
    more = _store(tmp_path / "more", shard="2/2", grid=["a", "c", "d"])
    assert _refusal([more, fewer], tmp_path / "m") == (
        f"cannot merge {fewer} and {more}: their scenarios differ ({more} has 'c', which "
        f"{fewer} has not); run every shard on the same scenario files")


def test_a_store_that_did_not_record_its_grid_merges_with_one_that_did(
        tmp_path: Path) -> None:
    one = _store(tmp_path / "one", shard="1/2", grid=["a", "b"], samples=[("a", 0)])
    two = _store(tmp_path / "two", shard="2/2", samples=[("b", 0)])
    summary = merge_runs([one, two], tmp_path / "m")
    assert summary.shards.held == [1, 2] and summary.shards.missing == []
    with RunStore.open(tmp_path / "m") as store:
        assert sorted((r.scenario_id, r.epoch) for r in store.iter_samples()) == [
            ("a", 0), ("b", 0)]


def test_one_shard_in_two_stores_names_both(tmp_path: Path) -> None:
    one = _store(tmp_path / "one", shard="1/2")
    copy = _store(tmp_path / "copy", shard="1/2")
    assert _refusal([one, copy], tmp_path / "m") == (
        f"cannot merge {one} and {copy}: both hold shard 1/2")


def _definition(temperature: float) -> JudgeDefinition:
    return JudgeDefinition(
        models=["openai:judge"], temperature=temperature, prompt_version="v1",
        rubrics=[RubricJudging(rubric="helpful", sha256="s", prompt_hash="p", samples=1,
                               aggregation="mean")],
        scenarios={"a": [0]})


def test_a_shard_judged_by_two_judges_keeps_both_parts_in_the_merged_note(
        tmp_path: Path) -> None:
    mixed = JudgeRecord(mixed=[
        JudgePart(part="samples before the resume", definition=_definition(0.0)),
        JudgePart(part="samples after the resume", definition=_definition(0.5))])
    one = _store(tmp_path / "one", shard="1/2", judge=mixed)
    two = _store(tmp_path / "two", shard="2/2", judge=JudgeRecord(definition=_definition(0.0)))
    summary = merge_runs([one, two], tmp_path / "m")
    [note] = [n for n in summary.notes if n.startswith("mixed judges")]
    assert note.startswith(
        "mixed judges: the samples of this run were judged by 3 different judges; against "
        "shard 1/2, samples before the resume, shard 1/2, samples after the resume: "
        "temperature: 0 vs 0.5; shard 2/2: the same judge")
