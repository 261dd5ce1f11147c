"""The event loop runs use (harness.runs.event_loop): uvloop's (a dependency on every
platform but Windows), asyncio's when HARNESS_EVENT_LOOP=asyncio asks for it, and the CLI's
commands run on the same."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.runs import event_loop
from tests.helpers.cli import run_cli


async def _loop_class() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_runs_use_uvloop_where_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(event_loop.ENV_VAR, raising=False)
    assert event_loop.run(_loop_class()).startswith("uvloop")


@pytest.mark.parametrize("value", ["asyncio", " AsyncIO "])
def test_asyncio_s_loop_when_asked(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(event_loop.ENV_VAR, value)
    assert event_loop.run(_loop_class()).startswith("asyncio")


def test_the_cli_runs_on_the_chosen_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cli.interrupts import run_async

    monkeypatch.delenv(event_loop.ENV_VAR, raising=False)
    assert run_async(_loop_class()).startswith("uvloop")
    monkeypatch.setenv(event_loop.ENV_VAR, "asyncio")
    assert run_async(_loop_class()).startswith("asyncio")


def test_an_error_and_the_loop_s_end_are_as_asyncio_run_s() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        event_loop.run(fails())
    # the loop is closed and none is left set: a later asyncio.run works
    assert asyncio.run(_loop_class()).startswith("asyncio")


@pytest.mark.parametrize("value", ["uvloop", " UVLOOP"])
def test_uvloop_when_asked(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(event_loop.ENV_VAR, value)
    assert event_loop.run(_loop_class()).startswith("uvloop")


def test_another_value_is_an_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.setenv(event_loop.ENV_VAR, "trio")
    coro = _loop_class()
    with pytest.raises(InputError, match="HARNESS_EVENT_LOOP: expected asyncio or uvloop, "
                                         "got 'trio'"):
        event_loop.run(coro)
    coro.close()


def test_uvloop_asked_for_where_it_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(event_loop.ENV_VAR, "uvloop")
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    with pytest.raises(InputError, match="uvloop is not installed"):
        event_loop.loop_factory()
    monkeypatch.delenv(event_loop.ENV_VAR)
    assert event_loop.loop_factory() is None  # not asked for: asyncio's loop


def test_a_bad_value_stops_a_command_with_one_line(tmp_path: Path) -> None:
    scenarios = Path(__file__).resolve().parents[1] / "scenarios"
    done = run_cli("run", scenarios, "--offline", "--epochs", "1", "--out", tmp_path / "r",
                   env={event_loop.ENV_VAR: "trio"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: the environment variable HARNESS_EVENT_LOOP: expected asyncio or uvloop, "
        "got 'trio'"]
