"""The run-level CLI contracts that decide a CI job: `compare --fail-on-regression` on a real
regression, `--min-pass-rate` both ways, a `--max-cost` budget with priced calls (loopback
server), and the `--concurrency` bound seen from inside the agent.

The commands run in-process (typer's runner): the same code and exit codes as the console
command, without paying the import time of a fresh interpreter per call
(tests/test_runs_cli.py covers the real subprocess).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.models.mock import register_mock, unregister_mock
from harness.models.request import ModelRequest
from harness.models.types import Message, T
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.testing.hub import TEST_KEYS
from harness.testing.replies import Reply
from harness.testing.server import LoopbackServer
from tests.helpers.bound_mocks import ContextBound


@dataclass
class Done:
    returncode: int
    stdout: str


def harness(*args: str) -> Done:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Done(result.exit_code, result.stdout)


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
                 "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def lines(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]


def write_scenarios(path: Path, scenarios: Sequence[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(list(scenarios)))  # JSON is YAML
    return path


# -- compare --fail-on-regression --------------------------------------------------------

SCENARIO_IDS = [f"task-{i}" for i in range(8)]
BROKEN = set(SCENARIO_IDS[:6])  # the regressed agent fails these, every epoch


class Steady(ContextBound):
    """``mock:steady`` always answers with the required phrase; ``mock:steady-broken`` leaves
    it out on the scenarios in BROKEN."""

    def __init__(self, name: str) -> None:
        self.broken = name.endswith("-broken")

    async def chat(self, request: ModelRequest) -> Message:
        fail = self.broken and self.scenario_id in BROKEN
        return Message(role="assistant", content="no idea" if fail else "DONE")

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        raise AssertionError("not used")


@pytest.fixture
def baseline_and_regressed(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    register_mock("steady", Steady)
    suite = write_scenarios(tmp_path / "suite.yaml", [
        {"id": sid, "user": {"goal": "g", "script": ["do it"]}, "agent": {"model": "mock:steady"},
         "expectations": {"required_phrases": ["DONE"]}} for sid in SCENARIO_IDS])
    dirs = []
    for agent in ("mock:steady", "mock:steady-broken"):
        out = tmp_path / agent.replace(":", "_")
        config = RunConfig(scenario_paths=[str(suite)], agent=agent, epochs=3,
                           cache_mode="off", bootstrap_resamples=0)
        asyncio.run(run_suite(config, out))
        dirs.append(out)
    yield dirs[0], dirs[1]
    unregister_mock("steady")


def test_compare_fails_on_a_significant_regression(
        baseline_and_regressed: tuple[Path, Path]) -> None:
    base, regressed = baseline_and_regressed
    # The runs are what they should be: B fails 6 of 8 scenarios on every epoch.
    by_scenario = {x["scenario_id"]: x["passed"] for x in lines(regressed)}
    assert {s for s, ok in by_scenario.items() if not ok} == BROKEN
    assert all(x["passed"] for x in lines(base))

    done = harness("compare", str(base), str(regressed), "--json")
    assert done.returncode == 0, done.stdout  # no flag: a report, not a gate
    result = json.loads(done.stdout)
    # Per-scenario differences are -1 (6 scenarios) and 0 (2): mean -0.75, and the paired
    # t test on them is significant (t = -0.75 / (sd / sqrt 8)).
    assert result["difference"]["value"] == pytest.approx(-0.75)
    assert result["significant_regression"] is True

    gate = harness("compare", str(base), str(regressed), "--fail-on-regression")
    assert gate.returncode == 1, gate.stdout
    # The same runs the other way round are an improvement: the gate lets it through.
    better = harness("compare", str(regressed), str(base), "--fail-on-regression")
    assert better.returncode == 0, better.stdout
    # A run compared with itself has nothing to report.
    same = harness("compare", str(regressed), str(regressed), "--fail-on-regression")
    assert same.returncode == 0, same.stdout


# -- --min-pass-rate through the CLI -----------------------------------------------------

def callable_suite(tmp_path: Path, module: str, source: str,
                   scenarios: Sequence[dict[str, Any]]) -> Path:
    """A folder with a Python agent module and a scenario file that points at it."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / f"{module}.py").write_text(source)
    write_scenarios(suite / "s.yaml", scenarios)
    return suite


@pytest.fixture
def half_passing_suite(tmp_path: Path) -> Path:
    """Four scenarios, two always pass and two always fail: the pass rate is exactly 0.5."""
    source = "def answer(messages, toolbox):\n    return messages[-1].content.upper()\n"
    return callable_suite(tmp_path, "gate_cli_agent", source, [
        {"id": f"s{i}", "user": {"goal": "g", "script": [word]},
         "agent": {"callable": "gate_cli_agent:answer"},
         "expectations": {"required_phrases": ["PASS"]}}
        for i, word in enumerate(["pass", "pass", "fail", "fail"])])


