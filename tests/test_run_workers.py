"""``harness run --workers N`` (issue 16): episodes spread over worker processes give the same
samples and summary as one process, every sample written once by the parent; budgets, the
provider and HTTP-agent concurrency bounds hold over all workers; Ctrl-C, SIGTERM and a
killed worker stop the run cleanly and ``--resume`` completes it; MCP and HTTP agents work in
workers; the response cache is filled by several processes at once and replays whole.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import BudgetExceededError, HarnessError
from harness.models.config import share_of
from harness.models.usage import SharedBudget, UsageLedger
from harness.runs import workers
from harness.runs.api import RunResult, resume_run, run_suite
from harness.runs.config import RunConfig
from harness.runs.engine import SampleOutcome, Suite
from harness.runs.settings import resolve_settings
from harness.runs.store import RunStore
from harness.runs.workers import WorkerPool
from harness.testing.hub import TEST_KEYS
from harness.testing.replies import RecordedRequest, Reply
from harness.testing.server import LoopbackServer
from tests.helpers.cli import run_cli
from tests.helpers.http_agents import Seen, fake_agent, run_args, scenario, write_suite
from tests.helpers.mcp_scenario import write_scenario
from tests.helpers.run_invariants import comparable_records, comparable_summary
from tests.helpers.run_processes import (
    ended,
    slow_suite,
    start_run,
    stored_count,
    wait_for_a_stored_sample,
)

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _offline(tmp_path: Path, **fields: Any) -> RunConfig:
    return RunConfig(scenario_paths=[str(SCENARIOS)], offline=True, epochs=3,
                     cache_path=str(tmp_path / "cache.sqlite"), bootstrap_resamples=500,
                     **fields)


def _usage_without_latency(result: RunResult) -> dict[str, Any]:
    return {part: {name: {k: v for k, v in stats.items() if k != "latency_s"}
                   for name, stats in result.ledger[part].items()}
            for part in ("by_role", "by_model", "by_role_and_model")}


async def test_two_workers_store_the_same_samples_and_summary_as_one_each_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    one = await run_suite(_offline(tmp_path), tmp_path / "one")
    written: list[tuple[str, int]] = []
    write = RunStore.write_sample

    def counting(self: RunStore, record: Any) -> None:
        written.append((record.scenario_id, record.epoch))
        write(self, record)

    monkeypatch.setattr(RunStore, "write_sample", counting)
    with caplog.at_level(logging.INFO, logger="harness.runs.workers"):
        two = await run_suite(_offline(tmp_path, workers=2), tmp_path / "two")

    planned = one.state.planned
    assert planned == 33 and two.state.planned == two.state.finished == planned
    assert sorted(collections.Counter(written).values()) == [1] * planned  # each once
    assert comparable_records(tmp_path / "two") == comparable_records(tmp_path / "one")
    assert comparable_summary(tmp_path / "two") == comparable_summary(tmp_path / "one")
    assert two.summary.config.execution.workers == 2 and one.summary.config.execution.workers == 1
    # The parent's ledger is the sum of the workers': the same usage as one process had.
    assert _usage_without_latency(two) == _usage_without_latency(one)
    assert two.ledger["total"]["calls"] == one.ledger["total"]["calls"] > 0
    # Each worker says what it used as it leaves (the benchmark reads these lines).
    left = [r.getMessage() for r in caplog.records if " left: " in r.getMessage()]
    assert sorted(m.split(" left")[0] for m in left) == ["worker process 1",
                                                         "worker process 2"]
    for message in left:
        cpu, rss = re.fullmatch(r"worker process \d left: ([\d.]+) s of CPU, peak RSS "
                                r"(\d+) MB \(pages shared with the process it was forked from "
                                r"included\)",
                                message).groups()
        assert float(cpu) > 0 and int(rss) > 10


# -- against the loopback server: a simulated user, a tool-calling agent, a judge ---------

LOOPBACK_SCENARIO = {
    "user": {"persona": "A customer with questions about order A-1.",
             "goal": "Learn the status of order A-1.", "model": "openai:sim"},
    "agent": {"model": "openai:agent", "system_prompt": "Look orders up with get_order."},
    "tools": [{"name": "get_order", "description": "Look up an order by id.",
               "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                              "required": ["order_id"]},
               "returns": {"order_id": "A-1", "status": "shipped"}}],
    "limits": {"max_user_turns": 2, "max_agent_steps": 3},
    "expectations": {"tool_calls": [{"name": "get_order", "args": {"order_id": "A-1"}}]},
    "rubrics": ["final_response_quality"],
}


def _simulated_user(request: RecordedRequest) -> Reply | None:
    """The simulator asks once more, then ends; the rest is the server's automatic answer."""
    if "SimulatorTurn" in json.dumps(request.body.get("tool_choice")):
        if json.dumps(request.messages).count("Assistant:") >= 2:
            return Reply.json({"message": "", "done": True, "stop_reason": "goal_met"})
        return Reply.json({"message": "And when does it arrive?", "done": False})
    return None


