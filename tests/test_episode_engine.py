"""The episode engine with in-process fake models: turn order, every stop reason, the tool
loop's bounds, Python agents, accounting, and what each side is shown."""

from __future__ import annotations

import asyncio
import copy
import threading
from pathlib import Path
from typing import Any

import pytest

from harness.errors import (
    InputError,
    ModelConfigError,
    ModelUnavailableError,
    StructuredOutputError,
)
from harness.models.types import Message, ToolCall
from harness.scenarios import parse_scenario
from harness.scenarios.schema import Scenario
from harness.simulation import run_episode
from harness.transcript import Transcript
from tests.helpers.simulation_fakes import FakeModel, calls, text

SYSTEM_PROMPT = "SECRET-AGENT-INSTRUCTIONS: be a weather bot"

BASE: dict[str, Any] = {
    "id": "wx",
    "user": {
        "persona": "a hurried commuter",
        "goal": "know the weather in Paris",
        "known_facts": {"home_city": "Paris"},
        "unknown_facts": ["the humidity"],
        "opening_message": "Weather in Paris?",
    },
    "agent": {"model": "mock:fake", "system_prompt": SYSTEM_PROMPT},
    "tools": [
        {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
            "rules": [{"when": {"city": "Paris"}, "returns": {"temp_c": 18}}],
            "default": {"error": "unknown city ${args.city}"},
        }
    ],
    "limits": {"max_user_turns": 3, "max_agent_steps": 3, "max_tool_calls": 5},
}


def scenario(**changes: Any) -> Scenario:
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return parse_scenario(data, check_imports=False)


def done(reason: str, message: str = "") -> dict[str, Any]:
    return {"message": message, "done": True, "stop_reason": reason}


def say(message: str) -> dict[str, Any]:
    return {"message": message, "done": False}


async def run(
    sc: Scenario, agent: FakeModel | None, sim: FakeModel | None, epoch: int = 0
) -> Transcript:
    return await run_episode(sc, agent_model=agent, simulator_model=sim, epoch=epoch)


# --- the tool loop and turn order ----------------------------------------------------------


async def test_tool_loop_then_simulator_ends_with_goal_met() -> None:
    agent = FakeModel(replies=[calls(("get_weather", {"city": "Paris"})), text("18 °C in Paris.")])
    sim = FakeModel("mock:sim", replies=[done("goal_met", "Thanks!")])
    t = await run(scenario(), agent, sim)
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]
    assert t.messages[0].content == "Weather in Paris?"  # the opening message, verbatim
    assert t.messages[2].content == '{"temp_c": 18}' and t.messages[2].tool_call_id == "c0"
    assert (t.stop_reason, t.stop_detail, t.error) == ("goal_met", "Thanks!", None)
    assert t.final_response == "18 °C in Paris."
    (record,) = t.tool_calls
    assert (record.name, record.arguments, record.result, record.turn, record.step) == (
        "get_weather",
        {"city": "Paris"},
        {"temp_c": 18},
        0,
        0,
    )
    # the agent saw the system prompt and the tool; its second step saw the tool result
    first, second = agent.requests
    assert first.messages[0] == Message(role="system", content=SYSTEM_PROMPT)
    assert [s.name for s in first.tools] == ["get_weather"]
    assert second.messages[-1].role == "tool"
    assert t.system_prompt == SYSTEM_PROMPT and [s.name for s in t.tools] == ["get_weather"]


async def test_usage_steps_and_sample_index_per_role() -> None:
    agent = FakeModel(replies=[calls(("get_weather", {"city": "Paris"})), text("18."), text("ok")])
    sim = FakeModel("mock:sim", replies=[say("And tomorrow?"), done("goal_met")])
    t = await run(scenario(), agent, sim, epoch=4)
    assert t.usage["agent"].calls == 3 and t.usage["agent"].input_tokens == 30
    assert t.usage["agent"].cost_usd == pytest.approx(0.003)
    assert t.usage["simulator"].calls == 2 and t.usage["simulator"].unpriced_calls == 2
    assert [(s.role, s.turn, s.step) for s in t.steps] == [
        ("agent", 0, 0),
        ("agent", 0, 1),
        ("simulator", 1, 0),
        ("agent", 1, 0),
        ("simulator", 2, 0),
    ]
    assert {r.sample_index for r in agent.requests + sim.requests} == {4}
    assert t.epoch == 4 and t.models == {"agent": "mock:fake", "simulator": "mock:sim"}
    assert t.offline  # mock: models were used


