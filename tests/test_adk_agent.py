"""ADK agents run in place (``agent: {adk: ...}``): the example dice agent's model is reached
through the loopback server's Gemini route, its tool calls are answered by the scenario's
mocks (its real functions never run), a tool the scenario does not mock is one line naming
it, ``real_tools`` lets one run, the scenario's state is the session's, usage is recorded,
and bad paths are one line each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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
    data: dict[str, Any] = {
        "id": "dice",
        "user": {"persona": "a player", "goal": "a roll", "script": ["Roll a six-sided die."]},
        "agent": {"adk": "dice_agent.agent:root_agent", **agent},
        "tools": [{"name": "roll_die", "parameters": SIDES, "returns": {"result": 4}}],
        "limits": {"max_agent_steps": 4},
    }
    return parse_scenario(data, check_imports=False)


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
