"""The CSV conventions of labelled datasets and judgment files (harness.calibration.files), each
checked against the same records written as JSONL: booleans in any case, blank rows skipped
without losing the rows after them, an empty cell as a missing value, the scale columns, and
errors that name the file, the line and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.calibration import PointwiseDataset, Scale, load_dataset, load_judgments
from harness.calibration.judgments import PairwiseJudgments, PointwiseJudgments
from harness.errors import InputError


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_true_and_false_cells_in_any_case_are_pass_and_fail_labels(tmp_path: Path) -> None:
    from_csv = load_judgments(_csv(tmp_path / "j.csv", (
        "item_id,human,judge_1,judge_2\n"
        "a,TRUE,true,False\n"
        "b,false,FALSE,True\n")))
    from_jsonl = load_judgments(_jsonl(tmp_path / "j.jsonl", [
        {"item_id": "a", "human": True, "judge": [True, False]},
        {"item_id": "b", "human": False, "judge": [False, True]},
    ]))
    assert isinstance(from_csv, PointwiseJudgments)
    assert [(r.human, r.judge) for r in from_csv.records] == [
        (True, [True, False]), (False, [False, True])]
    assert from_csv.records == from_jsonl.records
    assert from_csv.human_kind == from_csv.judge_kind == "bool"


def test_the_swapped_column_of_pairwise_judgments_reads_as_its_boolean(tmp_path: Path) -> None:
    from_csv = load_judgments(_csv(tmp_path / "p.csv", (
        "item_id,gold,verdict,swapped\n"
        "p,A,A,false\n"
        "p,A,B,TRUE\n")))
    assert isinstance(from_csv, PairwiseJudgments)
    assert [(r.swapped, r.verdict) for r in from_csv.records] == [(False, "A"), (True, "B")]


def test_a_blank_row_is_skipped_and_the_rows_after_it_are_kept(tmp_path: Path) -> None:
    # a spreadsheet's export leaves rows of empty cells; a row of spaces is blank too
    path = _csv(tmp_path / "items.csv", (
        "item_id,text,human\n"
        "a,first,4\n"
        ",,\n"
        "   \n"
        "b,second,2\n"
        "c,third,x\n"))
    with pytest.raises(InputError) as info:
        load_dataset(path)
    # the line number of a record after the blank rows is its own line in the file
    assert str(info.value) == (f"{path}:6: human: expected a number, true/false, a list of "
                               "those (one per rater), or null, got 'x' (item 'c')")
    path.write_text(path.read_text().replace("c,third,x", "c,third,5"))
    dataset = load_dataset(path)
    assert isinstance(dataset, PointwiseDataset)
    assert [(i.item_id, i.human) for i in dataset.items] == [("a", 4.0), ("b", 2.0), ("c", 5.0)]


def test_an_empty_text_cell_is_a_missing_value_as_in_jsonl(tmp_path: Path) -> None:
    from_csv = load_dataset(_csv(tmp_path / "items.csv", (
        "item_id,text,input,context,human\n"
        "a,an answer,,,4\n")))
    from_jsonl = load_dataset(_jsonl(tmp_path / "items.jsonl", [
        {"item_id": "a", "text": "an answer", "human": 4}]))
    assert isinstance(from_csv, PointwiseDataset)
    item = from_csv.items[0]
    assert item.input is None and item.context is None
    assert item == from_jsonl.items[0]


@pytest.mark.parametrize(("columns", "cells", "scale"), [
    ("scale_min,scale_max", "1,5", Scale(min=1, max=5, step=1.0)),  # default step
    ("scale_min,scale_max,scale_step", "1,5,", Scale(min=1, max=5, step=None)),  # continuous
    ("scale_min,scale_max,scale_step", "1,5,0.5", Scale(min=1, max=5, step=0.5)),
])
def test_the_scale_columns(tmp_path: Path, columns: str, cells: str, scale: Scale) -> None:
    path = _csv(tmp_path / "items.csv", f"item_id,text,human,{columns}\na,t,2.5,{cells}\n")
    if scale.step == 1.0:
        path.write_text(path.read_text().replace(",2.5,", ",3,"))
    dataset = load_dataset(path)
    assert isinstance(dataset, PointwiseDataset)
    assert dataset.scale == scale
    # the declared scale keeps the rating: 2.5 is on the continuous and the half-step scale
    assert dataset.items[0].human == (3.0 if scale.step == 1.0 else 2.5)
    assert dataset.off_scale == []


def test_a_row_with_more_cells_than_the_header_names_file_and_line(tmp_path: Path) -> None:
    path = _csv(tmp_path / "items.csv", "item_id,text,human\na,t,4\nb,t,4,5\n")
    with pytest.raises(InputError) as info:
        load_dataset(path)
    assert str(info.value) == f"{path}:3: more cells than header columns"
    assert (info.value.source, info.value.field, info.value.location) == (str(path), None, 3)


def test_an_error_inside_a_nested_field_names_its_whole_path(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "items.jsonl", [
        {"item_id": "a", "text": "t", "human": 3, "scale": {"min": 1, "max": 5, "stepp": 1}}])
    with pytest.raises(InputError) as info:
        load_dataset(path)
    assert info.value.field == "scale.stepp"
    assert str(info.value).startswith(f"{path}:1: scale.stepp: unknown field")
