"""`harness merge RUN_DIR... --out DIR`: shards merged into one run whose summary and samples
are those of a single run (tests/helpers/run_invariants.py says which fields are left out of that
comparison), what a merge of some of the shards says, the shards' events, and each refusal."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.runs.config import RunConfig, RunDesign, RunExecution
from harness.runs.merge import INVOCATION_FIELDS, merge_runs
from harness.runs.shards import shard_of
from harness.runs.store import RunStore, StoreError
from tests.helpers.cli import CliResult, run_cli
from tests.helpers.run_invariants import comparable_records, comparable_samples, comparable_summary

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"

# Every other RunConfig field changes what a sample or a figure is, so merge refuses stores
# that differ in it. A field added to RunConfig must be put in one of the two lists.
RESULT_FIELDS = frozenset({
    "scenario_paths", "select", "rubric_paths", "agent", "agent_base_url", "simulator",
    "judges", "judge_samples", "judge_temperature", "judge_aggregation", "no_judge", "offline",
    "epochs", "error_policy", "confidence", "seed", "bootstrap_resamples", "adaptive",
    "models_config",
})


def run(*args: str | Path) -> CliResult:
    return run_cli(*args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline example suite (judged twice per rubric, so judgments and judge noise are
    compared) as one run and as 2 and 3 shards, all from one response cache."""
    base = tmp_path_factory.mktemp("shards")
    common = ("--offline", "--epochs", "3", "--judge-samples", "2", "--cache",
              str(base / "cache.sqlite"))
    for name, shard in [("whole", None), ("a1", "1/2"), ("a2", "2/2"),
                        ("b1", "1/3"), ("b2", "2/3"), ("b3", "3/3")]:
        extra = () if shard is None else ("--shard", shard)
        done = run("run", SCENARIOS, *common, *extra, "--out", base / name)
        assert done.returncode == 0, done.stderr
    return base


@pytest.mark.parametrize("shards", [["a1", "a2"], ["b3", "b1", "b2"]], ids=["2", "3"])
def test_merged_shards_are_the_single_run(runs: Path, tmp_path: Path,
                                          shards: list[str]) -> None:
    out = tmp_path / "merged"
    done = run("merge", *(runs / s for s in shards), "--out", out)
    assert done.returncode == 0, done.stderr
    for name in ("run.sqlite", "summary.json", "samples.jsonl", "report.html"):
        assert (out / name).is_file(), name
    assert comparable_summary(out) == comparable_summary(runs / "whole")
    assert comparable_samples(out) == comparable_samples(runs / "whole")
    assert comparable_records(out) == comparable_records(runs / "whole")  # judgments included
    summary = json.loads((out / "summary.json").read_text())
    count = len(shards)
    assert summary["shards"] == {"count": count, "held": list(range(1, count + 1)),
                                 "missing": [], "grid_samples": 33, "held_samples": 33}
    assert summary["config"]["shard"] is None
    assert summary["counts"]["samples"] == summary["counts"]["samples_planned"] == 33
    assert summary["score"]["judge_variance_components"] is not None  # judge noise was compared too
    # The scenarios and rubrics the shards ran are recorded in the merged run too.
    with RunStore.open(out) as merged, RunStore.open(runs / "whole") as whole:
        assert {"scenario_definitions", "rubric_definitions"} <= set(merged.meta)
        assert merged.scenario_definitions() == whole.scenario_definitions()
        assert merged.rubrics() == whole.rubrics()