def _loopback_suite(tmp_path: Path, server: LoopbackServer, *, provider_bound: int) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir()
    # Each conversation its own: scenarios with the same one would share cached answers.
    (suite / "orders.yaml").write_text(json.dumps(
        [{**LOOPBACK_SCENARIO, "id": f"order-{i}",
          "user": {**LOOPBACK_SCENARIO["user"], "opening_message": f"Hello, customer {i} here."}}
         for i in range(4)]))
    (tmp_path / "models.yaml").write_text(json.dumps({
        "openai": {"base_url": server.openai_base_url, "api_key": TEST_KEYS["openai"],
                   "concurrency": provider_bound},
        "timeout_s": 10, "retry": {"max_attempts": 2, "backoff_initial_s": 0.01}}))
    return suite


def _loopback_config(tmp_path: Path, suite: Path, **fields: Any) -> RunConfig:
    fields.setdefault("cache_path", str(tmp_path / "cache.sqlite"))
    return RunConfig(scenario_paths=[str(suite)], judges=["openai:judge"], epochs=3,
                     concurrency=8, models_config=str(tmp_path / "models.yaml"),
                     bootstrap_resamples=500, **fields)


async def test_two_workers_against_a_server_fill_the_cache_and_replay_what_one_replays(
        tmp_path: Path, loopback: LoopbackServer) -> None:
    loopback.set_responder(_simulated_user)
    loopback.latency = 0.02  # so requests overlap and the provider bound is exercised
    suite = _loopback_suite(tmp_path, loopback, provider_bound=3)

    # Two processes write the cache at once (SQLite WAL) ...
    filled = await run_suite(_loopback_config(tmp_path, suite, workers=2), tmp_path / "fill")
    assert filled.state.finished == 12 and filled.summary.counts.errored == 0
    # ... under one provider bound for the run: 3 requests in flight, not 3 per worker.
    assert loopback.max_in_flight <= 3
    # The parent's ledger adds up the workers' exactly: every call of every sample, every
    # request the server answered (a judge may find an identical transcript's verdict cached).
    samples = comparable_records(tmp_path / "fill")
    calls = sum(u["calls"] for s in samples.values() for u in s["usage"].values())
    cached = sum(u["cached_calls"] for s in samples.values() for u in s["usage"].values())
    total = filled.ledger["total"]
    assert (total["calls"], total["cached_calls"]) == (calls, cached)
    assert total["requests"] == loopback.request_count == calls - cached
    assert {s["judgments"][0]["rubric_id"] for s in samples.values()} == {
        "final_response_quality"}

    # ... and hold every answer: one process and two replay the run with no request.
    before = loopback.request_count
    one = await run_suite(_loopback_config(tmp_path, suite, cache_mode="replay"),
                          tmp_path / "one")
    two = await run_suite(_loopback_config(tmp_path, suite, cache_mode="replay", workers=2),
                          tmp_path / "two")
    assert loopback.request_count == before
    for replayed in (one, two):
        total = replayed.ledger["total"]
        assert replayed.summary.counts.scored == 12
        assert total["requests"] == 0 and total["cached_calls"] == total["calls"] == calls
    assert comparable_records(tmp_path / "two") == comparable_records(tmp_path / "one")
    assert comparable_summary(tmp_path / "two") == comparable_summary(tmp_path / "one")
    assert _usage_without_latency(two) == _usage_without_latency(one)


# -- budgets -----------------------------------------------------------------------------


