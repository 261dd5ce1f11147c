"""``harness labels export RUN_DIR --out FILE`` and ``harness labels import RUN_DIR FILE``:
human labels (contract 10) out of and into a run's store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.app import app
from harness.cli.help_format import examples
from harness.safe_text import terminal_text
from harness.wording import plural

labels_app = typer.Typer(help="Move a run's human labels in and out of its store.",
                         no_args_is_help=True)
app.add_typer(labels_app, name="labels")

RunDir = Annotated[Path, typer.Argument(show_default=False,
                                        help="the run directory (holding run.sqlite)")]


def _who(count: dict[str, int]) -> str:
    return (f"{plural(count['labels'], 'label')} by {plural(count['reviewers'], 'reviewer')} "
            f"on {plural(count['samples'], 'sample')} ({count['random']} random, "
            f"{count['chosen']} chosen)")


@labels_app.command("export", epilog=examples(
    ("the labels that count, one JSON object a line",
     "harness labels export runs/nightly --out labels.jsonl"),
    ("every version of every label, oldest first",
     "harness labels export runs/nightly --out history.jsonl --history")))
def export_labels(
    run_dir: RunDir,
    out: Annotated[Path, typer.Option(
        "--out", metavar="FILE", help="the JSONL file to write (replaced if it exists)")],
    history: Annotated[bool, typer.Option(
        "--history", help="every version of each label, oldest first (default: the last "
        "one of each reviewer on each target, which is the one that counts)")] = False,
) -> None:
    """Write a run's human labels as JSONL (contract 10).

    One object a line: scenario_id, epoch, annotator, target, value, random, comment and
    labelled_at."""
    from harness.errors import InputError
    from harness.files import check_output_file, write_text_atomic
    from harness.runs.label_files import label_counts, label_file_text
    from harness.runs.store import RunStore

    with RunStore.open(run_dir) as store:
        if out.resolve() == store.path.resolve():
            raise InputError(out, None, "is the run's store; give --out another file")
        check_output_file(out, "the labels file (--out)")
        labels = store.labels(history=history)
    write_text_atomic(out, label_file_text(labels))
    what = "label versions" if history else "labels"
    if not labels:
        typer.echo(f"{terminal_text(run_dir)} has no labels yet; wrote an empty "
                   f"{terminal_text(out)}")
        return
    typer.echo(f"wrote {terminal_text(out)}: {_who(label_counts(labels))}"
               + (f" ({what})" if history else ""))


@labels_app.command("import", epilog=examples(
    ("add the labels of a file to the run (all of them, or none)",
     "harness labels import runs/nightly labels.jsonl"),))
def import_labels(
    run_dir: RunDir,
    file: Annotated[Path, typer.Argument(
        show_default=False,
        help="JSONL of labels (contract 10), one JSON object a line")],
) -> None:
    """Add human labels from a JSONL file to a run's store.

    Every line is checked first (its fields, the scenario and epoch in the run, the target
    on that sample, the value on the target's scale): one bad line refuses the whole file,
    naming the line and the field. A label already stored as it is, is not stored twice."""
    from harness.runs.label_files import label_counts, read_label_file
    from harness.runs.store import RunStore

    with RunStore.open(run_dir) as store:
        labels = read_label_file(file, store)
        stored = {label.model_dump_json() for label in store.labels(history=True)}
        new = [label for label in labels if label.model_dump_json() not in stored]
        store.add_labels(list(dict.fromkeys(new)))
        path = store.path
    again = len(labels) - len(set(new))
    typer.echo(f"imported {_who(label_counts(labels))} into {terminal_text(path)}"
               + (f"; {plural(again, 'label')} already stored as they are, not stored again"
                  if again else ""))
