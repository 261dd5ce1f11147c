"""``harness --help`` at 80 columns: each command's line in the list is the first sentence of
its docstring on one line (Typer kept the source's line breaks there, so docstrings wrapped
at 96 columns read broken mid-sentence)."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import typer

from harness.cli import app


def _commands(group: typer.Typer) -> list[typer.models.CommandInfo]:
    found = list(group.registered_commands)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            found += _commands(sub.typer_instance)
    return found


def test_every_command_lists_its_first_sentence_on_one_line() -> None:
    commands = _commands(app)
    assert len(commands) >= 12  # run, report, compare, ... and import/export adk
    for command in commands:
        assert command.callback is not None
        doc = " ".join((inspect.getdoc(command.callback) or "").split())
        short = command.short_help
        assert short and "\n" not in short and "  " not in short, command.name
        assert doc.startswith(short), (command.name, short)
        assert short.endswith("."), (command.name, short)


def test_the_help_fits_80_columns() -> None:
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"}
    for args in ([], ["import"], ["export"]):
        done = subprocess.run([sys.executable, "-m", "harness", *args, "--help"],
                              capture_output=True, text=True, env=env, check=True)
        lines = done.stdout.splitlines()
        assert lines and max(len(line) for line in lines) <= 80, args
