"""The ``hallucinations`` rubrics (target ``sentence_grounding``): every sentence of the
agent's answer (and, for ``hallucinations_intermediate``, of its earlier texts) labelled in one
validated reply; score = supported / applicable sentences; nothing to check is not scored,
with the reason; the offline judge labels from the sources; the real SDKs' structured-output
path through the loopback server; a run's summary and report carry it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import InputError
from harness.judging.grounding import (
    NO_ANSWER,
    NO_APPLICABLE,
    LabelledSentence,
    answers_to_check,
    supported_share,
)
from harness.judging.judge import judge_once, judge_transcript
from harness.judging.offline import MockJudge, label_sentence
from harness.judging.prompts import build_judge_prompt
from harness.judging.rubric import load_rubrics, parse_rubric
from harness.judging.verdicts import JudgeError, Judgment, outcome_from_json
from harness.report.html.run_page import sample_view, write_run_report
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.runs.store import RunStore
from harness.testing.replies import Reply
from harness.transcript import transcript_from_openai
from tests.helpers.judging_fakes import BehaviourModel, ScriptedJudge, weather_transcript
from tests.helpers.judging_scenarios import MATCH_SCENARIO

RUBRICS = load_rubrics()
FINAL_ONLY, WITH_INTERMEDIATE = RUBRICS["hallucinations"], RUBRICS["hallucinations_intermediate"]
FINAL = "It is 21.5°C and sunny in Paris. Tomorrow brings snow. Anything else?"


def sentence(text: str, label: str, answer: int = 1, evidence: list[str] | None = None
             ) -> dict[str, Any]:
    return {"answer": answer, "sentence": text, "reasoning": "Checked.",
            "evidence": evidence or [], "label": label}


def two_turns() -> Any:
    """The agent speaks beside a tool call, then in a second turn, then gives its answer."""
    return transcript_from_openai("weather", [
        {"role": "system", "content": "You are a weather assistant."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "Checking Paris for you.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp_c": 21.5, "sky": "sunny"}'},
        {"role": "assistant", "content": "Paris has 30 degrees."},
        {"role": "user", "content": "Are you sure?"},
        {"role": "assistant", "content": "Sorry: it is 21.5 degrees and sunny."},
    ])


def test_the_share_counts_supported_among_applicable_sentences() -> None:
    labels = ["supported", "supported", "unsupported", "contradictory", "disputed",
              "not_applicable", "not_applicable"]
    sentences = [LabelledSentence.model_validate(sentence(f"s{i}", lab))
                 for i, lab in enumerate(labels)]
    assert supported_share(sentences) == pytest.approx(2 / 5)
    assert supported_share(sentences[-2:]) is None and supported_share([]) is None


def test_the_answers_to_check_are_the_final_one_or_every_agent_text() -> None:
    t = two_turns()
    [final] = answers_to_check(t, include_intermediate=False)
    assert (final.index, final.turn, final.final) == (1, 1, True)
    assert final.text == "Sorry: it is 21.5 degrees and sunny."
    every = answers_to_check(t, include_intermediate=True)
    assert [(a.index, a.turn, a.final) for a in every] == [
        (1, 0, False), (2, 0, False), (3, 1, True)]
    assert [a.text for a in every][:2] == ["Checking Paris for you.", "Paris has 30 degrees."]
    prompt = build_judge_prompt(WITH_INTERMEDIATE, t).messages[1].content
    assert '<agent_answer number="2">\nParis has 30 degrees.\n</agent_answer>' in prompt
    final_only = build_judge_prompt(FINAL_ONLY, t).messages[1].content
    assert "Paris has 30 degrees." not in final_only.split("answers to check")[1]


async def test_one_reply_labels_every_sentence_and_the_score_is_the_supported_share() -> None:
    reply = {"sentences": [
        sentence("It is 21.5°C and sunny in Paris.", "supported", evidence=['"temp_c": 21.5']),
        sentence("Tomorrow brings snow.", "unsupported"),
        sentence("Anything else?", "not_applicable"),
        sentence("Rain is due at noon.", "contradictory", evidence=["a quote made up"]),
    ]}
    judge = ScriptedJudge(queue=[reply])
    outcome = await judge_once(judge, FINAL_ONLY, weather_transcript(final=FINAL))
    assert isinstance(outcome, Judgment) and len(judge.calls) == 1
    assert outcome.score == pytest.approx(1 / 3) and outcome.passed is False
    assert outcome.criterion_scores == {"supported_sentences": pytest.approx(1 / 3)}
    assert [s.label for s in outcome.sentences] == [
        "supported", "unsupported", "not_applicable", "contradictory"]
    # a sentence the answer does not hold and a quote the sources lack are flagged
    assert [s.in_answer for s in outcome.sentences] == [True, True, True, False]
    assert outcome.sentences[3].unverified_evidence == ["a quote made up"]
    assert not outcome.sentences[0].unverified_evidence
    assert outcome_from_json(outcome.model_dump_json()) == outcome  # stored and read back


async def test_no_applicable_sentence_is_not_scored_with_its_reason() -> None:
    judge = ScriptedJudge(queue=[{"sentences": [sentence("Anything else?", "not_applicable")]}])
    outcome = await judge_once(judge, FINAL_ONLY, weather_transcript(final="Anything else?"))
    assert isinstance(outcome, Judgment)
    assert (outcome.score, outcome.passed, outcome.unscored_reason) == (None, None, NO_APPLICABLE)
    result = await judge_transcript(ScriptedJudge(queue=[{"sentences": []}]), FINAL_ONLY,
                                    weather_transcript(final="Hi."))
    assert result.status == "not_scored" and result.unscored_reason == NO_APPLICABLE


async def test_no_answer_at_all_is_not_scored_and_no_judge_is_called() -> None:
    judge = ScriptedJudge()
    outcome = await judge_once(judge, FINAL_ONLY, weather_transcript(final=""))
    assert isinstance(outcome, Judgment) and outcome.unscored_reason == NO_ANSWER
    assert not judge.calls


async def test_an_unknown_label_is_re_asked_then_a_judge_error() -> None:
    bad = {"sentences": [sentence("It is sunny.", "probably")]}
    good = {"sentences": [sentence("It is 21.5°C and sunny in Paris.", "supported")]}
    judge = ScriptedJudge(queue=[bad, good])
    outcome = await judge_once(judge, FINAL_ONLY, weather_transcript())
    assert isinstance(outcome, Judgment) and outcome.attempts == 2 and outcome.score == 1.0
    failing = ScriptedJudge(queue=[bad] * 3)
    error = await judge_once(failing, FINAL_ONLY, weather_transcript(), max_reasks=2)
    assert isinstance(error, JudgeError) and error.error_type == "StructuredOutputError"


@pytest.mark.parametrize(("text", "label"), [
    ("It is 21.5 degrees in Paris.", "supported"),  # its number is in the tool result
    ("Tomorrow it will be 30 degrees.", "unsupported"),  # 30 is in no source
    ("Paris is sunny today.", "supported"),  # most of its words are in the sources
    ("Would you like a forecast?", "not_applicable"),  # a question
    ("Glad to help!", "not_applicable"),  # shares no word with the sources
])
def test_the_offline_judge_labels_sentences_from_the_sources(text: str, label: str) -> None:
    sources = ["You are a weather assistant.", "What's the weather in Paris?",
               '{"city": "Paris", "temp_c": 21.5, "sky": "sunny"}']
    got, evidence, _ = label_sentence(text, sources)
    assert got == label
    assert bool(evidence) is (label == "supported")
    assert all(any(q in src for src in sources) for q in evidence)  # exact quotes


async def test_the_offline_judge_gives_a_valid_non_trivial_judgment() -> None:
    judge = BehaviourModel(MockJudge("judge"), "judge")
    outcome = await judge_once(judge, WITH_INTERMEDIATE, two_turns())
    assert isinstance(outcome, Judgment) and outcome.offline
    # "Checking Paris for you.": "paris" is in the sources and its other long word is not
    # (one of two: half, so supported); "30" is in no source; "21.5" is
    assert [(s.answer, s.label) for s in outcome.sentences] == [
        (1, "supported"), (2, "unsupported"), (3, "supported")]
    assert outcome.score == pytest.approx(2 / 3)
    assert all(s.in_answer and not s.unverified_evidence for s in outcome.sentences)


def test_a_grounding_rubric_has_one_binary_criterion_and_intermediate_needs_it() -> None:
    base = {"id": "g", "target": "sentence_grounding", "threshold": 0.8,
            "criteria": [{"id": "share", "question": "?", "scale": "binary"}]}
    assert parse_rubric(base, "inline").target == "sentence_grounding"
    with pytest.raises(InputError, match="criteria: a sentence_grounding rubric has exactly"):
        parse_rubric({**base, "criteria": [{"id": "share", "question": "?"}]}, "inline")
    with pytest.raises(InputError, match="include_intermediate: applies only to target"):
        parse_rubric({**base, "target": "final_response", "include_intermediate": True},
                     "inline")


# --- the real SDKs through the loopback server ---------------------------------------------

@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_labels_come_through_each_sdks_structured_output(loopback, make_hub,
                                                                   provider: str) -> None:
    invalid = {"sentences": [{"answer": 1, "sentence": "x", "label": "supported"}]}
    good = {"sentences": [
        sentence("It is 21.5°C and sunny in Paris.", "supported", evidence=['"temp_c": 21.5']),
        sentence("Tomorrow brings snow.", "unsupported"),
        sentence("Anything else?", "not_applicable")]}
    loopback.enqueue(Reply.json(invalid), Reply.json(good))
    model = make_hub().get(f"{provider}:judge-model")
    outcome = await judge_once(model, FINAL_ONLY, weather_transcript(final=FINAL))
    assert isinstance(outcome, Judgment), outcome
    assert outcome.attempts == 2 and outcome.score == pytest.approx(1 / 2)
    assert [s.label for s in outcome.sentences] == ["supported", "unsupported",
                                                    "not_applicable"]
    first = loopback.requests[0]
    tool = first.tools[0]
    schema = tool.get("input_schema") or tool["function"]["parameters"]
    assert list(schema["properties"]) == ["sentences"]
    sent = json.dumps(first.body, ensure_ascii=False)
    assert "Tomorrow brings snow." in sent and "not_applicable" in sent


# --- a run ---------------------------------------------------------------------------------

# the weather scenario of the final_response_match tests, with an answer that adds a claim
SCENARIO = {
    **MATCH_SCENARIO,
    "id": "weather-grounded",
    "expectations": {"tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}],
                     "reference_answer": "It is 18 °C in Paris. <b>Snow</b> at 3 pm."},
    "rubrics": ["hallucinations"],
}


async def test_a_run_scores_gates_and_reports_the_sentences(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump([SCENARIO]), encoding="utf-8")
    config = RunConfig(scenario_paths=[str(path)], offline=True, epochs=2, cache_mode="off")
    result = await run_suite(config, tmp_path / "run")
    metric = result.summary.metrics["rubric:hallucinations"]
    # the mock agent answers with the reference: "18" is in the tool result, "3" is not
    assert metric.value == pytest.approx(0.5) and metric.n_clusters == 1
    assert result.summary.counts.scored == 2
    with RunStore.open(tmp_path / "run") as store:
        record = next(store.iter_samples())
    assert record.passed is False  # 0.5 is under the rubric's threshold of 0.8
    view = sample_view(record)
    [judged] = view["judgments"]
    [one] = judged["samples"]
    assert [(s["sentence"], s["label"]) for s in one["sentences"]] == [
        ("It is 18 °C in Paris.", "supported"), ("<b>Snow</b> at 3 pm.", "unsupported")]
    page = write_run_report(tmp_path / "run").read_text(encoding="utf-8")
    assert "<b>Snow</b>" not in page  # embedded as data, never as markup


def test_the_report_shows_each_sentence_with_its_label_as_text(
        tmp_path: Path, open_report: Any) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump([SCENARIO]), encoding="utf-8")
    # Playwright's sync API runs outside an event loop, so the run goes first, in its own
    asyncio.run(run_suite(RunConfig(scenario_paths=[str(path)], offline=True, epochs=1,
                                    cache_mode="off"), tmp_path / "run"))
    opened = open_report(write_run_report(tmp_path / "run"))
    page = opened.page
    page.evaluate("location.hash = '#sample-0'")
    page.locator("#row-0.current").wait_for()
    page.locator("#drill details").evaluate_all("ds => ds.forEach(d => d.open = true)")
    rows = page.locator("#drill table.sentences tbody tr")
    assert rows.count() == 2
    bad = page.locator('#drill table.sentences tr[data-label="unsupported"]')
    assert "<b>Snow</b> at 3 pm." in (bad.text_content() or "")  # shown as text
    assert page.locator("#drill b").count() == 0  # never as markup
    good = page.locator('#drill table.sentences tr[data-label="supported"]')
    assert '"temperature_c": 18' in (good.locator("blockquote").first.text_content() or "")
    opened.screenshot(tmp_path / "sentences.png")
    opened.assert_quiet()
