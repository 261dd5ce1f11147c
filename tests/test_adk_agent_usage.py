"""An ADK agent's model calls in the run's usage ledger and budgets: the ledger counts each
call ADK makes (role ``agent``, under the model's name, the tokens the loopback server
replied with, priced at the run's prices, cached tokens included), ``--max-calls`` and
``--max-cost`` stop the run before the call past them and ``--resume`` finishes it, and the
run's terminal and HTML usage show the agent role."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import BudgetExceededError
from harness.models.hub import ModelHub
from harness.models.prices import PriceTable
from harness.scenarios import parse_scenario
from harness.simulation import run_episode
from harness.testing.hub import loopback_environ
from harness.testing.replies import Reply
from harness.testing.server import LoopbackServer
from tests.helpers.cli import run_cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "adk_agent"
SIDES = {"type": "object", "properties": {"sides": {"type": "integer"}}, "required": ["sides"]}
MODEL = "gemini:gemini-2.5-flash"


@pytest.fixture
def adk_env(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> LoopbackServer:
    for name, value in loopback_environ(loopback).items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    return loopback


def roll(usage: tuple[int, int]) -> Reply:
    """A roll_die call whose usage the server reports as ``usage``."""
    return dataclasses.replace(Reply.tool_call("roll_die", {"sides": 6}), usage=usage)


def scenario_data(script: list[str]) -> dict[str, Any]:
    return {
        "id": "dice",
        "user": {"persona": "a player", "goal": "a roll", "script": script},
        "agent": {"adk": "dice_agent.agent:root_agent"},
        "tools": [{"name": "roll_die", "parameters": SIDES, "returns": {"result": 4}}],
        "expectations": {"tool_calls": [{"name": "roll_die", "args": {"sides": 6}}]},
    }


async def test_the_ledger_counts_each_call_with_the_tokens_the_server_sent(
        adk_env: LoopbackServer) -> None:
    adk_env.enqueue(roll(usage=(300, 20)),
                    Reply.text_reply("You rolled a 4.", usage=(1000, 200)))
    hub = ModelHub()
    transcript = await run_episode(parse_scenario(scenario_data(["Roll."]), check_imports=False),
                                   agent_model=None, simulator_model=None,
                                   services=hub.services)
    assert transcript.stop_reason == "script_finished", transcript.error
    stats = hub.ledger.get("agent", MODEL)
    assert (stats.calls, stats.requests, stats.errors) == (2, 2, 0)
    assert (stats.input_tokens, stats.output_tokens) == (1300, 220)
    price = PriceTable().lookup(MODEL)
    assert price is not None
    assert stats.cost_usd == pytest.approx(price.cost(300, 20) + price.cost(1000, 200))
    assert stats.latency_s > 0 and stats.unpriced_requests == 0
    assert set(hub.ledger.by_role()) == {"agent"}
    # the transcript says the same as the ledger
    usage = transcript.usage["agent"]
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (2, 1300, 220)
    assert usage.cost_usd == pytest.approx(stats.cost_usd)


async def test_cached_tokens_are_counted_and_priced_as_cache_reads(
        adk_env: LoopbackServer) -> None:
    # Two turns whose first message is long enough for the server's (Gemini's implicit)
    # prompt cache: the second request reads the first one's prefix.
    adk_env.play_prompt_caches()
    adk_env.enqueue(Reply.text_reply("Hello."), Reply.text_reply("A 4."))
    hub = ModelHub()
    long_hello = "Hello, I have a long story about dice. " * 200
    data = scenario_data([long_hello, "Roll."])
    data.pop("expectations")
    transcript = await run_episode(parse_scenario(data, check_imports=False),
                                   agent_model=None, simulator_model=None,
                                   services=hub.services)
    assert transcript.stop_reason == "script_finished", transcript.error
    stats = hub.ledger.get("agent", MODEL)
    usage = transcript.usage["agent"]
    assert stats.prompt_cache_read_tokens > 1000
    assert stats.prompt_cache_read_tokens == usage.prompt_cache_read_tokens
    price = PriceTable().lookup(MODEL)
    assert price is not None
    assert stats.cost_usd == pytest.approx(price.cost(
        stats.input_tokens, stats.output_tokens, stats.prompt_cache_read_tokens))
    assert stats.cost_usd < price.cost(stats.input_tokens, stats.output_tokens)
    assert stats.prompt_cache_saved_usd > 0


def test_the_usage_of_an_adk_reply_is_read_as_the_gemini_provider_reads_it() -> None:
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    from harness.simulation.adk_plugin import priced

    response = LlmResponse(usage_metadata=types.GenerateContentResponseUsageMetadata(
        prompt_token_count=900, tool_use_prompt_token_count=100,
        cached_content_token_count=600, candidates_token_count=50, thoughts_token_count=10))
    prices = PriceTable()
    cost = priced(response, MODEL, prices)
    assert (cost.usage.input_tokens, cost.usage.output_tokens,
            cost.usage.cache_read_tokens) == (1000, 60, 600)
    price = prices.lookup(MODEL)
    assert price is not None
    assert cost.cost_usd == pytest.approx(price.cost(1000, 60, 600))
    assert priced(response, "gemini:no-such-model", prices).cost_usd is None


async def test_a_reached_budget_raises_before_the_model_is_called(
        adk_env: LoopbackServer) -> None:
    adk_env.set_responder(lambda request: Reply.text_reply("Hi."))
    hub = ModelHub()
    hub.ledger.max_calls = 2
    scenario = parse_scenario(scenario_data(["One.", "Two.", "Three."]), check_imports=False)
    with pytest.raises(BudgetExceededError, match="call budget of 2 model calls"):
        await run_episode(scenario, agent_model=None, simulator_model=None,
                          services=hub.services)
    assert adk_env.request_count == 2
    assert hub.ledger.started_calls == 2 and hub.ledger.total.calls == 2


def _write_suite(tmp_path: Path, script: list[str]) -> Path:
    source = tmp_path / "dice.yaml"
    source.write_text(yaml.safe_dump(scenario_data(script)))
    return source


def _samples(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "samples.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_max_calls_stops_the_run_at_n_calls_and_resume_finishes_it(
        adk_env: LoopbackServer, tmp_path: Path) -> None:
    # Each sample: a tool call, then the answer (two model calls).
    adk_env.set_responder(lambda request: (
        Reply.text_reply("You rolled a 4.") if request.messages[-1]["role"] == "user"
        and "functionResponse" in request.messages[-1]["parts"][0]
        else Reply.tool_call("roll_die", {"sides": 6})))
    source = _write_suite(tmp_path, ["Roll a die."])
    out = tmp_path / "run"
    stopped = run_cli("run", source, "--epochs", "3", "--no-judge", "--cache-mode", "off",
                      "--concurrency", "1", "--max-calls", "3", "--out", out)
    assert stopped.returncode == 3, stopped.stderr
    assert adk_env.request_count == 3  # the fourth call was never made
    assert "budget" in stopped.stderr and f"--resume {out}" in stopped.stderr
    assert [s["status"] for s in _samples(out)] == ["scored"]  # the one that finished
    done = run_cli("run", "--resume", out, "--max-calls", "100", "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(s["epoch"] for s in _samples(out)) == [0, 1, 2]
    assert all(s["status"] == "scored" for s in _samples(out))


def test_max_cost_stops_the_run_once_the_agent_spent_it(
        adk_env: LoopbackServer, tmp_path: Path) -> None:
    # One call of 100k input tokens costs $0.03 at gemini-2.5-flash's price: past $0.01.
    adk_env.set_responder(lambda request: Reply.text_reply("Hi.", usage=(100_000, 10)))
    source = _write_suite(tmp_path, ["One.", "Two."])
    out = tmp_path / "run"
    stopped = run_cli("run", source, "--no-judge", "--cache-mode", "off", "--epochs", "1",
                      "--max-cost", "0.01", "--out", out)
    assert stopped.returncode == 3, stopped.stderr
    assert adk_env.request_count == 1
    assert "budget" in stopped.stderr and f"--resume {out}" in stopped.stderr
    stop = json.loads((out / "summary.json").read_text())["stopped"]
    assert stop["reason"] == "budget"
    assert stop["message"].startswith("cost budget of $0.0100 reached ($0.0300 spent)")


def test_the_run_shows_the_agent_role_in_its_usage(adk_env: LoopbackServer,
                                                   tmp_path: Path) -> None:
    adk_env.enqueue(roll(usage=(400, 30)),
                    Reply.text_reply("You rolled a 4.", usage=(500, 40)))
    source = _write_suite(tmp_path, ["Roll a die."])
    out = tmp_path / "run"
    done = run_cli("run", source, "--no-judge", "--cache-mode", "off", "--epochs", "1",
                   "--out", out, columns=160)
    assert done.returncode == 0, done.stderr
    [row] = [line.replace("│", " ").split() for line in done.stdout.splitlines()
             if "agent" in line and "900" in line]
    assert row[:5] == ["agent", "2", "0", "900", "70"]
    summary = json.loads((out / "summary.json").read_text())
    agent = summary["usage"]["by_role"]["agent"]
    assert (agent["calls"], agent["input_tokens"], agent["output_tokens"]) == (2, 900, 70)
    price = PriceTable().lookup(MODEL)
    assert price is not None
    assert agent["cost_usd"] == pytest.approx(price.cost(900, 70))
    html = run_cli("report", out, "--html")
    assert html.returncode == 0, html.stderr
    page = (out / "report.html").read_text()
    table = page[page.index('<table id="usage-table">'):]
    table = table[:table.index("</table>")]
    assert ('<tr><td>agent</td><td class="num">2</td><td class="num">0</td>'
            '<td class="num">900</td><td class="num">70</td>') in table


def test_the_dry_run_prices_the_adk_agent_s_measured_calls(adk_env: LoopbackServer,
                                                          tmp_path: Path) -> None:
    adk_env.enqueue(roll(usage=(400, 30)), Reply.text_reply("You rolled a 4.", usage=(500, 40)))
    source = _write_suite(tmp_path, ["Roll a die."])
    out = tmp_path / "run"
    assert run_cli("run", source, "--no-judge", "--cache-mode", "off", "--epochs", "1",
                   "--out", out).returncode == 0
    price = PriceTable().lookup(MODEL)
    assert price is not None
    measured = run_cli("run", source, "--no-judge", "--epochs", "3", "--dry-run",
                       "--estimate-from", out, "--json")
    assert measured.returncode == 0, measured.stderr
    [agent] = [r for r in json.loads(measured.stdout)["roles"] if r["role"] == "agent"]
    assert agent["models"] == [MODEL]
    assert (agent["calls"], agent["input_tokens"], agent["output_tokens"]) == (6, 2700, 210)
    assert agent["cost_usd"] == pytest.approx(3 * price.cost(900, 70))
    # unmeasured, the agent's calls are estimated and priced at its model too, never $0
    estimated = run_cli("run", source, "--no-judge", "--dry-run", "--json")
    assert estimated.returncode == 0, estimated.stderr
    [agent] = [r for r in json.loads(estimated.stdout)["roles"] if r["role"] == "agent"]
    assert agent["models"] == [MODEL] and agent["cost_usd"] > 0
    assert adk_env.request_count == 2  # a dry run calls no model


def test_worker_processes_share_the_budget_of_the_agent_s_calls(
        adk_env: LoopbackServer, tmp_path: Path) -> None:
    # Each worker counts its ADK agent's calls in the run's shared budget: three calls in
    # all, not three each.
    adk_env.set_responder(lambda request: Reply.text_reply("Hi."))
    source = _write_suite(tmp_path, ["One.", "Two."])
    out = tmp_path / "run"
    stopped = run_cli("run", source, "--no-judge", "--cache-mode", "off", "--epochs", "4",
                      "--workers", "2", "--max-calls", "3", "--out", out)
    assert stopped.returncode == 3, stopped.stderr
    assert adk_env.request_count == 3
    assert json.loads((out / "summary.json").read_text())["stopped"]["reason"] == "budget"


async def test_a_failed_model_call_is_counted_as_an_error(adk_env: LoopbackServer) -> None:
    adk_env.enqueue(Reply.error(400, message="bad request"))
    hub = ModelHub()
    transcript = await run_episode(parse_scenario(scenario_data(["Roll."]), check_imports=False),
                                   agent_model=None, simulator_model=None,
                                   services=hub.services)
    assert transcript.stop_reason == "agent_error"
    stats = hub.ledger.get("agent", MODEL)
    assert (stats.calls, stats.requests, stats.errors) == (1, 1, 1)
    assert (stats.input_tokens, stats.cost_usd) == (0, 0.0)
