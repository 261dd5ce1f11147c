"""`harness run --shard i/n`: the split of the scenario x epoch grid (what docs/running.md
says, the same in every process, stable when the grid grows, balanced), a shard's run, and
its command-line errors."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.runs.config import AdaptiveSettings, RunConfig, RunDesign
from harness.runs.shards import Shard, in_shard, shard_of, shard_sizes
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"


def test_the_split_is_the_one_the_docs_give() -> None:
    # Checked by hand from the first 16 hex digits of `printf %s ID | sha256sum`, mod 3:
    # weather-current-paris be7f6e2caf1cc3cf -> 2, home-unknown-device 3de1b677764cd369 -> 2,
    # files-action-items d8831d766867e717 -> 1; epoch e goes to (start + e) % 3 + 1.
    expected = {
        "weather-current-paris": [3, 1, 2, 3],
        "home-unknown-device": [3, 1, 2, 3],
        "files-action-items": [2, 3, 1, 2],
    }
    for sid, shards in expected.items():
        assert [shard_of(sid, epoch, 3) for epoch in range(4)] == shards, sid


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_formula_of_the_docs_and_the_code_agree(count: int) -> None:
    def documented(sid: str, epoch: int) -> int:  # as docs/running.md writes it
        start = int.from_bytes(hashlib.sha256(sid.encode()).digest()[:8], "big")
        return (start + epoch) % count + 1

    for sid in ("a", "é-unicode", "weather/with/slashes", ""):
        for epoch in range(10):
            assert shard_of(sid, epoch, count) == documented(sid, epoch)


def test_the_shards_cover_the_grid_exactly_once() -> None:
    grid = [(f"s{i}", e) for e in range(6) for i in range(13)]
    for count in (1, 2, 3, 5, 40):
        parts = [in_shard(grid, Shard(index=i, count=count)) for i in range(1, count + 1)]
        assert sorted(key for part in parts for key in part) == sorted(grid)
        assert sum(map(len, parts)) == len(grid)
        # in the plan's own order, which is what the runner runs
        assert all(part == [key for key in grid if key in part] for part in parts)
    assert in_shard(grid, None) == grid


def test_a_sample_keeps_its_shard_when_scenarios_or_epochs_are_added() -> None:
    small = {(f"s{i}", e): shard_of(f"s{i}", e, 4) for i in range(5) for e in range(3)}
    grown = {(f"s{i}", e): shard_of(f"s{i}", e, 4) for i in range(9) for e in range(7)}
    assert all(grown[key] == shard for key, shard in small.items())


def test_every_scenario_gives_each_shard_its_share_of_epochs() -> None:
    ids = [f"scenario-{i}" for i in range(7)]
    assert shard_sizes(ids, 8, 4) == {1: 14, 2: 14, 3: 14, 4: 14}
    # epochs % n left over: one per scenario, on the shard its hash picks
    sizes = shard_sizes(ids, 5, 2)
    assert sum(sizes.values()) == 35 and min(sizes.values()) >= 2 * 7
    for sid in ids:
        per_shard = shard_sizes([sid], 5, 2)
        assert sorted(per_shard.values()) == [2, 3]


PLAN = """
import json, sys
from harness.runs.config import RunDesign
from harness.runs.engine import Suite, epochs_plan
from harness.runs.shards import Shard, in_shard
suite = Suite.load(RunDesign(scenario_paths=[sys.argv[1]], offline=True).resolved())
print(json.dumps([in_shard(epochs_plan(suite, 3, set()), Shard(index=i, count=3))
                  for i in (1, 2, 3)]))
