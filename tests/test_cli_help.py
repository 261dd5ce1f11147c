"""``harness --help`` at 80 columns: each command's line in the list is the first sentence of
its docstring on one line (Typer kept the source's line breaks there, so docstrings wrapped
at 96 columns read broken mid-sentence)."""

from __future__ import annotations

import inspect
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator

import pytest
import typer
import typer.main
from rich.text import Text
from typer._click import Command
from typer.core import TyperGroup, TyperOption
from typer.testing import CliRunner

from harness.cli import app, with_optional_values


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


# --- every command's own --help at 80 columns ----------------------------------------------

# A value placeholder built from a Python annotation (`<bool>`, `<list[Path]>`, `<int>`...):
# typer's own layout prints one beside every option, flags (and --help) included.
ANNOTATION_PLACEHOLDER = re.compile(r"<(?:bool|int|float|str|path|list\[[^\]]*\]|[a-z]+ range)>",
                                    re.IGNORECASE)


def _command_tree(command: Command, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], Command]]:
    """Every command under ``command`` (itself included), with the words that reach it."""
    yield path, command
    if isinstance(command, TyperGroup):
        for name, sub in sorted(command.commands.items()):
            yield from _command_tree(sub, (*path, name))


COMMANDS = list(_command_tree(typer.main.get_command(app)))


def _help_at_80(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="harness",
                                env={"COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    return result.output


def _name_cells(text: str) -> list[str]:
    """The first cell of each line of a help page: what comes before the first run of two or
    more spaces, inside a panel's border."""
    cells = []
    for line in text.splitlines():
        inner = line.strip().strip("│").strip()
        if inner:
            cells.append(re.split(r"\s{2,}", inner)[0])
    return cells


def _names(cell: str) -> list[str]:
    return [word for word in re.split(r"[\s,/]+", cell) if word]


def test_the_command_tree_is_walked_whole() -> None:
    paths = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "run", "calibrate", "pairwise", "compare", "import", "import adk",
            "export adk"} <= paths


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) or "harness"
                                                              for p, _ in COMMANDS])
def test_each_help_reads_whole_at_80_columns(path: tuple[str, ...], command: Command) -> None:
    text = _help_at_80(path)
    lines = text.splitlines()
    wide = [line for line in lines if len(line) > 80]
    assert not wide, f"wider than 80 columns: {wide[:3]}"
    assert "…" not in text, [line for line in lines if "…" in line][:3]
    assert not ANNOTATION_PLACEHOLDER.search(text), ANNOTATION_PLACEHOLDER.findall(text)
    cells = _name_cells(text)
    ctx = command.make_context(" ".join(("harness", *path)), [], resilient_parsing=True)
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        assert (param.help or "").strip(), f"{param.name} has no help text"
        if not isinstance(param, TyperOption):
            continue
        row = next((cell for cell in cells if param.opts[0] in _names(cell)), None)
        assert row is not None, f"{param.opts[0]} is not shown whole at the start of a row"
        for opt in [*param.opts, *param.secondary_opts]:
            assert opt in _names(row), (opt, row)
        if param.is_flag:  # a flag's cell names the flag and nothing else
            assert all(word.startswith("-") for word in _names(row)), row


def _example_commands(epilog: str) -> list[str]:
    """The commands of an epilog made by :func:`harness.cli.help_format.examples`, each line
    ending in a backslash joined to the next."""
    plain = Text.from_markup(epilog).plain.replace("\\\n", " ")
    return [line.strip() for line in plain.splitlines() if line.strip().startswith("harness ")]


def test_every_main_command_has_examples_that_fit_and_parse() -> None:
    root = COMMANDS[0][1]
    with_examples = {" ".join(path) for path, command in COMMANDS if command.epilog}
    assert {"run", "report", "compare", "pairwise", "calibrate", "stats", "demo",
            "score-transcripts", "validate", "merge"} <= with_examples
    for path, command in COMMANDS:
        for line in Text.from_markup(command.epilog or "").plain.splitlines():
            assert len(line) <= 78, (path, line)  # the page's margin takes the other two
        for example in _example_commands(command.epilog or ""):
            args = with_optional_values(shlex.split(example))[1:]
            found: Command = root
            while args and isinstance(found, TyperGroup) and args[0] in found.commands:
                found = found.commands[args.pop(0)]
            assert found is command, example
            found.make_context(" ".join(("harness", *path)), args)  # a UsageError if not


def test_each_group_lists_its_commands_one_line_each_at_80_columns() -> None:
    for path, command in COMMANDS:
        if not isinstance(command, TyperGroup):
            continue
        names = command.commands
        room = 80 - 4 - max(len(name) for name in names) - 2  # border, names, gap
        for name, sub in names.items():
            short = sub.short_help or sub.get_short_help_str(limit=1000)
            assert len(short) <= room, (path, name, short)
