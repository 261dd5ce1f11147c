"""One model request (issue 24): a model call carries only what is sent to the model, so a
real judge call computes nothing that only the offline judge reads, and no agent is handed
the scenario's expected answer; offline mocks get their context by being bound to it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import harness.judging.offline as offline_judge
from harness.judging.judge import judge_once
from harness.judging.offline import MockJudge
from harness.judging.prompts import JudgeContext
from harness.judging.rubric import load_rubrics
from harness.judging.verdicts import Judgment
from harness.models.base import ModelSpec
from harness.models.mock import MockChatModel, bind_offline
from harness.models.request import ModelRequest
from harness.models.types import ChatResponse, Message
from harness.models.usage import UsageLedger
from harness.scenarios import parse_scenario
from harness.simulation import run_episode
from harness.simulation.offline import MockAgent
from tests.helpers.judging_fakes import ScriptedJudge, criterion_reply, weather_transcript
from tests.helpers.simulation_fakes import FakeModel

REFERENCE_ANSWER = "Order Q-77 is cancelled; the refund of 41.30 EUR arrives within 5 days."
SCENARIO = parse_scenario({
    "id": "cancel",
    "user": {"goal": "cancel order Q-77", "script": ["Please cancel order Q-77."]},
    "agent": {"model": "mock:agent", "system_prompt": "You help with orders."},
    "tools": [{"name": "cancel_order", "returns": {"status": "cancelled"}}],
    "expectations": {
        "tool_calls": [{"name": "cancel_order", "args": {"order_id": "Q-77"}}],
        "reference_answer": REFERENCE_ANSWER,
    },
}, check_imports=False)


def test_the_request_holds_only_what_is_sent_and_who_it_is_for() -> None:
    names = [f.name for f in dataclasses.fields(ModelRequest)]
    assert names == ["messages", "role", "tools", "tool_choice", "params", "sample_index",
                     "max_reasks", "prompt_cache"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ModelRequest([], "agent").sample_index = 1  # type: ignore[misc]


async def test_a_real_judge_call_computes_nothing_for_the_offline_judge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    computed: list[str] = []
    real_features = offline_judge.transcript_features

    def spy(*args: Any, **kwargs: Any) -> dict[str, Any]:
        computed.append("features")
        return real_features(*args, **kwargs)

    monkeypatch.setattr(offline_judge, "transcript_features", spy)
    rubric = load_rubrics()["task_completion"]
    reply = {c.id: criterion_reply(rubric.scale_of(c).highest) for c in rubric.criteria}
    real = ScriptedJudge(queue=[reply])  # an openai: model
    outcome = await judge_once(real, rubric, weather_transcript(), JudgeContext(goal="weather"))
    assert isinstance(outcome, Judgment)
    assert computed == []
    assert isinstance(real.calls[0].request, ModelRequest)
    # The same call with the offline judge computes them, when it is bound: the spy works.
    mock = MockChatModel(ModelSpec.parse("mock:judge"), MockJudge(), UsageLedger())
    assert isinstance(await judge_once(mock, rubric, weather_transcript(),
                                       JudgeContext(goal="weather")), Judgment)
    assert computed == ["features"]


async def test_no_agent_request_carries_the_expected_answer() -> None:
    # A real model playing the agent: every request it gets, in full.
    real = FakeModel("openai:agent", [Message(role="assistant", content="Done.")])
    await run_episode(SCENARIO, agent_model=real, simulator_model=None)
    assert real.requests
    for recorded in real.requests:
        assert recorded.request is not None
        assert "41.30" not in repr(recorded.request)
        assert "Q-77" not in repr(recorded.request.tools)  # the reference call's arguments


class RecordingMock(MockChatModel):
    """The model layer's mock wrapper, keeping every request it is sent."""

    requests: list[ModelRequest]

    async def chat(self, request: ModelRequest) -> ChatResponse:
        self.requests.append(request)
        return await super().chat(request)


async def test_the_mock_agent_plays_the_reference_it_was_bound_to_not_one_in_its_requests(
) -> None:
    model = RecordingMock(ModelSpec.parse("mock:agent"), MockAgent("agent"), UsageLedger())
    model.requests = []
    transcript = await run_episode(SCENARIO, agent_model=model, simulator_model=None)
    # It played the reference (bound once, by the episode) ...
    assert [c.name for c in transcript.tool_calls] == ["cancel_order"]
    assert transcript.final_response == REFERENCE_ANSWER
    # ... and none of its requests held the answer.
    assert len(model.requests) == 2
    assert all("41.30" not in repr(request) for request in model.requests)


def test_binding_leaves_a_real_model_as_it_is_and_binds_a_mock() -> None:
    real = FakeModel("openai:agent")
    assert bind_offline(real, SCENARIO) is real
    mock = MockChatModel(ModelSpec.parse("mock:agent"), MockAgent("agent"), UsageLedger())
    bound = bind_offline(mock, SCENARIO)
    assert bound is not mock and isinstance(bound, MockChatModel)
    assert isinstance(bound.behaviour, MockAgent) and bound.behaviour.scenario_id == "cancel"
    assert mock.behaviour.scenario_id is None  # the shared model stays unbound
    assert bound.ledger is mock.ledger
