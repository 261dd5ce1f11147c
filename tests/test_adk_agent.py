"""ADK agents run in place (``agent: {adk: ...}``): the example dice agent's model is reached
through the loopback server's Gemini route, its tool calls are answered by the scenario's
mocks (its real functions never run), a tool the scenario does not mock is one line naming
it, ``real_tools`` lets one run, the scenario's state is the session's, usage is recorded,
a scenario's user.history is in the session before the first turn, and bad paths are one
line each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError
from harness.scenarios import parse_scenario
from harness.simulation import run_episode
from harness.testing.hub import loopback_environ
from harness.testing.replies import Reply
from harness.testing.server import LoopbackServer

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "adk_agent"
SIDES = {"type": "object", "properties": {"sides": {"type": "integer"}}, "required": ["sides"]}


@pytest.fixture
def adk_env(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> LoopbackServer:
    """The loopback server's Gemini URL and key for google-genai, for this test only."""
    for name, value in loopback_environ(loopback).items():
        monkeypatch.setenv(name, value)
    return loopback


@pytest.fixture
def real_calls() -> list[str]:
    from dice_agent.agent import REAL_CALLS  # type: ignore[import-not-found]

    REAL_CALLS.clear()
    return REAL_CALLS  # type: ignore[no-any-return]


def scenario(**agent: Any) -> Any:
    return parse_scenario(scenario_data(**agent), check_imports=False)


def scenario_data(**agent: Any) -> dict[str, Any]:
    return {
        "id": "dice",
        "user": {"persona": "a player", "goal": "a roll", "script": ["Roll a six-sided die."]},
        "agent": {"adk": "dice_agent.agent:root_agent", **agent},
        "tools": [{"name": "roll_die", "parameters": SIDES, "returns": {"result": 4}}],
        "limits": {"max_agent_steps": 4},
    }


@pytest.fixture(autouse=True)
def _example_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))


async def test_mocked_tools_answer_and_the_real_function_never_runs(
        adk_env: LoopbackServer, real_calls: list[str]) -> None:
    adk_env.enqueue(Reply.tool_call("roll_die", {"sides": 6}, text="Rolling."),
                    Reply.text_reply("You rolled a 4.", usage=(120, 9)))
    transcript = await run_episode(scenario(), agent_model=None, simulator_model=None)
    assert (transcript.stop_reason, transcript.error) == ("script_finished", None)
    assert real_calls == []
    assert [(r.name, r.arguments, r.result, r.turn, r.step) for r in transcript.tool_calls] == [
        ("roll_die", {"sides": 6}, {"result": 4}, 0, 0)]
    assert transcript.final_response == "You rolled a 4."
    roles = [(m.role, m.content, [c.name for c in m.tool_calls]) for m in transcript.messages]
    assert roles == [("user", "Roll a six-sided die.", []),
                     ("assistant", "Rolling.", ["roll_die"]),
                     ("tool", '{"result": 4}', []),
                     ("assistant", "You rolled a 4.", [])]
    # the mock's answer went to the model as the function's response
    second = adk_env.requests[1]
    assert second.path.endswith("/models/gemini-2.5-flash:generateContent")
    response_part = second.messages[-1]["parts"][0]["functionResponse"]
    assert (response_part["name"], response_part["response"]) == ("roll_die", {"result": 4})
    assert transcript.models["agent"] == "adk:dice_agent.agent:root_agent"


async def test_a_tool_the_scenario_does_not_mock_is_one_line_naming_it(
        adk_env: LoopbackServer, real_calls: list[str]) -> None:
    adk_env.enqueue(Reply.tool_call("check_prime", {"numbers": [4]}),
                    Reply.text_reply("never asked"))
    transcript = await run_episode(scenario(), agent_model=None, simulator_model=None)
    assert transcript.stop_reason == "agent_error" and real_calls == []
    assert transcript.error is not None and transcript.error.kind == "UnmockedTool"
    message = transcript.error.message
    assert "\n" not in message and "'check_prime'" in message
    assert "agent.real_tools: [check_prime]" in message
    assert adk_env.request_count == 1  # the episode ended at the call


