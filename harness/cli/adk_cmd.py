"""``harness import adk FILE... --out DIR`` and ``harness export adk PATH... --out FILE``:
ADK eval sets to scenario YAML and back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli.app import app
from harness.cli.help_format import examples
from harness.json_values import json_equal
from harness.safe_text import terminal_console, terminal_text
from harness.wording import plural

import_app = typer.Typer(help="Convert files of other tools into scenario YAML.",
                         no_args_is_help=True)
export_app = typer.Typer(help="Write scenarios in the formats of other tools.",
                         no_args_is_help=True)
app.add_typer(import_app, name="import")
app.add_typer(export_app, name="export")


@import_app.command("adk", epilog=examples(
    ("every eval set under a folder, one scenario file each",
     "harness import adk adk_evals/ --out evals/adk"),))
def import_adk(
    files: Annotated[list[Path], typer.Argument(
        help="ADK eval sets (*.evalset.json, *.test.json), or folders holding them")],
    out: Annotated[Path, typer.Option(
        "--out", metavar="DIR", help="folder to write the YAML files into")],
    config: Annotated[Path | None, typer.Option(
        "--config", metavar="FILE", help="a test_config.json for every file (default: the "
        "one beside each file, else ADK's default criteria)")] = None,
) -> None:
    """Write one scenario YAML file per ADK eval set.

    Every case is a scenario; fields with no home here are kept under metadata.adk and
    named in the file's header comment."""
    from harness.errors import InputError
    from harness.files import make_directory
    from harness.formats.adk import ADK_SUFFIXES
    from harness.formats.adk.convert import source_name
    from harness.formats.adk.importing import import_eval_set

    sources: list[Path] = []
    for path in files:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.name.endswith(ADK_SUFFIXES))
            if not found:
                raise InputError(path, None, "no ADK eval sets (*.evalset.json, *.test.json) "
                                 "in this directory")
            sources.extend(found)
        elif path.is_file():
            sources.append(path)
        else:
            raise InputError(path, None, "no such file or directory")
    names = [source_name(p) for p in sources]
    for path, name in zip(sources, names, strict=True):
        if names.count(name) > 1:
            raise InputError(path, None, f"another eval set would also be written to "
                             f"{out / (name + '.yaml')}; import them into separate folders")
    make_directory(out, "a folder for the scenario files")
    for path in sources:
        written = import_eval_set(path, out, config)
        typer.echo(f"wrote {terminal_text(written)}" if written is not None else
                   f"skipped {terminal_text(path)}: the eval set holds no eval cases (nothing "
                   "to convert; ADK accepts an empty eval set)")


def _check_shared_config(config_path: Path, out: Path, criteria: dict[str, Any]) -> None:
    """Refuse, before anything is written, to replace a ``test_config.json`` that ADK applies
    to another eval set of the folder with different criteria (a second export into one
    folder used to drop the first one's). The same criteria, or a folder holding no other
    eval set, are written as before."""
    from harness.errors import InputError
    from harness.formats.adk import EVALSET_SUFFIX
    from harness.formats.adk.evalset import read_json

    if not (config_path.exists() or config_path.is_symlink()):
        return
    others = sorted(p.name for p in out.parent.iterdir()
                    if p.name.endswith((EVALSET_SUFFIX, ".test.json")) and p.name != out.name)
    if not others:
        return
    try:
        same = json_equal(read_json(config_path, "an ADK test_config.json"), criteria)
    except InputError:
        same = False
    if not same:
        raise InputError(config_path, None, "holds other criteria, and ADK applies it to every "
                         f"eval set in the folder ({', '.join(others)}); export into another "
                         "folder")


@export_app.command("adk", epilog=examples(
    ("the weather scenarios as one ADK eval set",
     "harness export adk scenarios/weather.yaml --out adk/weather.evalset.json"),))
def export_adk(
    paths: Annotated[list[Path], typer.Argument(
        help="scenario files or folders (FILE:id1,id2 selects scenarios)")],
    out: Annotated[Path, typer.Option(
        "--out", metavar="FILE", help="the eval set file to write (*.evalset.json); "
        "test_config.json is written beside it")],
    rubrics: Annotated[list[Path] | None, typer.Option(
        metavar="PATH", help="extra rubric files or folders beside the built-in ones")] = None,
) -> None:
    """Write the scenarios as one ADK eval set, with its test_config.json.

    The test_config.json is written beside the eval set. What ADK's format cannot hold is
    listed on stderr, by scenario."""
    from harness.errors import InputError
    from harness.files import check_output_file, write_text_atomic
    from harness.formats import load_scenarios
    from harness.formats.adk import EVALSET_SUFFIX
    from harness.formats.adk.export import export_eval_set
    from harness.judging.rubric import load_rubrics

    if not out.name.endswith(EVALSET_SUFFIX):
        raise InputError(out, None, f"the eval set file's name must end in {EVALSET_SUFFIX}")
    check_output_file(out, "the eval set file (--out)")
    known = load_rubrics(rubrics or [])
    scenarios = load_scenarios(paths, known_rubrics=set(known))
    result = export_eval_set(scenarios, out.name.removesuffix(EVALSET_SUFFIX),
                             {rid: r.threshold for rid, r in known.items()})
    config_path = out.parent / "test_config.json"
    _check_shared_config(config_path, out, result.test_config)
    write_text_atomic(out, json.dumps(result.eval_set, indent=2, ensure_ascii=False) + "\n")
    write_text_atomic(config_path,
                      json.dumps(result.test_config, indent=2, ensure_ascii=False) + "\n")
    err = terminal_console(stderr=True, soft_wrap=True)
    for note in result.not_carried:
        err.print(terminal_text(note))
    typer.echo(f"wrote {terminal_text(out)} ({plural(len(scenarios), 'case')}) and "
               f"{terminal_text(config_path)}")
