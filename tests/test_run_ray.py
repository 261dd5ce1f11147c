"""``harness run --executor ray`` (issue 16): episodes on Ray actors give the same samples and
summary as the local executor; a call budget holds over all actors; the driver stores what
finished and ``--resume`` completes a stopped run (with any executor); a local instance starts
without a dashboard and sends no usage statistics; without the ``ray`` extra,
``--executor ray`` is one line and exit 2, and nothing else ever imports Ray.

Needs the ``ray`` extra (``pip install -e '.[test,adk,ray]'``); skipped without it, unless
``HARNESS_REQUIRE_RAY=1`` (set by ``.ci/run``) makes that a failure. One Ray instance
(``num_cpus=2``) serves the whole module: starting one takes seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.models.usage import UsageLedger
from harness.runs.api import resume_run, run_suite
from harness.runs.config import RunConfig
from harness.runs.engine import Runner
from harness.runs.ray_executor import RayExecutor
from harness.runs.sample import SampleRecord
from tests.helpers.cli import run_cli
from tests.helpers.run_invariants import comparable_records, comparable_summary
from tests.helpers.run_processes import (
    ended,
    slow_suite,
    start_run,
    stored_count,
    wait_for_a_stored_sample,
)

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError as err:
        why = f"ray is not installed ({err}); python -m pip install -e '.[test,ray]' installs it"
        if os.environ.get("HARNESS_REQUIRE_RAY"):
            pytest.fail(why + "; HARNESS_REQUIRE_RAY forbids skipping")
        pytest.skip(why)
    return ray


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[ModuleType]:
    """A local Ray instance of 2 CPUs for this module; the executor uses it as a Ray driver's
    own connection (and leaves it running)."""
    ray = _ray()
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(address="local", num_cpus=2, include_dashboard=False, configure_logging=False,
             log_to_driver=False)
    yield ray
    ray.shutdown()


def _offline(tmp_path: Path, **fields: Any) -> RunConfig:
    return RunConfig(scenario_paths=[str(SCENARIOS)], offline=True, epochs=3,
                     cache_path=str(tmp_path / "cache.sqlite"), bootstrap_resamples=500,
                     **fields)


async def test_ray_actors_store_the_same_samples_and_summary_as_the_local_executor(
        tmp_path: Path, ray_instance: ModuleType) -> None:
    local = await run_suite(_offline(tmp_path), tmp_path / "local")
    on_ray = await run_suite(_offline(tmp_path, executor="ray", workers=2), tmp_path / "ray")

    assert on_ray.state.planned == on_ray.state.finished == local.state.planned == 33
    assert comparable_records(tmp_path / "ray") == comparable_records(tmp_path / "local")
    assert comparable_summary(tmp_path / "ray") == comparable_summary(tmp_path / "local")
    assert on_ray.summary.config.execution.executor == "ray"
    assert local.summary.config.execution.executor == "local"
    # The driver's ledger is the sum of the actors' ledgers.
    assert on_ray.ledger["by_role"].keys() == local.ledger["by_role"].keys()
    for role, stats in local.ledger["by_role"].items():
        assert on_ray.ledger["by_role"][role]["calls"] == stats["calls"] > 0


async def test_a_call_budget_holds_over_ray_actors_and_resume_completes_locally(
        tmp_path: Path, ray_instance: ModuleType) -> None:
    # Each actor alone would allow 40 calls; the budget keeper stops the run at 40 in all.
    stopped = await run_suite(_offline(tmp_path, executor="ray", workers=2, concurrency=6,
                                       max_calls=40), tmp_path / "run")
    assert stopped.summary.stopped is not None
    assert stopped.summary.stopped.reason == "budget"
    assert stopped.ledger["total"]["calls"] == 40
    assert 0 < stopped.summary.counts.samples < 33

    done = await resume_run(tmp_path / "run", overrides={"max_calls": 10_000,
                                                          "executor": "local"})
    assert done.summary.stopped is None and done.summary.counts.samples == 33
    await run_suite(_offline(tmp_path), tmp_path / "full")
    assert comparable_records(tmp_path / "run") == comparable_records(tmp_path / "full")


async def test_a_cancelled_ray_run_kills_its_actors_keeps_what_finished_and_resumes(
        tmp_path: Path, ray_instance: ModuleType) -> None:
    runners: list[Runner] = []
    finished: list[SampleRecord] = []

    def on_sample(record: SampleRecord) -> None:
        finished.append(record)
        if len(finished) == 3:
            task.cancel()  # as Ctrl-C does (harness.cli.interrupts cancels the run's task)

    task = asyncio.create_task(run_suite(
        _offline(tmp_path, executor="ray", workers=2, concurrency=2), tmp_path / "run",
        on_start=runners.append, on_sample=on_sample))
    with pytest.raises(asyncio.CancelledError):
        await task
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["stopped"]["reason"] == "interrupted"
    assert 3 <= summary["counts"]["samples"] < 33
    actors = runners[0].executor._actors  # type: ignore[attr-defined]
    for actor in actors:  # killed, not left running on the cluster
        with pytest.raises(ray_instance.exceptions.RayActorError):
            ray_instance.get(actor.handle.run.remote("files-action-items", 0), timeout=60)

    done = await resume_run(tmp_path / "run", overrides={"executor": "ray"})
    assert done.summary.counts.samples == 33 and done.summary.stopped is None
    await run_suite(_offline(tmp_path), tmp_path / "full")
    assert comparable_records(tmp_path / "run") == comparable_records(tmp_path / "full")


async def test_a_killed_actor_stops_the_run_as_worker_lost_and_resume_completes(
        tmp_path: Path, ray_instance: ModuleType) -> None:
    runners: list[Runner] = []

    def on_sample(record: SampleRecord) -> None:
        actor = runners[0].executor._actors[0]  # type: ignore[attr-defined]
        if actor.alive:
            ray_instance.kill(actor.handle)

    stopped = await run_suite(_offline(tmp_path, executor="ray", workers=2, concurrency=4),
                              tmp_path / "run", on_start=runners.append, on_sample=on_sample)
    assert stopped.summary.stopped is not None
    assert stopped.summary.stopped.reason == "worker_lost"
    assert "Ray actor 1 died" in stopped.summary.stopped.message
    assert 1 <= stopped.summary.counts.samples < 33
    done = await resume_run(tmp_path / "run")
    assert done.summary.counts.samples == 33 and done.summary.stopped is None


def test_executor_ray_through_the_cli_defaults_to_the_cluster_s_cpus_and_may_change_on_resume(
        tmp_path: Path, ray_instance: ModuleType) -> None:
    out = tmp_path / "run"
    first = run_cli("run", SCENARIOS, "--offline", "--epochs", "1", "--executor", "ray",
                    "--max-calls", "30", "--cache", tmp_path / "c.sqlite", "--out", out)
    assert first.returncode == 3, first.stderr  # the budget stopped it
    config = json.loads((out / "summary.json").read_text())["config"]
    assert (config["executor"], config["workers"]) == ("ray", "auto")
    assert "2 Ray actor(s) started" in (out / "harness.log").read_text()  # num_cpus=2
    done = run_cli("run", "--resume", out, "--executor", "local", "--max-calls", "1000",
                   "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["counts"]["samples"] == 11 and summary["stopped"] is None
    assert summary["config"]["executor"] == "local"


def test_sigterm_stops_a_ray_run_as_it_stops_a_local_one(tmp_path: Path) -> None:
    """Ray installs a crash handler for SIGTERM in the driver (a stack dump, then an abort):
    the run must stop as without Ray, with 143, a summary and a resumable store."""
    _ray()
    out = tmp_path / "run"
    process = start_run(slow_suite(tmp_path, "slow_ray_sigterm"), out, "--epochs", "20",
                        "--concurrency", "4", "--executor", "ray", "--workers", "2",
                        env={"SLOW_AGENT_S": "0.3", "RAY_USAGE_STATS_ENABLED": "0"})
    try:
        wait_for_a_stored_sample(process, out, timeout_s=300)  # Ray starts in tens of seconds
        process.send_signal(signal.SIGTERM)
    finally:
        stderr = ended(process, timeout_s=300)
    assert process.returncode == 143, stderr[-3000:]
    assert "SIGTERM received" not in stderr and "Traceback" not in stderr
    assert f"terminated: finished samples are stored and summarised; continue with harness " \
           f"run --resume {out}" in " ".join(stderr.split())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped"]["reason"] == "terminated"
    assert 0 < summary["counts"]["samples"] == stored_count(out) < 40
    done = run_cli("run", "--resume", out, "--executor", "local", "--json",
                   env={"SLOW_AGENT_S": "0"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["samples"] == 40


def test_a_local_instance_starts_without_dashboard_or_usage_stats(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ray = _ray()
    seen: dict[str, Any] = {}

    def init(**options: Any) -> None:
        seen.update(options, usage_stats=os.environ.get("RAY_USAGE_STATS_ENABLED"))
        raise ConnectionError("no cluster here")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.delenv("RAY_USAGE_STATS_ENABLED", raising=False)
    executor = RayExecutor(_offline(tmp_path, executor="ray"), UsageLedger())
    with pytest.raises(HarnessError, match="could not start or reach Ray at a local instance"):
        executor._connect()
    assert seen == {"address": "local", "include_dashboard": False, "log_to_driver": True,
                    "configure_logging": False, "usage_stats": "0"}
    # Set for the instance's start only: the caller's environment is as it was.
    assert "RAY_USAGE_STATS_ENABLED" not in os.environ
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "1")
    with pytest.raises(HarnessError):
        executor._connect()
    assert seen["usage_stats"] == "0" and os.environ["RAY_USAGE_STATS_ENABLED"] == "1"

    seen.clear()
    monkeypatch.delenv("RAY_USAGE_STATS_ENABLED")
    cluster = RayExecutor(_offline(tmp_path, executor="ray", ray_address="ray://10.0.0.9:10001"),
                          UsageLedger())
    with pytest.raises(HarnessError, match="ray://10.0.0.9:10001: ConnectionError"):
        cluster._connect()
    assert seen["address"] == "ray://10.0.0.9:10001" and seen["usage_stats"] is None


def test_without_the_ray_extra_executor_ray_is_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    done = run_cli("run", SCENARIOS, "--offline", "--executor", "ray", "--out", tmp_path / "r")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert "pip install 'agent-eval-harness[ray]'" in done.stderr
    assert not (tmp_path / "r" / "run.sqlite").exists()


def test_help_and_a_local_run_never_import_ray(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from harness.cli import main\n"
        "for argv in (['harness', '--help'], ['harness', 'run', '--help'],\n"
        "             ['harness', 'run', sys.argv[1], '--offline', '--epochs', '1',\n"
        "              '--workers', '2', '--cache', sys.argv[2], '--out', sys.argv[3]]):\n"
        "    sys.argv = argv\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as done:\n"
        "        assert done.code in (0, None), done.code\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
        "print('ray not imported')\n")
    done = subprocess.run([sys.executable, "-c", code, str(SCENARIOS),
                           str(tmp_path / "c.sqlite"), str(tmp_path / "run")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ray not imported")


async def test_a_stopped_actor_is_ended_and_stops_the_run_as_worker_lost(
        tmp_path: Path, ray_instance: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """An actor stopped with SIGSTOP keeps its samples for ever and answers nothing: the
    driver hears no ping for the silence allowed, ends it, and stops the run as it stops
    for a silent worker process (before: the run waited with no limit)."""
    from harness.runs import workers

    # 15 s, not the 30 s default, to keep the test short; 5 s was too short on a loaded
    # machine, where a live actor's first ping could take that long and the run stopped
    # before any sample
    monkeypatch.setattr(workers, "WORKER_SILENCE_S", 15.0)
    runners: list[Runner] = []
    stopped_pids: list[int] = []

    def on_sample(record: SampleRecord) -> None:
        if not stopped_pids:
            actor = runners[0].executor._actors[0]  # type: ignore[attr-defined]
            pid = ray_instance.get(actor.handle.ping.remote(), timeout=60)
            os.kill(pid, signal.SIGSTOP)
            stopped_pids.append(pid)

    try:
        stopped = await asyncio.wait_for(run_suite(
            _offline(tmp_path, executor="ray", workers=2, concurrency=4), tmp_path / "run",
            on_start=runners.append, on_sample=on_sample), timeout=240)
    finally:
        for pid in stopped_pids:  # the test failed: let Ray end the actor's process
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    assert stopped.summary.stopped is not None
    assert stopped.summary.stopped.reason == "worker_lost"
    message = stopped.summary.stopped.message
    assert message.startswith("Ray actor 1 sent nothing for ")
    assert "(stopped, or hung) and was ended" in message
    assert 1 <= stopped.summary.counts.samples < 33
    done = await resume_run(tmp_path / "run")
    assert done.summary.counts.samples == 33 and done.summary.stopped is None
