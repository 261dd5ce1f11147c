"""``harness merge``: the run directories of a run's shards combined into one run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.app import app
from harness.cli.help_format import examples
from harness.cli.run_cmd import (
    GateLabels,
    GateOn,
    MinPassRate,
    MinScore,
    check_gate_labels,
)
from harness.cli.run_finish import finish_run


@app.command(epilog=examples(
    ("two shards run apart (harness run --shard 1/2 and 2/2), joined",
     "harness merge runs/shard-1 runs/shard-2 --out runs/all"),))
def merge(
    run_dirs: Annotated[list[Path], typer.Argument(
        metavar="RUN_DIR", help="the shards' run directories (harness run --shard i/n)")],
    out: Annotated[Path, typer.Option(
        metavar="DIR", help="the merged run's directory (must hold no run)")],
    min_pass_rate: MinPassRate = None,
    min_score: MinScore = None,
    gate_on: GateOn = "mean",
    labels: GateLabels = None,
    as_json: Annotated[bool, typer.Option("--json", help="print summary.json")] = False,
) -> None:
    """Merge the shards of a run into one run directory.

    The shards are the run directories of harness run --shard i/n. Its summary is the one a
    single run of the same samples has. Refused, naming the field or the
    sample, when the shards' configurations differ in anything that changes results or two of
    them hold the same sample. Exit 3 when shards or samples are missing, as after a budget
    stop; the other exit codes are harness run's."""
    from harness.runs.merge import merge_runs

    check_gate_labels(gate_on, labels)
    summary = merge_runs(run_dirs, out)
    finish_run(out, summary, as_json=as_json, min_pass_rate=min_pass_rate,
               min_score=min_score, gate_on=gate_on, labels=labels)
