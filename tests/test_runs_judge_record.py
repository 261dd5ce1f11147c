"""What defines a run's judge is recorded with the run (store meta and ``summary.json``):
its models, temperature, prompt version, and per scenario each rubric's hash, samples and
aggregation as the engine resolves them; a resume after the judge changed, and a merge of
shards judged differently, become ``mixed`` and say so."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from harness.judging.prompts import PROMPT_VERSION
from harness.judging.rubric import parse_rubric
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.runs.judge_record import (
    JUDGE_KEY,
    JudgeRecord,
    judge_definition,
    read_judge_record,
    record_judge,
    rubric_sha256,
    write_judge_record,
)
from harness.runs.merge import merge_runs
from harness.runs.store import RunStore
from harness.runs.summary import summarise

ROOT = Path(__file__).resolve().parents[1]

RUBRIC = {"id": "tone", "target": "final_response", "threshold": 0.5,
          "criteria": [{"id": "polite", "question": "Is the answer polite?",
                        "scale": "binary"}]}


def _config(**extra: object) -> RunConfig:
    return RunConfig.model_validate({"scenario_paths": [str(ROOT / "scenarios")],
                                     "offline": True, "epochs": 1, "cache_mode": "off",
                                     "bootstrap_resamples": 0, **extra})


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("judges")
    asyncio.run(run_suite(_config(judge_samples=2), base / "whole"))
    for i in (1, 2):
        asyncio.run(run_suite(_config(shard=f"{i}/2"), base / f"shard{i}"))
    return base


def test_a_run_records_its_judge_in_the_store_and_the_summary(runs: Path) -> None:
    with RunStore.open(runs / "whole", read_only=True) as store:
        record = read_judge_record(store)
        scenarios = store.scenario_definitions()
    summary = json.loads((runs / "whole" / "summary.json").read_text(encoding="utf-8"))
    assert record is not None and record.definition is not None
    assert JudgeRecord.model_validate(summary["judge"]) == record
    d = record.definition
    assert (d.models, d.temperature, d.prompt_version) == (["mock:judge"], None, PROMPT_VERSION)
    assert set(d.scenarios) == set(scenarios)
    for sid, scenario in scenarios.items():
        judged = d.scenario_rubrics(sid)
        assert judged is not None and list(judged) == scenario.rubrics
        assert all(r.samples == 2 and r.aggregation == "mean" for r in judged.values())


def test_the_rubric_hash_is_what_the_judge_reads() -> None:
    base = parse_rubric(RUBRIC, "a.yaml")
    assert rubric_sha256(base) == rubric_sha256(parse_rubric(RUBRIC, "elsewhere/b.yaml"))
    assert rubric_sha256(base) == rubric_sha256(parse_rubric({**RUBRIC, "version": 1}, "a"))
    assert rubric_sha256(base) == rubric_sha256(parse_rubric({**RUBRIC, "samples": 3}, "a"))
    reworded = {**RUBRIC, "criteria": [{**RUBRIC["criteria"][0],  # type: ignore[index]
                                        "question": "Is the answer courteous?"}]}
    assert rubric_sha256(base) != rubric_sha256(parse_rubric(reworded, "a"))
    assert rubric_sha256(base) != rubric_sha256(parse_rubric({**RUBRIC, "threshold": 0.8}, "a"))


def test_no_judge_judges_no_scenario(runs: Path) -> None:
    with RunStore.open(runs / "whole", read_only=True) as store:
        scenarios, rubrics = store.scenario_definitions(), store.rubrics()
    design = _config(no_judge=True, offline=False, agent="mock:agent",
                     simulator="mock:simulator").design
    d = judge_definition(design, scenarios, rubrics)
    assert d.models == [] and d.rubrics == []
    assert all(d.scenario_rubrics(sid) == {} for sid in scenarios)


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    with sqlite3.connect(src / "run.sqlite") as a, sqlite3.connect(dst / "run.sqlite") as b:
        a.backup(b)
    return dst


def test_a_resume_under_another_judge_makes_the_run_mixed(runs: Path, tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    run_dir = _copy(runs / "whole", tmp_path / "resumed")
    with RunStore.open(run_dir) as store:
        before = read_judge_record(store)
        assert before is not None and before.definition is not None
        assert record_judge(store, before.definition) == before  # the same judge: unchanged
        changed = before.definition.model_copy(update={"prompt_version": "99"})
        record = record_judge(store, changed)
        assert [p.definition for p in record.mixed] == [before.definition, changed]
        assert read_judge_record(store) == record
        summary = summarise(store, store.run_config(), run_dir=run_dir)
    assert f"prompt version: {PROMPT_VERSION} vs 99" in caplog.text
    note = next(n for n in summary.notes if n.startswith("mixed judges"))
    assert ("samples before the resume" in note
            and f"prompt version: {PROMPT_VERSION} vs 99" in note)


def _merge(runs: Path, tmp_path: Path, change: dict[str, object] | None,
           drop: bool = False) -> tuple[JudgeRecord | None, list[str]]:
    shard2 = _copy(runs / "shard2", tmp_path / "shard2")
    with RunStore.open(shard2) as store:
        record = read_judge_record(store)
        assert record is not None and record.definition is not None
        if drop:
            store._db.execute("DELETE FROM meta WHERE key = ?", (JUDGE_KEY,))
            store._db.commit()
        elif change:
            write_judge_record(store, JudgeRecord(
                definition=record.definition.model_copy(update=change)))
    summary = merge_runs([runs / "shard1", shard2], tmp_path / "merged")
    return summary.judge, summary.notes


def test_shards_of_one_judge_merge_into_one_definition(runs: Path, tmp_path: Path) -> None:
    judge, notes = _merge(runs, tmp_path, None)
    assert judge is not None and judge.definition is not None and not judge.mixed
    assert not [n for n in notes if n.startswith("mixed judges")]


def test_shards_of_different_judges_merge_into_a_mixed_record_that_says_so(
        runs: Path, tmp_path: Path) -> None:
    judge, notes = _merge(runs, tmp_path, {"models": ["mock:judge", "mock:other"]})
    assert judge is not None and judge.definition is None
    assert [p.part for p in judge.mixed] == ["shard 1/2", "shard 2/2"]
    note = next(n for n in notes if n.startswith("mixed judges"))
    assert "model: mock:judge vs panel mock:judge + mock:other" in note


def test_a_shard_without_a_record_merges_as_not_recorded(runs: Path, tmp_path: Path) -> None:
    judge, notes = _merge(runs, tmp_path, None, drop=True)
    assert judge is not None and [p.definition is None for p in judge.mixed] == [False, True]
    assert any("one judge not recorded" in n for n in notes)


def test_a_real_resume_after_a_rubric_edit_warns_and_records_both(tmp_path: Path) -> None:
    from tests.helpers.cli import run_cli

    scenarios = tmp_path / "scenarios"
    shutil.copytree(ROOT / "scenarios", scenarios)
    weather = scenarios / "weather.yaml"
    text = weather.read_text(encoding="utf-8")
    old = "rubrics: [final_response_quality, task_completion]"
    assert old in text
    weather.write_text(text.replace(old, "rubrics: [final_response_quality, brevity]"),
                       encoding="utf-8")
    rubrics = tmp_path / "rubrics"
    rubrics.mkdir()
    brevity = rubrics / "brevity.yaml"
    brevity.write_text("id: brevity\ntarget: final_response\nthreshold: 0.5\ncriteria:\n"
                       "  - {id: short, question: 'Is it short?', scale: binary}\n",
                       encoding="utf-8")
    out = tmp_path / "run"
    first = run_cli("run", weather, "--offline", "--epochs", "2", "--cache-mode", "off",
                    "--rubrics", rubrics, "--max-calls", "40", "--out", out)
    assert first.returncode == 3, first.stderr  # stopped on its budget, samples kept
    brevity.write_text(brevity.read_text(encoding="utf-8").replace("short?", "brief?"),
                       encoding="utf-8")
    resumed = run_cli("run", "--resume", out, "--max-calls", "100000")
    assert resumed.returncode == 0, resumed.stderr
    assert "the judge changed since this run's earlier samples" in " ".join(
        resumed.stderr.split())
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    parts = summary["judge"]["mixed"]
    assert [p["part"].split(" at ")[0] for p in parts] == [
        "samples before the resume", "samples from the resume"]
    note = next(n for n in summary["notes"] if n.startswith("mixed judges"))
    assert "rubric text of brevity (in 1 of 6 scenarios)" in note
