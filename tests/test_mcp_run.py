"""Mocked tools over MCP inside a run: a Python agent that names a keyword parameter
``mcp_url`` is given the URL of its episode's MCP server and calls the tools with the official
client; its calls land in the transcript and the checks score them, as ``toolbox.call``'s do.
One tool server serves the whole run; an episode run alone starts its own."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import harness.mcp.server
from harness.errors import InputError
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.simulation import run_episode
from harness.simulation.agent import CallableAgent
from tests.helpers.cli import run_cli
from tests.helpers.mcp_scenario import load, write_scenario
from tests.helpers.run_processes import ended, start_run, wait_for_a_stored_sample

WEATHER = Path(__file__).resolve().parents[1] / "scenarios" / "weather.yaml"


def stored(run_dir: Path) -> list[SampleRecord]:
    store = RunStore.open(run_dir)
    try:
        return sorted(store.iter_samples(), key=lambda s: (s.scenario_id, s.epoch))
    finally:
        store.close()


@pytest.fixture
def servers_started(monkeypatch: pytest.MonkeyPatch) -> list[harness.mcp.ToolServer]:
    """Every ToolServer started in the test, in order."""
    started: list[harness.mcp.ToolServer] = []
    enter = harness.mcp.ToolServer.__aenter__

    async def counting(self: harness.mcp.ToolServer) -> harness.mcp.ToolServer:
        started.append(self)
        return await enter(self)

    monkeypatch.setattr(harness.mcp.ToolServer, "__aenter__", counting)
    return started


@pytest.mark.parametrize("agent", ["agent", "sync_agent"])
async def test_an_episode_serves_its_tools_to_an_agent_that_takes_mcp_url(
        tmp_path: Path, agent: str, servers_started: list[harness.mcp.ToolServer]) -> None:
    transcript = await run_episode(load(write_scenario(tmp_path, agent=agent)),
                                   agent_model=None, simulator_model=None)
    assert transcript.stop_reason == "script_finished", transcript.error
    assert len(servers_started) == 1  # its own, as no server was given
    calls = [(c.name, c.arguments, c.turn, c.step, c.is_error) for c in transcript.tool_calls]
    assert calls == [("get_weather", {"city": "Paris"}, 0, 0, False),
                     ("add_item", {"item": "tea"}, 0, 1, False)]
    assert transcript.final_state == {"cart": ["tea"]}
    # The calls read as a model agent's would: an assistant call and a tool message each.
    roles = [m.role for m in transcript.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert transcript.messages[-1].content == 'It is {"city": "Paris", "temperature_c": 18}'
    # the calls ran while the agent's call lasted: its turn's latency does not add them twice
    [step] = [s for s in transcript.steps if s.role == "agent"]
    assert step.includes_tool_time
    assert transcript.turn_latencies() == {0: step.latency_s}


async def test_a_run_starts_one_tool_server_and_the_checks_score_the_calls(
        tmp_path: Path, servers_started: list[harness.mcp.ToolServer]) -> None:
    config = RunConfig(scenario_paths=[str(write_scenario(tmp_path)), str(WEATHER)],
                       offline=True, epochs=3, concurrency=4, cache_mode="off",
                       bootstrap_resamples=0)
    await run_suite(config, tmp_path / "run")
    mcp_samples = [s for s in stored(tmp_path / "run") if s.scenario_id == "mcp-tools"]
    assert len(mcp_samples) == 3 and len(servers_started) == 1
    for sample in mcp_samples:
        assert sample.status == "scored", sample.error
        assert [c.name for c in sample.transcript.tool_calls] == ["get_weather", "add_item"]
        assert sample.metrics["trajectory_exact_match"] == 1.0
        assert sample.transcript.final_state == {"cart": ["tea"]}
        assert sample.passed is True


async def test_a_run_without_mcp_agents_starts_no_tool_server(
        tmp_path: Path, servers_started: list[harness.mcp.ToolServer]) -> None:
    config = RunConfig(scenario_paths=[str(WEATHER)], offline=True, epochs=1,
                       cache_mode="off", bootstrap_resamples=0)
    result = await run_suite(config, tmp_path / "run")
    assert result.state.finished > 0 and servers_started == []


def test_harness_run_offline_scores_an_mcp_agent(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    done = run_cli("run", path, "--offline", "--epochs", "2", "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    samples = [json.loads(line)
               for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert [s["passed"] for s in samples] == [True, True]
    assert {len(s.transcript.tool_calls) for s in stored(tmp_path / "run")} == {2}


def test_ctrl_c_stops_a_run_of_mcp_agents_cleanly(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, agent="slow_agent")
    out = tmp_path / "run"
    process = start_run(path, out, "--epochs", "40", "--concurrency", "2")
    try:
        wait_for_a_stored_sample(process, out)
    finally:
        process.send_signal(signal.SIGINT)
        stderr = ended(process, timeout_s=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    finished = stored(out)
    assert 0 < len(finished) < 40 and all(s.passed for s in finished)
    assert json.loads((out / "summary.json").read_text())["stopped"]["reason"] == "interrupted"


def test_an_agent_without_mcp_url_needs_no_tool_server() -> None:
    def plain(messages: object, toolbox: object) -> str:
        return "hi"

    def over_mcp(messages: object, toolbox: object, *, mcp_url: str) -> str:
        return mcp_url

    assert not CallableAgent(plain, label="p").needs_tool_server
    assert CallableAgent(over_mcp, label="m").needs_tool_server


def test_an_agent_that_cannot_take_its_arguments_is_refused_at_load(tmp_path: Path) -> None:
    module = tmp_path / "bad_agent_mcp.py"
    module.write_text("def agent(messages, *, mcp_url):\n    return ''\n", encoding="utf-8")
    with pytest.raises(InputError, match="must accept 2 positional arguments and the keyword "
                                         r"argument\(s\) mcp_url"):
        CallableAgent.from_path("bad_agent_mcp:agent", base_dir=tmp_path)


def test_the_sdk_is_imported_only_when_an_agent_needs_it() -> None:
    probe = ("import sys, harness, harness.runs.api, harness.simulation.episode\n"
             "print(sorted(m for m in ('mcp', 'uvicorn') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]"
