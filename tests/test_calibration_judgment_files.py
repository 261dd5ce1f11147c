"""Judgment files as a user hands them in: a study's --out directory instead of its judgments
file, an error after blank lines naming the line it is on (and the line it clashes with), a
file of neither kind, and a study resumed with other settings or from a moved dataset."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.calibration import load_judgments
from harness.calibration.report import AnalysisOptions
from harness.calibration.study import run_calibration
from harness.errors import InputError
from tests.helpers.calibration_rubrics import HELPFUL_RUBRIC

RUBRIC = HELPFUL_RUBRIC
OPTIONS = AnalysisOptions(n_resamples=0)


def _write(path: Path, rows: list[dict[str, Any] | None]) -> Path:
    path.write_text("".join("\n" if row is None else json.dumps(row) + "\n" for row in rows),
                    encoding="utf-8")
    return path


def _error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        load_judgments(path)
    return info.value


def test_a_study_directory_points_at_its_judgments_file(tmp_path: Path) -> None:
    (tmp_path / "judgments.jsonl").write_text("{}\n", encoding="utf-8")
    error = _error(tmp_path)
    assert (error.source, error.field) == (str(tmp_path), None)
    assert str(error) == (
        f"{tmp_path}: is a directory; expected a JSONL or CSV file of judgment records (for a "
        f"calibration study's judgments, give {tmp_path / 'judgments.jsonl'})")


def test_a_duplicate_sample_after_blank_lines_names_both_lines(tmp_path: Path) -> None:
    row = {"item_id": "p", "gold": "A", "verdict": "A", "swapped": False, "sample": 0,
           "judge_id": "m"}
    path = _write(tmp_path / "p.jsonl", [None, {**row, "sample": 1}, None, row, None,
                                         {**row, "verdict": "B"}])
    error = _error(path)
    assert (error.field, error.location) == ("sample", 6)
    assert str(error) == (f"{path}:6: sample: item 'p' already has sample 0 in this order "
                          "(swapped=False) for judge 'm' on line 4")
    # samples numbered from the file: three unnumbered lines are samples 0, 1 and 2
    rows = [{k: v for k, v in row.items() if k != "sample"}] * 3
    data = load_judgments(_write(tmp_path / "q.jsonl", [*rows, {**row, "swapped": True}]))
    assert [(r.swapped, r.sample) for r in data.records] == [
        (False, 0), (False, 1), (False, 2), (True, 0)]


def test_a_gold_label_that_changes_names_both_lines(tmp_path: Path) -> None:
    row = {"item_id": "p", "gold": "A", "verdict": "A", "swapped": False}
    path = _write(tmp_path / "p.jsonl", [None, row, {**row, "swapped": True, "gold": "B"}])
    assert str(_error(path)) == f"{path}:3: gold: item 'p' has another gold label on line 2"


def test_a_file_of_neither_kind_names_its_first_record(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.jsonl", [None, {"item_id": "a", "score": 3}])
    error = _error(path)
    assert (error.source, error.field, error.location) == (str(path), None, 2)
    assert str(error) == (f"{path}:2: cannot tell the judgment kind: a pointwise line has "
                          "'human' and 'judge', a pairwise line has 'gold', 'verdict' and "
                          "'swapped'")


@pytest.fixture
def study(tmp_path: Path) -> tuple[Path, Path]:
    rubrics = tmp_path / "rubrics"
    rubrics.mkdir()
    (rubrics / "helpful.yaml").write_text(RUBRIC, encoding="utf-8")
    (rubrics / "other.yaml").write_text(RUBRIC.replace("id: helpful", "id: other"),
                                        encoding="utf-8")
    data = _write(tmp_path / "pairs.jsonl", [
        {"item_id": f"p{k}", "input": f"question {k}", "output_a": "yes", "output_b": "no",
         "gold": "A"} for k in range(3)])
    return rubrics, data


async def test_a_study_resumes_from_a_moved_dataset(tmp_path: Path,
                                                    study: tuple[Path, Path]) -> None:
    rubrics, data = study
    out = tmp_path / "out"
    first = await run_calibration(data, ["mock:judge"], "helpful", out_dir=out,
                                  rubric_dirs=[rubrics], options=OPTIONS)
    moved = tmp_path / "moved" / "pairs.jsonl"
    moved.parent.mkdir()
    shutil.move(data, moved)
    again = await run_calibration(moved, ["mock:judge"], "helpful", out_dir=out,
                                  rubric_dirs=[rubrics], options=OPTIONS)
    assert again.judges == first.judges
    counts = json.loads((out / "study.json").read_text())["counts"]
    assert counts["units_resumed"] == 3 and counts["units_judged"] == 0


async def test_a_study_resumed_with_other_settings_is_refused(
        tmp_path: Path, study: tuple[Path, Path]) -> None:
    rubrics, data = study
    out = tmp_path / "out"
    study_file = out / "study.json"
    await run_calibration(data, ["mock:judge"], "helpful", out_dir=out, rubric_dirs=[rubrics],
                          options=OPTIONS)
    with pytest.raises(InputError) as info:
        await run_calibration(data, ["mock:judge"], "helpful", samples=2, out_dir=out,
                              rubric_dirs=[rubrics], options=OPTIONS)
    assert str(info.value) == (f"{study_file}: settings.samples: this directory holds a study "
                               "with samples=1, not 2; resume with the same settings or use "
                               "another --out")
    with pytest.raises(InputError) as info:
        await run_calibration(data, ["mock:judge"], ["helpful", "other"], out_dir=out,
                              rubric_dirs=[rubrics], options=OPTIONS)
    assert str(info.value) == (f"{study_file}: settings.rubric: this directory holds a study "
                               "with rubric(s) helpful@1, not helpful@1, other@1; resume with "
                               "the same rubrics or use another --out")
    study_file.write_text('{"settings": {"kind": "pairwise"}}', encoding="utf-8")
    with pytest.raises(InputError) as info:
        await run_calibration(data, ["mock:judge"], "helpful", out_dir=out,
                              rubric_dirs=[rubrics], options=OPTIONS)
    assert (info.value.source, info.value.field) == (str(study_file), "settings")
    assert str(info.value).startswith(f"{study_file}: settings: not a readable study file (")
    assert str(info.value).endswith("); use another --out")


def test_a_pointwise_duplicate_after_blank_lines_names_both_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "j.jsonl", [None, {"item_id": "a", "human": 3, "judge": 3}, None,
                                         {"item_id": "a", "human": 4, "judge": 3}])
    assert str(_error(path)) == (f"{path}:4: item_id: item 'a' appears twice for judge None "
                                 "(first on line 2); put several judge samples in one 'judge' "
                                 "list")
