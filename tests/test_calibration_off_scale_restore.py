"""Off-scale labels, put back and attributed: restoring a rating inside a list of ratings keeps
its neighbours, a gold preference off the scale belongs to the dataset (not to a judge), and a
judge id of the wrong type is a named input error, not a crash in the screening."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.calibration import load_judgments
from harness.calibration.judgments import PairwiseJudgments, PointwiseJudgments, restore_off_scale
from harness.errors import InputError


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_restoring_an_off_scale_rating_keeps_the_other_ratings(tmp_path: Path) -> None:
    rows = [{"item_id": "a", "human": [3, 9, 4, 5], "judge": [2, 7, 5], "judge_id": "m",
             "scale": {"min": 1, "max": 5}},
            {"item_id": "b", "human": 0, "judge": 4, "judge_id": "m",
             "scale": {"min": 1, "max": 5}}]
    data = load_judgments(_write(tmp_path / "j.jsonl", rows))
    assert isinstance(data, PointwiseJudgments)
    assert [r.human for r in data.records] == [[3.0, None, 4.0, 5.0], None]
    restored = restore_off_scale(data)
    assert [(r.human, r.judge) for r in restored] == [
        ([3.0, 9.0, 4.0, 5.0], [2.0, 7.0, 5.0]), (0.0, 4.0)]


def test_an_off_scale_gold_preference_is_the_datasets_not_a_judges(tmp_path: Path) -> None:
    rows = [{"item_id": "p", "gold": ["A", "C"], "verdict": "Z", "swapped": False,
             "judge_id": "m"}]
    data = load_judgments(_write(tmp_path / "p.jsonl", rows))
    assert isinstance(data, PairwiseJudgments)
    assert [(e.field, e.judge_id, e.position, e.value) for e in data.off_scale] == [
        ("gold", None, 1, "C"), ("verdict", "m", None, "Z")]


def test_a_judge_id_that_is_not_text_is_a_named_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.jsonl", [{"item_id": "p", "gold": "A", "verdict": "Z",
                                          "swapped": False, "judge_id": 5}])
    with pytest.raises(InputError) as info:
        load_judgments(path)
    assert info.value.field == "judge_id" and info.value.location == 1
