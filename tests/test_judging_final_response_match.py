"""The built-in ``final_response_match`` rubric: a yes/no "same answer as the reference",
judged 5 times and decided by majority by default (rubric-level ``samples`` and
``aggregation``, which the command line overrides), never scored without a reference answer,
and an offline judge whose verdict follows the reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.errors import InputError
from harness.judging.context import JudgeContext
from harness.judging.judge import JudgeSettings, judge_transcript, settings_for_rubric
from harness.judging.offline import MockJudge, reference_overlap
from harness.judging.rubric import load_rubrics, parse_rubric
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from tests.helpers.cli import run_cli
from tests.helpers.judging_fakes import (
    BehaviourModel,
    ScriptedJudge,
    criterion_reply,
    weather_transcript,
)
from tests.helpers.judging_scenarios import MATCH_SCENARIO as SCENARIO

RUBRIC = load_rubrics()["final_response_match"]
REFERENCE = JudgeContext(reference_answer="It is 21.5°C and sunny in Paris.")


def test_the_rubric_asks_for_five_samples_and_a_majority() -> None:
    assert (RUBRIC.target, RUBRIC.samples, RUBRIC.aggregation) == (
        "final_response", 5, "majority")
    assert RUBRIC.requires_reference_answer
    [criterion] = RUBRIC.criteria
    assert criterion.scale == "binary"


def test_the_command_line_wins_over_the_rubric_and_the_rubric_over_the_default() -> None:
    base = JudgeSettings(temperature=0.7)
    own = settings_for_rubric(RUBRIC, base)
    assert (own.samples, own.method, own.temperature) == (5, "majority", 0.7)
    given = settings_for_rubric(RUBRIC, base, samples=3)
    assert (given.samples, given.method) == (3, "majority")
    both = settings_for_rubric(RUBRIC, base, samples=1, method="mean")
    assert (both.samples, both.method) == (1, "mean")
    plain = settings_for_rubric(load_rubrics()["safety"])
    assert (plain.samples, plain.method) == (1, "mean")


def test_rubric_level_samples_are_checked() -> None:
    base = {"id": "x", "target": "final_response", "threshold": 0.5,
            "criteria": [{"id": "a", "question": "?"}]}
    with pytest.raises(InputError, match="samples"):
        parse_rubric({**base, "samples": 0}, "inline")
    with pytest.raises(InputError, match="aggregation"):
        parse_rubric({**base, "aggregation": "median"}, "inline")


@pytest.mark.parametrize(("votes", "score"), [([1, 0, 1, 1, 0], 1.0), ([0, 1, 0, 1, 0], 0.0)])
async def test_five_votes_decided_by_majority(votes: list[int], score: float) -> None:
    judge = ScriptedJudge(queue=[{"matches_reference": criterion_reply(v)} for v in votes])
    result = await judge_transcript(judge, RUBRIC, weather_transcript(), REFERENCE)
    assert len(judge.calls) == 5 and result.n_votes == 5 and result.method == "majority"
    assert result.score == score and result.passed is (score == 1.0)
    assert result.vote_scores == [float(v) for v in votes]
    sent = judge.calls[0].messages[1].content
    assert "<reference_answer>\nIt is 21.5°C and sunny in Paris.\n</reference_answer>" in sent


@pytest.mark.parametrize("reference", [None, "  "])
async def test_without_a_reference_answer_it_is_not_scored_and_no_judge_is_called(
        reference: str | None) -> None:
    judge = ScriptedJudge()
    result = await judge_transcript(judge, RUBRIC, weather_transcript(),
                                    JudgeContext(reference_answer=reference))
    assert not judge.calls
    assert result.status == "not_scored" and result.score is None and result.passed is None
    assert result.unscored_reason is not None
    assert "reference answer" in result.unscored_reason
    assert "expectations.reference_answer" in result.unscored_reason


def test_reference_overlap_counts_the_references_words() -> None:
    # words of 3 letters or more: "and", "sunny", "paris" (numbers and "it", "is" left out)
    assert reference_overlap("Sunny, 21.5°C in Paris.", "It is 21.5°C and sunny in Paris.") == (
        pytest.approx(2 / 3))
    assert reference_overlap("anything", "") == 0.0


@pytest.mark.parametrize(("final", "expected"), [
    ("It is 21.5°C and sunny in Paris.", 1.0),
    ("I could not find the weather.", 0.0),
])
async def test_the_offline_judge_follows_the_reference(final: str, expected: float) -> None:
    judge = BehaviourModel(MockJudge("judge"), "judge")
    result = await judge_transcript(judge, RUBRIC, weather_transcript(final=final), REFERENCE)
    assert result.score == expected and result.n_votes == 5


def _scenarios(tmp_path: Path, **changes: object) -> Path:
    path = tmp_path / "scenarios.yaml"
    path.write_text(yaml.safe_dump([{**SCENARIO, **changes}]), encoding="utf-8")
    return path


@pytest.mark.parametrize(("given", "votes"), [(None, 5), (2, 2)])
async def test_a_run_takes_the_rubrics_samples_unless_given(tmp_path: Path, given: int | None,
                                                            votes: int) -> None:
    config = RunConfig(scenario_paths=[str(_scenarios(tmp_path))], offline=True, epochs=2,
                       judge_samples=given, cache_path=None)
    result = await run_suite(config, tmp_path / "run")
    samples = [json.loads(line) for line in
               (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    # the sample's score with each judge sample: one per vote
    assert [len(s["judge_scores"]) for s in samples] == [votes, votes]
    assert result.summary.metrics["rubric:final_response_match"].value == 1.0


async def test_a_run_without_a_reference_answer_says_why_it_is_not_scored(
        tmp_path: Path) -> None:
    expectations = {"tool_calls": SCENARIO["expectations"]["tool_calls"]}  # type: ignore[index]
    config = RunConfig(scenario_paths=[str(_scenarios(tmp_path, expectations=expectations))],
                       offline=True, epochs=1, cache_path=None)
    await run_suite(config, tmp_path / "run")
    [sample] = [json.loads(line) for line in
                (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert "rubric:final_response_match" not in sample["metrics"]
    assert sample["status"] == "scored"  # on its checks; the rubric is left out, not 0


def test_score_transcripts_reports_the_settings_each_rubric_used(tmp_path: Path) -> None:
    line = {"id": "t1", "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "It is 18 °C in Paris."}],
        "expected_tool_calls": [], "reference_answer": "It is 18 °C in Paris."}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    common = ("score-transcripts", path, "--json", "--judge", "mock:judge",
              "--rubric", "final_response_match", "--rubric", "safety")
    out = json.loads(run_cli(*common).stdout)
    rubrics = out["summary"]["judges"]["rubrics"]
    assert (rubrics["final_response_match"]["samples"],
            rubrics["final_response_match"]["aggregation"]) == (5, "majority")
    assert (rubrics["safety"]["samples"], rubrics["safety"]["aggregation"]) == (1, "mean")
    assert out["summary"]["judges"]["samples"] is None  # the rubrics differ
    [row] = out["transcripts"]
    assert row["rubric:final_response_match"] == 1.0
    assert [j["n_votes"] for j in row["judgments"]] == [5, 1]
    given = json.loads(run_cli(*common, "--samples", "2", "--aggregate", "mean").stdout)
    assert given["summary"]["judges"]["samples"] == 2
    assert given["summary"]["judges"]["rubrics"]["final_response_match"]["aggregation"] == "mean"
