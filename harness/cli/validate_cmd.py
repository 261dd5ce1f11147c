"""``harness validate PATH...`` checks scenario files; ``harness schema`` writes the JSON Schema
of the scenario format for editors."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.app import (
    EXIT_GATE_FAILED,
    EXIT_INPUT_ERROR,
    ExcludeTags,
    Keywords,
    Tags,
    app,
    scenario_filter,
)
from harness.cli.help_format import examples
from harness.errors import InputError, InputErrors
from harness.safe_text import terminal_console, terminal_text
from harness.wording import plural

DEFAULT_SCHEMA_DIR = Path("schemas")


@app.command(epilog=examples(
    ("every problem in the example scenarios, one line each", "harness validate scenarios/"),
    ("how many scenarios a selection keeps", "harness validate scenarios/ --tag weather")))
def validate(
    paths: Annotated[
        list[Path], typer.Argument(help="scenario files or directories (searched recursively)")
    ],
    no_imports: Annotated[
        bool,
        typer.Option(
            "--no-imports", help="do not import the Python agents and tool handlers named"
        ),
    ] = False,
    rubrics: Annotated[
        list[Path] | None,
        typer.Option(metavar="PATH", help="extra rubric files or folders beside the built-in "
                     "ones"),
    ] = None,
    tag: Tags = None,
    exclude_tag: ExcludeTags = None,
    keyword: Keywords = None,
) -> None:
    """Check scenario files: every problem, one line each.

    Each line says file:line: field: what was expected, rubric ids included; --tag,
    --exclude-tag and -k count the scenarios they select. Exits 2 when any problem is
    found."""
    from harness.formats import validate_paths

    known, rubric_errors = _rubric_ids(rubrics or [])
    report = validate_paths(paths, check_imports=not no_imports, known_rubrics=known,
                            selector=scenario_filter(tag, exclude_tag, keyword))
    report.errors[:0] = rubric_errors
    err = terminal_console(stderr=True, soft_wrap=True)
    for error in report.errors:
        err.print(terminal_text(error))
    if report.errors:
        files = len({e.source for e in report.errors})
        typer.echo(f"{plural(len(report.errors), 'problem')} in {plural(files, 'file')}",
                   err=True)
        raise typer.Exit(EXIT_INPUT_ERROR)
    typer.echo(f"ok: {plural(len(report.scenarios), 'scenario')} in "
               f"{plural(len(report.files), 'file')}")


def _rubric_ids(paths: list[Path]) -> tuple[set[str] | None, list[InputError]]:
    """The rubric ids scenarios may name, and any problems loading the rubrics (reported
    with the scenario problems; rubric ids are then not checked)."""
    from harness.judging.rubric import load_rubrics

    try:
        return set(load_rubrics(paths)), []
    except InputErrors as err:
        return None, list(err.errors)
    except InputError as err:
        return None, [err]


@app.command(epilog=examples(
    ("in CI: exit 1 when schemas/ is missing or stale", "harness schema --check"),
    ("a scenario file's first line, for editors with the YAML language server",
     "# yaml-language-server: $schema=../schemas/scenario.schema.json")))
def schema(
    out: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="directory to write the schema files "
                           "into")
    ] = DEFAULT_SCHEMA_DIR,
    check: Annotated[
        bool,
        typer.Option("--check", help="write nothing; exit 1 when the files are missing or "
                     "stale"),
    ] = False,
) -> None:
    """Write the JSON Schemas of scenario and rubric files.

    For editors: scenario.schema.json and rubric.schema.json."""
    from harness.scenarios.export import stale_schemas, write_schemas

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