def test_a_merge_of_some_shards_says_what_is_missing(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "partial"
    done = run("merge", runs / "b1", runs / "b3", "--out", out, "--json")
    assert done.returncode == 3, done.stderr
    summary = json.loads(done.stdout)
    shards = summary["shards"]
    assert (shards["held"], shards["missing"], shards["grid_samples"]) == ([1, 3], [2], 33)
    missing = 33 - shards["held_samples"]
    counts = summary["counts"]
    assert counts["samples_planned"] == 33 and counts["samples"] == 33 - missing
    assert f"missing 2/3 ({missing} samples)" in " ".join(summary["notes"])
    line = " ".join(done.stderr.split())
    assert f"holds {33 - missing} of 33 planned samples, without shard(s) 2/3" in line
    # the merged run is the whole grid's run: resuming it runs the missing shard's samples
    resumed = run("run", "--resume", out, "--json")
    assert resumed.returncode == 0, resumed.stderr
    completed = comparable_summary(out)
    assert [e["kind"] for e in completed.pop("events")] == ["resumed"]
    whole = comparable_summary(runs / "whole")
    assert whole.pop("events") == []
    assert completed == whole


def test_a_stopped_shard_resumed_then_merged(runs: Path, tmp_path: Path) -> None:
    cache = str(runs / "cache.sqlite")
    shard = tmp_path / "a2"
    common = ("--offline", "--epochs", "3", "--judge-samples", "2", "--cache", cache)
    stopped = run("run", SCENARIOS, *common, "--shard", "2/2", "--max-calls", "10",
                  "--out", shard)
    assert stopped.returncode == 3, stopped.stderr
    assert run("run", "--resume", shard, "--max-calls", "100000").returncode == 0
    out = tmp_path / "merged"
    done = run("merge", runs / "a1", shard, "--out", out, "--json")
    assert done.returncode == 0, done.stderr
    merged = comparable_summary(out)
    events = merged.pop("events")
    whole = comparable_summary(runs / "whole")
    assert whole.pop("events") == []
    assert merged == whole
    tagged = [(e["kind"], e.get("shard")) for e in json.loads(done.stdout)["events"]]
    assert tagged == [("stopped", "2/2"), ("resumed", "2/2")]
    assert [e["kind"] for e in events] == ["stopped", "resumed"]


def test_an_empty_shard_merges(tmp_path: Path) -> None:
    """Two samples that land on one shard of two (no more shards than samples are allowed):
    the empty shard's store merges like any other."""
    common = ("--offline", "--epochs", "1", "--no-judge", "--cache-mode", "off")
    scenarios = [f"{SCENARIOS / 'weather.yaml'}:{sid}"
                 for sid in ("weather-current-paris", "weather-no-tool-needed")]
    assert shard_of("weather-current-paris", 0, 2) == shard_of("weather-no-tool-needed", 0, 2)
    dirs = []
    for i in (1, 2):
        dirs.append(tmp_path / f"s{i}")
        assert run("run", *scenarios, *common, "--shard", f"{i}/2", "--out", dirs[-1]
                   ).returncode == 0
    assert run("run", *scenarios, *common, "--out", tmp_path / "whole").returncode == 0
    done = run("merge", *dirs, "--out", tmp_path / "m")
    assert done.returncode == 0, done.stderr
    assert comparable_summary(tmp_path / "m") == comparable_summary(tmp_path / "whole")


def test_shards_may_differ_in_how_they_ran(runs: Path, tmp_path: Path) -> None:
    other = tmp_path / "a2"
    assert run("run", SCENARIOS, "--offline", "--epochs", "3", "--judge-samples", "2",
               "--cache", tmp_path / "other-cache.sqlite", "--shard", "2/2",
               "--concurrency", "3", "--max-calls", "100000", "--episode-timeout", "60",
               "--out", other).returncode == 0
    done = run("merge", runs / "a1", other, "--out", tmp_path / "m")
    assert done.returncode == 0, done.stderr
    assert comparable_summary(tmp_path / "m") == comparable_summary(runs / "whole")
    # the merged run keeps the first shard's settings
    config = json.loads((tmp_path / "m" / "summary.json").read_text())["config"]
    assert config["concurrency"] == 8 and config["max_calls"] is None


def test_every_config_field_is_either_reconciled_or_free() -> None:
    assert INVOCATION_FIELDS.isdisjoint(RESULT_FIELDS)
    every_field = set(RunDesign.model_fields) | set(RunExecution.model_fields)
    assert every_field == INVOCATION_FIELDS | RESULT_FIELDS


def _empty_store(run_dir: Path, **fields: object) -> Path:
    config = RunConfig.model_validate({"scenario_paths": ["/s"], "offline": True, **fields})
    RunStore.create(run_dir, {"run": config.model_dump(mode="json")}).close()
    return run_dir


@pytest.mark.parametrize(("field", "a", "b"), [
    ("epochs", 3, 2), ("seed", 0, 1), ("agent", "mock:agent", "mock:agent-flaky"),
    ("error_policy", "exclude", "as_failures"), ("confidence", 0.95, 0.9),
    ("scenario_paths", ["/s"], ["/t"]),
])
def test_configurations_that_change_results_are_refused(
        tmp_path: Path, field: str, a: object, b: object) -> None:
    first = _empty_store(tmp_path / "one", shard="1/2", **{field: a})
    second = _empty_store(tmp_path / "two", shard="2/2", **{field: b})
    done = run("merge", first, second, "--out", tmp_path / "m")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"differ in {field} ({a!r} vs {b!r})" in " ".join(done.stderr.split())
    assert not (tmp_path / "m").exists()


def test_shards_of_different_splits_are_refused(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"differ in shard \(1/2 vs 2/3"):
        merge_runs([_empty_store(tmp_path / "one", shard="1/2"),
                    _empty_store(tmp_path / "two", shard="2/3")], tmp_path / "m")


def test_the_same_shard_twice_is_refused(runs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "a1-again"
    shutil.copytree(runs / "a1", copy)
    done = run("merge", runs / "a1", copy, "--out", tmp_path / "m")
    assert done.returncode == 2 and "both hold shard 1/2" in done.stderr
    same = run("merge", runs / "a1", runs / "a2", runs / "a1", "--out", tmp_path / "m")
    assert same.returncode == 2 and "are the same run directory" in same.stderr
    assert not (tmp_path / "m").exists()


def test_the_same_sample_in_two_stores_is_refused(runs: Path, tmp_path: Path) -> None:
    relabelled = tmp_path / "a1-as-2"  # shard 1's samples under shard 2's label
    shutil.copytree(runs / "a1", relabelled)
    with sqlite3.connect(relabelled / "run.sqlite") as db:
        (text,) = db.execute("SELECT json FROM config").fetchone()
        config = json.loads(text)
        config["run"]["shard"] = "2/2"
        db.execute("UPDATE config SET json = ?", (json.dumps(config),))
    db.close()
    done = run("merge", runs / "a1", relabelled, "--out", tmp_path / "m")
    assert done.returncode == 2
    assert "both hold the sample" in done.stderr and done.stderr.count("\n") == 1


def test_scenarios_changed_between_shards_are_refused(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(SCENARIOS / "weather.yaml", suite)
    common = ("--offline", "--epochs", "1", "--no-judge", "--cache-mode", "off")
    assert run("run", suite, *common, "--shard", "1/2", "--out", tmp_path / "one"
               ).returncode == 0
    shutil.copy(SCENARIOS / "home.yaml", suite)
    assert run("run", suite, *common, "--shard", "2/2", "--out", tmp_path / "two"
               ).returncode == 0
    done = run("merge", tmp_path / "one", tmp_path / "two", "--out", tmp_path / "m")
    assert done.returncode == 2
    assert "their scenarios differ" in done.stderr and "'home-" in done.stderr


def test_missing_and_damaged_stores_are_refused(runs: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = run("merge", runs / "a1", tmp_path / "empty", "--out", tmp_path / "m")
    assert done.returncode == 2 and "no run store found" in done.stderr
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "run.sqlite").write_bytes(b"not a database at all" * 100)
    done = run("merge", runs / "a1", damaged, "--out", tmp_path / "m")
    assert done.returncode == 2 and "not a readable run store" in done.stderr
    assert not (tmp_path / "m").exists()


def test_an_out_directory_holding_a_run_is_refused(runs: Path) -> None:
    before = (runs / "whole" / "summary.json").read_bytes()
    done = run("merge", runs / "a1", runs / "a2", "--out", runs / "whole")
    assert done.returncode == 2 and "already holds a run" in done.stderr
    assert (runs / "whole" / "summary.json").read_bytes() == before
    with pytest.raises(StoreError, match="already holds a run"):
        merge_runs([runs / "a1"], runs / "a2")


def test_a_run_without_shard_merges_as_the_whole_grid(runs: Path, tmp_path: Path) -> None:
    done = run("merge", runs / "whole", "--out", tmp_path / "m", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["shards"]["held"] == [1]
    assert comparable_summary(tmp_path / "m") == comparable_summary(runs / "whole")
    mixed = run("merge", runs / "whole", runs / "a2", "--out", tmp_path / "m2")
    assert mixed.returncode == 2 and "differ in shard (1/1 vs 2/2" in mixed.stderr


def test_merge_gates_like_run(runs: Path, tmp_path: Path) -> None:
    done = run("merge", runs / "a1", runs / "a2", "--out", tmp_path / "m",
               "--min-score", "1.01")
    assert done.returncode == 1 and "gate FAIL" in done.stdout
    assert json.loads((tmp_path / "m" / "summary.json").read_text())["gate"]["passed"] is False