async def test_real_tools_let_the_real_function_run_and_record_it(
        adk_env: LoopbackServer, real_calls: list[str]) -> None:
    adk_env.enqueue(Reply.calls(("roll_die", {"sides": 6}), ("check_prime", {"numbers": [4, 5]})),
                    Reply.text_reply("You rolled a 4; 5 is prime."))
    transcript = await run_episode(scenario(real_tools=["check_prime"]), agent_model=None,
                                   simulator_model=None)
    assert (transcript.stop_reason, transcript.error) == ("script_finished", None)
    assert real_calls == ["check_prime"]  # the mocked roll_die's function did not run
    assert [(r.name, r.result, r.is_error) for r in transcript.tool_calls] == [
        ("roll_die", {"result": 4}, False), ("check_prime", {"primes": [5]}, False)]
    tool_messages = [m for m in transcript.messages if m.role == "tool"]
    assert [(m.name, m.content) for m in tool_messages] == [
        ("roll_die", '{"result": 4}'), ("check_prime", '{"primes": [5]}')]


async def test_the_scenario_state_is_the_session_state(adk_env: LoopbackServer) -> None:
    adk_env.enqueue(Reply.text_reply("Hello Ada."), Reply.text_reply("Still you, Ada."))
    data = scenario_data()
    data["state"] = {"player": "Ada"}
    data["user"]["script"] = ["Hi.", "Who am I?"]
    transcript = await run_episode(parse_scenario(data, check_imports=False), agent_model=None,
                                   simulator_model=None)
    assert transcript.stop_reason == "script_finished"
    first, second = adk_env.requests
    # the instruction's {player?} read the session state
    assert "You roll dice for Ada." in first.body["systemInstruction"]["parts"][0]["text"]
    # one session for the episode: the second turn carries the first
    assert [m["role"] for m in second.messages] == ["user", "model", "user"]
    assert second.messages[-1]["parts"][0]["text"] == "Who am I?"


async def test_usage_and_cost_of_every_model_call_are_recorded(adk_env: LoopbackServer) -> None:
    adk_env.enqueue(Reply.tool_call("roll_die", {"sides": 6}),
                    Reply.text_reply("You rolled a 4.", usage=(1000, 200)))
    transcript = await run_episode(scenario(), agent_model=None, simulator_model=None)
    usage = transcript.usage["agent"]
    assert usage.calls == 2 and usage.unpriced_calls == 0
    assert usage.input_tokens >= 1000 and usage.output_tokens >= 200
    assert usage.cost_usd > (1000 * 0.30 + 200 * 2.50) / 1e6
    steps = [(s.turn, s.step, s.model) for s in transcript.steps]
    assert steps == [(0, 0, "gemini:gemini-2.5-flash"), (0, 1, "gemini:gemini-2.5-flash")]


@pytest.mark.parametrize(("path", "expected"), [
    ("dice_agent.missing:root_agent", "module 'dice_agent.missing' does not import"),
    ("dice_agent.agent:no_agent", "has no attribute 'no_agent'"),
    ("dice_agent.agent:roll_die", "'dice_agent.agent:roll_die' is a function, not an ADK agent"),
    ("not a path", "is not of the form 'package.module:function'"),
])
def test_a_bad_path_is_one_line(path: str, expected: str) -> None:
    data = scenario_data()
    data["agent"]["adk"] = path
    with pytest.raises(InputError) as caught:
        parse_scenario(data, source="dice.yaml")
    assert "\n" not in str(caught.value) and "agent.adk" in str(caught.value)
    assert expected in str(caught.value)


def test_a_missing_adk_extra_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "google.adk" else real(name, *a))
    data = scenario_data()
    with pytest.raises(InputError, match=r"agent\.adk: ADK agents need the adk extra: pip "
                       r"install 'agent-eval-harness\[adk\]'$"):
        parse_scenario(data, source="dice.yaml")


HISTORY = [
    {"role": "user", "content": "Roll a die."},
    {"role": "assistant", "content": "Rolling.",
     "tool_calls": [{"id": "h1", "name": "roll_die", "arguments": {"sides": 6}}]},
    {"role": "tool", "tool_call_id": "h1", "name": "roll_die", "content": '{"result": 2}'},
    {"role": "assistant", "content": "You rolled a 2."},
]