async def test_a_bad_tool_call_is_a_recorded_error_and_the_episode_goes_on() -> None:
    bad = ToolCall(id="b1", name="get_weather", raw_arguments='{"city": ')
    agent = FakeModel(
        replies=[
            calls(("get_forecast", {"city": "Paris"})),  # no such tool
            calls(("get_weather", {"town": "Paris"})),  # invalid arguments
            Message(role="assistant", tool_calls=(bad,)),  # not JSON at all
        ]
    )
    agent.replies.insert(3, text("Sorry."))
    sc = scenario(limits={"max_agent_steps": 4})
    t = await run(sc, agent, FakeModel("mock:sim", replies=[done("user_gave_up")]))
    assert [r.error for r in t.tool_calls] == [
        "unknown_tool",
        "invalid_arguments",
        "invalid_arguments",
    ]
    tool_messages = [m for m in t.messages if m.role == "tool"]
    assert all(m.is_error for m in tool_messages)
    assert "unknown tool 'get_forecast'" in tool_messages[0].content
    assert "Additional properties are not allowed" in tool_messages[1].content
    assert t.stop_reason == "user_gave_up" and t.final_response == "Sorry."


async def test_agent_step_limit() -> None:
    agent = FakeModel(endless=calls(("get_weather", {"city": "Paris"})))
    t = await run(scenario(limits={"max_agent_steps": 2}), agent, FakeModel("mock:sim"))
    assert t.stop_reason == "agent_step_limit" and len(agent.requests) == 2
    assert "max_agent_steps" in (t.stop_detail or "")
    assert t.messages[-1].role == "tool"  # everything that happened is kept


async def test_tool_call_limit_stops_the_episode() -> None:
    two = calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"}))
    agent = FakeModel(replies=[two, two])
    t = await run(scenario(limits={"max_tool_calls": 3}), agent, FakeModel("mock:sim"))
    assert t.stop_reason == "tool_call_limit"
    assert [r.error for r in t.tool_calls] == [None, "injected", None, "tool_call_limit"]


@pytest.mark.parametrize("reason", ["goal_met", "user_gave_up", "transfer_requested", "off_topic"])
async def test_each_simulator_stop_reason_is_recorded(reason: str) -> None:
    agent = FakeModel(replies=[text("Let me transfer you.")])
    t = await run(scenario(), agent, FakeModel("mock:sim", replies=[done(reason)]))
    assert t.stop_reason == reason and t.user_turns == 1


async def test_a_simulator_that_never_stops_ends_at_the_turn_limit() -> None:
    agent = FakeModel(endless=text("Anything else?"))
    sim = FakeModel("mock:sim", endless=say("Tell me more."))
    t = await run(scenario(limits={"max_user_turns": 3}), agent, sim)
    assert t.stop_reason == "turn_limit" and t.user_turns == 3
    # asked once more after the last turn, in case the goal was met just then
    assert len(sim.requests) == 3 and t.messages[-1].role == "assistant"


async def test_goal_met_on_the_last_allowed_turn_is_not_a_turn_limit() -> None:
    agent = FakeModel(endless=text("Done."))
    sim = FakeModel("mock:sim", replies=[done("goal_met")])
    t = await run(scenario(limits={"max_user_turns": 1}), agent, sim)
    assert t.stop_reason == "goal_met"


async def test_without_an_opening_message_the_simulator_opens() -> None:
    sc = scenario(user={"opening_message": None})
    sim = FakeModel("mock:sim", replies=[say("Hi, weather in Paris?"), done("goal_met")])
    t = await run(sc, FakeModel(replies=[text("18 °C.")]), sim)
    assert t.messages[0].content == "Hi, weather in Paris?"
    assert "has not started" in sim.requests[0].messages[-1].content


# --- errors --------------------------------------------------------------------------------


async def test_agent_model_error_keeps_what_happened_before() -> None:
    agent = FakeModel(
        replies=[
            calls(("get_weather", {"city": "Paris"})),
            ModelUnavailableError("503 after 3 attempts", model="mock:fake"),
        ]
    )
    t = await run(scenario(), agent, FakeModel("mock:sim"))
    assert t.stop_reason == "agent_error" and t.errored
    assert t.error is not None and (t.error.kind, t.error.role) == (
        "ModelUnavailableError",
        "agent",
    )
    assert "503 after 3 attempts" in t.error.message
    assert len(t.tool_calls) == 1 and t.usage["agent"].calls == 1


