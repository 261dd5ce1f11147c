"""A damaged run store or response cache is refused, naming the file, before anything reads
past the damage or writes into it; a run directory's files are replaced whole, never leaving
a temporary file behind.

The damage is real: a finished run's ``run.sqlite`` (or a filled cache) with the bytes of one
page overwritten, the page found from ``sqlite_master`` and ``PRAGMA page_size``."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.models.cache import ResponseCache
from harness.runs.config import RunConfig
from harness.runs.store import STORE_FILENAME, RunStore, StoreError
from harness.runs.summary import read_summary, summarise, write_summary
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "scenarios" / "weather.yaml"
TABLE_LEAF, TABLE_INTERIOR = 0x0D, 0x05


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished offline run: six scenarios, two epochs."""
    out = tmp_path_factory.mktemp("integrity") / "run"
    assert run_cli("run", WEATHER, "--offline", "--epochs", "2", "--cache-mode", "off",
                   "--out", out, "--json").returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["report.html", STORE_FILENAME,
                                                     "samples.jsonl", "summary.json"]
    return out


def page_of(db_path: Path, name: str) -> tuple[int, int]:
    """(page number, page size) of the root page of table or index ``name``; for a table
    whose root is an interior page, of its right-most leaf (a page holding rows)."""
    db = sqlite3.connect(db_path)
    try:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        (page,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?",
                             (name,)).fetchone()
    finally:
        db.close()
    data = db_path.read_bytes()
    while data[(page - 1) * page_size] == TABLE_INTERIOR:
        start = (page - 1) * page_size
        page = int.from_bytes(data[start + 8:start + 12], "big")  # the right-most child
    return page, page_size


def damage(db_path: Path, name: str) -> None:
    """Overwrite the header and first cells of a page of ``name``."""
    page, page_size = page_of(db_path, name)
    with db_path.open("r+b") as handle:
        handle.seek((page - 1) * page_size)
        handle.write(b"\xab" * 64)


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


# The rows of samples (a data page), the index behind samples' primary key, and the index
# behind meta's: a damaged meta index used to let --resume run and write into the file.
DAMAGED_PAGES = ["samples", "sqlite_autoindex_samples_1", "sqlite_autoindex_meta_1"]


@pytest.mark.parametrize("page", DAMAGED_PAGES)
def test_resume_refuses_a_damaged_store_and_changes_nothing(
        finished_run: Path, tmp_path: Path, page: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    damage(run / STORE_FILENAME, page)
    before = snapshot(run)
    done = run_cli("run", "--resume", run)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {run / STORE_FILENAME}: the run store is damaged "
                               "(SQLite quick_check: ")
    assert lines[0].endswith(f"nothing was changed; {run / 'samples.jsonl'} still holds the "
                             "samples as last summarised")
    assert snapshot(run) == before  # no write, no temporary file, no -wal/-shm files


@pytest.mark.parametrize("page", DAMAGED_PAGES)
def test_compare_and_pairwise_refuse_a_damaged_store(
        finished_run: Path, tmp_path: Path, page: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    damage(run / STORE_FILENAME, page)
    before = snapshot(run)
    for command in (("compare", finished_run, run),
                    ("pairwise", finished_run, run, "--offline", "--rubric", "task_completion",
                     "--cache-mode", "off")):
        done = run_cli(*command)
        assert done.returncode == 2
        err = done.stderr.strip()
        assert "\n" not in err and f"{run / STORE_FILENAME}: the run store is damaged" in err
    assert snapshot(run) == before


def test_an_intact_store_still_opens(finished_run: Path) -> None:
    with RunStore.open(finished_run) as store:
        assert store.count() == 12


# -- the response cache --------------------------------------------------------------------

def _filled_cache(path: Path) -> None:
    cache = ResponseCache(path)
    for i in range(300):
        cache.put(f"{i:064x}", kind="chat", model="openai:m", payload={"text": "x" * 200})
    cache.close()


def test_a_damaged_cache_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    _filled_cache(path)
    assert len(ResponseCache(path)) == 300  # intact: opens
    damage(path, "sqlite_autoindex_responses_1")
    before = snapshot(tmp_path)
    with pytest.raises(InputError) as caught:
        ResponseCache(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: the response cache is damaged (SQLite quick_check: ")
    assert message.endswith("delete it (its answers are then asked again) or give another "
                            "cache path") and "\n" not in message
    assert snapshot(tmp_path) == before


def test_a_run_with_a_damaged_cache_stops_before_it_starts(
        tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    _filled_cache(cache)
    damage(cache, "responses")
    done = run_cli("run", WEATHER, "--offline", "--epochs", "1", "--cache", cache, "--out",
                   tmp_path / "run")
    assert done.returncode == 2
    assert f"{cache}: the response cache is damaged" in done.stderr
    assert not (tmp_path / "run").exists()


# -- temporary files -----------------------------------------------------------------------

def test_samples_jsonl_failing_midway_leaves_the_old_file_and_no_temporary(
        finished_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.runs.summary as summary_module

    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    before = snapshot(run)
    real_line = summary_module.sample_line
    calls = []

    def fails_on_the_third(record: object) -> dict[str, object]:
        calls.append(record)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real_line(record)  # type: ignore[arg-type]

    monkeypatch.setattr(summary_module, "sample_line", fails_on_the_third)
    with RunStore.open(run) as store:
        config = RunConfig.model_validate(store.config["run"])
        with pytest.raises(InputError, match="samples.jsonl: cannot be written .No space left"):
            summarise(store, config, run_dir=run)
    assert snapshot(run) == before


def test_summary_json_that_cannot_be_replaced_is_one_error_and_no_temporary(
        finished_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    before = snapshot(run)
    summary = read_summary(run)

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("harness.files.os.replace", full)
    with pytest.raises(InputError, match="summary.json: cannot be written"):
        write_summary(run, summary)
    assert snapshot(run) == before


def test_a_store_opened_for_reading_that_cannot_be_opened_for_writing(
        finished_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.runs.store as store_module

    def read_only_disk(path: Path) -> sqlite3.Connection:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(store_module, "_connect", read_only_disk)
    with pytest.raises(StoreError, match="cannot open the run store .attempt to write"):
        RunStore.open(finished_run)


def test_a_full_disk_while_storing_a_sample_is_one_error_and_keeps_what_was_stored(
        finished_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    with RunStore.open(run) as store:
        sample = next(store.iter_samples())
        # SQLite's own "database or disk is full", as on a full disk: no page may be added.
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages}")
        big = sample.model_copy(update={"epoch": 99, "metrics": {
            f"m{i}": 0.5 for i in range(5_000)}})
        with pytest.raises(StoreError) as caught:
            store.write_sample(big)
        with pytest.raises(StoreError, match="cannot write to the run store"):
            store.log_event("resumed", {"note": "x" * 100_000})
        assert store.count() == 12
    assert str(caught.value) == (
        f"{run / STORE_FILENAME}: cannot write to the run store (database or disk is full); "
        f"the samples stored before are kept: fix the cause, then continue with `harness run "
        f"--resume {run}`")
    with RunStore.open(run) as store:
        assert store.count() == 12 and store.finished_keys() == {
            (s.scenario_id, s.epoch) for s in store.iter_samples()}