async def test_a_call_budget_holds_over_two_workers_and_resume_completes(
        tmp_path: Path) -> None:
    # Offline calls count against --max-calls as real ones do. Each worker alone would
    # allow 40; the shared count stops the run at 40 in all.
    stopped = await run_suite(_offline(tmp_path, workers=2, concurrency=6, max_calls=40),
                              tmp_path / "run")
    assert stopped.summary.stopped is not None
    assert stopped.summary.stopped.reason == "budget"
    assert stopped.ledger["total"]["calls"] == 40
    kept = stopped.summary.counts.samples
    assert 0 < kept < 33

    done = await resume_run(tmp_path / "run", overrides={"max_calls": 10_000, "workers": 1})
    assert done.summary.stopped is None and done.summary.counts.samples == 33
    full = await run_suite(_offline(tmp_path), tmp_path / "full")
    assert comparable_records(tmp_path / "run") == comparable_records(tmp_path / "full")
    assert full.state.finished == 33


def test_a_shared_budget_counts_every_process_s_calls_and_cost() -> None:
    import multiprocessing

    shared = SharedBudget(multiprocessing.get_context("spawn"))
    first = UsageLedger(max_calls=3, max_cost_usd=1.0, shared=shared)
    second = UsageLedger(max_calls=3, max_cost_usd=1.0, shared=shared)
    first.begin_call()
    second.begin_call()
    first.begin_call()
    with pytest.raises(BudgetExceededError, match="call budget of 3"):
        second.begin_call()  # the third call was the first ledger's
    assert (first.started_calls, second.started_calls, shared.calls) == (2, 1, 3)

    cost = UsageLedger(max_cost_usd=1.0, shared=SharedBudget(multiprocessing.get_context(
        "spawn")))
    other = UsageLedger(max_cost_usd=1.0, shared=cost.shared)
    cost.record_request("agent", "openai:a", 10, 10, 0.6)
    other.begin_call()  # 0.6 spent: under the budget
    other.record_request("agent", "openai:a", 10, 10, 0.5)
    with pytest.raises(BudgetExceededError, match=r"\$1\.1000 spent"):
        cost.begin_call()


def test_the_parent_ledger_is_the_sum_of_the_workers() -> None:
    a, b = UsageLedger(), UsageLedger()
    a.record_request("agent", "openai:x", 10, 5, 0.25, cache_read_tokens=6,
                     cache_write_tokens=1, cache_saved_usd=0.0625)
    a.record_call("agent", "openai:x", 0.1)
    b.record_request("agent", "openai:x", 1, 2, 0.5)
    b.record_call("agent", "openai:x", 0.2)
    b.record_call("judge", "openai:j", 0.0, cached=True, saved_cost_usd=0.125)
    parent = UsageLedger()
    parent.replace_with_sum([a.export(), b.export()])
    parent.replace_with_sum([a.export(), b.export()])  # the latest views, not added twice
    snapshot = parent.snapshot()
    assert snapshot["by_role"]["agent"] == {
        "calls": 2, "cached_calls": 0, "requests": 2, "errors": 0, "input_tokens": 11,
        "output_tokens": 7, "latency_s": pytest.approx(0.3), "cost_usd": 0.75,
        "saved_cost_usd": 0.0, "unpriced_requests": 0, "prompt_cache_read_tokens": 6,
        "prompt_cache_write_tokens": 1, "prompt_cache_saved_usd": 0.0625}
    assert snapshot["total"]["calls"] == 3 and snapshot["total"]["cached_calls"] == 1
    assert snapshot["by_model"]["openai:j"]["saved_cost_usd"] == 0.125


@pytest.mark.parametrize(("bound", "count"), [(16, 2), (16, 3), (7, 4), (1, 1), (2, 3)])
def test_a_bound_is_split_over_workers_adding_up_to_it(bound: int, count: int) -> None:
    parts = [share_of(bound, (index, count)) for index in range(count)]
    assert all(part >= 1 for part in parts) and max(parts) - min(parts) <= 1
    assert sum(parts) == max(bound, count)


# -- a worker's problem is the run's ---------------------------------------------------


class _Sink:
    stopped = False

    def __init__(self) -> None:
        self.outcomes: list[SampleOutcome] = []

    def accept(self, outcome: SampleOutcome) -> None:
        self.outcomes.append(outcome)