async def test_simulator_error_is_recorded_not_raised() -> None:
    agent = FakeModel(replies=[text("18 °C.")])
    sim = FakeModel("mock:sim", replies=[StructuredOutputError("invalid after 2 re-asks")])
    t = await run(scenario(), agent, sim)
    assert t.stop_reason == "simulator_error"
    assert t.error is not None and t.error.role == "simulator"
    assert [m.role for m in t.messages] == ["user", "assistant"]


async def test_missing_models_are_configuration_errors() -> None:
    with pytest.raises(ModelConfigError, match="no simulator model"):
        await run(scenario(), FakeModel(), None)
    with pytest.raises(ModelConfigError, match="no agent model"):
        await run(scenario(), None, FakeModel("mock:sim"))


# --- scripted users ------------------------------------------------------------------------


async def test_scripted_turns_replay_exactly_without_a_simulator() -> None:
    sc = scenario(
        user={
            "goal": "g",
            "script": ["Weather in Paris?", "And in Oslo?"],
            "opening_message": None,
            "known_facts": {},
            "unknown_facts": [],
        }
    )
    agent = FakeModel(
        replies=[
            calls(("get_weather", {"city": "Paris"})),
            text("18."),
            calls(("get_weather", {"city": "Oslo"})),
            text("Unknown city."),
        ]
    )
    t = await run(sc, agent, None)
    assert [m.content for m in t.messages if m.role == "user"] == [
        "Weather in Paris?",
        "And in Oslo?",
    ]
    assert t.stop_reason == "script_finished" and "simulator" not in t.usage
    assert [(r.turn, r.is_error) for r in t.tool_calls] == [(0, False), (1, True)]


# --- Python agents -------------------------------------------------------------------------


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    (tmp_path / "pyagents_episode.py").write_text(
        "import asyncio, threading\n"
        "from harness.models.types import Message\n"
        "seen = []\n"
        "def sync_agent(messages, toolbox):\n"
        "    seen.append((threading.current_thread().name, [m.role for m in messages]))\n"
        "    r = toolbox.call('get_weather', city='Paris')\n"
        "    bad = toolbox.call('get_weather', {'city': 3})\n"
        "    return f\"{r.value['temp_c']} C ({bad.error})\"\n"
        "async def async_agent(messages, toolbox):\n"
        "    await asyncio.sleep(0)\n"
        "    toolbox.call('get_weather', city='Oslo')\n"
        "    return Message(role='assistant', content='async reply')\n"
        "def crashing_agent(messages, toolbox):\n"
        "    toolbox.call('get_weather', city='Paris')\n"
        "    raise RuntimeError('agent bug')\n"
        "def wrong_type_agent(messages, toolbox):\n"
        "    return 42\n"
        "release = threading.Event()\n"
        "def hangs_on_second_turn(messages, toolbox):\n"
        "    if len([m for m in messages if m.role == 'user']) == 2:\n"
        "        toolbox.call('get_weather', city='Paris')\n"
        "        release.wait()\n"
        "    return 'ok'\n"
        "async def async_hangs_on_second_turn(messages, toolbox):\n"
        "    if len([m for m in messages if m.role == 'user']) == 2:\n"
        "        toolbox.call('get_weather', city='Oslo')\n"
        "        await asyncio.Event().wait()\n"
        "    return 'ok'\n"
    )
    return tmp_path


def python_scenario(directory: Path, function: str) -> Scenario:
    data = copy.deepcopy(BASE)
    data["agent"] = {"callable": f"pyagents_episode:{function}", "system_prompt": "be brief"}
    data["user"] = {"goal": "g", "script": ["Weather?", "Again?"]}
    return parse_scenario(data, base_dir=directory)


