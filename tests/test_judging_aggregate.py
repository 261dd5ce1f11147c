"""Repeated judging and panels: n samples aggregated by mean or majority, disagreement
reported, failed samples counted apart, all failed -> a judge error."""

from __future__ import annotations

import itertools
import statistics

import numpy as np
import pytest

from harness.errors import ModelUnavailableError, StructuredOutputError
from harness.judging.aggregate import aggregate_panel, aggregate_samples, aggregate_votes
from harness.judging.judge import JudgeSettings, judge_once, judge_transcript
from harness.judging.offline import MockJudge
from harness.judging.rubric import parse_rubric
from tests.helpers.judging_fakes import (
    BehaviourModel,
    ScriptedJudge,
    criterion_reply,
    weather_transcript,
)

RUBRIC = parse_rubric({
    "id": "r", "target": "conversation", "threshold": 0.6,
    "criteria": [
        {"id": "a", "question": "A?", "scale": "ordinal_1_5", "weight": 2},
        {"id": "b", "question": "B?", "scale": "binary", "allow_na": True},
    ],
}, "inline")


def by_sample(scores: dict[int, tuple[object, object]]):
    """A script answering sample i with the scores (a, b) given for it."""
    def script(call):
        value = scores[call.sample_index]
        if isinstance(value, Exception):
            return value
        a, b = value
        return {"a": criterion_reply(a), "b": criterion_reply(b)}
    return script


def norm_a(v: int) -> float:
    return (v - 1) / 4


def pairwise_agreement(values) -> float:
    pairs = list(itertools.combinations(values, 2))
    return sum(x == y for x, y in pairs) / len(pairs)


async def test_n_samples_aggregated_by_mean_with_disagreement() -> None:
    raw = {0: (5, 1), 1: (3, 1), 2: (4, "N/A"), 3: (3, 0)}
    judge = ScriptedJudge(script=by_sample(raw))
    result = await judge_transcript(judge, RUBRIC, weather_transcript(),
                                    settings=JudgeSettings(samples=4, temperature=0.8))
    assert sorted(c.sample_index for c in judge.calls) == [0, 1, 2, 3]
    assert {c.params.temperature for c in judge.calls} == {0.8}
    assert result.level == "samples" and result.status == "scored"
    assert result.n_votes == 4 and result.n_failed == 0

    a_votes = [norm_a(raw[i][0]) for i in range(4)]
    b_votes = [1.0, 1.0, None, 0.0]
    crit = {c.criterion_id: c for c in result.criteria}
    assert crit["a"].value == pytest.approx(np.mean(a_votes))
    assert crit["b"].value == pytest.approx(np.mean([1.0, 1.0, 0.0]))  # N/A left out
    assert crit["b"].n_applicable == 3
    assert crit["a"].stdev == pytest.approx(np.std(a_votes, ddof=1))
    assert crit["a"].range == pytest.approx(max(a_votes) - min(a_votes))
    assert crit["a"].agreement == pytest.approx(pairwise_agreement(a_votes))
    assert crit["b"].agreement == pytest.approx(pairwise_agreement(b_votes))

    expected = (2 * np.mean(a_votes) + np.mean([1.0, 1.0, 0.0])) / 3
    assert result.score == pytest.approx(expected)
    assert result.passed == (expected >= 0.6)
    # each vote's own rubric score, and their spread
    votes = [(2 * a + b) / 3 if b is not None else a for a, b in zip(a_votes, b_votes,
                                                                      strict=True)]
    assert result.vote_scores == pytest.approx(votes)
    assert result.disagreement.score_stdev == pytest.approx(np.std(votes, ddof=1))
    assert result.disagreement.score_range == pytest.approx(max(votes) - min(votes))
    assert result.disagreement.criteria_disagreeing == 1.0  # both criteria vary
    assert result.disagreement.pairwise_agreement == pytest.approx(
        np.mean([pairwise_agreement(a_votes), pairwise_agreement(b_votes)]))
    passes = [v >= 0.6 for v in votes]
    assert result.disagreement.pass_agreement == pytest.approx(
        max(passes.count(True), passes.count(False)) / 4)
    assert len(result.judgments) == 4 and not result.errors


