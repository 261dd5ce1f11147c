"""Pairwise comparison in both orders: a winner only when the orders agree; a judge that
always prefers the first position comes out as all ties and fully inconsistent."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import proportion_confint

from harness.errors import ModelUnavailableError
from harness.judging.offline import MockJudge
from harness.judging.pairwise_judge import (
    PairCandidate,
    PairwiseCriterion,
    compare_pair,
    compare_pairs,
    summarise_pairwise,
)
from harness.judging.prompts import template_hash
from harness.judging.rubric import load_rubrics
from tests.helpers.judging_fakes import BehaviourModel, ScriptedJudge, weather_transcript

CRITERION = PairwiseCriterion(id="helpfulness", question="Which answer helps the user more?")
GOOD = "Paris: 21.5°C and sunny. Light jacket in the evening."
POOR = "Weather is weather."


def first_position(call):
    return {"reasoning": "The first one.", "verdict": "A"}


def prefers(text: str):
    """A consistent judge: picks whichever shown response is ``text``."""
    def script(call):
        prompt = call.messages[1].content
        shown_a = prompt.split("<response_a>\n")[1].split("\n</response_a>")[0]
        return {"reasoning": "Content.", "verdict": "A" if shown_a == text else "B"}
    return script


async def test_each_pair_is_asked_in_both_orders() -> None:
    judge = ScriptedJudge(script=prefers(GOOD))
    result = await compare_pair(judge, CRITERION, GOOD, POOR, pair_id="p1")
    prompts = [c.messages[1].content for c in judge.calls]
    assert len(prompts) == 2
    firsts = {p.split("<response_a>\n")[1].split("\n")[0] for p in prompts}
    assert firsts == {GOOD, POOR}
    assert all(c.role == "judge" for c in judge.calls)
    assert result.status == "decided" and result.winner == "A" and result.consistent
    orders = {o.swapped: o for o in result.orders}
    assert orders[False].said == "A" and orders[True].said == "B"
    assert orders[True].verdict == "A"  # mapped back to the original labels
    assert result.prompt_hash == template_hash("pairwise")
    assert result.usage.calls == 2


async def test_a_consistent_judge_preferring_b() -> None:
    result = await compare_pair(ScriptedJudge(script=prefers(GOOD)), CRITERION, POOR, GOOD,
                                pair_id="p")
    assert result.winner == "B" and result.consistent


async def test_a_judge_that_always_prefers_the_first_position_yields_ties() -> None:
    judge = ScriptedJudge(script=first_position)
    pairs = [(f"p{i}", GOOD, POOR) if i % 2 else (f"p{i}", POOR, GOOD) for i in range(6)]
    results = await compare_pairs(judge, CRITERION, pairs)
    assert [r.winner for r in results] == ["tie"] * 6
    assert all(r.consistent is False for r in results)
    summary = summarise_pairwise(results)
    assert summary.ties == 6 and summary.wins_a == summary.wins_b == 0
    assert summary.inconsistency_rate.value == 1.0
    assert summary.first_position_rate.value == 1.0


async def test_a_tie_in_one_order_is_inconsistent() -> None:
    answers = iter([{"reasoning": "r", "verdict": "A"}, {"reasoning": "r", "verdict": "tie"}])
    result = await compare_pair(ScriptedJudge(script=lambda call: next(answers)), CRITERION,
                                GOOD, POOR, pair_id="p")
    assert result.winner == "tie" and result.consistent is False


async def test_ties_in_both_orders_are_a_consistent_tie() -> None:
    judge = ScriptedJudge(script=lambda call: {"reasoning": "same", "verdict": "tie"})
    result = await compare_pair(judge, CRITERION, GOOD, GOOD + " ", pair_id="p")
    assert result.winner == "tie" and result.consistent is True


async def test_no_tie_criterion_rejects_tie_and_re_asks() -> None:
    strict = PairwiseCriterion(id="better", question="Which is better?", allow_tie=False)
    judge = ScriptedJudge(queue=[{"reasoning": "r", "verdict": "tie"},
                                 {"reasoning": "r", "verdict": "A"},
                                 {"reasoning": "r", "verdict": "B"}])
    result = await compare_pair(judge, strict, GOOD, POOR, pair_id="p")
    assert result.status == "decided" and result.attempts == 3
    assert 'or "tie"' not in judge.calls[0].messages[1].content


async def test_a_failed_order_is_a_judge_error_without_a_winner() -> None:
    def script(call):
        if call.messages[1].content.split("<response_a>\n")[1].startswith(POOR):
            return ModelUnavailableError("500 x4")
        return {"reasoning": "r", "verdict": "A"}

    results = await compare_pairs(ScriptedJudge(script=script), CRITERION,
                                  [("bad", GOOD, POOR), ("ok", GOOD, GOOD)])
    assert results[0].status == "judge_error" and results[0].winner is None
    assert results[0].error_type == "ModelUnavailableError"
    summary = summarise_pairwise(results)
    assert summary.n_errors == 1 and summary.n_decided == 1


async def test_summary_rates_and_wilson_intervals() -> None:
    # 3 consistent pairs and 1 first-position flip
    answers = {"c1": "A", "c2": "A", "c3": "B"}

    def script(call):
        prompt = call.messages[1].content
        pair = prompt.split("<response_a>\n")[1].split(":")[0]
        if pair == "flip" or pair == "flop":
            return {"reasoning": "r", "verdict": "A"}
        shown_first_is_a = "/A" in prompt.split("<response_a>\n")[1].split("\n")[0]
        winner = answers[pair]
        said = winner if shown_first_is_a else {"A": "B", "B": "A"}[winner]
        return {"reasoning": "r", "verdict": said}

    pairs = [(p, f"{p}: /A text", f"{p}: /B text") for p in answers]
    pairs.append(("flip", "flip: /A", "flop: /B"))
    results = await compare_pairs(ScriptedJudge(script=script), CRITERION, pairs)
    assert [r.winner for r in results] == ["A", "A", "B", "tie"]
    summary = summarise_pairwise(results)
    assert (summary.wins_a, summary.wins_b, summary.ties) == (2, 1, 1)
    rate = summary.inconsistency_rate
    assert (rate.k, rate.n, rate.value) == (1, 4, 0.25)
    low, high = proportion_confint(1, 4, alpha=0.05, method="wilson")
    assert rate.ci_low == pytest.approx(low) and rate.ci_high == pytest.approx(high)
    # the response shown first was chosen once for each consistent pair (in the order where
    # the winner came first) and twice for the flip pair: 1 + 1 + 1 + 2 of 8 order verdicts
    first = summary.first_position_rate
    assert (first.k, first.n) == (5, 8)


def test_empty_summary_has_undefined_rates() -> None:
    summary = summarise_pairwise([])
    assert summary.inconsistency_rate.value is None and summary.n_pairs == 0


async def test_transcripts_can_be_compared_and_calibration_records_come_out() -> None:
    a = weather_transcript()
    b = weather_transcript(final="", tool_error=True)
    judge = ScriptedJudge(script=prefers(PairCandidate(transcript=a).render()))
    result = await compare_pair(judge, CRITERION, a, b, pair_id="t1")
    assert result.winner == "A"
    assert "TOOL RESULT from get_weather" in judge.calls[0].messages[1].content
    records = result.calibration_records(gold="A")
    assert sorted((r["swapped"], r["verdict"]) for r in records) == [(False, "A"), (True, "A")]
    assert all(r["item_id"] == "t1" and r["gold"] == "A" for r in records)


def test_candidates_need_exactly_one_of_text_or_transcript() -> None:
    with pytest.raises(ValueError):
        PairCandidate()
    with pytest.raises(ValueError):
        PairCandidate(text="x", transcript=weather_transcript())


def test_a_criterion_from_a_rubric_lists_its_questions() -> None:
    rubric = load_rubrics()["final_response_quality"]
    criterion = PairwiseCriterion.from_rubric(rubric)
    assert criterion.id == "final_response_quality"
    for crit in rubric.criteria:
        assert crit.question in criterion.guidance


async def test_offline_position_biased_judge_is_caught_and_the_fair_one_is_not() -> None:
    pairs = [(f"p{i}", GOOD * (i + 2), POOR) for i in range(4)]
    biased = await compare_pairs(BehaviourModel(MockJudge("judge-first"), "judge-first"),
                                 CRITERION, pairs)
    fair = await compare_pairs(BehaviourModel(MockJudge(), "judge"), CRITERION, pairs)
    assert summarise_pairwise(biased).inconsistency_rate.value == 1.0
    assert summarise_pairwise(fair).inconsistency_rate.value == 0.0
    assert all(r.winner == "A" for r in fair)
    assert summarise_pairwise(fair).offline is True
