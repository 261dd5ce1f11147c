"""Command-line entry point: ``harness <command>``.

Each command lives in its own module and registers itself on :data:`harness.cli.app.app`.
A :class:`~harness.errors.HarnessError` is printed as one line on stderr (one line per problem
for :class:`~harness.errors.InputErrors`; exit 2), never as a traceback. Its message quotes
outside text (paths, field values, ids, servers' error text), so it is printed through
:func:`~harness.report.safe.terminal_text`; so are log records that no configured handler
takes (:class:`~harness.report.safe.TerminalLogHandler`).
"""

from __future__ import annotations

import logging
import sys

# Importing a command module registers its commands.
from harness.cli import commands  # noqa: F401  (registration side effect)
from harness.cli.app import EXIT_INPUT_ERROR, app
from harness.errors import HarnessError, InputErrors
from harness.report.safe import TerminalLogHandler, terminal_console, terminal_text

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
