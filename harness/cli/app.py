"""The typer application every command module registers on."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="harness",
    help="Evaluate LLM agents with simulated users, mocked tools, rubric judges and "
    "confidence intervals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_OK = 0
EXIT_GATE_FAILED = 1  # the run worked, but the suite fell short of the gate
EXIT_INPUT_ERROR = 2  # bad input or configuration: the message says what to fix


@app.callback()
def _root() -> None:
    """Evaluate LLM agents with simulated users, mocked tools, rubric judges and confidence
    intervals. Run `harness demo` for an offline tour (no API key needed)."""


@app.command()
def version() -> None:
    """Print the harness version."""
    from harness import __version__

    typer.echo(__version__)
