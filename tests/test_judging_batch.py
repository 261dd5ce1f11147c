"""Judging a batch of existing transcripts (the judge part of score-transcripts), with fakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import InputError, ModelUnavailableError
from harness.formats.transcript_file import load_transcript_file, score_records
from harness.formats.transcript_judging import context_for_record
from harness.judging.batch import (
    OFFLINE_NOTE,
    JudgeItem,
    answer_transcript,
    judge_items,
    resolve_rubrics,
    summarise_run,
)
from harness.judging.judge import JudgeSettings
from harness.judging.offline import MockJudge
from harness.judging.prompts import template_hash
from tests.helpers.judging_fakes import BehaviourModel, ScriptedJudge, criterion_reply

LINES = [
    {"id": "ok", "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp_c": 18}'},
        {"role": "assistant", "content": "18°C in Paris."}],
     "expected_tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}],
     "reference_answer": "It is 18°C.", "metadata": {"goal": "Know the Paris weather"}},
    {"id": "silent", "messages": [{"role": "user", "content": "Hello?"}],
     "expected_tool_calls": []},
]


@pytest.fixture
def records(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in LINES) + "\n", encoding="utf-8")
    return load_transcript_file(path)


def test_context_comes_from_the_line(records) -> None:
    ctx = context_for_record(records[0])
    assert ctx.goal == "Know the Paris weather" and ctx.reference_answer == "It is 18°C."
    assert ctx.expected_tool_calls is not None and ctx.expected_tool_calls[0].name == (
        "get_weather")
    assert context_for_record(records[1]).goal is None


def test_unknown_rubric_is_an_error_before_any_model_call() -> None:
    with pytest.raises(InputError, match="--rubric: unknown rubric 'tone'"):
        resolve_rubrics(["safety", "tone"])
    assert [r.id for r in resolve_rubrics(["safety", "safety", "groundedness"])] == [
        "safety", "groundedness"]


async def test_batch_metrics_records_and_summary(records) -> None:
    rubrics = resolve_rubrics(["task_completion", "groundedness"])

    def script(call):
        if "Hello?" in call.messages[1].content and "groundedness" in call.messages[1].content:
            return ModelUnavailableError("503 x5")
        rubric = next(r for r in rubrics
                      if set(call.response_model.model_fields) == {c.id for c in r.criteria})
        return {c.id: criterion_reply(rubric.scale_of(c).highest) for c in rubric.criteria}

    judge = ScriptedJudge(script=script)
    items = [JudgeItem(r.id, r.transcript, context_for_record(r)) for r in records]
    settings = JudgeSettings(samples=2)
    results = await judge_items(items, rubrics, [judge], settings)
    assert [a.rubric_id for a in results["ok"]] == ["task_completion", "groundedness"]
    assert len(judge.calls) == 2 * 2 * 2  # items x rubrics x samples

    run = summarise_run(results, rubrics, ["openai:judge"], settings)
    assert run.metrics["ok"] == {"rubric:task_completion": 1.0, "rubric:groundedness": 1.0}
    assert run.metrics["silent"] == {"rubric:task_completion": 1.0, "rubric:groundedness": None}
    assert run.summary["judgments"] == {"scored": 3, "not_scored": 0, "judge_error": 1}
    assert run.summary["failed_votes"] == 2 and run.summary["offline"] is False
    assert run.summary["rubrics"]["groundedness"]["prompt_hash"] == template_hash(
        "final_response")
    assert len(run.warnings) == 1 and "id silent: rubric groundedness: judge error" in (
        run.warnings[0])

    # merged into the checks' output: metrics in each row and in the summary (a judge error
    # is left out of the mean, not counted as 0), full records per row
    output = run.attach(score_records(records, extra_metrics=run.metrics))
    assert output["summary"]["metrics"]["rubric:groundedness"] == {
        "mean": 1.0, "n": 1, "ci_low": None, "ci_high": None, "method": None}
    assert output["transcripts"][0]["rubric:task_completion"] == 1.0
    row = output["transcripts"][1]
    assert [j["status"] for j in row["judgments"]] == ["scored", "judge_error"]
    assert output["summary"]["judges"]["models"] == ["openai:judge"]
    assert run.warnings[0] in output["warnings"]
    json.dumps(output)  # serialisable as is


async def test_offline_judges_are_announced(records) -> None:
    rubrics = resolve_rubrics(["final_response_quality"])
    items = [JudgeItem(r.id, r.transcript, context_for_record(r)) for r in records]
    results = await judge_items(items, rubrics, [BehaviourModel(MockJudge(), "judge")])
    run = summarise_run(results, rubrics, ["mock:judge"], JudgeSettings())
    assert run.summary["offline"] is True and run.summary["note"] == OFFLINE_NOTE
    # the agent that never answered scores lower than the one that did
    ok, silent = run.metrics["ok"]["rubric:final_response_quality"], run.metrics["silent"][
        "rubric:final_response_quality"]
    assert ok is not None and silent is not None and ok > silent


async def test_a_labelled_answer_can_be_judged() -> None:
    transcript = answer_transcript("Paris is the capital.", question="Capital of France?",
                                   item_id="q1")
    assert transcript.final_response == "Paris is the capital." and transcript.user_turns == 1
    rubric = resolve_rubrics(["final_response_quality"])[0]
    judge = ScriptedJudge(queue=[{c.id: criterion_reply(5) for c in rubric.criteria}])
    [[result]] = (await judge_items([JudgeItem("q1", transcript)], [rubric], [judge])).values()
    assert result.score == 1.0
    prompt = judge.calls[0].messages[1].content
    assert "USER: Capital of France?" in prompt and "Paris is the capital." in prompt
    assert answer_transcript("x").messages[0].role == "assistant"
