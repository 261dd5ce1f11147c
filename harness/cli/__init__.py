"""Command-line entry point: ``harness <command>``.

Each command lives in its own module and registers itself on :data:`harness.cli.app.app`.
A :class:`~harness.errors.HarnessError` is printed as one line on stderr (exit 2), never as a
traceback.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape

# Importing a command module registers its commands.
from harness.cli import commands  # noqa: F401  (registration side effect)
from harness.cli.app import EXIT_INPUT_ERROR, app
from harness.errors import HarnessError


def main() -> None:
    try:
        app()
    except HarnessError as err:
        # The message quotes paths and text from outside: print it literally, never as markup.
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            f"[bold red]error:[/] {escape(str(err))}", markup=True
        )
        sys.exit(EXIT_INPUT_ERROR)


__all__ = ["app", "main"]
