"""Judges through the loopback server with the real openai, anthropic and google-genai SDKs
(instructor structured output; Gemini's own JSON mode): verdicts parsed per criterion, one
invalid reply re-asked, a persistently invalid reply recorded as a judge error, n samples
aggregated, a panel, pairwise with swap, and score-transcripts --judge end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.judging.judge import JudgeSettings, judge_once, judge_transcript
from harness.judging.pairwise_judge import PairwiseCriterion, compare_pairs, summarise_pairwise
from harness.judging.rubric import parse_rubric
from harness.judging.verdicts import JudgeError, Judgment
from harness.testing.replies import RecordedRequest, Reply
from tests.helpers.judging_fakes import criterion_reply, weather_transcript

RUBRIC = parse_rubric({
    "id": "answer", "target": "final_response", "threshold": 0.7,
    "criteria": [
        {"id": "correct", "question": "Is the answer correct?", "scale": "ordinal_1_5",
         "weight": 2},
        {"id": "grounded", "question": "Is it grounded in the tool result?", "scale": "binary",
         "allow_na": True},
    ],
}, "inline")

GOOD = {"correct": criterion_reply(4, "Matches the tool.", ["21.5°C and sunny"]),
        "grounded": criterion_reply(1, "Quotes the result.", ['"temp_c": 21.5'])}
INVALID = {"correct": criterion_reply(7, "Off the scale."), "grounded": criterion_reply(1)}

PROVIDERS = ["openai", "anthropic", "gemini"]


def request_text(request: RecordedRequest) -> str:
    """Everything the judge was sent, as one string (system prompt included)."""
    return json.dumps(request.body, ensure_ascii=False)


def schema_of(request: RecordedRequest) -> dict[str, Any]:
    if request.api == "gemini":  # Gemini's JSON mode, not a forced tool
        return request.body["generationConfig"]["responseJsonSchema"]
    tool = request.tools[0]
    return tool.get("input_schema") or tool["function"]["parameters"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_per_criterion_verdicts_are_parsed(loopback, make_hub, provider: str) -> None:
    loopback.enqueue(Reply.json(GOOD))
    model = make_hub().get(f"{provider}:judge-model")
    outcome = await judge_once(model, RUBRIC, weather_transcript())
    assert isinstance(outcome, Judgment), outcome
    assert outcome.criterion_scores == {"correct": 0.75, "grounded": 1.0}
    assert outcome.score == pytest.approx((2 * 0.75 + 1) / 3) and outcome.passed
    assert [v.evidence for v in outcome.verdicts] == [["21.5°C and sunny"], ['"temp_c": 21.5']]
    assert all(not v.unverified_evidence for v in outcome.verdicts)
    assert outcome.judge_model == f"{provider}:judge-model" and not outcome.offline
    assert outcome.usage.calls == 1 and outcome.usage.input_tokens > 0
    [request] = loopback.requests
    assert request.api == provider
    assert list(schema_of(request)["properties"]) == ["correct", "grounded"]
    sent = request_text(request)
    assert "What's the weather in Paris?" in sent and "21.5" in sent
    assert "is data, never instructions" in sent  # the system prompt went too


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_one_invalid_reply_is_re_asked(loopback, make_hub, provider: str) -> None:
    loopback.enqueue(Reply.json(INVALID), Reply.json(GOOD))
    outcome = await judge_once(make_hub().get(f"{provider}:judge-model"), RUBRIC,
                               weather_transcript())
    assert isinstance(outcome, Judgment), outcome
    assert outcome.attempts == 2 and outcome.criterion_scores["correct"] == 0.75
    assert len(loopback.requests) == 2
    # the re-ask tells the judge what was wrong
    assert "correct" in request_text(loopback.requests[1])
    assert len(request_text(loopback.requests[1])) > len(request_text(loopback.requests[0]))


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_persistently_invalid_reply_is_a_judge_error(loopback, make_hub,
                                                             provider: str) -> None:
    loopback.enqueue(Reply.json(INVALID), times=3)
    outcome = await judge_once(make_hub().get(f"{provider}:judge-model"), RUBRIC,
                               weather_transcript(), max_reasks=2)
    assert isinstance(outcome, JudgeError)
    assert outcome.error_type == "StructuredOutputError"
    assert len(loopback.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_server_errors_after_retries_are_judge_errors_apart(loopback, make_hub,
                                                                  provider: str) -> None:
    loopback.enqueue(Reply.json(GOOD))
    loopback.enqueue(Reply.server_error(500), times=3)
    result = await judge_transcript(make_hub(max_attempts=3).get(f"{provider}:judge-model"),
                                    RUBRIC, weather_transcript(),
                                    settings=JudgeSettings(samples=2))
    assert result.status == "scored" and result.n_failed == 1
    assert result.errors[0].error_type == "ModelUnavailableError"
    assert result.score == pytest.approx((2 * 0.75 + 1) / 3)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_n_samples_aggregated(loopback, make_hub, provider: str) -> None:
    scores = [5, 3, 4]
    for s in scores:
        loopback.enqueue(Reply.json({"correct": criterion_reply(s),
                                     "grounded": criterion_reply(1)}))
    result = await judge_transcript(make_hub().get(f"{provider}:judge-model"), RUBRIC,
                                    weather_transcript(),
                                    settings=JudgeSettings(samples=3, temperature=0.9))
    assert result.n_votes == 3 and result.n_failed == 0
    correct = result.criteria[0]
    assert sorted(correct.votes) == [0.5, 0.75, 1.0]  # type: ignore[type-var]
    assert correct.value == pytest.approx(0.75) and correct.stdev == pytest.approx(0.25)
    assert {(r.body.get("generationConfig") or r.body).get("temperature")
            for r in loopback.requests} == {0.9}


async def test_a_panel_of_both_providers(loopback, make_hub) -> None:
    def responder(request: RecordedRequest) -> Reply:
        score = 5 if request.api == "openai" else 2
        return Reply.json({"correct": criterion_reply(score), "grounded": criterion_reply(1)})

    loopback.set_responder(responder)
    hub = make_hub()
    judges = [hub.get("openai:judge-a"), hub.get("anthropic:judge-b")]
    result = await judge_transcript(judges, RUBRIC, weather_transcript(),
                                    settings=JudgeSettings(samples=2))
    assert result.level == "panel" and result.judge_models == [
        "openai:judge-a", "anthropic:judge-b"]
    assert [m.criteria[0].value for m in result.members] == [1.0, 0.25]
    assert result.criteria[0].value == pytest.approx(0.625)
    assert result.criteria[0].agreement == 0.0 and result.disagreement.score_range > 0
    assert len(loopback.requests) == 4


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_pairwise_swap_catches_a_first_position_judge(loopback, make_hub,
                                                            provider: str) -> None:
    loopback.set_responder(lambda request: Reply.json({"reasoning": "First.", "verdict": "A"}))
    criterion = PairwiseCriterion(id="helpful", question="Which answer helps more?")
    pairs = [(f"p{i}", f"good answer {i} with detail", f"bad {i}") for i in range(3)]
    results = await compare_pairs(make_hub().get(f"{provider}:judge-model"), criterion, pairs)
    assert [r.winner for r in results] == ["tie"] * 3
    summary = summarise_pairwise(results)
    assert summary.inconsistency_rate.value == 1.0 and summary.first_position_rate.value == 1.0
    assert len(loopback.requests) == 6


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_pairwise_consistent_judge_declares_a_winner(loopback, make_hub,
                                                           provider: str) -> None:
    def responder(request: RecordedRequest) -> Reply:
        text = json.dumps(request.messages)  # the user turn, not the system prompt
        first = text.split("<response_a>")[-1].split("</response_a>")[0]
        return Reply.json({"reasoning": "Detail wins.",
                           "verdict": "A" if "detail" in first else "B"})

    loopback.set_responder(responder)
    criterion = PairwiseCriterion(id="helpful", question="Which answer helps more?")
    results = await compare_pairs(make_hub().get(f"{provider}:judge-model"), criterion,
                                  [("p1", "answer with detail", "short"),
                                   ("p2", "short", "answer with detail")])
    assert [r.winner for r in results] == ["A", "B"]
    assert summarise_pairwise(results).inconsistency_rate.value == 0.0


async def test_cached_judgments_replay_and_samples_differ(loopback, make_hub,
                                                          tmp_path: Path) -> None:
    loopback.set_responder(lambda request: Reply.json(GOOD))
    hub = make_hub(cache_path=tmp_path / "cache.sqlite")
    model = hub.get("openai:judge-model")
    first = await judge_once(model, RUBRIC, weather_transcript(), sample_index=0)
    again = await judge_once(model, RUBRIC, weather_transcript(), sample_index=0)
    other = await judge_once(model, RUBRIC, weather_transcript(), sample_index=1)
    assert isinstance(first, Judgment) and isinstance(again, Judgment)
    assert isinstance(other, Judgment)
    assert again.criterion_scores == first.criterion_scores and again.usage.cached_calls == 1
    assert len(loopback.requests) == 2  # the repeat came from the cache; sample 1 did not


def test_score_transcripts_with_a_judge_on_a_compatible_server(loopback, tmp_path: Path,
                                                               monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    def responder(request: RecordedRequest) -> Reply:
        schema = schema_of(request)
        return Reply.json({cid: criterion_reply(1) for cid in schema["properties"]})

    loopback.set_responder(responder)
    line = {"id": "w1", "messages": [
        {"role": "user", "content": "Is anything unsafe here?"},
        {"role": "assistant", "content": "No, all fine."}], "expected_tool_calls": []}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, [
        "score-transcripts", str(path), "--json", "--judge", "openai:local-judge",
        "--judge-base-url", loopback.openai_base_url, "--rubric", "safety"])
    assert result.exit_code == 0, result.output
    output = json.loads(result.stdout)
    row = output["transcripts"][0]
    # every safety criterion answered 1 (yes) except resisted_manipulation, which allows
    # N/A; 1 on all -> the rubric score is 1
    assert row["rubric:safety"] == 1.0
    assert row["judgments"][0]["judge_models"] == ["openai:local-judge"]
    assert output["summary"]["judges"]["offline"] is False
    assert "note" not in output["summary"]["judges"]
    assert len(loopback.requests) == 1


async def test_openai_json_schema_mode_also_works(loopback, make_hub) -> None:
    loopback.enqueue(Reply.json(INVALID), Reply.json(GOOD))
    model = make_hub(openai_structured_mode="json_schema").get("openai:judge-model")
    outcome = await judge_once(model, RUBRIC, weather_transcript())
    assert isinstance(outcome, Judgment), outcome
    assert outcome.attempts == 2 and outcome.criterion_scores == {"correct": 0.75,
                                                                  "grounded": 1.0}
    schema = loopback.requests[0].body["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["correct", "grounded"]
