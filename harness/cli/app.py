"""The typer application every command module registers on."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from harness.cli.help_format import SELECT_PANEL
from harness.errors import InputError
from harness.logs import library_logs
from harness.safe_text import terminal_console, terminal_text

if TYPE_CHECKING:
    from harness.scenarios.selectors import ScenarioFilter

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
EXIT_BUDGET_STOP = 3  # a run stopped on its budget: its figures cover only part of the plan
EXIT_NOTHING_SCORED = 4  # a run finished with no scored sample (all errored): no figure at all
EXIT_WORKER_LOST = 5  # a worker died or went silent: the run stopped, what finished is stored
# Stopped from outside: 130 (Ctrl-C) and 143 (SIGTERM), see harness.cli.interrupts.


@app.callback()
def _root() -> None:
    """Evaluate LLM agents with simulated users, mocked tools, rubric judges and confidence
    intervals. Run `harness demo` for an offline tour (no API key needed)."""


@app.command()
def version() -> None:
    """Print the harness version."""
    from harness.version import __version__

    typer.echo(__version__)


def counting_progress(label: str, console: Console) -> tuple[Progress, Callable[[int, int], None]]:
    """A progress bar "label ━━━ done/total" on ``console`` (hidden when it is not a
    terminal), and the ``advance(done, total)`` callback that moves it."""
    progress = Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(),
                        console=console, disable=not console.is_terminal)
    task = progress.add_task(label, total=None)

    def advance(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    return progress, advance


def check_target_mdd(value: float | None) -> None:
    """Refuse a ``--target-mdd`` that is not a positive difference, before any file is read."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise InputError("command line", "--target-mdd",
                         f"expected a positive difference in score units, got {value}")


def html_output(value: str | None, what: str) -> Path | None:
    """The file ``--html FILE`` names, checked before any work (see
    :func:`~harness.files.check_output_file`); ``None`` when not given. ``what`` says what
    the page shows ("a comparison"). A bare ``--html`` (an empty value, see
    :data:`harness.cli.OPTIONAL_VALUE_OPTIONS`) is refused: these pages have no run directory
    to go into by default. Raises InputError."""
    if value is None:
        return None
    if not value:
        raise InputError("command line", "--html", f"needs a FILE: {what} has no run "
                         "directory of its own, so its page has no default place (e.g. "
                         "--html report.html)")
    from harness.files import check_output_file

    return check_output_file(Path(value), "the HTML page (--html)")


OFFLINE_JUDGES = ("mock:judge", "mock:judge-strict", "mock:judge-lenient", "mock:judge-first")


def judge_models(judges: list[str], offline: bool, *, needed_for: str) -> list[str]:
    """The judge models a command runs: ``mock:judge`` with --offline and no --judge; with
    --offline every judge must be a mock: model. ``needed_for`` ends "... needs a judge" in
    the error for no judge at all. Raises InputError."""
    if not judges:
        if offline:
            return ["mock:judge"]
        raise InputError("command line", "--judge", f"{needed_for} needs a judge: --judge MODEL "
                         "(e.g. openai:gpt-4.1; repeat for a panel), or --offline for "
                         "mock:judge")
    real = [j for j in judges if not j.startswith("mock:")]
    if offline and real:
        raise InputError("--offline", None, f"{real[0]} is not an offline model; with "
                         f"--offline use mock: judges ({', '.join(OFFLINE_JUDGES)})")
    return judges


# --tag, --exclude-tag and -k, the same on every command that selects scenarios or samples
# (what they mean: harness.scenarios.selectors.ScenarioFilter).
Tags = Annotated[list[str] | None, typer.Option(
    "--tag", metavar="TAG", rich_help_panel=SELECT_PANEL,
    help="only scenarios with this tag; repeat for any of several")]
ExcludeTags = Annotated[list[str] | None, typer.Option(
    "--exclude-tag", metavar="TAG", rich_help_panel=SELECT_PANEL,
    help="leave out scenarios with this tag (repeatable)")]
Keywords = Annotated[list[str] | None, typer.Option(
    "-k", metavar="SUBSTRING", rich_help_panel=SELECT_PANEL,
    help="only scenarios whose id holds SUBSTRING, any case (repeatable)")]


def scenario_filter(tags: list[str] | None, exclude_tags: list[str] | None,
                    keywords: list[str] | None) -> ScenarioFilter:
    """The :class:`~harness.scenarios.selectors.ScenarioFilter` of the options given."""
    from harness.scenarios.selectors import ScenarioFilter

    return ScenarioFilter(tags=list(dict.fromkeys(tags or [])),
                          exclude_tags=list(dict.fromkeys(exclude_tags or [])),
                          keywords=list(dict.fromkeys(keywords or [])))


Verbose = Annotated[bool, typer.Option(
    "--verbose", help="also show the model libraries' log lines here (they always go to the "
    "log file)")]


@contextmanager
def logs_to(path: Path, *, verbose: bool) -> Iterator[None]:
    """Library log records go to ``path`` (not the terminal, unless ``verbose``) inside the
    block (:func:`harness.logs.library_logs`); at its end, one dim line on stderr names the
    file when warnings or errors went there."""
    with library_logs(path, verbose=verbose) as sink:
        try:
            yield
        finally:
            hint = sink.hint()
            if hint:
                terminal_console(stderr=True, soft_wrap=True).print(
                    f"[dim]{terminal_text(hint)}[/]")