async def test_majority_takes_the_mode_and_breaks_ties_low() -> None:
    raw = {0: (5, 1), 1: (5, 0), 2: (2, "N/A"), 3: (2, 0), 4: (4, "N/A")}
    result = await judge_transcript(
        ScriptedJudge(script=by_sample(raw)), RUBRIC, weather_transcript(),
        settings=JudgeSettings(samples=5, method="majority"))
    crit = {c.criterion_id: c for c in result.criteria}
    assert crit["a"].value == norm_a(2)  # 5 and 2 tie at two votes each: the lower wins
    assert crit["b"].value == 0.0  # 0 and N/A tie: a score beats N/A
    assert result.method == "majority"
    assert result.score == pytest.approx((2 * norm_a(2) + 0.0) / 3)


def test_majority_na_wins_only_outright() -> None:
    criteria, _, _ = aggregate_votes(
        RUBRIC, [{"a": 1.0, "b": None}, {"a": 1.0, "b": None}, {"a": 0.5, "b": 1.0}],
        "majority")
    assert criteria[1].value is None
    assert criteria[0].value == 1.0 and criteria[0].unanimous is False


def test_unanimous_votes_show_full_agreement() -> None:
    criteria, dis, _ = aggregate_votes(RUBRIC, [{"a": 0.75, "b": 1.0}] * 3)
    assert all(c.unanimous and c.agreement == 1.0 and c.stdev == 0 for c in criteria)
    assert dis.criteria_disagreeing == 0 and dis.pairwise_agreement == 1.0
    assert dis.score_stdev == 0 and dis.pass_agreement == 1.0


def test_one_vote_leaves_disagreement_undefined_not_zero() -> None:
    criteria, dis, _ = aggregate_votes(RUBRIC, [{"a": 0.75, "b": 1.0}])
    assert criteria[0].stdev is None and criteria[0].agreement is None
    assert dis.score_stdev is None and dis.criteria_disagreeing is None


NA_RUBRIC = parse_rubric({
    "id": "na", "target": "conversation", "threshold": 0.5,
    "criteria": [{"id": "a", "question": "A?", "scale": "binary", "allow_na": True},
                 {"id": "b", "question": "B?", "scale": "binary", "allow_na": True}],
}, "inline")
ALL_NA = {"a": None, "b": None}


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ([{"a": 1.0, "b": 1.0}, {"a": 1.0, "b": None}, ALL_NA], 1.0),
        ([{"a": 1.0, "b": 1.0}, {"a": 0.0, "b": 0.0}, ALL_NA, ALL_NA, ALL_NA], 0.5),
        ([{"a": 1.0, "b": 1.0}, ALL_NA, ALL_NA], None),  # one verdict: nothing to agree with
    ],
    ids=["two-passes", "split", "one-verdict"],
)
def test_pass_agreement_leaves_out_votes_with_no_verdict(
        votes: list[dict[str, float | None]], expected: float | None) -> None:
    # A vote that found every criterion N/A gives no pass/fail verdict: it is neither in the
    # majority nor against it.
    _, dis, scores = aggregate_votes(NA_RUBRIC, votes)
    assert scores.count(None) == sum(v is ALL_NA for v in votes)
    assert dis.pass_agreement == expected


async def test_failed_samples_are_counted_apart() -> None:
    raw = {0: (5, 1), 1: ModelUnavailableError("429 x5"), 2: (3, 1)}
    result = await judge_transcript(ScriptedJudge(script=by_sample(raw)), RUBRIC,
                                    weather_transcript(), settings=JudgeSettings(samples=3))
    assert result.status == "scored" and result.n_votes == 3 and result.n_failed == 1
    assert result.n_ok == 2 and len(result.errors) == 1
    assert result.errors[0].error_type == "ModelUnavailableError"
    assert result.errors[0].sample_index == 1
    assert result.criteria[0].value == pytest.approx(np.mean([norm_a(5), norm_a(3)]))


