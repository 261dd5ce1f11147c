"""Reading labelled datasets and judgment files: JSONL and CSV, and errors that name the file,
line, item and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.calibration import (
    PairwiseDataset,
    PointwiseDataset,
    PointwiseItem,
    Scale,
    load_dataset,
    load_judgments,
    pairwise_judgments,
    pointwise_judgment,
)
from harness.calibration.judgments import PairwiseJudgments, PointwiseJudgments
from harness.errors import InputError

EXAMPLES = Path(__file__).parents[1] / "examples" / "calibration"


def _jsonl(tmp_path: Path, rows: list[dict[str, Any]], name: str = "data.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _error(path: Path, **kwargs: Any) -> str:
    with pytest.raises(InputError) as info:
        load_judgments(path, **kwargs)
    return str(info.value)


def test_examples_load() -> None:
    pointwise = load_dataset(EXAMPLES / "pointwise_items.jsonl")
    assert isinstance(pointwise, PointwiseDataset) and len(pointwise.items) == 16
    assert pointwise.scale == Scale(min=1, max=5)
    from_csv = load_dataset(EXAMPLES / "pointwise_items.csv")
    assert isinstance(from_csv, PointwiseDataset)
    assert [i.model_dump() for i in from_csv.items] == [
        i.model_dump() for i in pointwise.items[:6]]
    pairwise = load_dataset(EXAMPLES / "pairwise_items.jsonl")
    assert isinstance(pairwise, PairwiseDataset) and pairwise.items[2].gold == "tie"
    judged = load_judgments(EXAMPLES / "pointwise_judgments.jsonl")
    assert isinstance(judged, PointwiseJudgments) and judged.length_source == "words"
    verdicts = load_judgments(EXAMPLES / "pairwise_judgments.jsonl")
    assert isinstance(verdicts, PairwiseJudgments) and len(verdicts.records) == 16


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    assert _error(path) == f"{path}: the file holds no records (expected one record per line)"


def test_missing_file(tmp_path: Path) -> None:
    assert _error(tmp_path / "nope.jsonl").endswith(
        "nope.jsonl: file not found; expected a JSONL or CSV file of judgment records")


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"item_id": "a", "human": 1, "judge": 1}\n{"item_id": \n')
    assert _error(path).startswith(f"{path}:2: invalid JSON")


def test_label_off_the_scale_is_a_named_missing_label(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [
        {"item_id": "a", "human": 3, "judge": 4, "scale": {"min": 1, "max": 5}},
        {"item_id": "b", "human": [2, 7], "judge": 4},
    ])
    data = load_judgments(path)
    assert isinstance(data, PointwiseJudgments)
    assert [r.human for r in data.records] == [3, [2, None]]
    [entry] = data.off_scale
    assert entry.describe() == (f"{path}:2: human: 7 is off the declared scale; expected a "
                                "number from 1 to 5 in steps of 1 (item 'b'); counted as missing")
    assert (entry.position, entry.value) == (1, 7)
    # a scale from the caller wins over the file's: 7 is on 1..10, and on 1..3 both 4s are off
    assert load_judgments(path, scale=Scale(min=1, max=10)).off_scale == []  # type: ignore[union-attr]
    narrow = load_judgments(path, scale=Scale(min=1, max=3))
    assert isinstance(narrow, PointwiseJudgments)
    assert [(e.line, e.field, e.value) for e in narrow.off_scale] == [
        (1, "judge", 4), (2, "human", 7), (2, "judge", 4)]
    assert [r.judge for r in narrow.records] == [None, None]
    # half points are off a scale with step 1
    half = _jsonl(tmp_path, [{"item_id": "a", "human": 2.5, "judge": 2, "scale": {"min": 1,
                                                                                   "max": 5}}])
    halves = load_judgments(half)
    assert isinstance(halves, PointwiseJudgments) and halves.records[0].human is None
    assert "2.5 is off the declared scale" in halves.off_scale[0].describe()


def test_verdict_outside_a_b_tie_is_a_named_missing_verdict(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [
        {"item_id": "p1", "gold": "A", "verdict": "A", "swapped": False},
        {"item_id": "p1", "gold": "A", "verdict": "C", "swapped": True},
    ])
    data = load_judgments(path)
    assert isinstance(data, PairwiseJudgments)
    assert [r.verdict for r in data.records] == ["A", None]
    [label] = data.off_scale
    assert label.describe() == (f"{path}:2: verdict: 'C' is off the declared scale; expected "
                                "\"A\", \"B\" or \"tie\" (item 'p1'); counted as missing")
    # not a string at all: a structural error
    wrong = _jsonl(tmp_path, [{"item_id": "p1", "gold": "A", "verdict": 1, "swapped": False}],
                   "wrong.jsonl")
    assert _error(wrong).startswith(f"{wrong}:1: verdict: expected")


def test_quoted_number_and_unknown_field_and_missing_field(tmp_path: Path) -> None:
    quoted = _jsonl(tmp_path, [{"item_id": "a", "human": "4", "judge": 4}], "q.jsonl")
    assert _error(quoted).startswith(f"{quoted}:1: human: expected a number, true/false")
    unknown = _jsonl(tmp_path, [{"item_id": "a", "human": 4, "judge": 4, "jugde_id": "x"}],
                     "u.jsonl")
    assert _error(unknown) == (f"{unknown}:1: jugde_id: unknown field (check its spelling; extra "
                               "data goes under 'metadata') (item 'a')")
    missing = _jsonl(tmp_path, [{"item_id": "a", "human": 4, "judge": 4},
                                {"item_id": "b", "judge": 4}], "m.jsonl")
    assert _error(missing) == f"{missing}:2: human: Field required (item 'b')"


def test_duplicates_and_conflicting_labels(tmp_path: Path) -> None:
    dup = _jsonl(tmp_path, [{"item_id": "a", "human": 4, "judge": 4},
                            {"item_id": "a", "human": 4, "judge": 5}], "d.jsonl")
    assert "item 'a' appears twice for judge None (first on line 1)" in _error(dup)
    conflict = _jsonl(tmp_path, [{"item_id": "a", "human": 4, "judge": 4, "judge_id": "x"},
                                 {"item_id": "a", "human": 3, "judge": 4, "judge_id": "y"}],
                      "c.jsonl")
    assert _error(conflict).startswith(f"{conflict}:2: human: item 'a' has other human labels")
    gold = _jsonl(tmp_path, [{"item_id": "p", "gold": "A", "verdict": "A", "swapped": False},
                             {"item_id": "p", "gold": "B", "verdict": "A", "swapped": True}],
                  "g.jsonl")
    assert _error(gold).startswith(f"{gold}:2: gold: item 'p' has another gold label")


def test_mixed_kinds_scales_lengths_and_non_finite(tmp_path: Path) -> None:
    mixed = _jsonl(tmp_path, [{"item_id": "a", "human": True, "judge": 1},
                              {"item_id": "b", "human": 3, "judge": 1}], "mixed.jsonl")
    assert "human: mixes true/false labels with numbers (item 'b')" in _error(mixed)
    scales = _jsonl(tmp_path, [{"item_id": "a", "human": 1, "judge": 1,
                                "scale": {"min": 1, "max": 5}},
                               {"item_id": "b", "human": 1, "judge": 1,
                                "scale": {"min": 1, "max": 10}}], "scales.jsonl")
    assert _error(scales).startswith(f"{scales}:2: scale: differs from the scale declared")
    lengths = _jsonl(tmp_path, [{"item_id": "a", "human": 1, "judge": 1, "length": 30},
                                {"item_id": "b", "human": 1, "judge": 1, "output": "x y"}],
                     "len.jsonl")
    assert _error(lengths).startswith(f"{lengths}:2: length: missing while line 1 gives one")
    nan = tmp_path / "nan.jsonl"
    nan.write_text('{"item_id": "a", "human": NaN, "judge": 1}\n')
    assert "human: expected a finite number, got nan (item 'a')" in _error(nan)


def test_unknown_kind(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [{"item_id": "a", "score": 3}])
    assert "cannot tell the judgment kind" in _error(path)
    with pytest.raises(InputError, match="cannot tell the dataset kind"):
        load_dataset(path)


def test_csv_judgments_with_numbered_columns_and_empty_cells(tmp_path: Path) -> None:
    path = tmp_path / "j.csv"
    path.write_text(
        "item_id,human_1,human_2,judge,judge_id,scale_min,scale_max\n"
        "a,4,5,4,x,1,5\n"
        "b,3,,2,x,1,5\n"
        "c,,,3,x,1,5\n"
    )
    data = load_judgments(path)
    assert isinstance(data, PointwiseJudgments)
    assert [r.human for r in data.records] == [[4.0, 5.0], [3.0, None], [None, None]]
    assert data.scale == Scale(min=1, max=5)
    odd = tmp_path / "odd.csv"
    odd.write_text("item_id,gold,verdict,swapped\np,A,A,false\np,A,X,true\n")
    odd_data = load_judgments(odd)
    assert isinstance(odd_data, PairwiseJudgments)
    assert [(e.line, e.field, e.value) for e in odd_data.off_scale] == [(3, "verdict", "X")]


def test_pairwise_samples_are_numbered_in_file_order(tmp_path: Path) -> None:
    rows = [{"item_id": "p", "gold": "A", "verdict": v, "swapped": False} for v in "AAB"]
    data = load_judgments(_jsonl(tmp_path, rows))
    assert isinstance(data, PairwiseJudgments)
    assert [r.sample for r in data.records] == [0, 1, 2]
    clash = _jsonl(tmp_path, [{"item_id": "p", "gold": "A", "verdict": "A", "swapped": False,
                               "sample": 0},
                              {"item_id": "p", "gold": "A", "verdict": "B", "swapped": False,
                               "sample": 0}], "clash.jsonl")
    assert "already has sample 0 in this order" in _error(clash)


def test_dataset_errors(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [{"item_id": "a", "text": "t", "human": 6,
                              "scale": {"min": 1, "max": 5}}])
    off = load_dataset(path)
    assert isinstance(off, PointwiseDataset) and off.items[0].human is None
    assert off.off_scale[0].describe().startswith(f"{path}:1: human: 6 is off the declared")
    dup = _jsonl(tmp_path, [{"item_id": "p", "input": "i", "output_a": "a", "output_b": "b"},
                            {"item_id": "p", "input": "i", "output_a": "a", "output_b": "b"}],
                 "dup.jsonl")
    with pytest.raises(InputError, match=r":2: item_id: duplicate item 'p' \(first on line 1\)"):
        load_dataset(dup)
    bad_scale = _jsonl(tmp_path, [{"item_id": "a", "text": "t", "human": 1,
                                   "scale": {"min": 1, "max": 5, "step": 3}}], "scale.jsonl")
    with pytest.raises(InputError, match=r":1: scale: Value error, max - min must be a whole"):
        load_dataset(bad_scale)


def test_records_from_dataset_items_for_the_judge_runner() -> None:
    dataset = load_dataset(EXAMPLES / "pointwise_items.jsonl")
    assert isinstance(dataset, PointwiseDataset)
    item: PointwiseItem = dataset.items[0]
    record = pointwise_judgment(item, [5, None, 4], judge_id="m")
    assert record.human == item.human and record.judge == [5, None, 4]
    assert record.output == item.text
    pairs = load_dataset(EXAMPLES / "pairwise_items.jsonl")
    assert isinstance(pairs, PairwiseDataset)
    records = pairwise_judgments(pairs.items[0], {False: ["A", "A"], True: ["B"]})
    assert [(r.swapped, r.sample, r.verdict) for r in records] == [
        (False, 0, "A"), (False, 1, "A"), (True, 0, "B")]
    assert records[0].length_a == len(pairs.items[0].output_a.split())


def test_pairwise_dataset_from_csv_equals_the_jsonl_one(tmp_path: Path) -> None:
    csv_path = tmp_path / "pairs.csv"
    csv_path.write_text(
        "item_id,input,output_a,output_b,gold_1,gold_2,gold_3\n"
        'p1,"Capital of Australia?",Sydney,Canberra,B,B,A\n'
        'p2,"12 x 12?",144,124,A,,tie\n'
        'p3,"Say hi, politely.","Hi, nice to meet you.",Yo,,,\n',
        encoding="utf-8")
    from_csv = load_dataset(csv_path)
    assert isinstance(from_csv, PairwiseDataset)
    jsonl = _jsonl(tmp_path, [
        {"item_id": "p1", "input": "Capital of Australia?", "output_a": "Sydney",
         "output_b": "Canberra", "gold": ["B", "B", "A"]},
        {"item_id": "p2", "input": "12 x 12?", "output_a": "144", "output_b": "124",
         "gold": ["A", None, "tie"]},
        {"item_id": "p3", "input": "Say hi, politely.", "output_a": "Hi, nice to meet you.",
         "output_b": "Yo", "gold": [None, None, None]},
    ])
    assert [i.model_dump() for i in from_csv.items] == [
        i.model_dump() for i in load_dataset(jsonl).items]  # type: ignore[union-attr]
    # numbers stay text in output columns: "144" is an answer, not a score
    assert from_csv.items[1].output_a == "144"
    one_gold = tmp_path / "one.csv"
    one_gold.write_text("item_id,input,output_a,output_b,gold\np,i,a,b,tie\n", encoding="utf-8")
    loaded = load_dataset(one_gold)
    assert isinstance(loaded, PairwiseDataset) and loaded.items[0].gold == "tie"
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,input,output_a,output_b,gold\np,i,a,b,A\nq,i,a,b,C\n",
                   encoding="utf-8")
    odd_gold = load_dataset(bad)
    assert isinstance(odd_gold, PairwiseDataset) and odd_gold.items[1].gold is None
    assert [(e.line, e.item_id, e.field, e.value) for e in odd_gold.off_scale] == [
        (3, "q", "gold", "C")]