async def test_a_suite_a_worker_cannot_load_is_an_error_in_the_parent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker from the fork server loads the suite itself (one forked from the parent has
    # the parent's): here the file is deleted after the parent loaded it.
    monkeypatch.setattr(workers, "start_method", lambda: "forkserver")
    gone = tmp_path / "gone.yaml"
    gone.write_text("- id: a\n  user: {goal: g, script: [hi]}\n  agent: {model: 'mock:a'}\n")
    config = resolve_settings(RunConfig(scenario_paths=[str(gone)], offline=True, workers=2))
    suite = Suite.load(config.design)
    gone.unlink()
    pool = WorkerPool(config, suite, 2, UsageLedger())
    with pytest.raises(HarnessError, match="gone.yaml"):
        async with pool.started():
            await pool.run([("a", 0)], _Sink())
    assert all(not w.process.is_alive() for w in pool._workers)


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked from the parent on Linux")
def test_workers_are_forked_from_the_parent_only_while_it_runs_no_other_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers.threading, "active_count", lambda: 1)
    assert workers.start_method() == "fork"
    monkeypatch.setattr(workers.threading, "active_count", lambda: 2)
    assert workers.start_method() == "forkserver"


FORKED_SIGTERM = """
import asyncio, os, signal
from harness.runs import event_loop, workers

async def main():
    seen = []
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, seen.append, "parent")
    pid = os.fork()
    if pid == 0:  # as a worker forked from the parent starts
        workers._forget_parent_signals()
        os.kill(os.getpid(), signal.SIGTERM)
        os._exit(0)  # not reached if SIGTERM ends it
    _, status = os.waitpid(pid, 0)
    await asyncio.sleep(0.3)  # time for a wake-up byte to reach this loop
    print(os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, seen)

event_loop.run(main())
"""


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked from the parent on Linux")
def test_a_worker_forked_from_the_parent_takes_sigterm_as_its_own() -> None:
    # The parent handles SIGTERM on its event loop, through a wake-up descriptor the fork
    # copies: a SIGTERM ending a worker (as the parent ends them) must end it, and must not
    # reach the parent as if it were the parent's.
    done = subprocess.run([sys.executable, "-c", FORKED_SIGTERM], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True []"


def test_workers_forked_from_the_command_line_log_through_it_once(
        tmp_path: Path, loopback: LoopbackServer) -> None:
    # A forked worker starts with the parent's log handlers (the run's harness.log): it must
    # drop them and send its records to the parent, or each would be written twice, once
    # without the worker's name.
    loopback.set_responder(_simulated_user)
    loopback.enqueue(Reply.server_error(), times=2)
    suite = _loopback_suite(tmp_path, loopback, provider_bound=4)
    out = tmp_path / "run"
    process = start_run(suite, out, "--epochs", "1", "--workers", "2", "--judge",
                        "openai:judge", "--models-config", str(tmp_path / "models.yaml"))
    stderr = ended(process)
    assert process.returncode == 0, stderr
    assert list(_workers_of(out).values()) == ["fork", "fork"]
    retries = [line for line in (out / "harness.log").read_text().splitlines()
               if "retrying (attempt 2 of 2)" in line]
    assert len(retries) == 2, retries
    assert all(re.search(r"worker [12]: ", line) for line in retries), retries


# -- the command line --------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "x", "1.5", "1025", ""])
def test_a_bad_workers_value_is_one_line_and_exit_2(tmp_path: Path, value: str) -> None:
    done = run_cli("run", SCENARIOS, "--offline", "--workers", value, "--out", tmp_path / "r")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert "--workers: expected a number of worker processes" in done.stderr
    assert not (tmp_path / "r" / "run.sqlite").exists()


def test_workers_auto_runs_and_may_change_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = run_cli("run", SCENARIOS, "--offline", "--epochs", "1", "--workers", "auto",
                    "--max-calls", "30", "--cache", tmp_path / "c.sqlite", "--out", out)
    assert first.returncode == 3, first.stderr  # the budget stopped it
    assert json.loads((out / "summary.json").read_text())["config"]["workers"] == "auto"
    done = run_cli("run", "--resume", out, "--workers", "2", "--max-calls", "1000", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["counts"]["samples"] == 11 and summary["stopped"] is None
    assert summary["events"][-1]["overrides"] == {"workers": 2, "max_calls": 1000}


def test_mcp_agents_run_in_workers_each_with_its_own_tool_server(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    done = run_cli("run", path, "--offline", "--epochs", "4", "--workers", "2",
                   "--concurrency", "4", "--cache-mode", "off", "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    with RunStore.open(tmp_path / "run") as store:
        samples = list(store.iter_samples())
    assert len(samples) == 4 and all(s.passed for s in samples)
    assert {tuple(c.name for c in s.transcript.tool_calls) for s in samples} == {
        ("get_weather", "add_item")}
    assert {json.dumps(s.transcript.final_state) for s in samples} == {'{"cart": ["tea"]}'}


def test_http_agents_run_in_workers_within_the_endpoint_s_bound(tmp_path: Path) -> None:
    async def slow(seen: Seen) -> web.Response:
        await asyncio.sleep(0.3)  # long enough for both workers to be busy at once
        return web.json_response({"reply": "done"})

    http = {"url": "${env:FAKE_AGENT_URL}/chat", "protocol": "json",
            "request": {"m": "${messages}"}, "reply_path": "reply", "max_concurrency": 2}
    with fake_agent(slow) as agent:
        suite = write_suite(tmp_path, [scenario("a", http), scenario("b", http)])
        done = run_cli(*run_args(suite, tmp_path / "run", "--epochs", "8", "--concurrency",
                                 "8", "--workers", "2"), env={"FAKE_AGENT_URL": agent.url})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["scored"] == 16
    assert len(agent.requests) == 16
    assert agent.max_in_flight == 2  # each worker had one of the 2; together, the bound


async def test_workers_see_the_environment_as_the_run_starts(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # Worker processes forked from a fork server start with the environment the server
    # started with, and it outlives a run: a variable set after it started (here, between two
    # runs of one program) must still reach them, since each such worker loads the suite,
    # and resolves its ${env:...} values, itself.
    monkeypatch.setattr(workers, "start_method", lambda: "forkserver")
    async def answer(seen: Seen) -> web.Response:
        return web.json_response({"reply": "done"})

    monkeypatch.delenv("FAKE_AGENT_URL", raising=False)
    await run_suite(_offline(tmp_path, workers=2), tmp_path / "warm")
    http = {"url": "${env:FAKE_AGENT_URL}/chat", "protocol": "json",
            "request": {"m": "${messages}"}, "reply_path": "reply"}
    with fake_agent(answer) as agent:
        monkeypatch.setenv("FAKE_AGENT_URL", agent.url)
        suite = write_suite(tmp_path / "suite", [scenario("a", http)])
        config = _offline(tmp_path, workers=2).model_copy(
            update={"scenario_paths": [str(suite)]})
        result = await run_suite(config, tmp_path / "run")
    assert result.summary.counts.scored == 3
    assert len(agent.requests) == 3


# -- stopped from outside, and a worker killed ---------------------------------------------

EPOCHS = 30


def _start_run(suite: Path, out: Path) -> subprocess.Popen[str]:
    return start_run(suite, out, "--epochs", str(EPOCHS), "--concurrency", "4", "--workers",
                     "2", env={"SLOW_AGENT_S": "0.3", "COLUMNS": "250"})


def _workers_of(out: Path) -> dict[int, str]:
    """The worker processes of the run writing ``out``, as its log names them: pid -> how
    each was started."""
    log = out / "harness.log"
    text = log.read_text() if log.exists() else ""
    return {int(pid): how for pid, how in re.findall(
        r"worker process \d of \d started \(pid (\d+), (\w+)\)", text)}


def _under_way(process: subprocess.Popen[str], out: Path) -> list[int]:
    """Wait until the run has stored a sample; its worker processes' pids. The command line
    runs no other thread when it starts them, so they are forked from it."""
    wait_for_a_stored_sample(process, out)
    workers = _workers_of(out)
    assert list(workers.values()) == ["fork", "fork"]
    return list(workers)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # exited, not yet reaped by its (gone) parent's reaper


def _resume_completes(out: Path, word: str) -> None:
    resumed = CliRunner().invoke(app, ["run", "--resume", str(out), "--workers", "2", "--json"])
    assert resumed.exit_code == 0, resumed.output
    done = json.loads(resumed.stdout)
    assert done["stopped"] is None
    assert done["counts"]["samples"] == done["counts"]["scored"] == 2 * EPOCHS
    assert [e["kind"] for e in done["events"]][-1] == "resumed"
    assert word in [e.get("reason", e["kind"]) for e in done["events"]]


@pytest.mark.parametrize(("signum", "code", "word"), [
    (signal.SIGTERM, 143, "terminated"),
    (signal.SIGINT, 130, "interrupted"),
])
def test_a_signal_stops_a_run_of_two_workers_keeping_what_finished(
        tmp_path: Path, signum: int, code: int, word: str) -> None:
    out = tmp_path / "run"
    process = _start_run(slow_suite(tmp_path, f"slow_workers_{word}"), out)
    try:
        workers = _under_way(process, out)
        process.send_signal(signum)
    finally:
        stderr = ended(process)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    assert f"{word}: finished samples are stored" in stderr
    assert all(_gone(pid) for pid in workers)  # no worker outlives the run
    summary = json.loads((out / "summary.json").read_text())
    kept = summary["counts"]["samples"]
    assert 0 < kept < 2 * EPOCHS and kept == stored_count(out)
    assert summary["stopped"]["reason"] == word
    _resume_completes(out, word)


def test_a_killed_worker_stops_the_run_cleanly_and_resume_completes_it(
        tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = _start_run(slow_suite(tmp_path, "slow_workers_killed"), out)
    try:
        victim, survivor = _under_way(process, out)
        before = stored_count(out)
        os.kill(victim, signal.SIGKILL)
    finally:
        stderr = ended(process)
    assert process.returncode == 5, stderr
    assert "Traceback" not in stderr
    [line] = [x for x in stderr.splitlines() if x.startswith("error:")]
    assert f"(pid {victim}) was killed by SIGKILL" in line
    assert f"harness run --resume {out}" in line
    assert _gone(survivor)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped"]["reason"] == "worker_lost"
    # Nothing finished was lost: what was stored before the kill is still there, with what
    # the other worker finished after it.
    kept = summary["counts"]["samples"]
    assert before <= kept == stored_count(out) < 2 * EPOCHS
    _resume_completes(out, "worker_lost")


def _end_survivors(pids: list[int]) -> None:
    """SIGKILL whichever of ``pids`` is still a harness process (a test's clean-up: never a
    pid the system has since given to another program)."""
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"harness" in command and not _gone(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _outlived(pids: list[int], limit_s: float) -> list[int]:
    """Which of ``pids`` are still running ``limit_s`` after now (polled, so the wait is as
    short as the processes allow)."""
    deadline = time.monotonic() + limit_s
    while (running := [pid for pid in pids if not _gone(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return running


# The parent's death reaches its workers at once on Linux; the bound leaves room for a loaded
# machine (the workers left behind before were alive 90 s later).
ORPHAN_LIMIT_S = 10.0


def test_no_worker_outlives_a_parent_killed_with_sigkill(tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = _start_run(slow_suite(tmp_path, "slow_workers_orphaned"), out)
    workers: list[int] = []
    try:
        workers = _under_way(process, out)
        process.kill()  # kill -9: nothing of the parent runs after it
        process.wait(timeout=60)
        assert _outlived(workers, ORPHAN_LIMIT_S) == []
    finally:
        _end_survivors(workers)  # first: a survivor holds the pipes ended() reads to the end
        ended(process)


# A process standing in for a worker, watching its parent with the portable check alone (the
# kernel's parent-death signal switched off): it prints its pid, then would sleep two minutes.
_WATCHING_CHILD = """
import os, time
from harness.runs import workers
workers._ask_kernel_for_parent_death_signal = lambda: None
workers._die_with_parent(os.getppid())
print(os.getpid(), flush=True)
time.sleep(120)
"""
_PARENT = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE, text=True)
print(child.stdout.readline().strip(), flush=True)
child.wait()
"""


def test_without_a_parent_death_signal_a_worker_still_ends_with_its_parent() -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, _WATCHING_CHILD],
                              stdout=subprocess.PIPE, text=True)
    child: list[int] = []
    try:
        assert parent.stdout is not None
        child = [int(parent.stdout.readline())]
        assert not _gone(child[0])
        parent.kill()
        parent.wait(timeout=60)
        assert _outlived(child, ORPHAN_LIMIT_S) == []
    finally:
        for pid in child:
            with contextlib.suppress(OSError):
                if not _gone(pid) and b"harness.runs" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
        parent.kill()
        parent.communicate()


async def _worker_pids_once_under_way(caplog: pytest.LogCaptureFixture, out: Path,
                                      run: asyncio.Task[RunResult]) -> list[int]:
    """The pids of the run's worker processes (as its log names them), once it has stored a
    sample; fails the test if the run ends first or nothing is stored in time."""
    deadline = time.monotonic() + 120
    while stored_count(out) == 0:
        assert not run.done(), run.result()
        assert time.monotonic() < deadline, "the run never stored a sample"
        await asyncio.sleep(0.05)
    return [int(pid) for pid in re.findall(r"started \(pid (\d+)", caplog.text)]


async def test_a_stopped_worker_is_ended_and_stops_the_run_as_a_lost_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    # heartbeats come every 3 s: 10 s of silence leaves room on a loaded machine
    monkeypatch.setattr(workers, "WORKER_SILENCE_S", 10.0)
    monkeypatch.setenv("SLOW_AGENT_S", "0.3")
    caplog.set_level(logging.INFO, logger="harness.runs.workers")
    config = RunConfig(scenario_paths=[str(slow_suite(tmp_path, "slow_workers_stopped"))],
                       offline=True, epochs=EPOCHS, concurrency=4, workers=2,
                       cache_mode="off", bootstrap_resamples=500)
    out = tmp_path / "run"
    run = asyncio.create_task(run_suite(config, out))
    try:
        victim, survivor = await _worker_pids_once_under_way(caplog, out, run)
        os.kill(victim, signal.SIGSTOP)
        # before: no limit at all; now the silence (10 s here) and the time to end it
        result = await asyncio.wait_for(asyncio.shield(run), timeout=120)
    finally:
        if not run.done():  # the test failed: end the run (and its workers) as Ctrl-C would
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
    stop = result.summary.stopped
    assert stop is not None and stop.reason == "worker_lost"
    assert f"(pid {victim}) sent nothing for " in stop.message
    assert "(stopped, or hung) and was ended" in stop.message
    assert _gone(victim) and _gone(survivor)
    kept = result.summary.counts.samples
    assert 0 < kept == stored_count(out) < 2 * EPOCHS
    assert "sent nothing for" in caplog.text


class _FakeProcess:
    """Stands in for a worker's process: records being killed."""

    pid = 4242

    def __init__(self) -> None:
        self.killed = False

    def kill(self) -> None:
        self.killed = True


def _pool_of_two(tmp_path: Path) -> tuple[WorkerPool, list[Any]]:
    """A pool of two fake workers, last heard from (and checked) at the clock's 1000 s."""
    pool = WorkerPool(_offline(tmp_path), None, 2, UsageLedger())  # type: ignore[arg-type]
    processes = [_FakeProcess(), _FakeProcess()]
    pool._workers = [workers._Worker(i + 1, p, None, heard_at=1000.0)  # type: ignore[arg-type]
                     for i, p in enumerate(processes)]
    pool._checked_at = 1000.0
    return pool, processes


def test_only_a_worker_silent_past_the_limit_is_ended(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(workers.time, "monotonic", lambda: now[0])
    pool, (quiet, chatty) = _pool_of_two(tmp_path)
    for second in range(1, 32):  # the parent checks every second; one worker keeps talking
        now[0] = 1000.0 + second
        pool._workers[1].heard_at = now[0]
        pool._end_silent_workers()
    assert quiet.killed and not chatty.killed
    assert pool._workers[0].silenced is not None and pool._workers[0].silenced > 30


def test_a_parent_that_was_stopped_itself_does_not_end_its_workers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-Z stops the parent and its workers alike: after fg, nobody was silent on purpose."""
    now = [1000.0]
    monkeypatch.setattr(workers.time, "monotonic", lambda: now[0])
    pool, processes = _pool_of_two(tmp_path)
    now[0] += 600  # ten minutes stopped, parent and workers
    pool._end_silent_workers()
    assert not any(p.killed for p in processes)
    now[0] += workers.WORKER_SILENCE_S + 1  # then silent for real, with the parent running
    for _ in range(40):
        now[0] += 1
        pool._end_silent_workers()
    assert all(p.killed for p in processes)
