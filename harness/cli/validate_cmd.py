"""``harness validate PATH...`` checks scenario files; ``harness schema`` writes the JSON Schema
of the scenario format for editors."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.app import EXIT_GATE_FAILED, EXIT_INPUT_ERROR, app
from harness.scenarios.export import stale_schemas, write_schemas
from harness.scenarios.loading import validate_paths

DEFAULT_SCHEMA_DIR = Path("schemas")


@app.command()
def validate(
    paths: Annotated[
        list[Path], typer.Argument(help="Scenario files or directories (searched recursively).")
    ],
    no_imports: Annotated[
        bool,
        typer.Option(
            "--no-imports", help="Do not import the Python agents and tool handlers named."
        ),
    ] = False,
) -> None:
    """Check scenario files: every problem in every file, one line each
    (file:line: field: what was expected). Exits 2 when any problem is found."""
    report = validate_paths(paths, check_imports=not no_imports)
    for error in report.errors:
        typer.echo(str(error), err=True)
    if report.errors:
        files = len({e.source for e in report.errors})
        noun = "problem" if len(report.errors) == 1 else "problems"
        typer.echo(f"{len(report.errors)} {noun} in {files} file(s)", err=True)
        raise typer.Exit(EXIT_INPUT_ERROR)
    typer.echo(f"ok: {len(report.scenarios)} scenario(s) in {len(report.files)} file(s)")


@app.command()
def schema(
    out: Annotated[
        Path, typer.Option("--out", help="Directory to write the schema files into.")
    ] = DEFAULT_SCHEMA_DIR,
    check: Annotated[
        bool,
        typer.Option("--check", help="Write nothing; exit 1 when the files are missing or stale."),
    ] = False,
) -> None:
    """Write the JSON Schema of scenario files (scenario.schema.json) for editors. In a YAML
    file: # yaml-language-server: $schema=../schemas/scenario.schema.json"""
    if check:
        stale = stale_schemas(out)
        for path in stale:
            typer.echo(
                f"{path}: missing or out of date; run `harness schema --out {out}`", err=True
            )
        if stale:
            raise typer.Exit(EXIT_GATE_FAILED)
        typer.echo(f"ok: schemas in {out} are up to date")
        return
    for path in write_schemas(out):
        typer.echo(f"wrote {path}")