"""


def test_the_split_is_the_same_in_two_processes() -> None:
    plans = []
    for seed in ("1", "2"):  # Python's hash() would differ between these
        done = subprocess.run([sys.executable, "-c", PLAN, str(SCENARIOS)], capture_output=True,
                              text=True, check=True, timeout=120,
                              env={**os.environ, "PYTHONHASHSEED": seed})
        plans.append(json.loads(done.stdout))
    assert plans[0] == plans[1]
    assert all(plans[0]) and sum(map(len, plans[0])) == 11 * 3


def test_two_shards_run_the_grid_exactly_once(tmp_path: Path) -> None:
    keys = []
    for i in (1, 2):
        out = tmp_path / f"shard-{i}"
        done = run_cli("run", SCENARIOS, "--offline", "--epochs", "2", "--no-judge",
                       "--cache-mode", "off", "--shard", f"{i}/2", "--out", out, "--json")
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
        shard_keys = [(line["scenario_id"], line["epoch"]) for line in lines]
        assert all(shard_of(sid, epoch, 2) == i for sid, epoch in shard_keys)
        assert summary["config"]["shard"] == f"{i}/2"
        assert summary["shards"] == {"count": 2, "held": [i], "missing": [3 - i],
                                     "grid_samples": 22, "held_samples": len(lines)}
        assert summary["counts"]["samples_planned"] == len(lines)
        assert any(f"shard {i}/2 holds {len(lines)} of the grid's 22" in n
                   for n in summary["notes"])
        keys += shard_keys
    assert sorted(keys) == sorted((sid, e) for sid in _scenario_ids() for e in range(2))


def _scenario_ids() -> list[str]:
    from harness.runs.engine import Suite

    return list(Suite.load(RunDesign(scenario_paths=[str(SCENARIOS)], offline=True,
                                     no_judge=True).resolved()).scenarios)


def test_a_shard_with_no_sample_is_a_note(tmp_path: Path) -> None:
    # As many shards as samples (no more are allowed): the hashed starts leave some empty.
    sizes = shard_sizes(_scenario_ids(), 1, 11)
    empty = next(i for i in range(1, 12) if i not in sizes)
    done = run_cli("run", SCENARIOS, "--offline", "--epochs", "1", "--no-judge",
                   "--cache-mode", "off", "--shard", f"{empty}/11", "--out", tmp_path / "e")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"shard {empty}/11 holds no sample of the grid's 11" in " ".join(done.stdout.split())
    assert "error" not in done.stderr
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["counts"]["samples"] == summary["counts"]["samples_planned"] == 0


def test_a_stopped_shard_resumes_its_own_samples_only(tmp_path: Path) -> None:
    out = tmp_path / "shard"
    first = run_cli("run", SCENARIOS, "--offline", "--epochs", "3", "--no-judge",
                    "--cache-mode", "off", "--shard", "2/3", "--max-calls", "6", "--out", out)
    assert first.returncode == 3, first.stderr
    stored = json.loads((out / "summary.json").read_text())["counts"]["samples"]
    resumed = run_cli("run", "--resume", out, "--max-calls", "10000", "--json")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    held = shard_sizes(_scenario_ids(), 3, 3)[2]
    assert stored < held == summary["counts"]["samples"] == summary["counts"]["samples_planned"]
    lines = (out / "samples.jsonl").read_text().splitlines()
    assert all(shard_of(line["scenario_id"], line["epoch"], 3) == 2
               for line in map(json.loads, lines))


@pytest.mark.parametrize("value", ["0/2", "3/2", "a/b", "1/0", "2", "1/2/3", "-1/2", ""])
def test_a_malformed_shard_is_one_line(tmp_path: Path, value: str) -> None:
    done = run_cli("run", SCENARIOS, "--offline", "--shard", value, "--out", tmp_path / "r")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "--shard: expected i/n with 1 <= i <= n" in done.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("value", "count"), [
    ("1/12", "12"), ("12/12", "12"), ("1/99999999999999999999", "99999999999999999999")])
def test_more_shards_than_samples_is_one_line_naming_both_and_quick(
        tmp_path: Path, value: str, count: str) -> None:
    started = time.monotonic()
    done = run_cli("run", SCENARIOS, "--offline", "--epochs", "1", "--no-judge",
                   "--cache-mode", "off", "--shard", value, "--out", tmp_path / "r")
    # The count is never used to size anything: refused as soon as the grid is known (the
    # command takes a few seconds on a loaded machine; a list as long as the count would
    # take hours or the machine's memory).
    assert time.monotonic() - started < 60
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"into {count} shards, more than its 11 sample(s)" in done.stderr
    assert "use at most 11 shards" in done.stderr
    assert not (tmp_path / "r").exists()


def test_a_count_of_thousands_of_digits_is_one_short_line(tmp_path: Path) -> None:
    done = run_cli("run", SCENARIOS, "--offline", "--shard", "1/" + "9" * 5000,
                   "--out", tmp_path / "r")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and len(done.stderr) < 300, done.stderr
    assert "--shard: expected i/n with 1 <= i <= n" in done.stderr


def test_shard_bookkeeping_grows_with_the_grid_not_the_count() -> None:
    ids = [f"scenario-{i}" for i in range(7)]
    # A million shards, not more: a count-sized table (as there was) stays survivable here.
    tracemalloc.start()
    try:
        sizes = shard_sizes(ids, 3, 10**6)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(sizes) <= 21 and sum(sizes.values()) == 21
    assert peak < 1_000_000


def test_a_stored_split_into_more_shards_than_samples_is_not_merged(tmp_path: Path) -> None:
    # A store of a harness that did not bound the count.
    out = tmp_path / "old"
    assert run_cli("run", SCENARIOS, "--offline", "--epochs", "1", "--no-judge",
                   "--cache-mode", "off", "--shard", "1/2", "--out", out).returncode == 0
    with sqlite3.connect(out / "run.sqlite") as db:
        stored = json.loads(db.execute("SELECT json FROM config").fetchone()[0])
        stored["run"]["shard"] = "1/10000000"
        db.execute("UPDATE config SET json = ?", (json.dumps(stored),))
    done = run_cli("merge", out, "--out", tmp_path / "merged")
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1, done.stderr
    assert "splits a grid of 11 sample(s) into more shards than samples" in done.stderr
    assert not (tmp_path / "merged" / "summary.json").exists()


def test_shard_with_adaptive_sampling_is_refused(tmp_path: Path) -> None:
    done = run_cli("run", SCENARIOS, "--offline", "--shard", "1/2", "--target-ci-width", "0.2",
                   "--out", tmp_path / "r")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--target-ci-width" in done.stderr
    assert "every scenario's scores" in done.stderr
    with pytest.raises(ValidationError, match="adaptive sampling's rounds"):
        RunConfig(scenario_paths=["s"], shard=Shard(index=1, count=2),
                  adaptive=AdaptiveSettings(target_width=0.2))


def test_resume_keeps_the_stored_shard(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert run_cli("run", SCENARIOS, "--offline", "--epochs", "1", "--no-judge",
                   "--cache-mode", "off", "--shard", "1/2", "--out", out).returncode == 0
    done = run_cli("run", "--resume", out, "--shard", "2/2")
    assert done.returncode == 2 and "--shard cannot be given with it" in done.stderr


def test_the_shard_is_stored_as_written() -> None:
    config = RunConfig(scenario_paths=["s"], shard="3/4")  # type: ignore[arg-type]
    assert config.design.shard == Shard(index=3, count=4)
    data = config.model_dump(mode="json")
    assert data["shard"] == "3/4"
    assert RunConfig.model_validate(data) == config