async def test_all_samples_failed_is_a_judge_error() -> None:
    raw = {i: StructuredOutputError("still invalid") for i in range(3)}
    result = await judge_transcript(ScriptedJudge(script=by_sample(raw)), RUBRIC,
                                    weather_transcript(), settings=JudgeSettings(samples=3))
    assert result.status == "judge_error"
    assert result.score is None and result.passed is None
    assert result.n_failed == 3 and "all 3 judge vote(s) failed" in (result.error or "")
    assert "StructuredOutputError" in (result.error or "")


async def test_panel_aggregates_each_judge_then_across_judges() -> None:
    strict = ScriptedJudge(name="fake:strict", script=by_sample({0: (2, 0), 1: (3, 0)}))
    kind = ScriptedJudge(name="fake:kind", script=by_sample({0: (5, 1), 1: (5, 1)}))
    middle = ScriptedJudge(name="fake:middle", script=by_sample({0: (4, 1), 1: (3, "N/A")}))
    result = await judge_transcript([strict, kind, middle], RUBRIC, weather_transcript(),
                                    settings=JudgeSettings(samples=2))
    assert result.level == "panel" and result.n_votes == 3
    assert result.judge_models == ["openai:strict", "openai:kind", "openai:middle"]
    members = {m.judge_models[0]: m for m in result.members}
    assert members["openai:strict"].criteria[0].value == pytest.approx(
        np.mean([norm_a(2), norm_a(3)]))
    per_judge_a = [np.mean([norm_a(2), norm_a(3)]), 1.0, np.mean([norm_a(4), norm_a(3)])]
    per_judge_b = [0.0, 1.0, 1.0]
    crit = {c.criterion_id: c for c in result.criteria}
    assert crit["a"].value == pytest.approx(np.mean(per_judge_a))  # judges weigh equally
    assert crit["b"].value == pytest.approx(np.mean(per_judge_b))
    assert crit["a"].stdev == pytest.approx(statistics.stdev(per_judge_a))
    assert result.score == pytest.approx((2 * np.mean(per_judge_a) + np.mean(per_judge_b)) / 3)
    assert len(result.vote_scores) == 3


async def test_panel_with_one_judge_failing_entirely() -> None:
    good = ScriptedJudge(name="fake:good", script=by_sample({0: (5, 1)}))
    down = ScriptedJudge(name="fake:down", queue=[ModelUnavailableError("503")])
    result = await judge_transcript([good, down], RUBRIC, weather_transcript())
    assert result.status == "scored" and result.n_failed == 1
    assert result.score == 1.0
    assert [m.status for m in result.members] == ["scored", "judge_error"]
    everyone_down = aggregate_panel(RUBRIC, [result.members[1], result.members[1]])
    assert everyone_down.status == "judge_error" and everyone_down.score is None


async def test_aggregates_say_when_numbers_come_from_offline_models() -> None:
    offline = await judge_transcript(BehaviourModel(MockJudge(), "judge"), RUBRIC,
                                     weather_transcript())
    online = await judge_transcript(ScriptedJudge(script=by_sample({0: (5, 1)})), RUBRIC,
                                    weather_transcript())
    assert offline.offline is True and online.offline is False


async def test_aggregate_rejects_mixed_rubrics_and_empty_input() -> None:
    other = parse_rubric({"id": "other", "target": "conversation", "threshold": 0.5,
                          "criteria": [{"id": "a", "question": "?"}]}, "inline")
    outcome = await judge_once(ScriptedJudge(queue=[{"a": criterion_reply(3)}]), other,
                               weather_transcript())
    with pytest.raises(ValueError, match="another rubric"):
        aggregate_samples(RUBRIC, [outcome])
    with pytest.raises(ValueError):
        aggregate_samples(RUBRIC, [])
    with pytest.raises(ValueError):
        await judge_transcript([], RUBRIC, weather_transcript())


def test_settings_validate_their_ranges() -> None:
    with pytest.raises(ValueError):
        JudgeSettings(samples=0)
    with pytest.raises(ValueError):
        JudgeSettings(method="median")  # type: ignore[arg-type]
    assert JudgeSettings(temperature=0.3).params().temperature == 0.3
