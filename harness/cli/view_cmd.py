"""``harness view [DIR]``: every run under a folder in the browser, served on this machine
(see :mod:`harness.view`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli.app import app
from harness.cli.help_format import examples
from harness.cli.interrupts import exit_code, run_async, signal_name
from harness.errors import InputError
from harness.safe_text import terminal_console, terminal_text

if TYPE_CHECKING:
    from harness.view.security import Guard

DEFAULT_DIR = Path("runs")
DEFAULT_PORT = 8780  # harness.view.server.DEFAULT_PORT, not imported: --help stays quick


@app.command("view", epilog=examples(
    ("every run under runs/, on http://127.0.0.1:8780", "harness view"),
    ("another folder, on any free port", "harness view results/ --port 0")))
def view(
    folder: Annotated[Path, typer.Argument(
        metavar="DIR", help="the folder whose runs to serve: every folder under it holding "
        "run.sqlite, nested too (default: runs/)", show_default=False)] = DEFAULT_DIR,
    host: Annotated[str, typer.Option(
        metavar="HOST", help="the address to listen on; other than loopback, every request "
        "needs the token, reads included")] = "127.0.0.1",
    port: Annotated[int, typer.Option(
        metavar="PORT", min=0, max=65535, help="the port (0: any free port)")] = DEFAULT_PORT,
) -> None:
    """Serve a folder's runs in the browser, live as they run.

    An index of every run, each run's report (its progress while it runs), comparisons and
    per-scenario trends.

    Prints the address to open once it accepts requests (it carries a token that the page
    keeps as a cookie; changes need it). Ctrl-C stops it."""
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise InputError(folder, None, f"{what}: harness view serves the run directories "
                         "under a folder (give DIR; default runs/)")
    from harness.view import serve
    from harness.view.security import is_loopback

    err = terminal_console(stderr=True, soft_wrap=True)

    def ready(guard: Guard) -> None:
        where = terminal_text(str(folder.resolve()))
        if not is_loopback(host):
            err.print(f"[yellow]listening on {terminal_text(host)}, not only this machine: "
                      "every request needs the token, reads included; the connection is "
                      "not encrypted, so anyone on the network path can read it[/]")
        typer.echo(f"serving the runs under {where}; open:")
        typer.echo(terminal_text(guard.url()), nl=True)
        err.print("[dim]Ctrl-C stops it[/]")

    try:
        run_async(serve(folder, host=host, port=port, on_ready=ready))
    except KeyboardInterrupt as stop:
        err.print(f"{signal_name(stop)}: harness view stopped")
        raise typer.Exit(exit_code(stop)) from None