async def test_the_history_is_in_the_session_before_the_first_turn(
        adk_env: LoopbackServer, real_calls: list[str]) -> None:
    adk_env.enqueue(Reply.text_reply("You rolled a 4 this time."))
    data = scenario_data()
    data["user"] = {"persona": "a player", "goal": "a roll", "script": ["And again."],
                    "history": HISTORY}
    transcript = await run_episode(parse_scenario(data, check_imports=False), agent_model=None,
                                   simulator_model=None)
    assert (transcript.stop_reason, transcript.error) == ("script_finished", None)
    [request] = adk_env.requests
    contents = [(m["role"], [sorted(part) for part in m["parts"]]) for m in request.messages]
    assert contents == [("user", [["text"]]), ("model", [["text"], ["functionCall"]]),
                        ("user", [["functionResponse"]]), ("model", [["text"]]),
                        ("user", [["text"]])]
    texts = [p.get("text") for m in request.messages for p in m["parts"]]
    assert texts == ["Roll a die.", "Rolling.", None, None, "You rolled a 2.", "And again."]
    call = request.messages[1]["parts"][1]["functionCall"]
    assert call == {"name": "roll_die", "args": {"sides": 6}}  # ids stay client-side
    response = request.messages[2]["parts"][0]["functionResponse"]
    assert (response["name"], response["response"]) == ("roll_die", {"result": 2})
    assert "id" not in response
    # the history's call is not run again, and the transcript keeps the history apart
    assert real_calls == [] and transcript.tool_calls == []
    assert [(m.role, m.content) for m in transcript.history] == [
        (h["role"], h["content"]) for h in HISTORY]
    assert [(m.role, m.content) for m in transcript.messages] == [
        ("user", "And again."), ("assistant", "You rolled a 4 this time.")]


async def test_a_history_is_replayed_once_not_on_every_turn(adk_env: LoopbackServer) -> None:
    adk_env.enqueue(Reply.text_reply("A 3."), Reply.text_reply("A 5."))
    data = scenario_data()
    data["user"] = {"persona": "a player", "goal": "a roll", "script": ["Again.", "Once more."],
                    "history": HISTORY}
    transcript = await run_episode(parse_scenario(data, check_imports=False), agent_model=None,
                                   simulator_model=None)
    assert transcript.stop_reason == "script_finished", transcript.error
    first, second = adk_env.requests
    assert len(first.messages) == 5
    # the second turn: the history, the first turn and the new message, nothing doubled
    assert [m["role"] for m in second.messages] == [
        "user", "model", "user", "model", "user", "model", "user"]


async def test_past_max_agent_steps_the_episode_stops(adk_env: LoopbackServer) -> None:
    adk_env.set_responder(lambda request: Reply.tool_call("roll_die", {"sides": 6}))
    transcript = await run_episode(scenario(), agent_model=None, simulator_model=None)
    assert transcript.stop_reason == "agent_step_limit", transcript.error
    assert "limits.max_agent_steps" in (transcript.stop_detail or "")
    assert adk_env.request_count == 4


def test_agent_adk_on_the_command_line_replaces_the_model_agent(
        adk_env: LoopbackServer, tmp_path: Path) -> None:
    import yaml

    from tests.helpers.cli import run_cli

    adk_env.enqueue(Reply.tool_call("roll_die", {"sides": 6}), Reply.text_reply("A 4."))
    source = tmp_path / "dice.yaml"
    data = scenario_data()
    data["agent"] = {"model": "openai:gpt-4.1"}
    source.write_text(yaml.safe_dump(data))
    result = run_cli("run", source, "--agent", "adk:dice_agent.agent:root_agent", "--epochs",
                     "1", "--no-judge", "--cache-mode", "off", "--out", tmp_path / "run")
    assert result.returncode == 4, result.stderr  # ran, but the scenario has no checks
    [sample] = [json.loads(line)
                for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert sample["status"] == "unscored"
    assert sample["models"]["agent"] == ["adk:dice_agent.agent:root_agent"]
    assert [r.model for r in adk_env.requests] == ["gemini-2.5-flash", "gemini-2.5-flash"]
    bad = run_cli("run", source, "--agent", "adk:dice_agent.agent:nothing", "--out",
                  tmp_path / "bad")
    assert bad.returncode == 2
    [line] = bad.stderr.strip().splitlines()
    assert "--agent" in line and "has no attribute 'nothing'" in line
