"""`harness score-transcripts --judge MODEL --rubric ID`: judge metrics beside the checks,
offline judges announced, bad options reported as one line before any model call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessError, InputError
from tests.helpers.cli import run_cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "transcripts" / (
    "seed_transcripts.jsonl")


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["score-transcripts", str(EXAMPLE), *args])


def test_judges_add_rubric_metrics_beside_unchanged_checks() -> None:
    plain = json.loads(run("--json").stdout)
    judged_result = run("--json", "--judge", "mock:judge", "--rubric",
                        "final_response_quality", "--rubric", "tool_use_quality",
                        "--samples", "2", "--temperature", "0.5")
    assert judged_result.exit_code == 0, judged_result.output
    judged = json.loads(judged_result.stdout)
    for before, after in zip(plain["transcripts"], judged["transcripts"], strict=True):
        assert {k: v for k, v in after.items() if not k.startswith("rubric:")
                and k != "judgments"} == before
        assert 0 <= after["rubric:final_response_quality"] <= 1
        assert [j["rubric_id"] for j in after["judgments"]] == [
            "final_response_quality", "tool_use_quality"]
        assert all(j["n_votes"] == 2 for j in after["judgments"])
    summary = judged["summary"]
    assert summary["metrics"]["rubric:tool_use_quality"]["n"] == len(plain["transcripts"])
    judges = summary["judges"]
    assert judges["models"] == ["mock:judge"] and judges["offline"] is True
    assert "offline mock models" in judges["note"]
    assert judges["samples"] == 2 and judges["temperature"] == 0.5
    assert set(judges["rubrics"]) == {"final_response_quality", "tool_use_quality"}
    assert "note: judge scores come from offline mock models" in judged_result.stderr


def test_the_terminal_table_lists_rubric_scores() -> None:
    result = run("--judge", "mock:judge", "--rubric", "safety")
    assert result.exit_code == 0, result.output
    assert "rubric:safety" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--judge", "mock:judge"], "--judge needs at least one --rubric"),
        (["--rubric", "safety"], "--rubric needs at least one --judge"),
        (["--judge", "mock:judge", "--rubric", "tone"], "unknown rubric 'tone'"),
        (["--judge", "judge", "--rubric", "safety"], "not of the form provider:model"),
        (["--judge", "mock:nobody", "--rubric", "safety"], "unknown mock model"),
        (["--judge", "mock:judge", "--rubric", "safety", "--aggregate", "median"],
         "mean or majority"),
    ],
)
def test_bad_judge_options_are_input_errors(args: list[str], message: str) -> None:
    result = run("--json", *args)
    assert isinstance(result.exception, HarnessError)
    assert message in str(result.exception)


def test_user_rubrics_directory(tmp_path: Path) -> None:
    (tmp_path / "brevity.yaml").write_text(
        "id: brevity\ntarget: final_response\nthreshold: 0.5\ncriteria:\n"
        "  - {id: short, question: 'Is it short?', scale: binary}\n", encoding="utf-8")
    result = run("--json", "--judge", "mock:judge", "--rubric", "brevity",
                 "--rubrics-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "rubric:brevity" in json.loads(result.stdout)["summary"]["metrics"]
    (tmp_path / "broken.yaml").write_text("id: broken\ncriteria: []\n", encoding="utf-8")
    bad = run("--json", "--judge", "mock:judge", "--rubric", "brevity",
              "--rubrics-dir", str(tmp_path))
    assert isinstance(bad.exception, InputError) and "broken.yaml" in str(bad.exception)


def test_missing_key_is_one_line_and_exit_2_before_any_call(tmp_path: Path) -> None:
    no_keys: dict[str, str | None] = {name: None for name in (
        "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")}
    proc = run_cli("score-transcripts", str(EXAMPLE), "--json", "--judge",
                   "anthropic:claude-sonnet-4-5", "--rubric", "safety", env=no_keys)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "no ANTHROPIC_API_KEY set" in proc.stderr
    assert proc.stdout == ""
