"""The event loop runs use (harness.runs.event_loop): uvloop's (a dependency on every
platform but Windows), asyncio's when HARNESS_EVENT_LOOP=asyncio asks for it, and the CLI's
commands run on the same."""

from __future__ import annotations

import asyncio

import pytest

from harness.runs import event_loop


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