async def test_sync_python_agent_tools_are_recorded_and_it_runs_off_the_loop(
    agents_dir: Path,
) -> None:
    sc = python_scenario(agents_dir, "sync_agent").with_source(agents_dir / "s.yaml")
    t = await run(sc, None, None)
    assert t.stop_reason == "script_finished" and t.final_response == "18 C (invalid_arguments)"
    assert [(r.name, r.turn, r.step, r.error) for r in t.tool_calls] == [
        ("get_weather", 0, 0, None),
        ("get_weather", 0, 1, "invalid_arguments"),
        ("get_weather", 1, 0, None),
        ("get_weather", 1, 1, "invalid_arguments"),
    ]
    # each tool call shows up as an assistant/tool message pair before the reply
    assert [m.role for m in t.messages[:6]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert t.messages[1].tool_calls[0].id == t.tool_calls[0].call_id
    import pyagents_episode  # type: ignore[import-not-found]

    thread_name, roles = pyagents_episode.seen[0]
    assert thread_name != threading.main_thread().name  # a worker thread, not the event loop
    assert roles == ["system", "user"]  # the system prompt, then the conversation
    assert t.models == {"agent": "python:pyagents_episode:sync_agent"} and not t.offline
    assert [s.role for s in t.steps] == ["agent", "agent"] and "agent" not in t.usage


async def test_async_python_agent(agents_dir: Path) -> None:
    t = await run(
        python_scenario(agents_dir, "async_agent").with_source(agents_dir / "s.yaml"), None, None
    )
    assert t.final_response == "async reply" and [r.arguments for r in t.tool_calls] == [
        {"city": "Oslo"},
        {"city": "Oslo"},
    ]


@pytest.mark.parametrize(
    ("function", "kind", "text_part"),
    [
        ("crashing_agent", "RuntimeError", "agent bug"),
        ("wrong_type_agent", "TypeError", "must return its reply as a str"),
    ],
)
async def test_python_agent_failures_are_agent_errors(
    agents_dir: Path, function: str, kind: str, text_part: str
) -> None:
    sc = python_scenario(agents_dir, function).with_source(agents_dir / "s.yaml")
    t = await run(sc, None, None)
    assert t.stop_reason == "agent_error" and t.error is not None
    assert (t.error.kind, t.error.role) == (kind, "agent") and text_part in t.error.message
    if function == "crashing_agent":
        assert len(t.tool_calls) == 1 and t.messages[-1].role == "tool"  # kept


@pytest.mark.parametrize("function", ["hangs_on_second_turn", "async_hangs_on_second_turn"])
async def test_a_hung_python_agent_ends_at_the_time_limit_keeping_what_happened(
    agents_dir: Path, function: str
) -> None:
    sc = python_scenario(agents_dir, function).with_source(agents_dir / "s.yaml")
    sc = sc.model_copy(update={"limits": sc.limits.model_copy(update={"max_seconds": 0.3})})
    try:
        t = await run(sc, None, None)
    finally:
        import pyagents_episode

        pyagents_episode.release.set()  # let the abandoned thread finish
    assert t.stop_reason == "time_limit" and t.errored
    assert t.error is not None and (t.error.kind, t.error.role) == ("EpisodeTimeout", "agent")
    assert "0.3 s" in t.error.message and "user turn 1" in t.error.message
    assert t.stop_detail is not None and "limits.max_seconds" in t.stop_detail
    # The finished first turn, the second user message and its tool call are kept.
    assert [m.content for m in t.messages] == ["Weather?", "ok", "Again?"]
    assert [r.turn for r in t.tool_calls] == [1]
    assert 0.3 <= t.duration_s < 5
    assert Transcript.model_validate_json(t.model_dump_json()) == t


async def test_the_runs_episode_timeout_applies_when_the_scenario_sets_none() -> None:
    class HangingSimulator(FakeModel):
        async def structured(self, *args: Any, **kwargs: Any) -> Any:
            await asyncio.Event().wait()

    sc = scenario(user={"opening_message": None})
    t = await run_episode(sc, agent_model=FakeModel(), simulator_model=HangingSimulator(),
                          time_limit_s=0.2)
    assert t.stop_reason == "time_limit" and t.error is not None
    assert t.error.role == "simulator" and "user turn 0" in t.error.message
    assert t.stop_detail is not None and "--episode-timeout" in t.stop_detail
    assert t.messages == []

    # The scenario's own limit wins over the run's.
    sc = scenario(user={"opening_message": None}, limits={"max_seconds": 0.1})
    t = await run_episode(sc, agent_model=FakeModel(), simulator_model=HangingSimulator(),
                          time_limit_s=60)
    assert t.stop_reason == "time_limit" and t.duration_s < 5
    assert t.stop_detail is not None and "limits.max_seconds" in t.stop_detail


async def test_a_time_limit_that_is_not_reached_changes_nothing() -> None:
    sc = scenario(limits={"max_seconds": 30})
    agent = FakeModel(replies=[calls(("get_weather", {"city": "Paris"})), text("18 C.")])
    sim = FakeModel(replies=[done("goal_met")])
    t = await run(sc, agent, sim)
    assert t.stop_reason == "goal_met" and t.error is None and not t.errored


def test_a_hung_sync_agent_does_not_keep_the_process_alive(agents_dir: Path) -> None:
    import subprocess
    import sys

    script = (
        "import asyncio, copy, sys\n"
        "from pathlib import Path\n"
        "from harness.scenarios import parse_scenario\n"
        "from harness.simulation import run_episode\n"
        f"d = Path({str(agents_dir)!r})\n"
        "data = {'id': 'x', 'user': {'goal': 'g', 'script': ['a', 'b']},\n"
        "        'agent': {'callable': 'pyagents_episode:hangs_on_second_turn'},\n"
        "        'tools': [{'name': 'get_weather', 'returns': 1}],\n"
        "        'limits': {'max_seconds': 0.3}}\n"
        "sc = parse_scenario(data, base_dir=d).with_source(d / 's.yaml')\n"
        "t = asyncio.run(run_episode(sc, agent_model=None, simulator_model=None))\n"
        "print(t.stop_reason)\n"
    )
    done_ = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=60)
    assert done_.returncode == 0, done_.stderr[-2000:]
    assert done_.stdout.strip() == "time_limit"


