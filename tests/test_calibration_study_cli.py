"""`harness calibrate DATASET --judge MODEL --rubric ID`: the offline path end to end (the
same report as `--judgments` on the records it wrote), and bad input named on one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessError, InputError
from tests.helpers.cli import run_cli

EXAMPLES = Path(__file__).parents[1] / "examples" / "calibration"
POINTWISE = EXAMPLES / "pointwise_items.jsonl"
PAIRWISE = EXAMPLES / "pairwise_items.jsonl"


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, ["calibrate", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def invoke_error(*args: str) -> HarnessError:
    result = CliRunner().invoke(app, ["calibrate", *args])
    assert isinstance(result.exception, HarnessError), (result.output, result.exception)
    return result.exception


def without_study_lines(report: dict) -> dict:
    """A report without what says where it came from (the source file, the study's own
    policy and notes)."""
    return {k: v for k, v in report.items() if k not in ("source", "policies", "notes")}


def test_offline_pointwise_study_matches_the_judgments_path(tmp_path: Path) -> None:
    out = tmp_path / "study"
    common = ("--json", "--resamples", "100", "--seed", "2")
    report = json.loads(invoke(str(POINTWISE), "--offline", "--rubric",
                               "final_response_quality", "--samples", "3", "--out", str(out),
                               "--cache-mode", "off", *common))
    assert report["judge_id"] == "mock:judge" and report["n_items"] == 16
    assert report["samples_per_item"] == [3, 3]
    assert report["notes"][0].startswith("OFFLINE: these numbers come from mock: models "
                                         "(mock:judge)")
    assert report["options"]["pass_threshold"] == 4
    assert {p.split(":")[0] for p in report["policies"]} >= {"judge scores", "missing labels"}
    assert json.loads((out / "report.json").read_text()) == report
    again = json.loads(invoke("--judgments", str(out / "judgments.jsonl"),
                              "--pass-threshold", "4", *common))
    assert without_study_lines(again) == without_study_lines(report)


def test_offline_pairwise_study_with_a_position_biased_mock(tmp_path: Path) -> None:
    out = tmp_path / "study"
    report = json.loads(invoke(str(PAIRWISE), "--judge", "mock:judge-first", "--judge",
                               "mock:judge", "--rubric", "final_response_quality",
                               "--out", str(out), "--cache-mode", "off", "--json",
                               "--resamples", "50"))
    first, plain = report["judges"]
    assert first["judge_id"] == "mock:judge-first"
    assert first["position_consistency"]["value"] == 0.0
    assert first["first_position_rate"]["value"] == 1.0
    assert plain["judge_id"] == "mock:judge" and plain["position_consistency"]["value"] > 0.5
    assert {c["statistic"] for c in report["comparisons"]} >= {"position_consistency"}
    assert "mock:judge-first, mock:judge" in report["notes"][0]
    lines = (out / "judgments.jsonl").read_text().splitlines()
    assert len(lines) == 2 * 8 * 2  # judges x items x orders


def test_terminal_output_says_offline_first_and_a_rerun_resumes(tmp_path: Path) -> None:
    out = tmp_path / "study"
    args = (str(PAIRWISE), "--offline", "--rubric", "final_response_quality", "--out",
            str(out), "--cache-mode", "off", "--resamples", "50")
    result = CliRunner().invoke(app, ["calibrate", *args])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("OFFLINE: these numbers come from mock: models")
    assert "position_consistency" in result.stdout
    assert "8 judge×item judged, 0 resumed" in result.stderr
    result = CliRunner().invoke(app, ["calibrate", *args])
    assert "0 judge×item judged, 8 resumed; 0 model calls" in result.stderr


def test_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    proc = run_cli("calibrate", str(empty), "--offline", "--rubric", "final_response_quality",
                   "--out", str(tmp_path / "s"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"error: {empty}: the file holds no records (expected one " \
                                  "record per line)"


@pytest.mark.parametrize(("args", "message"), [
    ((str(POINTWISE), "--judgments", str(EXAMPLES / "pointwise_judgments.jsonl")),
     "DATASET / --judgments: give a labelled DATASET to run judges on, or --judgments FILE "
     "to analyse judgments that already exist (not both)"),
    ((), "DATASET / --judgments: give a labelled DATASET"),
    ((str(POINTWISE), "--offline", "--rubric", "no_such_rubric"),
     "unknown rubric 'no_such_rubric'; known rubrics: final_response_match, "
     "final_response_quality"),
    ((str(POINTWISE), "--offline"), "--rubric: running judges on a DATASET needs --rubric"),
    ((str(POINTWISE), "--rubric", "final_response_quality"), "--judge: running judges"),
    ((str(POINTWISE), "--offline", "--judge", "openai:gpt-4.1", "--rubric",
      "final_response_quality"), "--offline: openai:gpt-4.1 is not an offline model"),
    (("--judgments", str(EXAMPLES / "pairwise_judgments.jsonl"), "--judge", "mock:judge"),
     "--judge: runs judges on a DATASET; --judgments analyses judgments that already exist"),
    ((str(POINTWISE), "--offline", "--rubric", "tool_use_quality"),
     "rubric 'tool_use_quality' judges tool_use, which a labelled item does not have"),
    ((str(POINTWISE), "--offline", "--rubric", "final_response_quality", "--criterion",
      "brevity"), "--criterion: rubric 'final_response_quality' has no criterion 'brevity'; "
                  "its criteria: correctness, completeness, clarity, tone"),
    ((str(POINTWISE), "--offline", "--rubric", "groundedness"),
     f"{POINTWISE}: scale: the human labels are a number from 1 to 5 in steps of 1, but "
     "criterion 'no_contradictions' of rubric 'groundedness' answers a number from 0 to 1 in "
     "steps of 1; "
     "choose a criterion on the same scale (--criterion) or map its levels onto the human "
     "scale (--scale-map LEVEL=VALUE,...)"),
    ((str(POINTWISE), "--offline", "--rubric", "final_response_quality", "--scale-map",
      "1=1,2=2"), "--scale-map: map every level of criterion 'correctness' (1, 2, 3, 4, 5) "
                  "exactly once; missing [3, 4, 5]"),
    ((str(POINTWISE), "--offline", "--rubric", "final_response_quality", "--scale-map",
      "1:1"), "--scale-map: expected LEVEL=VALUE pairs"),
    ((str(POINTWISE), "--offline", "--rubric", "final_response_quality", "--no-swap"),
     "--no-swap: only applies to pairwise datasets"),
    ((str(PAIRWISE), "--judge", "gpt-4", "--rubric", "final_response_quality"),
     "model 'gpt-4' is not of the form provider:model"),
    ((str(PAIRWISE), "--offline", "--rubric", "final_response_quality", "--samples", "0"),
     "--samples: Input should be greater than or equal to 1"),
])
def test_bad_input_is_named(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    err = invoke_error(*args, "--out", str(tmp_path / "study"), "--cache-mode", "off")
    assert message in str(err)
    assert isinstance(err, InputError) or "provider:model" in message
    assert not (tmp_path / "study").exists()  # checked before any study directory is made
