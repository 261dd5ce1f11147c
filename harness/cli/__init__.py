"""Command-line entry point: ``harness <command>``.

Each command lives in its own module and registers itself on :data:`harness.cli.app.app`.
A :class:`~harness.errors.HarnessError` is printed as one line on stderr (one line per problem
for :class:`~harness.errors.InputErrors`; exit 2), never as a traceback. Its message quotes
outside text (paths, field values, ids, servers' error text), so it is printed through
:func:`~harness.safe_text.terminal_text`; so are log records that no configured handler
takes (:class:`~harness.safe_text.TerminalLogHandler`).
"""

from __future__ import annotations

import inspect
import logging
import sys

import typer

# Importing a command module registers its commands.
from harness.cli import commands  # noqa: F401  (registration side effect)
from harness.cli.app import EXIT_INPUT_ERROR, app
from harness.cli.help_format import use_harness_help
from harness.errors import HarnessError, InputErrors
from harness.safe_text import TerminalLogHandler, terminal_console, terminal_text


def _unwrap_short_help(group: typer.Typer = app) -> None:
    """Give each command a ``short_help`` for ``harness --help``'s list: the first sentence of
    its docstring, on one line. Typer's list keeps the source's line breaks, so docstrings
    wrapped at 96 columns read broken mid-sentence in an 80-column terminal (a command's own
    ``--help`` rewraps its whole docstring and is left as it is)."""
    for command in group.registered_commands:
        if command.short_help is None and command.callback is not None:
            doc = inspect.getdoc(command.callback) or ""
            text = " ".join(doc.split("\n\n")[0].split())
            first, dot, _ = text.partition(". ")
            command.short_help = (first + dot.strip()) or None
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _unwrap_short_help(sub.typer_instance)


_unwrap_short_help()
use_harness_help(app)

# Options whose value may be left out: `harness report DIR --html` means "the default file".
# Typer has no optional option values, so a bare one is given the empty value here, which
# the command reads as its default.
OPTIONAL_VALUE_OPTIONS = frozenset({"--html"})


def with_optional_values(args: list[str]) -> list[str]:
    """``args`` with each option of :data:`OPTIONAL_VALUE_OPTIONS` that has no value (last,
    or followed by another option) written as ``--option=``."""
    out = []
    for i, arg in enumerate(args):
        bare = arg in OPTIONAL_VALUE_OPTIONS and (i + 1 == len(args)
                                                  or args[i + 1].startswith("-"))
        out.append(arg + "=" if bare else arg)
    return out


def main() -> None:
    logging.lastResort = TerminalLogHandler()
    try:
        app(args=with_optional_values(sys.argv[1:]), prog_name="harness")
    except HarnessError as err:
        problems = err.errors if isinstance(err, InputErrors) else [err]
        terminal_console(stderr=True, soft_wrap=True).print(
            "[bold red]error:[/] " + "\n".join(terminal_text(p) for p in problems))
        sys.exit(EXIT_INPUT_ERROR)


__all__ = ["app", "main"]
