"""Labels off the declared scale are missing labels, not errors: counted (n_off_scale_*),
named in the notes with file:line, item, value and the expected scale, warned about on stderr,
and every other statistic still computed, exactly as if the label were null."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.calibration import AnalysisOptions, Scale, analyse, load_judgments
from harness.calibration.report import PointwiseJudgeReport
from harness.cli import app
from harness.errors import InputError

OPTIONS = AnalysisOptions(n_resamples=200, seed=4, pass_threshold=4)
SCALE = {"min": 1, "max": 5}

ROWS: list[dict[str, Any]] = [
    {"item_id": "a", "human": [4, 5], "judge": [4, 4]},
    {"item_id": "b", "human": [2, 9], "judge": [2, 3]},   # rater 2 typed 9
    {"item_id": "c", "human": [3, 3], "judge": [3, 30]},  # sample 2 on another scale
    {"item_id": "d", "human": 0, "judge": [1, 1]},        # the only label is off
    {"item_id": "e", "human": [5, 4], "judge": [5, 5]},
    {"item_id": "f", "human": [1, 2], "judge": [2, 1]},
    {"item_id": "g", "human": [3, 4], "judge": [4, 3]},
]
# the same judgments with every off-scale label written as null
AS_NULL = {("b", "human"): [2, None], ("c", "judge"): [3, None], ("d", "human"): None}


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _two_judges(tmp_path: Path, null_off_scale: bool) -> Path:
    lines = []
    for judge_id in ("x", "y"):
        for row in ROWS:
            line = {**row, "judge_id": judge_id, "scale": SCALE}
            for field in ("human", "judge"):
                if null_off_scale and (row["item_id"], field) in AS_NULL:
                    line[field] = AS_NULL[(row["item_id"], field)]
            if judge_id == "y" and row["item_id"] == "c":
                line["judge"] = [3, 3]  # judge y stays on the scale
            lines.append(line)
    name = "nulls.jsonl" if null_off_scale else "judgments.jsonl"
    return _write(tmp_path / name, lines)


def test_off_scale_labels_are_counted_named_and_treated_as_missing(tmp_path: Path) -> None:
    path = _two_judges(tmp_path, null_off_scale=False)
    report = analyse(load_judgments(path), OPTIONS)
    assert report.n_off_scale_labels == 3  # b's and d's human labels once, c's sample for x
    assert [(e.line, e.item_id, e.field, e.judge_id, e.position, e.value)
            for e in report.off_scale_labels] == [
        (2, "b", "human", None, 1, 9), (3, "c", "judge", "x", 1, 30),
        (4, "d", "human", None, None, 0)]
    expected = "a number from 1 to 5 in steps of 1"
    assert f"{path}:2: human: 9 is off the declared scale; expected {expected} (item 'b'); " \
           "counted as missing" in report.notes
    assert f"{path}:3: judge: 30 is off the declared scale; expected {expected} (item 'c', " \
           "judge 'x'); counted as missing" in report.notes
    assert any(p.startswith("labels off the declared scale: ") for p in report.policies)
    x, y = report.judges
    assert isinstance(x, PointwiseJudgeReport) and isinstance(y, PointwiseJudgeReport)
    assert (x.n_off_scale_human_ratings, x.n_off_scale_judge_samples) == (2, 1)
    assert (y.n_off_scale_human_ratings, y.n_off_scale_judge_samples) == (2, 0)
    # d has no human label left: an unlabelled item, counted with the missing ones
    assert x.n_missing_human == 1 and x.n_items == 6
    assert x.n_missing_human_ratings == 1 and x.n_missing_judge_samples == 1


def test_every_other_statistic_is_what_nulls_would_give(tmp_path: Path) -> None:
    off = analyse(load_judgments(_two_judges(tmp_path, null_off_scale=False)), OPTIONS)
    nulls = analyse(load_judgments(_two_judges(tmp_path, null_off_scale=True)), OPTIONS)
    assert nulls.n_off_scale_labels == 0
    for with_off, with_null in zip(off.judges, nulls.judges, strict=True):
        assert isinstance(with_off, PointwiseJudgeReport)
        counts = {"n_off_scale_human_ratings", "n_off_scale_judge_samples"}
        assert with_off.model_dump(exclude=counts) == with_null.model_dump(exclude=counts)
        assert with_off.spearman.value is not None and with_off.mae.value is not None
    assert off.comparisons == nulls.comparisons
    assert off.human_baseline == nulls.human_baseline


def test_a_wider_scale_in_the_options_takes_the_labels_back(tmp_path: Path) -> None:
    path = _two_judges(tmp_path, null_off_scale=False)
    wide = Scale(min=0, max=30)
    options = OPTIONS.model_copy(update={"scale": wide})
    through_options = analyse(load_judgments(path), options)
    through_loader = analyse(load_judgments(path, scale=wide), options)
    assert through_options.n_off_scale_labels == 0
    assert through_options.judges == through_loader.judges
    judge = through_options.judges[0]
    assert isinstance(judge, PointwiseJudgeReport) and judge.n_items == 7
    # and a narrower one sets more aside, still naming the original file lines
    narrow = analyse(load_judgments(path), OPTIONS.model_copy(
        update={"scale": Scale(min=1, max=4)}))
    assert {(e.line, e.item_id, e.value) for e in narrow.off_scale_labels} >= {
        (1, "a", 5), (2, "b", 9), (4, "d", 0)}


def test_structural_errors_stay_errors(tmp_path: Path) -> None:
    quoted = _write(tmp_path / "q.jsonl", [{"item_id": "a", "human": "9", "judge": 4,
                                            "scale": SCALE}])
    with pytest.raises(InputError, match=r"q.jsonl:1: human: expected a number"):
        load_judgments(quoted)
    missing = _write(tmp_path / "m.jsonl", [{"item_id": "a", "human": 9, "judge": 3},
                                            {"item_id": "b", "human": 9, "scale": SCALE}])
    with pytest.raises(InputError, match=r"m.jsonl:2: judge: Field required \(item 'b'\)"):
        load_judgments(missing)


def test_cli_warns_on_stderr_and_still_reports(tmp_path: Path) -> None:
    path = _two_judges(tmp_path, null_off_scale=False)
    result = CliRunner().invoke(app, ["calibrate", "--judgments", str(path), "--json",
                                      "--resamples", "50"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["n_off_scale_labels"] == 3
    assert report["off_scale_labels"][0] == {
        "source": str(path), "line": 2, "item_id": "b", "field": "human", "judge_id": None,
        "position": 1, "value": 9.0, "expected": "a number from 1 to 5 in steps of 1"}
    assert report["judges"][0]["n_off_scale_judge_samples"] == 1
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 3
    assert warnings[0] == (f"warning: {path}:2: human: 9 is off the declared scale; expected a "
                           "number from 1 to 5 in steps of 1 (item 'b'); counted as missing")


def test_an_off_scale_label_in_a_dataset_does_not_stop_the_study(tmp_path: Path) -> None:
    items = _write(tmp_path / "items.jsonl", [
        {"item_id": f"q{i}", "text": text, "human": human, "scale": SCALE}
        for i, (text, human) in enumerate([
            ("The refund is on its way and reaches your card within three days.", [5, 4]),
            ("Ask someone else.", [1, 2]),
            ("Restart the router, then check the cable.", [3, 44]),
            ("Your order ships on Friday by courier.", [4, 4]),
        ])])
    result = CliRunner().invoke(app, [
        "calibrate", str(items), "--offline", "--rubric", "final_response_quality", "--json",
        "--out", str(tmp_path / "study"), "--cache-mode", "off", "--resamples", "50"])
    assert result.exit_code == 0, (result.output, result.exception)
    report = json.loads(result.stdout)
    assert report["n_off_scale_labels"] == 1 and report["n_items"] == 4
    assert report["n_off_scale_human_ratings"] == 1 and report["n_missing_human_ratings"] == 1
    note = (f"{items}:3: human: 44 is off the declared scale; expected a number from 1 to 5 in "
            "steps of 1 (item 'q2'); counted as missing")
    assert note in report["notes"]
    assert f"warning: {note}" in result.stderr
    # the study's records keep the label as missing; the judgments path reads them as such
    lines = [json.loads(line) for line in
             (tmp_path / "study" / "judgments.jsonl").read_text().splitlines()]
    assert lines[2]["human"] == [3, None]


PAIRS: list[dict[str, Any]] = [
    {"item_id": "p1", "gold": "A", "verdict": "A", "swapped": False},
    {"item_id": "p1", "gold": "A", "verdict": "A", "swapped": True},
    {"item_id": "p2", "gold": ["B", "b?", "B"], "verdict": "B", "swapped": False},
    {"item_id": "p2", "gold": ["B", "b?", "B"], "verdict": "first", "swapped": True},
    {"item_id": "p3", "gold": "B", "verdict": "A", "swapped": False},
    {"item_id": "p3", "gold": "B", "verdict": "B", "swapped": True},
    {"item_id": "p4", "gold": "A", "verdict": "tie", "swapped": False},
    {"item_id": "p4", "gold": "A", "verdict": "A", "swapped": True},
]


def test_pairwise_labels_that_are_not_a_preference_are_missing_not_fatal(
        tmp_path: Path) -> None:
    off = analyse(load_judgments(_write(tmp_path / "off.jsonl", PAIRS)), OPTIONS)
    as_null = [dict(row) for row in PAIRS]
    for row in as_null:
        if row["item_id"] == "p2":
            row["gold"] = ["B", None, "B"]
            if row["swapped"]:
                row["verdict"] = None
    nulls = analyse(load_judgments(_write(tmp_path / "null.jsonl", as_null)), OPTIONS)
    assert off.n_off_scale_labels == 2  # the item's gold repeats on each line: named once
    assert {(e.line, e.field, e.value, e.position) for e in off.off_scale_labels} == {
        (3, "gold", "b?", 1), (4, "verdict", "first", None)}
    assert off.judges == nulls.judges and off.human_baseline == nulls.human_baseline
    [judge] = off.judges
    assert judge.n_missing_verdicts == 1 and judge.accuracy.value is not None
    assert any("'first' is off the declared scale" in note and "item 'p2'" in note
               for note in off.notes)
    # a verdict of the wrong type is still a structural error
    with pytest.raises(InputError, match="verdict"):
        load_judgments(_write(tmp_path / "bad.jsonl", [{**PAIRS[0], "verdict": 3}]))


def test_every_off_label_verdict_is_counted_whatever_judge_or_order(tmp_path: Path) -> None:
    rows = [{"item_id": "i1", "gold": "A", "verdict": v, "swapped": swapped, "judge_id": j}
            for j, v, swapped in (("j1", "C", False), ("j1", "C", True), ("j2", "C", False),
                                  ("j2", "A", True))]
    data = load_judgments(_write(tmp_path / "v.jsonl", rows))
    assert [(e.line, e.judge_id) for e in data.off_scale] == [(1, "j1"), (2, "j1"), (3, "j2")]
