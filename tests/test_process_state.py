"""Library calls leave the caller's process as they found it: a run started from Python (a
user's script, their pytest session, the pytest plugin) changes neither the garbage
collector, nor the event-loop policy or the thread's event loop, nor any signal handler,
while it runs or after. Tuning the process for a run is for the command line's entry points
(tests/test_runs_collector.py)."""

from __future__ import annotations

import asyncio
import gc
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.runs import api, event_loop
from harness.runs.config import RunConfig

pytest_plugins = ("pytester",)

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _signal_handlers() -> dict[int, Any]:
    handlers = {}
    for number in signal.valid_signals():
        try:
            handlers[int(number)] = signal.getsignal(number)
        except (OSError, ValueError):  # a signal Python cannot report on
            continue
    return handlers


def process_state() -> dict[str, Any]:
    """What a library call must not change in its caller's process."""
    return {
        "gc_enabled": gc.isenabled(),
        "gc_threshold": gc.get_threshold(),
        "gc_frozen": gc.get_freeze_count(),
        "loop_policy": id(asyncio.get_event_loop_policy()),
        "signal_handlers": _signal_handlers(),
    }


@pytest.fixture
def odd_collector() -> Iterator[None]:
    """A caller whose collector is set its own way (thresholds of its own, nothing frozen),
    so that any change shows; put back afterwards."""
    threshold = gc.get_threshold()
    gc.set_threshold(1234, 11, 12)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


@pytest.mark.usefixtures("odd_collector")
@pytest.mark.parametrize("workers", [1, 2])
async def test_run_suite_changes_nothing_of_its_callers_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    before = process_state()
    seen: dict[str, dict[str, Any]] = {}
    summarise = api.summarise

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen["summary"] = process_state()
        return summarise(*args, **kwargs)

    monkeypatch.setattr(api, "summarise", watched)
    config = RunConfig(scenario_paths=[str(SCENARIOS)], offline=True, epochs=1,
                       workers=workers, cache_mode="off", bootstrap_resamples=200)
    result = await api.run_suite(config, tmp_path / "run", on_start=lambda runner: seen.update(
        started=process_state()))

    assert result.state.finished == result.state.planned > 0
    assert seen["started"] == before  # workers forked (or the first samples on their way)
    assert seen["summary"] == before
    assert process_state() == before


@pytest.mark.usefixtures("odd_collector")
def test_resume_run_changes_nothing_of_its_callers_process(tmp_path: Path) -> None:
    config = RunConfig(scenario_paths=[str(SCENARIOS)], offline=True, epochs=1,
                       cache_mode="off", bootstrap_resamples=200)
    asyncio.run(api.run_suite(config, tmp_path / "run"))
    seen: list[dict[str, Any]] = []

    async def resumed() -> api.RunResult:
        # Compared inside the caller's own asyncio.run, which handles Ctrl-C its own way.
        seen.append(process_state())
        result = await api.resume_run(tmp_path / "run", retry_errors=True,
                                      on_start=lambda runner: seen.append(process_state()))
        seen.append(process_state())
        return result

    before = process_state()
    result = asyncio.run(resumed())
    assert result.state.stop is None
    assert seen[1:] == seen[:1] * 2
    assert seen[0]["gc_threshold"] == (1234, 11, 12)
    assert process_state() == before


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_the_library_s_own_event_loop_leaves_the_thread_s_loop_as_it_was(
        monkeypatch: pytest.MonkeyPatch, loop: str) -> None:
    # harness.evaluate and the pytest plugin run a coroutine on a loop of their own; a loop
    # the caller set for the thread stays its loop (asyncio.run would set it to None).
    monkeypatch.setenv("HARNESS_EVENT_LOOP", loop)
    policy = asyncio.get_event_loop_policy()
    mine = asyncio.new_event_loop()
    asyncio.set_event_loop(mine)
    try:
        async def which() -> asyncio.AbstractEventLoop:
            return asyncio.get_running_loop()

        used = event_loop.run(which())
        assert used is not mine
        assert asyncio.get_event_loop_policy() is policy
        assert policy.get_event_loop() is mine
    finally:
        asyncio.set_event_loop(None)
        mine.close()


# The inner session records, as the plugin's run summarises, what the outer test compares.
WATCHING_CONFTEST = """\
import gc, json, signal
from pathlib import Path

import harness.runs.api as api

seen = []
summarise = api.summarise

def state():
    handlers = {}
    for number in signal.valid_signals():
        try:
            handlers[str(int(number))] = repr(signal.getsignal(number))
        except (OSError, ValueError):
            continue
    return {"gc_enabled": gc.isenabled(), "gc_threshold": list(gc.get_threshold()),
            "gc_frozen": gc.get_freeze_count(), "signal_handlers": handlers}

def watched(*args, **kwargs):
    seen.append(state())
    return summarise(*args, **kwargs)

def pytest_sessionstart(session):
    api.summarise = watched
    Path("before.json").write_text(json.dumps(state()))

def pytest_sessionfinish(session):
    api.summarise = summarise
    Path("during.json").write_text(json.dumps(seen))
    Path("after.json").write_text(json.dumps(state()))
"""


def test_the_pytest_plugin_s_run_changes_nothing_of_the_session_s_process(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(WATCHING_CONFTEST)
    (pytester.path / "greet.yaml").write_text(
        '- id: greets-back\n  user: {goal: be greeted, script: ["hello there"]}\n'
        '  agent: {model: "mock:echo"}\n  expectations: {required_phrases: ["hello"]}\n',
        encoding="utf-8")
    pytester.runpytest_subprocess("--harness-scenarios", "greet.yaml", "--harness-epochs",
                                  "1", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    before = json.loads((pytester.path / "before.json").read_text())
    [during] = json.loads((pytester.path / "during.json").read_text())
    assert json.loads((pytester.path / "after.json").read_text()) == before
    # While the plugin's run goes on, Ctrl-C is asyncio's to handle, as in asyncio.run (it
    # cancels the run, which then records that it was interrupted); every other handler,
    # and the collector, as they were. Afterwards, everything as it was.
    ctrl_c = str(int(signal.SIGINT))
    assert "Runner._on_sigint" in during["signal_handlers"].pop(ctrl_c)
    assert before["signal_handlers"].pop(ctrl_c) == repr(signal.default_int_handler)
    assert during == before
