"""``harness batches``: the judge batches a run sent (``harness run --judge-batch``), from the
journal in its directory, and with ``--check`` where each open one is now at its provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.cli.app import app
from harness.cli.help_format import examples
from harness.errors import HarnessError, InputError
from harness.safe_text import terminal_console, terminal_text
from harness.wording import plural

if TYPE_CHECKING:
    from harness.models.batch_journal import JournalBatch


@app.command(epilog=examples(
    ("what a run sent through the batch APIs, and what waits",
     "harness batches runs/nightly"),
    ("ask the providers where the open batches are now (needs the keys)",
     "harness batches runs/nightly --check")))
def batches(
    run_dir: Annotated[Path, typer.Argument(
        metavar="RUN_DIR", help="the run directory (harness run --judge-batch)")],
    check: Annotated[bool, typer.Option(
        "--check", help="ask each open batch's provider for its state now (the run's models "
        "config and keys)")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the batches as JSON")] = False,
) -> None:
    """List the judge batches a run sent, and what each holds.

    Each batch's provider, model, state, requests with a result, failed and still waiting.
    A run stopped while batches were open (Ctrl-C, a crash) loses nothing: harness run
    --resume collects them, and sends again only what failed or expired."""
    from harness.models.batch_journal import BatchJournal
    from harness.runs.api import BATCH_JOURNAL

    path = run_dir / BATCH_JOURNAL
    if not run_dir.is_dir():
        raise InputError(run_dir, None, "is not a run directory")
    if not path.is_file():
        raise HarnessError(f"{run_dir} sent no judge batches (no {BATCH_JOURNAL}; a run sends "
                           "them with --judge-batch)")
    journal = BatchJournal(path)
    try:
        found = journal.batches()
    finally:
        journal.close()
    if check:
        import asyncio

        now = asyncio.run(_check(run_dir, found))
    else:
        now = {}
    if as_json:
        typer.echo(json.dumps([{**_row(b), "provider_state": now.get(b.batch_id)}
                               for b in found], indent=2))
        return
    _print(run_dir, found, now)


def _row(batch: JournalBatch) -> dict[str, Any]:
    return {"batch_id": batch.batch_id, "provider": batch.provider, "base_url": batch.base_url,
            "model": batch.model, "state": batch.state, "requests": batch.requests,
            "succeeded": batch.succeeded, "failed": batch.failed, "waiting": batch.waiting,
            "submitted_at": batch.submitted_at, "ended_at": batch.ended_at,
            "detail": batch.detail}


async def _check(run_dir: Path, found: list[JournalBatch]) -> dict[str, str]:
    """Each open batch's state now, as its provider says (or why it could not say)."""
    from harness.errors import ModelError
    from harness.models.batch_wire import WIRES
    from harness.models.hub import ModelHub
    from harness.runs.settings import models_config_for
    from harness.runs.store import RunStore

    with RunStore.open(run_dir, read_only=True) as store:
        config = store.run_config()
    states: dict[str, str] = {}
    async with ModelHub(models_config_for(config)) as hub:
        for batch in found:
            if not batch.waiting:
                continue
            endpoint = hub.endpoint(batch.provider, batch.base_url)
            try:
                endpoint.require_key(batch.model)
                lease = await endpoint.acquire()
                client = lease.client
                try:
                    status = await WIRES[batch.provider].status(client, batch.batch_id)
                finally:
                    endpoint.release(lease)
                states[batch.batch_id] = status.state
            except ModelError as err:
                states[batch.batch_id] = f"unknown: {err}"
            except Exception as err:  # the provider's refusal, said in a line
                states[batch.batch_id] = f"unknown: {type(err).__name__}"
    return states


def _print(run_dir: Path, found: list[JournalBatch], now: dict[str, str]) -> None:
    from rich import box
    from rich.table import Table

    console = terminal_console()
    console.print(f"[bold]Judge batches of {terminal_text(run_dir)}[/]")
    for model in dict.fromkeys(b.model for b in found):
        # Plain columns, one table per model: a batch id is as long as 40 characters.
        table = Table(title=terminal_text(model), title_justify="left", box=box.SIMPLE_HEAD,
                      pad_edge=False)
        table.add_column("batch", no_wrap=True, overflow="fold")
        table.add_column("state", no_wrap=True)
        for name in ("sent", "done", "failed", "waiting"):
            table.add_column(name, justify="right", no_wrap=True)
        for b in (b for b in found if b.model == model):
            table.add_row(terminal_text(b.batch_id), terminal_text(now.get(b.batch_id, b.state)),
                          str(b.requests), str(b.succeeded), str(b.failed), str(b.waiting))
        console.print(table)
    waiting = sum(b.waiting for b in found)
    if waiting:
        console.print(f"{plural(waiting, 'judge request')} still wait for their batches: "
                      f"harness run --resume {terminal_text(run_dir)} collects them")
    else:
        console.print("every request has its result (sent: requests in the batch; a request "
                      "sent again counts in its last batch)")
