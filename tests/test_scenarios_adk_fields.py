"""Scenario fields added for ADK eval sets: per-rubric options and inline rubrics reaching the
judging, per-turn reference answers, metadata, and an agent left to the run's --agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import InputError, InputErrors
from harness.scenarios.judge_context import context_for_scenario
from harness.scenarios.loading import load_scenarios, parse_scenario
from tests.helpers.cli import run_cli

BASE: dict[str, Any] = {
    "id": "opts",
    "user": {"goal": "greet", "script": ["hello"]},
    "agent": {"model": "mock:agent"},
    "expectations": {"reference_answer": "Hello there, how can I help?"},
}
MINE = {"id": "mine", "target": "final_response", "threshold": 0.0,
        "criteria": [{"id": "polite", "question": "Is the answer polite?", "scale": "binary"}]}


def _run(tmp_path: Path, **fields: Any) -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**BASE, **fields}))
    result = run_cli("run", path, "--offline", "--epochs", "1", "--out", tmp_path / "run",
                     "--cache-mode", "off")
    assert result.returncode in (0, 1), result.stderr
    line = (tmp_path / "run" / "samples.jsonl").read_text().splitlines()[0]
    return dict(json.loads(line))


@pytest.mark.parametrize(("threshold", "passed"), [(None, True), (1.0, False)])
def test_rubric_options_reach_the_judging(
    threshold: float | None, passed: bool, tmp_path: Path
) -> None:
    # mock:judge's majority of two samples gives final_response_quality 0.825 here (their
    # mean would be 0.9125): it passes the rubric's own threshold (0.75), not an option of 1.0
    options: dict[str, Any] = {"samples": 2, "aggregation": "majority"}
    if threshold is not None:
        options["threshold"] = threshold
    sample = _run(tmp_path, rubrics=["final_response_quality", "mine"],
                  rubric_options={"final_response_quality": options}, inline_rubrics=[MINE])
    assert sample["metrics"]["rubric:final_response_quality"] == pytest.approx(0.825)
    assert sample["metrics"]["rubric:mine"] == 1.0  # the inline rubric was judged
    assert sample["passed"] is passed
    assert sample["usage"]["judge"]["calls"] == 2 + 1  # two samples, then the inline rubric once


@pytest.mark.parametrize(("fields", "expected"), [
    ({"rubric_options": {"safety": {"threshold": 0.5}}},
     "rubric_options.safety: options for rubric 'safety', which rubrics does not list"),
    ({"inline_rubrics": [MINE]}, "inline_rubrics[0].id: inline rubric 'mine' is not listed"),
    ({"rubrics": ["safety"], "inline_rubrics": [{**MINE, "id": "safety"}]},
     "inline_rubrics[0].id: rubric 'safety' is already defined"),
    ({"rubrics": ["x"], "rubric_options": {"x": {"samples": 0}}},
     "rubric_options.x.samples: Input should be greater than or equal to 1"),
    ({"metadata": {"when": float("nan")}}, "metadata: must hold JSON values only"),
    ({"expectations": {"reference_answer": "a", "reference_answers": [{"turn": 0,
                                                                       "answer": "b"}]}},
     "expectations: give reference_answer (the last message) or reference_answers"),
    ({"expectations": {"reference_answers": [{"turn": 0, "answer": "a"},
                                             {"turn": 0, "answer": "b"}]}},
     "expectations: reference_answers: turn 0 has more than one answer"),
])
def test_bad_fields_are_named(fields: dict[str, Any], expected: str) -> None:
    with pytest.raises((InputError, InputErrors)) as info:
        parse_scenario({**BASE, **fields}, source="s.yaml",
                       known_rubrics={"safety", "final_response_quality"})
    assert expected in str(info.value), str(info.value)


def test_judges_see_the_last_turns_reference_answer() -> None:
    scenario = parse_scenario({**BASE, "user": {"goal": "g", "script": ["a", "b"]},
                               "expectations": {"reference_answers": [
                                   {"turn": 1, "answer": "second"},
                                   {"turn": 0, "answer": "first"}]}})
    assert context_for_scenario(scenario).reference_answer == "second"


def test_an_agent_without_a_model_takes_the_runs(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**BASE, "agent": {"system_prompt": "Be brief."}}))
    (scenario,) = load_scenarios([path])
    assert scenario.agent.model is None
    result = run_cli("run", path, "--agent", "mock:agent", "--epochs", "1", "--out",
                     tmp_path / "run", "--cache-mode", "off", "--no-judge")
    assert result.returncode == 0, result.stderr


def test_the_command_lines_judge_samples_win_over_rubric_options(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**BASE, "rubrics": ["final_response_quality"],
                                    "rubric_options": {"final_response_quality": {
                                        "samples": 3, "aggregation": "majority"}}}))
    result = run_cli("run", path, "--offline", "--epochs", "1", "--out", tmp_path / "run",
                     "--cache-mode", "off", "--judge-samples", "1")
    assert result.returncode in (0, 1), result.stderr
    sample = json.loads((tmp_path / "run" / "samples.jsonl").read_text().splitlines()[0])
    assert sample["usage"]["judge"]["calls"] == 1  # not the options' 3