async def test_python_agent_that_does_not_import_is_an_input_error(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    data["agent"] = {"callable": "missing_mod_xyz:fn"}
    data["user"] = {"goal": "g", "script": ["hi"]}
    sc = parse_scenario(data, check_imports=False)
    with pytest.raises(InputError, match="does not import"):
        await run(sc, None, None)


# --- what the simulator is shown -----------------------------------------------------------


async def test_simulator_sees_the_user_profile_but_never_the_agent_instructions() -> None:
    agent = FakeModel(replies=[calls(("get_weather", {"city": "Paris"})), text("It is 18 °C.")])
    sim = FakeModel("mock:sim", replies=[done("goal_met")])
    await run(scenario(user={"plan": "Ask about Paris, then say thanks."}), agent, sim)
    (request,) = sim.requests
    assert request.kind == "structured" and request.role == "simulator"
    everything = "\n".join(m.content for m in request.messages)
    assert SYSTEM_PROMPT not in everything
    for part in (
        "a hurried commuter",
        "know the weather in Paris",
        "home_city: Paris",
        "the humidity",
        "Ask about Paris, then say thanks.",
    ):
        assert part in request.messages[0].content
    assert "You: Weather in Paris?" in everything and "Assistant: It is 18 °C." in everything
    assert "get_weather" not in everything and "temp_c" not in everything  # no tool calls


async def test_simulator_sees_tool_calls_when_the_scenario_says_so() -> None:
    agent = FakeModel(replies=[calls(("get_weather", {"city": "Paris"})), text("It is 18 °C.")])
    sim = FakeModel("mock:sim", replies=[done("goal_met")])
    await run(scenario(user={"sees_tool_calls": True}), agent, sim)
    body = sim.requests[0].messages[-1].content
    assert '[assistant called get_weather with {"city": "Paris"}]' in body
    assert '[tool result from get_weather: {"temp_c": 18}]' in body


async def test_episodes_run_concurrently_with_independent_state() -> None:
    data = copy.deepcopy(BASE)
    data["state"] = {"n": 0}
    data["tools"][0] = {
        "name": "get_weather",
        "parameters": data["tools"][0]["parameters"],
        "returns": "${state.n}",
        "set_state": {"n": 1},
    }
    sc = parse_scenario(data, check_imports=False)

    async def one(epoch: int) -> Transcript:
        agent = FakeModel(replies=[calls(("get_weather", {"city": "Paris"})), text("ok")])
        return await run(sc, agent, FakeModel("mock:sim", replies=[done("goal_met")]), epoch)

    transcripts = await asyncio.gather(*(one(e) for e in range(5)))
    assert [t.tool_calls[0].result for t in transcripts] == [0] * 5
    assert all(t.final_state == {"n": 1} and t.initial_state == {"n": 0} for t in transcripts)
    assert sc.state == {"n": 0}


async def test_transcript_round_trips_through_json() -> None:
    agent = FakeModel(replies=[calls(("get_weather", {"city": "Oslo"})), text("No data.")])
    t = await run(scenario(), agent, FakeModel("mock:sim", replies=[done("user_gave_up", "bye")]))
    again = Transcript.model_validate_json(t.model_dump_json())
    assert again == t and again.tool_calls[0].error == "injected"