@pytest.mark.parametrize(("threshold", "basis", "code"), [
    ("0.4", "mean", 0), ("0.5", "mean", 0), ("0.6", "mean", 1), ("0.4", "lower-bound", 1),
])
def test_min_pass_rate_sets_the_exit_code(tmp_path: Path, half_passing_suite: Path,
                                          threshold: str, basis: str, code: int) -> None:
    out = tmp_path / "run"
    done = harness("run", str(half_passing_suite), "--epochs", "2", "--cache-mode", "off",
                   "--out", str(out), "--min-pass-rate", threshold, "--gate-on", basis)
    assert done.returncode == code, done.stdout
    samples = lines(out)
    assert len(samples) == 8
    pass_rate = sum(x["passed"] for x in samples) / len(samples)
    assert pass_rate == 0.5
    gate = json.loads((out / "summary.json").read_text())["gate"]
    assert gate["passed"] is (code == 0)
    [check] = gate["checks"]
    assert check["figure"] == "pass rate" and check["threshold"] == float(threshold)
    if basis == "mean":
        assert check["value"] == pytest.approx(pass_rate)
    else:
        # Scenario pass rates 1, 1, 0, 0: sd 0.577, so the t interval on 3 df reaches far
        # below 0.4 (clipped at 0).
        assert check["value"] < 0.4


# -- --max-cost with priced calls ---------------------------------------------------------

def test_max_cost_stops_cleanly_and_keeps_what_finished(
        tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write_scenarios(tmp_path / "s.yaml", [
        {"id": "priced", "user": {"goal": "g", "script": ["hello there"]},
         "agent": {"model": "openai:loop-agent"},
         "expectations": {"required_phrases": ["auto reply"]}}])
    models = tmp_path / "models.yaml"
    models.write_text(
        "retry: {max_attempts: 2, backoff_initial_s: 0.01, backoff_max_s: 0.01, "
        "backoff_jitter_s: 0}\n"
        "prices:\n  'openai:loop-agent': {input_per_mtok: 1000, output_per_mtok: 1000}\n")
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEYS["openai"])
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.openai_base_url)
    # The agent answers at length: about 800 tokens, where the estimate before the run
    # allows 80 for a reply, so the budget is above the estimate (the run starts) and
    # reached during the run.
    loopback.set_responder(lambda request: Reply.text_reply("auto reply " * 300))
    out = tmp_path / "run"
    epochs = 20
    # One episode = one agent call of some 800 tokens = about $0.8 at $1000/Mtok.
    budget = 3.0
    done = harness("run", str(suite), "--epochs", str(epochs), "--concurrency", "1",
                   "--cache-mode", "off", "--models-config", str(models),
                   "--max-cost", str(budget), "--out", str(out), "--json")
    assert done.returncode == 3, done.stdout  # a budget stop: only part of the plan ran
    summary = json.loads(done.stdout)
    assert summary["stopped"]["reason"] == "budget"
    assert "cost budget" in summary["stopped"]["message"]

    samples = lines(out)
    costs = [x["usage"]["agent"]["cost_usd"] for x in samples]
    assert 0 < len(samples) < epochs
    assert all(x["status"] == "scored" for x in samples), "a budget stop is not an error"
    assert all(c > 0 for c in costs)
    assert summary["counts"]["errored"] == 0
    assert summary["usage"]["total_cost_usd"] == pytest.approx(sum(costs))
    # Stopped at the first call after the spend reached the budget, not before, not later:
    # one at a time, the kept samples cost at least the budget and all but the last less.
    assert sum(costs) >= budget > sum(costs) - costs[-1]
    # No request was sent for a sample that was then dropped.
    assert loopback.request_count == sum(x["usage"]["agent"]["calls"] for x in samples)
    epochs_kept = sorted(x["epoch"] for x in samples)
    assert epochs_kept == list(range(len(samples)))

    # A larger budget on resume finishes the run without repeating a sample.
    again = harness("run", "--resume", str(out), "--max-cost", "100", "--json")
    assert again.returncode == 0, again.stdout
    assert json.loads(again.stdout)["stopped"] is None
    assert sorted(x["epoch"] for x in lines(out)) == list(range(epochs))
    assert loopback.request_count == epochs


# -- --concurrency, seen by the agent ---------------------------------------------------

IN_FLIGHT_AGENT = '''\
import asyncio, os
_now = 0

async def answer(messages, toolbox):
    global _now
    _now += 1
    with open(os.environ["IN_FLIGHT_LOG"], "a") as log:
        log.write(f"{_now}\\n")  # episodes in flight, this one included
    try:
        await asyncio.sleep(0.03)
    finally:
        _now -= 1
    return "ok"
'''


@pytest.mark.parametrize("concurrency", [1, 4])
def test_concurrency_bounds_episodes_in_flight(tmp_path: Path, concurrency: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    suite = callable_suite(tmp_path, "in_flight_agent", IN_FLIGHT_AGENT, [
        {"id": f"c{i}", "user": {"goal": "g", "script": ["hi"]},
         "agent": {"callable": "in_flight_agent:answer"},
         "expectations": {"required_phrases": ["ok"]}} for i in range(4)])
    log = tmp_path / "in_flight.log"
    monkeypatch.setenv("IN_FLIGHT_LOG", str(log))
    done = harness("run", str(suite), "--epochs", "5", "--concurrency", str(concurrency),
                   "--cache-mode", "off", "--out", str(tmp_path / "run"), "--json")
    assert done.returncode == 0, done.stdout
    in_flight = [int(row) for row in log.read_text().splitlines()]
    assert len(in_flight) == 20  # every episode entered once
    assert max(in_flight) == concurrency  # never above the bound, and the bound was used
    assert json.loads(done.stdout)["counts"]["scored"] == 20
