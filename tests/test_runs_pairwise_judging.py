"""``judge_pairs``, the judging half of ``harness pairwise``, in process with scripted judges:
what each judge is asked (both orders, every sample, the scenario's context, the generation
settings, the re-ask budget), at most ``concurrency`` comparisons at once, progress from 0 to
the total, outcomes in the pairs' order, and a configuration failure raised as itself."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from harness.errors import ModelConfigError
from harness.judging.context import JudgeContext
from harness.judging.pairwise_judge import PairwiseCriterion
from harness.models.request import ModelRequest
from harness.models.types import GenerationParams, Message, StructuredResponse, T
from harness.runs.pairwise_runs import judge_pairs
from harness.runs.pairwise_runs_report import SamplePair
from harness.transcript import Transcript
from tests.helpers.judging_fakes import Call, ScriptedJudge

CRITERION = PairwiseCriterion(id="helpful", question="Which answer helps more?")


def _transcript(sid: str, epoch: int, answer: str) -> Transcript:
    """A one-turn conversation; each epoch's question differs, so each pair's prompt does."""
    return Transcript(scenario_id=sid, epoch=epoch, stop_reason="goal_met", messages=[
        Message(role="user", content=f"Question {epoch}: weather in Paris?"),
        Message(role="assistant", content=f"{answer} answer to question {epoch}")])


def _pairs(n: int) -> list[SamplePair]:
    return [SamplePair(f"s{i % 3}", i, _transcript(f"s{i % 3}", i, "poor"),
                       _transcript(f"s{i % 3}", i, "good")) for i in range(n)]


def prefers_good(call: Call) -> dict[str, str]:
    shown_a = call.messages[1].content.split("<response_a>")[1].split("</response_a>")[0]
    return {"reasoning": "Content.", "verdict": "A" if "AGENT: good" in shown_a else "B"}


@dataclass
class SlowJudge(ScriptedJudge):
    """A scripted judge that takes a moment per call and records how many distinct pairs
    it was asked about at once."""

    in_flight: dict[str, int] | None = None
    peak: int = 0

    async def structured(self, request: ModelRequest, response_model: type[T]
                         ) -> StructuredResponse[T]:
        if self.in_flight is None:
            self.in_flight = {}
        pair = request.messages[1].content.split("question ")[1].split("\n")[0]
        self.in_flight[pair] = self.in_flight.get(pair, 0) + 1
        self.peak = max(self.peak, len(self.in_flight))
        try:
            await asyncio.sleep(0.002)
            return await super().structured(request, response_model)
        finally:
            self.in_flight[pair] -= 1
            if not self.in_flight[pair]:
                del self.in_flight[pair]


async def test_defaults_one_sample_two_reasks_eight_at_once_and_progress() -> None:
    judge = SlowJudge(name="fake:slow", script=prefers_good)
    seen: list[tuple[int, int]] = []
    pairs = _pairs(20)
    outcomes = await judge_pairs(pairs, [judge], CRITERION,
                                 progress=lambda done, total: seen.append((done, total)))
    assert len(judge.calls) == 2 * 20  # both orders, one sample
    assert {c.request.sample_index for c in judge.calls} == {0}
    assert {c.request.max_reasks for c in judge.calls} == {2}
    assert {c.request.role for c in judge.calls} == {"judge"}
    assert judge.peak == 8
    assert seen == [(k, 20) for k in range(21)]
    assert [(o.scenario_id, o.epoch) for o in outcomes] == [(p.scenario_id, p.epoch)
                                                            for p in pairs]
    assert {o.winner for o in outcomes} == {"B"}
    assert all(o.votes[0].judge_model == "openai:slow" for o in outcomes)


async def test_samples_contexts_settings_and_every_judge_are_passed_on() -> None:
    j1 = ScriptedJudge(name="fake:j1", script=prefers_good)
    j2 = ScriptedJudge(name="fake:j2", script=prefers_good)
    params = GenerationParams(temperature=0.3)
    contexts = {"s0": JudgeContext(scenario_id="s0", goal="Know if a coat is needed.")}
    seen: list[tuple[int, int]] = []
    pairs = _pairs(3)
    outcomes = await judge_pairs(pairs, [j1, j2], CRITERION, samples=2, contexts=contexts,
                                 concurrency=1, params=params, max_reasks=0,
                                 progress=lambda done, total: seen.append((done, total)))
    for judge in (j1, j2):
        assert len(judge.calls) == 3 * 2 * 2
        assert sorted(c.request.sample_index for c in judge.calls) == [0] * 6 + [1] * 6
        assert {c.request.max_reasks for c in judge.calls} == {0}
        assert all(c.request.params == params for c in judge.calls)
        prompts = [c.messages[1].content for c in judge.calls]
        with_goal = [p for p in prompts if "Know if a coat is needed." in p]
        assert len(with_goal) == 4  # s0's one pair: 2 samples x 2 orders
    assert seen == [(k, 12) for k in range(13)]
    assert [len(o.comparisons) for o in outcomes] == [4, 4, 4]
    assert sorted((r.judge_model, r.sample_index) for r in outcomes[0].comparisons) == [
        ("openai:j1", 0), ("openai:j1", 1), ("openai:j2", 0), ("openai:j2", 1)]


async def test_no_contexts_judges_without_a_goal() -> None:
    judge = ScriptedJudge(name="fake:j", script=prefers_good)
    await judge_pairs(_pairs(2), [judge], CRITERION)
    assert all("<goal>" not in c.messages[1].content for c in judge.calls)


async def test_a_configuration_failure_is_raised_as_itself() -> None:
    def refuse(call: Call) -> object:
        raise ModelConfigError("no OPENAI_API_KEY set", model="openai:j")
    judge = ScriptedJudge(name="fake:j", script=refuse)
    with pytest.raises(ModelConfigError) as info:
        await judge_pairs(_pairs(4), [judge], CRITERION)
    assert "no OPENAI_API_KEY set" in str(info.value)
