"""A study directory whose judgments file was damaged, and study options that do not fit the
dataset: each is one error naming the file and line (or the option) word for word, and a
resumed study reads past what a kill or an editor left harmlessly (a blank line, a last line
cut off mid-write)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from harness.calibration.study import run_calibration
from harness.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
POINTWISE = ROOT / "examples" / "calibration" / "pointwise_items.jsonl"
PAIRWISE = ROOT / "examples" / "calibration" / "pairwise_items.jsonl"


def _study(out: Path, dataset: Path = POINTWISE, **options: object) -> object:
    return asyncio.run(run_calibration(dataset, ["mock:judge"], "final_response_quality",
                                       out_dir=out, **options))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """An offline study run once, and its judgment lines."""
    out = tmp_path_factory.mktemp("study") / "pointwise"
    _study(out)
    return out, (out / "judgments.jsonl").read_text(encoding="utf-8").splitlines()


def _copy(finished: tuple[Path, list[str]], tmp_path: Path, text: str) -> Path:
    source, _ = finished
    out = tmp_path / "study"
    out.mkdir(parents=True)
    (out / "study.json").write_bytes((source / "study.json").read_bytes())
    (out / "judgments.jsonl").write_text(text, encoding="utf-8")
    return out


def _resumed_error(out: Path) -> str:
    with pytest.raises(InputError) as info:
        _study(out)
    return str(info.value)


@pytest.mark.parametrize(("line", "expected"), [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
])
def test_a_bad_line_inside_the_file_names_the_file_and_line(
        finished: tuple[Path, list[str]], tmp_path: Path, line: str, expected: str) -> None:
    _, lines = finished
    out = _copy(finished, tmp_path, "\n".join([lines[0], line, *lines[1:]]) + "\n")
    assert _resumed_error(out) == f"{out / 'judgments.jsonl'}:2: {expected}"


def test_a_record_of_the_wrong_shape_names_the_file_line_and_field(
        finished: tuple[Path, list[str]], tmp_path: Path) -> None:
    _, lines = finished
    record = json.loads(lines[1])
    record["sample_index"] = "first"
    out = _copy(finished, tmp_path, "\n".join([lines[0], json.dumps(record)]) + "\n")
    message = _resumed_error(out)
    assert message.startswith(f"{out / 'judgments.jsonl'}:2: sample_index")


def test_blank_lines_and_a_cut_off_last_line_are_read_past(
        finished: tuple[Path, list[str]], tmp_path: Path) -> None:
    _, lines = finished
    # a blank line in the middle, and the last record cut off by a kill (no newline)
    text = "\n".join([lines[0], "", *lines[1:-1]]) + "\n" + lines[-1][:25]
    out = _copy(finished, tmp_path, text)
    _study(out)
    kept = (out / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    # every record kept, the cut-off one judged again: the same records as the first study
    assert sorted(kept) == sorted(lines)
    # the same cut-off line with its newline is damage, not a kill mid-write
    broken = _copy(finished, tmp_path / "newline", "\n".join([*lines[:-1], lines[-1][:25]])
                   + "\n")
    assert _resumed_error(broken) == f"{broken / 'judgments.jsonl'}:{len(lines)}: invalid JSON"


def test_a_judgments_file_without_its_study_file_is_not_a_study(tmp_path: Path) -> None:
    out = tmp_path / "study"
    out.mkdir()
    (out / "judgments.jsonl").write_text("{}\n", encoding="utf-8")
    assert _resumed_error(out) == (
        f"{out / 'judgments.jsonl'}: found without study.json: not a study directory written "
        "by harness calibrate; use another --out")


def test_a_scale_map_on_a_pairwise_dataset_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        _study(tmp_path / "pairs", PAIRWISE, scale_map={1: 1.0})
    assert str(info.value) == "--scale-map: only applies to pointwise datasets"
    assert not (tmp_path / "pairs" / "judgments.jsonl").exists()


def test_a_rubric_that_judges_no_text_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        asyncio.run(run_calibration(POINTWISE, ["mock:judge"], "tool_use_quality",
                                    out_dir=tmp_path / "tools"))
    message = str(info.value)
    assert message.startswith("--rubric: rubric 'tool_use_quality' judges ")
    assert message.endswith("final_response, conversation, agent_turn")


def test_a_pairwise_study_without_ties_tells_the_judge(tmp_path: Path) -> None:
    out = tmp_path / "pairs"
    _study(out, PAIRWISE, allow_ties=False, criterion="correctness")
    study = json.loads((out / "study.json").read_text(encoding="utf-8"))
    settings = study["settings"]
    assert (settings["allow_ties"], settings["criterion"]) == (False, "correctness")
    assert settings["dataset"] == str(PAIRWISE)
    verdicts = [json.loads(line) for line in
                (out / "judgments.jsonl").read_text(encoding="utf-8").splitlines()]
    assert verdicts and all(v["verdict"] in ("A", "B") for v in verdicts)
