"""``harness labels import`` and ``export``: a bad file is refused whole with one line naming
the line and the field; an export after an import gives back the same labels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.runs.labels import Label
from harness.runs.store import RunStore
from tests.helpers.cli import run_cli
from tests.helpers.labelled_runs import offline_run

CORRECTNESS = "criterion:final_response_quality/correctness"


def line(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"scenario_id": "weather-current-paris", "epoch": 1,
                            "annotator": "ana", "target": "passed", "value": True,
                            "random": True}
    return {**base, **fields}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    return offline_run(tmp_path / "run")


GOOD = [
    line(labelled_at="2026-11-27T10:00:00Z"),
    line(target=CORRECTNESS, value=4, comment="right city, <b>wrong</b> unit",
         labelled_at="2026-11-27T10:01:00Z"),
    line(annotator="bo", target="score", value=0.5, random=False),
    line(annotator="bo", target="rubric:task_completion", value=False),
    line(annotator="ana", labelled_at="2026-11-27T11:00:00Z", value=False),
]


@pytest.mark.parametrize(("bad", "expected"), [
    ("{not json", "bad.jsonl:3: not valid JSON (Expecting property name enclosed in double "
     "quotes); expected one label object a line"),
    ("[1, 2]", "bad.jsonl:3: expected a JSON object (a label with scenario_id, epoch, "
     "annotator, target, value, random, and optionally comment and labelled_at), got list"),
    (line(scenario_id="weather-nowhere"),
     "bad.jsonl:3: scenario_id: 'weather-nowhere' is not a scenario of this run"),
    (line(epoch=7), "bad.jsonl:3: epoch: scenario 'weather-current-paris' has no epoch 7 in "
     "this run (it has 0, 1)"),
    (line(target="criterion:final_response_quality/charm", value=3),
     "bad.jsonl:3: target: this sample has no 'criterion:final_response_quality/charm'"),
    (line(target="rubric:safety"), "bad.jsonl:3: target: this sample has no 'rubric:safety'"),
    (line(target=CORRECTNESS, value=6), "bad.jsonl:3: value: 6 is not on the scale of "
     f"{CORRECTNESS}; expected one of 1, 2, 3, 4, 5"),
    (line(target="score", value=2), "bad.jsonl:3: value: score takes a number from 0 to 1"),
    (line(value="yes"), "bad.jsonl:3: value: expected true/false or a number, got 'yes'"),
    (line(annotator=""), "bad.jsonl:3: annotator: expected the reviewer's name"),
    (line(annotator="  "), "bad.jsonl:3: annotator: the reviewer's name must not be blank"),
    (line(value=0.5), "bad.jsonl:3: value: passed takes true or false, got 0.5"),
    (line(target="score", value=True), "bad.jsonl:3: value: score takes a number, got True"),
    ({k: v for k, v in line().items() if k != "random"},
     "bad.jsonl:3: random: required field is missing"),
    (line(reviewer="ana"), "bad.jsonl:3: reviewer: unknown field"),
    (line(labelled_at="last tuesday"), "bad.jsonl:3: labelled_at: expected an ISO 8601 time"),
])
def test_a_bad_line_refuses_the_whole_file(run_dir: Path, tmp_path: Path, bad: Any,
                                           expected: str) -> None:
    write_jsonl(tmp_path / "bad.jsonl", [GOOD[0], GOOD[1], bad, GOOD[2]])
    result = run_cli("labels", "import", run_dir, "bad.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {expected}"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    with RunStore.open(run_dir) as store:
        assert store.labels(history=True) == []


def test_an_empty_file_and_a_folder_that_is_no_run_are_one_line_errors(
        run_dir: Path, tmp_path: Path) -> None:
    empty = write_jsonl(tmp_path / "empty.jsonl", [])
    result = run_cli("labels", "import", run_dir, empty, cwd=tmp_path)
    assert result.returncode == 2 and "empty.jsonl: holds no labels" in result.stderr
    result = run_cli("labels", "import", run_dir, tmp_path / "gone.jsonl")
    assert result.returncode == 2 and result.stderr.strip() == (
        f"error: {tmp_path / 'gone.jsonl'}: file not found; expected a JSONL file of labels "
        "(one JSON object a line)")
    result = run_cli("labels", "export", tmp_path, "--out", tmp_path / "x.jsonl")
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {tmp_path}: no run store found (expected run.sqlite)"


def test_export_after_import_gives_back_the_same_labels(run_dir: Path, tmp_path: Path) -> None:
    given = write_jsonl(tmp_path / "given.jsonl", GOOD)
    imported = run_cli("labels", "import", run_dir, given, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "imported 5 labels by 2 reviewers on 1 sample (4 random, 1 chosen)" in imported.stdout
    out = tmp_path / "out.jsonl"
    assert run_cli("labels", "export", run_dir, "--out", out).returncode == 0
    exported = [Label.model_validate_json(text) for text in out.read_text().splitlines()]
    with RunStore.open(run_dir) as store:
        assert exported == store.labels()
        history = store.labels(history=True)
    # The last one counts: ana's later `passed` (false) replaced her earlier one.
    assert [(lb.annotator, lb.target, lb.value) for lb in exported] == [
        ("ana", CORRECTNESS, 4), ("ana", "passed", False), ("bo", "rubric:task_completion", False),
        ("bo", "score", 0.5)]
    assert exported[0].comment == "right city, <b>wrong</b> unit"
    # Every given line is in the history, as given (labelled_at set where it was absent).
    assert [lb.model_dump(exclude={"labelled_at"}) for lb in history] == sorted(
        (Label.model_validate(g).model_dump(exclude={"labelled_at"}) for g in GOOD),
        key=lambda d: [lb.model_dump(exclude={"labelled_at"}) for lb in history].index(d))
    # The whole history exported and imported into a copy of the run: the same text again.
    out_history = tmp_path / "history.jsonl"
    assert run_cli("labels", "export", run_dir, "--out", out_history, "--history"
                   ).returncode == 0
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "run", copy)
    with RunStore.open(copy) as store:
        store._db.execute("DELETE FROM labels")
        store._db.commit()
    assert run_cli("labels", "import", copy, out_history).returncode == 0
    again = tmp_path / "again.jsonl"
    assert run_cli("labels", "export", copy, "--out", again, "--history").returncode == 0
    assert again.read_text() == out_history.read_text()
    # Importing the same labels again stores nothing twice.
    twice = run_cli("labels", "import", copy, out_history)
    assert "5 labels already stored as they are, not stored again" in twice.stdout
    with RunStore.open(copy) as store:
        assert len(store.labels(history=True)) == 5


def test_export_replaces_a_file_as_export_adk_does_but_never_the_store(
        run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    out.write_text("old\n")
    result = run_cli("labels", "export", run_dir, "--out", out)
    assert result.returncode == 0 and out.read_text() == ""
    assert "has no labels yet; wrote an empty" in result.stdout
    result = run_cli("labels", "export", run_dir, "--out", run_dir / "run.sqlite")
    assert result.returncode == 2 and "is the run's store" in result.stderr
