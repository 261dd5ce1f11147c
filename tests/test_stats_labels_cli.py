"""`harness stats FILE --labels LABELS` (contracts 2 and 10): the corrected figures under
`corrected`, the same as the estimator computes from the same samples; only random labels
enter; and every kind of bad label file is one line naming file, line and field, or a
figure with a note, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.stats.corrected import MIN_LABELS, corrected_figure
from tests.helpers.cli import run_cli


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _suite(tmp_path: Path, n_labels: int = 30, seed: int = 1) -> tuple[Path, list[dict[str, Any]],
                                                                      np.ndarray, np.ndarray]:
    """40 scenarios x 3 epochs scored by a lenient judge; ``n_labels`` random samples
    labelled with a score and a pass flag. Returns the scores file, the label rows, the
    judge scores and the human scores (in file order)."""
    rng = np.random.default_rng(seed)
    mu = np.repeat(rng.beta(2, 2, 40), 3)
    human = rng.binomial(4, mu) / 4
    judge = np.clip(np.round((human + 0.15 + rng.normal(0, 0.1, 120)) * 4) / 4, 0, 1)
    scores = _write(tmp_path / "scores.jsonl", [
        {"scenario_id": f"s{i // 3:02d}", "epoch": i % 3, "score": float(judge[i]),
         "passed": bool(judge[i] >= 0.75)} for i in range(120)])
    labels = []
    for i in sorted(rng.choice(120, n_labels, replace=False).tolist()):
        where = {"scenario_id": f"s{i // 3:02d}", "epoch": i % 3, "annotator": "ana",
                 "random": True}
        labels += [where | {"target": "score", "value": float(human[i])},
                   where | {"target": "passed", "value": bool(human[i] >= 0.75)}]
    return scores, labels, judge, human


def _stats(*args: str | Path) -> dict[str, Any]:
    result = run_cli("stats", *args, "--json", "--bootstrap-resamples", "0")
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def test_corrected_object_is_the_estimators_figure(tmp_path: Path) -> None:
    scores, labels, judge, human = _suite(tmp_path)
    out = _stats(scores, "--labels", _write(tmp_path / "labels.jsonl", labels))
    mean = out["corrected"]["mean"]
    index = np.array(sorted({int(r["scenario_id"][1:]) * 3 + r["epoch"] for r in labels}))
    expect = corrected_figure(judge, np.arange(0, 121, 3), index, human[index], seed=0)
    for key in ("value", "ci_low", "ci_high", "lambda", "n_labelled"):
        assert mean[key] == pytest.approx(expect.model_dump()[key])
    assert mean["n_labelled"] == 30 and mean["withheld"] is None
    passed = out["corrected"]["pass_rate"]
    flags = (judge >= 0.75).astype(float)
    expect = corrected_figure(flags, np.arange(0, 121, 3), index,
                              (human[index] >= 0.75).astype(float), target="pass_rate")
    assert passed["value"] == pytest.approx(expect.value)
    assert passed["ci_low"] == pytest.approx(expect.ci_low)
    assert passed["judge_value"] == pytest.approx(out["pass_rate"]["value"])
    assert mean["judge_value"] == pytest.approx(out["mean"])
    # the judge is lenient by 0.15: the correction moves the mean down
    assert mean["value"] < out["mean"] - 0.05


def test_only_random_labels_correct_and_the_rest_are_counted(tmp_path: Path) -> None:
    scores, labels, _, _ = _suite(tmp_path)
    chosen = [dict(r, annotator="bo", random=False, value=1.0 if r["target"] == "score"
                   else True) for r in labels[:6]]
    rubric = {"scenario_id": "s00", "epoch": 0, "annotator": "bo", "target": "rubric:tone",
              "value": True, "random": False}
    plain = _stats(scores, "--labels", _write(tmp_path / "a.jsonl", labels))
    more = _stats(scores, "--labels", _write(tmp_path / "b.jsonl", labels + chosen + [rubric]))
    assert more["corrected"]["mean"] == plain["corrected"]["mean"]
    assert more["corrected"]["n_chosen_left_out"] == 6
    assert more["corrected"]["n_other_targets"] == 1
    assert any("6 labels chosen by hand (random: false) left out" in note
               for note in more["corrected"]["notes"])


def test_several_reviewers_of_one_sample_count_once_with_their_mean(tmp_path: Path) -> None:
    scores, labels, _, _ = _suite(tmp_path)
    second = [dict(r, annotator="cy") for r in labels]
    plain = _stats(scores, "--labels", _write(tmp_path / "a.jsonl", labels))
    twice = _stats(scores, "--labels", _write(tmp_path / "b.jsonl", labels + second))
    assert twice["corrected"]["mean"]["n_labelled"] == 30
    assert twice["corrected"]["mean"]["value"] == pytest.approx(
        plain["corrected"]["mean"]["value"])
    # a later label of the same reviewer, sample and target replaces the earlier one
    changed = dict(labels[0], value=0.0 if labels[0]["value"] else 1.0)
    again = _stats(scores, "--labels", _write(tmp_path / "c.jsonl", [*labels, changed]))
    assert again["corrected"]["mean"]["n_labelled"] == 30
    assert again["corrected"]["mean"]["value"] != plain["corrected"]["mean"]["value"]


def test_terminal_shows_judge_and_corrected_side_by_side(tmp_path: Path) -> None:
    scores, labels, _, _ = _suite(tmp_path)
    result = run_cli("stats", scores, "--labels", _write(tmp_path / "labels.jsonl", labels),
                     "--bootstrap-resamples", "0", "--half-width", "0.1")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "Judge and human-corrected figures" in text
    assert "│ judge │" in text and "corrected with │" in text and "30 human labels" in text
    assert "labels alone" in text and "random labels with the judge" in text
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


@pytest.mark.parametrize(("row", "where", "message"), [
    ({"scenario_id": "nope"}, ":2: scenario_id", "'nope' is not a scenario of"),
    ({"epoch": 7}, ":2: epoch", "has no scored sample at epoch 7"),
    ({"value": 1.5}, ":2: value", "score takes a number from 0 to 1"),
    ({"random": "yes"}, ":2: random", "expected true"),
    ({"target": "sore"}, ":2: target", "expected"),
])
def test_bad_labels_are_one_line_naming_file_line_and_field(
        tmp_path: Path, row: dict[str, Any], where: str, message: str) -> None:
    scores, labels, _, _ = _suite(tmp_path)
    bad = {k: v for k, v in (labels[0] | row).items() if v is not None}
    path = _write(tmp_path / "labels.jsonl", [labels[0], bad])
    result = run_cli("stats", scores, "--labels", path, "--json")
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr
    assert f"{path}{where}" in result.stderr and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_label_without_random_flag_names_the_missing_field(tmp_path: Path) -> None:
    scores, labels, _, _ = _suite(tmp_path)
    bare = {k: v for k, v in labels[0].items() if k != "random"}
    path = _write(tmp_path / "labels.jsonl", [bare])
    result = run_cli("stats", scores, "--labels", path)
    assert result.returncode == 2 and f"{path}:1: random: required field is missing" in (
        result.stderr)


def test_one_label_is_withheld_with_how_many_more(tmp_path: Path) -> None:
    scores, labels, _, _ = _suite(tmp_path)
    path = _write(tmp_path / "labels.jsonl", labels[:1])
    out = _stats(scores, "--labels", path)
    mean = out["corrected"]["mean"]
    assert mean["value"] is None and mean["n_labelled"] == 1
    assert f"{MIN_LABELS - 1} more" in mean["withheld"]
    assert out["corrected"]["pass_rate"] is None  # no pass label at all
    table = run_cli("stats", scores, "--labels", path, "--bootstrap-resamples", "0")
    text = " ".join(table.stdout.split())
    assert "withheld" in text and f"needs at least {MIN_LABELS} random labels, got 1" in text
    assert "no random labels" in text


def test_equal_labels_and_a_constant_judge_give_a_figure_with_a_note(tmp_path: Path) -> None:
    scores, labels, _, _ = _suite(tmp_path)
    equal = [dict(r, value=True) for r in labels if r["target"] == "passed"]
    out = _stats(scores, "--labels", _write(tmp_path / "eq.jsonl", equal))
    rate = out["corrected"]["pass_rate"]
    assert rate["value"] is not None and rate["ci_low"] < rate["ci_high"]
    assert any("every label has the same value" in note for note in rate["notes"])
    flat = _write(tmp_path / "flat.jsonl", [
        {"scenario_id": f"s{i // 3:02d}", "epoch": i % 3, "score": 0.5} for i in range(120)])
    out = _stats(flat, "--labels", _write(tmp_path / "all.jsonl", labels))
    mean = out["corrected"]["mean"]
    assert mean["lambda"] == 0 and any("carries no information" in n for n in mean["notes"])


def test_an_empty_label_file_is_an_error(tmp_path: Path) -> None:
    scores, _, _, _ = _suite(tmp_path)
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    result = run_cli("stats", scores, "--labels", path)
    assert result.returncode == 2 and f"{path}: holds no labels" in result.stderr


def test_score_labels_are_read_on_the_declared_score_range(tmp_path: Path) -> None:
    scores, labels, _, _ = _suite(tmp_path)
    rows = [json.loads(line) for line in scores.read_text().splitlines()]
    five = _write(tmp_path / "five.jsonl", [dict(r, score=1 + 4 * r["score"]) for r in rows])
    out = _stats(five, "--score-range", "1:5", "--labels",
                 _write(tmp_path / "labels.jsonl", labels))
    unit = _stats(scores, "--labels", _write(tmp_path / "l2.jsonl", labels))
    assert out["corrected"]["mean"]["value"] == pytest.approx(
        1 + 4 * unit["corrected"]["mean"]["value"])
