"""Offline behaviours (mock:agent, mock:agent-flaky, mock:simulator) and the example
scenarios run end to end through the real mock model layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.errors import ModelConfigError
from harness.models.hub import ModelHub
from harness.models.request import ModelRequest
from harness.models.types import Message, ToolCall, ToolSpec
from harness.scenarios import load_scenarios, parse_scenario
from harness.simulation import SimulatorTurn, run_episode
from harness.simulation.offline import MockAgent, MockSimulator, next_user_move, plan_steps

EXAMPLES = Path(__file__).resolve().parents[1] / "scenarios"
TOOLS = [ToolSpec(name="get_order"), ToolSpec(name="cancel_order")]
EXPECTATIONS: dict[str, Any] = {
    "tool_calls": [
        {"name": "get_order", "args": {"order_id": "A-1"}, "turn": 1},
        {"name": "cancel_order", "args": {"order_id": "A-1"}, "turn": 1},
    ],
    "reference_answer": "Order A-1 is cancelled.",
}


SCENARIO = parse_scenario({"id": "s", "user": {"goal": "cancel my order"},
                           "agent": {"model": "mock:agent"}, "expectations": EXPECTATIONS,
                           "tools": [{"name": t.name, "returns": {}} for t in TOOLS]},
                          check_imports=False)


async def agent_says(
    behaviour: MockAgent, messages: list[Message], turn: int, sample_index: int = 0
) -> Message:
    # The mock agent counts the user turn from the messages: check the test's own count.
    assert sum(m.role == "user" for m in messages) - 1 == turn
    request = ModelRequest(messages, "agent", tools=TOOLS, sample_index=sample_index)
    return await behaviour.bind(SCENARIO).chat(request)


async def test_mock_agent_asks_then_follows_the_reference_calls_then_answers() -> None:
    agent = MockAgent("agent")
    convo = [Message(role="user", content="Cancel my order please.")]
    ask = await agent_says(agent, convo, turn=0)
    assert ask.content == "I can help with that. Could you tell me your order id?"
    convo += [ask, Message(role="user", content="It is A-1.")]
    first = await agent_says(agent, convo, turn=1)
    assert first.tool_calls == (
        ToolCall(id="call_1_0", name="get_order", arguments={"order_id": "A-1"}),
    )
    convo += [first, Message(role="tool", tool_call_id="call_1_0", content="{}")]
    second = await agent_says(agent, convo, turn=1)
    assert second.tool_calls[0].name == "cancel_order"
    convo += [second, Message(role="tool", tool_call_id="call_1_1", content="{}")]
    assert (await agent_says(agent, convo, turn=1)).content == "Order A-1 is cancelled."


async def test_flaky_agent_varies_by_sample_index_and_repeats_for_the_same_one() -> None:
    async def first_turn_calls(sample_index: int) -> list[tuple[str, dict[str, Any]]]:
        agent = MockAgent("agent-flaky")
        convo = [Message(role="user", content="Cancel it."), Message(role="user", content="A-1")]
        out = []
        for _ in range(3):
            message = await agent_says(agent, convo, turn=1, sample_index=sample_index)
            if not message.tool_calls:
                break
            call = message.tool_calls[0]
            out.append((call.name, call.arguments))
            convo += [message, Message(role="tool", tool_call_id=call.id, content="{}")]
        return out

    runs = [await first_turn_calls(i) for i in range(30)]
    faithful = [("get_order", {"order_id": "A-1"}), ("cancel_order", {"order_id": "A-1"})]
    assert runs.count(faithful) not in (0, 30)  # sometimes right, sometimes not
    assert any(len(r) < 2 for r in runs)  # a skipped call
    assert any(
        ("cancel_order", {"order_id": "A-"}) in r or ("get_order", {"order_id": "A-"}) in r
        for r in runs
    )  # a garbled argument
    assert runs == [await first_turn_calls(i) for i in range(30)]  # deterministic


def test_mock_names_and_misuse_are_clear_errors() -> None:
    with pytest.raises(ModelConfigError, match="unknown offline model 'mock:agent-sloppy'"):
        MockAgent("agent-sloppy")
    with pytest.raises(ModelConfigError, match="mock:simulator"):
        MockSimulator("simulator-chatty")


async def test_mock_agent_needs_the_scenario_the_episode_binds() -> None:
    with pytest.raises(ModelConfigError, match="needs the scenario it plays"):
        await MockAgent().chat(ModelRequest([], "agent"))
    with pytest.raises(ModelConfigError, match="no structured answers"):
        await MockAgent().structured(ModelRequest([], "agent"), SimulatorTurn)
    with pytest.raises(ModelConfigError, match="needs the user's profile"):
        await MockSimulator().structured(ModelRequest([], "simulator"), SimulatorTurn)


def test_mock_simulator_plan_facts_and_goal() -> None:
    user = {
        "goal": "cancel my order",
        "opening_message": "I want to cancel an order.",
        "plan": 'Give the id when asked.\nThen ask: "When is my refund coming?"',
        "known_facts": {"order_id": "A-1"},
    }
    assert plan_steps(user) == ["I want to cancel an order.", "When is my refund coming?"]
    convo: list[dict[str, Any]] = [
        {"role": "user", "content": "I want to cancel an order."},
        {"role": "assistant", "content": "What is your order ID?"},
    ]
    assert next_user_move(user, convo) == {"message": "My order id is A-1.", "done": False}
    convo += [
        {"role": "user", "content": "My order id is A-1."},
        {"role": "assistant", "content": "Cancelled. Anything else? Your order id?"},
    ]
    # the fact was given already, so the next plan step comes
    assert next_user_move(user, convo)["message"] == "When is my refund coming?"
    convo += [
        {"role": "user", "content": "When is my refund coming?"},
        {"role": "assistant", "content": "In 3 days."},
    ]
    assert next_user_move(user, convo) == {
        "message": "Thanks, that's all I needed.",
        "done": True,
        "stop_reason": "goal_met",
    }
    assert plan_steps({"goal": "know the weather"}) == ["know the weather"]


def test_simulator_turn_must_be_consistent() -> None:
    with pytest.raises(ValueError, match="stop_reason must say why"):
        SimulatorTurn.model_validate({"message": "", "done": True})
    with pytest.raises(ValueError, match="message must hold your next message"):
        SimulatorTurn.model_validate({"message": " ", "done": False})


@pytest.fixture
def hub() -> ModelHub:
    return ModelHub(environ={})


async def test_every_example_runs_end_to_end_offline(hub: ModelHub) -> None:
    scenarios = load_scenarios([EXAMPLES])
    agent, simulator = hub.get("mock:agent"), hub.get("mock:simulator")
    for sc in scenarios:
        t = await run_episode(sc, agent_model=agent, simulator_model=simulator, epoch=0)
        assert not t.errored, (sc.id, t.error)
        assert t.stop_reason in ("goal_met", "script_finished"), (sc.id, t.stop_reason)
        assert t.final_response, sc.id
        expected = [(c.name, c.args) for c in sc.expectations.tool_calls or []]
        if sc.agent.model is not None:  # the mock agent follows the reference exactly
            assert [(r.name, r.arguments) for r in t.tool_calls] == expected, sc.id
            if sc.expectations.reference_answer:
                assert t.final_response == sc.expectations.reference_answer, sc.id
            assert t.offline and t.models == {"agent": "mock:agent", "simulator": "mock:simulator"}
        if sc.expectations.final_state is not None:
            assert t.final_state is not None
            _assert_contains(sc.expectations.final_state, t.final_state, sc.id)


def _assert_contains(expected: Any, actual: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        for key, value in expected.items():
            assert key in actual, (where, key)
            _assert_contains(value, actual[key], where)
    else:
        assert expected == actual, (where, expected, actual)


async def test_support_example_cancels_only_the_pending_order(hub: ModelHub) -> None:
    by_id = {s.id: s for s in load_scenarios([EXAMPLES / "support.yaml"])}
    agent, simulator = hub.get("mock:agent"), hub.get("mock:simulator")
    pending = await run_episode(
        by_id["support-cancel-pending-order"], agent_model=agent, simulator_model=simulator
    )
    assert pending.messages[2].content == "My order id is A-1001."  # revealed when asked
    assert pending.final_state is not None
    assert pending.final_state["orders"]["A-1001"]["status"] == "cancelled"
    assert pending.final_state["audit_log"] == [{"action": "cancel", "order_id": "A-1001"}]
    shipped = await run_episode(
        by_id["support-refuse-shipped-order"], agent_model=agent, simulator_model=simulator
    )
    assert shipped.final_state == shipped.initial_state  # nothing changed


async def test_flaky_examples_differ_across_epochs(hub: ModelHub) -> None:
    sc = {s.id: s for s in load_scenarios([EXAMPLES / "weather.yaml"])}["weather-two-turns-paris"]
    agent, simulator = hub.get("mock:agent-flaky"), hub.get("mock:simulator")
    trajectories = []
    for epoch in range(8):
        t = await run_episode(sc, agent_model=agent, simulator_model=simulator, epoch=epoch)
        assert not t.errored
        trajectories.append(tuple((r.name, str(r.arguments)) for r in t.tool_calls))
    assert len(set(trajectories)) > 1
