"""Whole episodes through the real OpenAI and Anthropic SDKs against the loopback model
server, with the agent and the simulator both scripted there."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.models.hub import ModelHub
from harness.scenarios import parse_scenario
from harness.scenarios.schema import Scenario
from harness.simulation import run_episode
from harness.testing.replies import Reply
from harness.testing.server import LoopbackServer
from harness.transcript import Transcript, transcript_from_anthropic, transcript_from_openai
from tests.helpers.loopback_script import Script, agent_requests, goal_met, is_simulator, say

AGENT_PROMPT = "You are the order desk. INTERNAL-NOTE-7731"

ORDER_ID = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}},
    "required": ["order_id"],
    "additionalProperties": False,
}
SCENARIO: dict[str, Any] = {
    "id": "orders",
    "user": {
        "persona": "a customer",
        "goal": "cancel order A-1",
        "known_facts": {"order_id": "A-1"},
        "opening_message": "Please cancel my order.",
    },
    "agent": {"model": "openai:agent-model", "system_prompt": AGENT_PROMPT},
    "state": {"orders": {"A-1": {"status": "pending"}, "A-2": {"status": "shipped"}}},
    "tools": [
        {
            "name": "get_order",
            "parameters": ORDER_ID,
            "rules": [
                {
                    "when_state": {"orders.${args.order_id}": {"$exists": True}},
                    "returns": "${state.orders.${args.order_id}}",
                }
            ],
            "default": {"error": "no order ${args.order_id}"},
        },
        {
            "name": "cancel_order",
            "parameters": ORDER_ID,
            "rules": [
                {
                    "when_state": {"orders.${args.order_id}.status": "pending"},
                    "returns": {"cancelled": "${args.order_id}"},
                    "set_state": {"orders.${args.order_id}.status": "cancelled"},
                },
            ],
            "default": {"error": "order ${args.order_id} cannot be cancelled"},
        },
        {
            "name": "status_page",
            "parameters": {"type": "object", "properties": {}},
            "sequence": [{"error": "503 try again"}, {"returns": "all systems normal"}],
        },
    ],
    "limits": {"max_user_turns": 4, "max_agent_steps": 4, "max_tool_calls": 6},
}


def scenario(**changes: Any) -> Scenario:
    data = copy.deepcopy(SCENARIO)
    for key, value in changes.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and key != "state" else value
    return parse_scenario(data, check_imports=False)


@pytest.fixture
def hub(make_hub: Callable[..., ModelHub]) -> ModelHub:
    return make_hub()


async def episode(
    hub: ModelHub,
    sc: Scenario,
    *,
    agent: str = "openai:agent-model",
    simulator: str | None = "anthropic:sim-model",
    epoch: int = 0,
) -> Transcript:
    return await run_episode(
        sc,
        agent_model=hub.get(agent),
        simulator_model=hub.get(simulator) if simulator else None,
        epoch=epoch,
    )


async def test_openai_agent_stateful_tool_loop_with_anthropic_simulator(
    loopback: LoopbackServer, hub: ModelHub
) -> None:
    loopback.set_responder(
        Script(
            agent=[
                Reply.text_reply("What is your order id?"),
                Reply.tool_call("get_order", {"order_id": "A-1"}),
                Reply.tool_call("cancel_order", {"order_id": "A-1"}),
                Reply.text_reply("Order A-1 is cancelled."),
            ],
            simulator=[say("It's A-1."), goal_met("Great, thanks.")],
        )
    )
    t = await episode(hub, scenario())
    assert (t.stop_reason, t.stop_detail, t.error) == ("goal_met", "Great, thanks.", None)
    assert [m.content for m in t.messages if m.role == "user"] == [
        "Please cancel my order.",
        "It's A-1.",
    ]
    assert [(r.name, r.result, r.turn, r.step) for r in t.tool_calls] == [
        ("get_order", {"status": "pending"}, 1, 0),
        ("cancel_order", {"cancelled": "A-1"}, 1, 1),
    ]
    assert t.final_state == {
        "orders": {"A-1": {"status": "cancelled"}, "A-2": {"status": "shipped"}}
    }
    assert t.final_response == "Order A-1 is cancelled."
    # On the wire: the agent got the system prompt, the tools and the mock results.
    requests = agent_requests(loopback)
    assert requests[0].api == "openai" and requests[0].messages[0]["content"] == AGENT_PROMPT
    assert {tool["function"]["name"] for tool in requests[0].tools} == {
        "get_order",
        "cancel_order",
        "status_page",
    }
    assert requests[2].messages[-1] == {
        "role": "tool",
        "tool_call_id": t.tool_calls[0].call_id,
        "content": '{"status": "pending"}',
    }
    # The simulator (Anthropic, structured) never saw the agent's instructions or tool calls.
    sim = [r for r in loopback.requests if is_simulator(r)]
    assert len(sim) == 2 and all(r.api == "anthropic" for r in sim)
    sim_text = str([r.body for r in sim])
    assert "INTERNAL-NOTE-7731" not in sim_text and "cancel_order" not in sim_text
    assert "Assistant: What is your order id?" in sim_text
    assert t.usage["agent"].calls == 4 and t.usage["simulator"].calls == 2
    assert t.usage["agent"].input_tokens > 0 and not t.offline


async def test_anthropic_agent_sequence_and_injected_tool_errors(
    loopback: LoopbackServer, hub: ModelHub
) -> None:
    loopback.set_responder(
        Script(
            agent=[
                Reply.tool_call("status_page", {}),
                Reply.tool_call("status_page", {}),
                Reply.text_reply("All systems are normal."),
            ],
            simulator=[goal_met()],
        )
    )
    t = await episode(hub, scenario(), agent="anthropic:agent-model", simulator="openai:sim-model")
    assert [(r.error, r.result) for r in t.tool_calls] == [
        ("injected", {"error": "503 try again"}),
        (None, "all systems normal"),
    ]
    second = agent_requests(loopback)[1]
    # the system prompt and the conversation so far marked for Anthropic's prompt cache: the
    # next step's request begins with all of it
    assert second.api == "anthropic" and second.body["system"] == [
        {"type": "text", "text": AGENT_PROMPT, "cache_control": {"type": "ephemeral"}}]
    (block,) = second.messages[-1]["content"]
    assert block["cache_control"] == {"type": "ephemeral"}
    assert block["type"] == "tool_result" and block["is_error"] is True
    assert block["content"] == '{"error": "503 try again"}'
    assert t.stop_reason == "goal_met"


async def test_invalid_calls_from_the_model_are_recorded_and_the_episode_goes_on(
    loopback: LoopbackServer, hub: ModelHub
) -> None:
    loopback.set_responder(
        Script(
            agent=[
                Reply.tool_call("get_order", '{"order_id": '),  # not JSON
                Reply.tool_call("get_order", {"id": "A-1"}),  # wrong argument
                Reply.tool_call("refund", {"order_id": "A-1"}),  # no such tool
                Reply.tool_call("get_order", {"order_id": "A-9"}),  # no rule matches
                Reply.text_reply("I could not find that order."),
            ],
            simulator=[Reply.json({"message": "", "done": True, "stop_reason": "user_gave_up"})],
        )
    )
    t = await episode(hub, scenario(limits={"max_agent_steps": 6}))
    assert [r.error for r in t.tool_calls] == [
        "invalid_arguments",
        "invalid_arguments",
        "unknown_tool",
        "injected",
    ]
    assert t.tool_calls[0].raw_arguments == '{"order_id": '
    assert t.stop_reason == "user_gave_up" and t.final_response == "I could not find that order."


@pytest.mark.parametrize("reason", ["goal_met", "user_gave_up", "transfer_requested", "off_topic"])
async def test_simulator_stop_reasons(loopback: LoopbackServer, hub: ModelHub, reason: str) -> None:
    loopback.set_responder(
        Script(
            agent=[Reply.text_reply("I'll pass you to a colleague.")],
            simulator=[Reply.json({"message": "ok", "done": True, "stop_reason": reason})],
        )
    )
    assert (await episode(hub, scenario())).stop_reason == reason


async def test_turn_limit(loopback: LoopbackServer, hub: ModelHub) -> None:
    loopback.set_responder(
        Script(agent=[Reply.text_reply("Hm?")] * 2, simulator=[say("Still there?")] * 2)
    )
    t = await episode(hub, scenario(limits={"max_user_turns": 2}))
    assert t.stop_reason == "turn_limit" and t.user_turns == 2


async def test_agent_error_after_retries_is_recorded(
    loopback: LoopbackServer, hub: ModelHub
) -> None:
    loopback.set_responder(
        Script(
            agent=[Reply.tool_call("get_order", {"order_id": "A-1"})] + [Reply.server_error()] * 3
        )
    )
    t = await episode(hub, scenario())
    assert t.stop_reason == "agent_error" and t.error is not None
    assert (t.error.kind, t.error.role) == ("ModelUnavailableError", "agent")
    assert len(t.tool_calls) == 1 and t.usage["agent"].calls == 1


async def test_refused_key_is_an_agent_error(loopback: LoopbackServer, hub: ModelHub) -> None:
    loopback.set_responder(Script(agent=[Reply.unauthorized()]))
    t = await episode(hub, scenario())
    assert t.stop_reason == "agent_error" and t.error is not None
    assert t.error.kind == "ModelConfigError" and "sk-test" not in t.model_dump_json()


async def test_simulator_error_after_re_asks(loopback: LoopbackServer, hub: ModelHub) -> None:
    invalid = Reply.json({"message": "", "done": True})  # no stop_reason: fails validation
    loopback.set_responder(Script(agent=[Reply.text_reply("Done.")], simulator=[invalid] * 3))
    t = await episode(hub, scenario())
    assert t.stop_reason == "simulator_error" and t.error is not None
    assert (t.error.kind, t.error.role) == ("StructuredOutputError", "simulator")


async def test_agent_step_and_tool_call_limits(loopback: LoopbackServer, hub: ModelHub) -> None:
    loopback.set_responder(Script(agent=[Reply.tool_call("get_order", {"order_id": "A-1"})] * 2))
    t = await episode(hub, scenario(limits={"max_agent_steps": 2}))
    assert t.stop_reason == "agent_step_limit" and len(t.tool_calls) == 2
    loopback.reset()
    loopback.set_responder(
        Script(
            agent=[
                Reply.calls(("get_order", {"order_id": "A-1"}), ("get_order", {"order_id": "A-2"}))
            ]
        )
    )
    t = await episode(hub, scenario(limits={"max_tool_calls": 1}))
    assert t.stop_reason == "tool_call_limit"
    assert [r.error for r in t.tool_calls] == [None, "tool_call_limit"]


async def test_scripted_user_with_a_real_agent(loopback: LoopbackServer, hub: ModelHub) -> None:
    sc = scenario(
        user={
            "goal": "g",
            "script": ["Cancel A-2.", "Why not?"],
            "persona": "",
            "known_facts": {},
            "opening_message": None,
        }
    )
    loopback.set_responder(
        Script(
            agent=[
                Reply.tool_call("cancel_order", {"order_id": "A-2"}),
                Reply.text_reply("A-2 has shipped."),
                Reply.text_reply("It left the warehouse."),
            ]
        )
    )
    t = await episode(hub, sc, simulator=None)
    assert t.stop_reason == "script_finished" and t.tool_calls[0].error == "injected"
    assert [m.content for m in t.messages if m.role == "user"] == ["Cancel A-2.", "Why not?"]
    assert all(not is_simulator(r) for r in loopback.requests)


async def test_python_agent_with_a_simulated_user(
    loopback: LoopbackServer, hub: ModelHub, tmp_path: Path
) -> None:
    (tmp_path / "desk_agent_loopback.py").write_text(
        "def reply(messages, toolbox):\n"
        "    r = toolbox.call('cancel_order', order_id='A-1')\n"
        "    return 'done' if not r.is_error else 'failed'\n"
    )
    data = copy.deepcopy(SCENARIO)
    data["agent"] = {"callable": "desk_agent_loopback:reply"}
    sc = parse_scenario(data, base_dir=tmp_path).with_source(tmp_path / "s.yaml")
    loopback.set_responder(Script(agent=[], simulator=[say("Again please."), goal_met()]))
    t = await run_episode(sc, agent_model=None, simulator_model=hub.get("openai:sim"), epoch=0)
    assert t.stop_reason == "goal_met"
    assert [(r.error, r.turn) for r in t.tool_calls] == [(None, 0), ("injected", 1)]
    assert [m.content for m in t.messages if m.role == "assistant" and m.content] == [
        "done",
        "failed",
    ]


async def test_epochs_replay_from_the_cache(
    make_hub: Callable[..., ModelHub], loopback: LoopbackServer, tmp_path: Path
) -> None:
    hub = make_hub(cache_path=tmp_path / "cache.sqlite")
    loopback.set_responder(lambda r: goal_met() if is_simulator(r) else Reply.text_reply("Hi."))
    first = await episode(hub, scenario(), epoch=0)
    made = loopback.request_count
    again = await episode(hub, scenario(), epoch=0)
    assert loopback.request_count == made  # a repeated epoch makes no request
    assert again.messages == first.messages and again.usage["agent"].cached_calls == 1
    await episode(hub, scenario(), epoch=1)
    assert loopback.request_count == 2 * made  # another epoch is a new sample


async def test_loopback_transcript_round_trips_and_matches_its_wire_import(
    loopback: LoopbackServer, hub: ModelHub
) -> None:
    loopback.set_responder(
        Script(
            agent=[
                Reply.tool_call("get_order", {"order_id": "A-1"}),
                Reply.text_reply("A-1 is pending."),
            ],
            simulator=[goal_met()],
        )
    )
    t = await episode(hub, scenario(), agent="openai:agent-model")
    assert Transcript.model_validate_json(t.model_dump_json()) == t
    # The agent's last request, as the OpenAI SDK sent it, plus the reply, imports to the
    # same conversation and tool calls.
    wire = [
        *agent_requests(loopback)[-1].messages,
        {"role": "assistant", "content": "A-1 is pending."},
    ]
    imported = transcript_from_openai("orders", wire)
    assert imported.system_prompt == AGENT_PROMPT and imported.stop_reason == "imported"
    assert [(m.role, m.content) for m in imported.messages] == [
        (m.role, m.content) for m in t.messages
    ]
    assert [(r.name, r.arguments, r.result) for r in imported.tool_calls] == [
        (r.name, r.arguments, r.result) for r in t.tool_calls
    ]


async def test_anthropic_wire_import_matches_the_episode(
    loopback: LoopbackServer, hub: ModelHub
) -> None:
    loopback.set_responder(
        Script(
            agent=[
                Reply.tool_call("status_page", {}),
                Reply.tool_call("status_page", {}),
                Reply.text_reply("Normal now."),
            ],
            simulator=[goal_met()],
        )
    )
    t = await episode(hub, scenario(), agent="anthropic:agent-model")
    last = agent_requests(loopback)[-1]
    wire = [
        *last.messages,
        {"role": "assistant", "content": [{"type": "text", "text": "Normal now."}]},
    ]
    imported = transcript_from_anthropic("orders", wire, system=last.body["system"])
    assert imported.messages == t.messages
    assert [(r.name, r.is_error) for r in imported.tool_calls] == [
        ("status_page", True),
        ("status_page", False),
    ]


WEATHER_TOOL: dict[str, Any] = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
    "rules": [
        {"when": {"city": {"$regex": "(?i)^paris$"}}, "returns": {"temp_c": 18}},
        {"when": {"city": "Oslo", "days": 3}, "match": "exact", "returns": {"forecast": "snow"}},
        {"when": {"city": "Oslo"}, "returns": {"temp_c": -2}},
    ],
    "default": {"error": "unknown city ${args.city}"},
}


@pytest.mark.parametrize("agent", ["openai:agent-model", "anthropic:agent-model"])
async def test_argument_rules_answer_the_real_sdks_tool_calls(
    loopback: LoopbackServer, hub: ModelHub, agent: str
) -> None:
    loopback.set_responder(
        Script(
            agent=[
                Reply.tool_call("get_weather", {"city": "PARIS"}),  # regex, case-insensitive
                Reply.tool_call("get_weather", {"city": "Oslo", "days": 3}),  # exact match
                Reply.tool_call("get_weather", {"city": "Oslo", "days": 4}),  # subset match
                Reply.tool_call("get_weather", {"city": "Rome"}),  # default
                Reply.text_reply("Done."),
            ],
            simulator=[goal_met()],
        )
    )
    sc = scenario(tools=[WEATHER_TOOL], state=None, limits={"max_agent_steps": 5})
    t = await episode(hub, sc, agent=agent)
    assert [(r.arguments, r.result, r.is_error) for r in t.tool_calls] == [
        ({"city": "PARIS"}, {"temp_c": 18}, False),
        ({"city": "Oslo", "days": 3}, {"forecast": "snow"}, False),
        ({"city": "Oslo", "days": 4}, {"temp_c": -2}, False),
        ({"city": "Rome"}, {"error": "unknown city Rome"}, True),
    ]
    # The answers reached the model on the wire as the tool results of its calls.
    last = agent_requests(loopback)[-1]
    wire = str(last.messages)
    assert "snow" in wire and "unknown city Rome" in wire and t.stop_reason == "goal_met"
