"""Episodes that start mid-conversation (``user.history``): what the agent (a model on the
loopback server, or a Python callable) and the simulator receive, and what the transcript
and the checks count (the live conversation only)."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.checks.run import run_checks
from harness.models.hub import ModelHub
from harness.models.types import Message
from harness.scenarios import parse_scenario
from harness.scenarios.schema import Scenario
from harness.simulation import run_episode
from harness.testing.replies import Reply
from harness.testing.server import LoopbackServer
from harness.transcript import Transcript
from tests.helpers.history_forms import ANTHROPIC, OPENAI, OURS
from tests.helpers.loopback_script import Script, agent_requests, goal_met, is_simulator, say
from tests.helpers.simulation_fakes import FakeModel

STATE = {"orders": {"A-1": {"status": "shipped"}}}
SCENARIO: dict[str, Any] = {
    "id": "orders",
    "user": {"goal": "know when order A-1 ships", "opening_message": "Has it shipped now?",
             "history": OURS},
    "agent": {"model": "openai:agent-model", "system_prompt": "You are the order desk."},
    "state": STATE,
    "tools": [{"name": "get_order",
               "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
               "returns": "${state.orders.A-1.status}"},
              {"name": "refund", "parameters": {"type": "object", "properties": {}},
               "returns": "refunded"}],
    "expectations": {"tool_calls": [{"name": "get_order", "args": {"order_id": "A-1"}}],
                     "forbidden_tools": ["refund"], "max_tool_calls": 1},
    "limits": {"max_user_turns": 3},
}


def scenario(**user: Any) -> Scenario:
    data = copy.deepcopy(SCENARIO)
    data["user"].update(user)
    data["user"] = {k: v for k, v in data["user"].items() if v is not None}
    return parse_scenario(data, check_imports=False)


@pytest.fixture
def hub(make_hub: Callable[..., ModelHub]) -> ModelHub:
    return make_hub()


# --- a model agent on the wire ----------------------------------------------------------


@pytest.mark.parametrize("history", [OURS, OPENAI, ANTHROPIC], ids=["ours", "openai", "anthropic"])
async def test_openai_agent_receives_the_history_before_the_first_live_turn(
    loopback: LoopbackServer, hub: ModelHub, history: list[dict[str, Any]]
) -> None:
    loopback.set_responder(Script(
        agent=[Reply.tool_call("get_order", {"order_id": "A-1"}),
               Reply.text_reply("Yes, it has shipped.")],
        simulator=[goal_met()]))
    t = await run_episode(scenario(history=history), agent_model=hub.get("openai:agent-model"),
                          simulator_model=hub.get("anthropic:sim-model"))
    first = agent_requests(loopback)[0]
    assert first.messages == [
        {"role": "system", "content": "You are the order desk."},
        {"role": "user", "content": "Is order A-1 shipped?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "h1", "type": "function",
             "function": {"name": "get_order", "arguments": '{"order_id": "A-1"}'}}]},
        {"role": "tool", "tool_call_id": "h1", "content": '{"status": "pending"}'},
        {"role": "assistant", "content": "Order A-1 is still pending."},
        {"role": "user", "content": "Has it shipped now?"},
    ]
    # The transcript keeps the history apart; the live part is the agent's own work.
    assert t.history == scenario().user.history_messages()
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]
    assert [(r.name, r.turn, r.result) for r in t.tool_calls] == [("get_order", 0, "shipped")]
    assert t.final_response == "Yes, it has shipped." and t.user_turns == 1
    assert t.usage["agent"].calls == 2


async def test_anthropic_agent_receives_tool_use_and_tool_result_blocks(
    loopback: LoopbackServer, hub: ModelHub
) -> None:
    loopback.set_responder(Script(agent=[Reply.text_reply("It shipped.")],
                                  simulator=[goal_met()]))
    await run_episode(scenario(), agent_model=hub.get("anthropic:agent-model"),
                      simulator_model=hub.get("anthropic:sim-model"))
    first = agent_requests(loopback)[0]
    assert [block["text"] for block in first.body["system"]] == ["You are the order desk."]
    for message in first.messages:  # the last block carries the prompt cache's mark
        for block in message["content"]:
            block.pop("cache_control", None)
    assert first.messages == [
        {"role": "user", "content": [{"type": "text", "text": "Is order A-1 shipped?"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "h1", "name": "get_order",
             "input": {"order_id": "A-1"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "h1", "content": '{"status": "pending"}'}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Order A-1 is still pending."}]},
        {"role": "user", "content": [{"type": "text", "text": "Has it shipped now?"}]},
    ]


async def test_llm_simulator_sees_the_history_as_the_conversation_so_far(
    loopback: LoopbackServer, hub: ModelHub
) -> None:
    loopback.set_responder(Script(agent=[Reply.text_reply("It shipped yesterday.")],
                                  simulator=[say("Has it shipped now?"), goal_met()]))
    t = await run_episode(scenario(opening_message=None),
                          agent_model=hub.get("openai:agent-model"),
                          simulator_model=hub.get("anthropic:sim-model"))
    first_sim = next(r for r in loopback.requests if is_simulator(r))
    rendered = json.dumps(first_sim.body, ensure_ascii=False)
    assert ("You: Is order A-1 shipped?\\nAssistant: Let me look.\\n"
            "Assistant: Order A-1 is still pending.") in rendered
    assert "has not started" not in rendered
    assert [m.content for m in t.messages if m.role == "user"] == ["Has it shipped now?"]
    assert t.stop_reason == "goal_met"


# --- a final user message, mocked state, offline models ---------------------------------


async def test_a_final_user_message_is_answered_as_live_turn_0_without_a_simulator_call() -> None:
    history = [*OURS, {"role": "user", "content": "And has it shipped now?"}]
    agent = FakeModel("mock:fake", [Message(role="assistant", content="Yes.")])
    simulator = FakeModel("mock:sim", [{"message": "", "done": True, "stop_reason": "goal_met"}])
    t = await run_episode(scenario(opening_message=None, history=history),
                          agent_model=agent, simulator_model=simulator)
    assert [m.role for m in agent.requests[0].messages][-2:] == ["assistant", "user"]
    assert agent.requests[0].messages[-1].content == "And has it shipped now?"
    assert len(simulator.requests) == 1  # only after the agent's answer, for turn 1
    # for turn 1: the request shows the agent's answer to the live turn 0
    assert "Assistant: Yes." in simulator.requests[0].messages[-1].content
    assert t.history == parse_scenario(
        {**SCENARIO, "user": {"goal": "g", "history": OURS}}, check_imports=False
    ).user.history_messages()
    assert [(m.role, m.content) for m in t.messages] == [
        ("user", "And has it shipped now?"), ("assistant", "Yes.")]
    assert t.turn_of_messages() == [0, 0]


async def test_history_calls_do_not_run_again_and_the_state_starts_as_given() -> None:
    t = await run_episode(scenario(), agent_model=FakeModel(
        "mock:fake", [Message(role="assistant", content="Still pending, I think.")]),
        simulator_model=FakeModel("mock:sim", [{"message": "", "done": True,
                                                "stop_reason": "goal_met"}]))
    assert t.tool_calls == []
    assert t.initial_state == STATE == t.final_state


async def test_offline_models_run_a_history_scenario_end_to_end() -> None:
    hub = ModelHub(environ={})
    t = await run_episode(scenario(opening_message=None), agent_model=hub.get("mock:agent"),
                          simulator_model=hub.get("mock:simulator"))
    assert not t.errored and t.offline
    assert [r.name for r in t.tool_calls] == ["get_order"]
    assert t.tool_calls[0].turn == 0 and t.history[0].content == "Is order A-1 shipped?"


# --- a Python agent -----------------------------------------------------------------------


async def test_callable_agent_is_passed_the_history(tmp_path: Path) -> None:
    module = f"history_agent_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(
        "seen = []\n"
        "def agent(messages, toolbox):\n"
        "    seen.append([(m.role, m.content, m.tool_call_id) for m in messages])\n"
        "    return 'It shipped.'\n", encoding="utf-8")
    data = copy.deepcopy(SCENARIO)
    data["agent"] = {"callable": f"{module}:agent", "system_prompt": "be brief"}
    data["user"] = {"goal": "g", "history": OPENAI, "script": ["Has it shipped now?"]}
    sc = parse_scenario(data, base_dir=tmp_path).with_source(tmp_path / "s.yaml")
    t = await run_episode(sc, agent_model=None, simulator_model=None)
    import importlib

    seen = importlib.import_module(module).seen
    assert seen == [[
        ("system", "be brief", None),
        ("user", "Is order A-1 shipped?", None),
        ("assistant", "Let me look.", None),
        ("tool", '{"status": "pending"}', "h1"),
        ("assistant", "Order A-1 is still pending.", None),
        ("user", "Has it shipped now?", None),
    ]]
    assert t.stop_reason == "script_finished" and t.final_response == "It shipped."


# --- checks count the live conversation only ---------------------------------------------


async def test_checks_ignore_the_history_tool_calls_and_answer() -> None:
    history = [OURS[0], {"role": "assistant", "tool_calls": [
        {"id": "h1", "name": "refund", "arguments": {}},
        {"id": "h2", "name": "get_order", "arguments": {"order_id": "A-1"}}]},
        {"role": "tool", "tool_call_id": "h1", "content": "refunded"},
        {"role": "tool", "tool_call_id": "h2", "content": "shipped"},
        {"role": "assistant", "content": "Refunded; order A-1 shipped."}]
    sc = scenario(history=history)
    agent = FakeModel("mock:fake", [Message(role="assistant", content="I cannot tell.")])
    sim = FakeModel("mock:sim", [{"message": "", "done": True, "stop_reason": "goal_met"}])
    t = await run_episode(sc, agent_model=agent, simulator_model=sim)
    report = run_checks(t, sc.expectations)
    by_name = {r.name: r for r in report.results}
    # refund and get_order were called in the history only: not the agent's live work
    assert by_name["forbidden_tools_avoided"].passed
    assert by_name["trajectory_recall"].value == 0.0
    assert by_name["max_tool_calls"].passed and by_name["max_tool_calls"].details["calls"] == 0
    assert t.final_response == "I cannot tell."


def test_transcripts_written_before_the_history_field_still_load() -> None:
    old = {"scenario_id": "s", "epoch": 0, "messages": [{"role": "user", "content": "hi"}],
           "stop_reason": "goal_met"}
    t = Transcript.model_validate_json(json.dumps(old))
    assert t.history == [] and t.user_turns == 1
