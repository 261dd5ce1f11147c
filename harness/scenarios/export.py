"""JSON Schemas of the scenario and rubric file formats, for editors (e.g. yaml-language-server's
``# yaml-language-server: $schema=...`` comment) and other tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from harness.errors import InputError
from harness.files import make_directory, write_text_atomic
from harness.scenarios.schema import Scenario

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def scenario_file_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file: one scenario (a mapping) or a list of them."""
    schema = TypeAdapter(Scenario | list[Scenario]).json_schema()
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": "harness scenario file",
        "description": "One scenario, or a list of scenarios, for the agent evaluation harness.",
        **schema,
    }


def schema_documents() -> dict[str, str]:
    """File name -> the exact text written for it (stable: sorted keys, trailing newline)."""
    from harness.judging.rubric import rubric_json_schema

    builders = {"scenario.schema.json": scenario_file_schema,
                "rubric.schema.json": rubric_json_schema}
    return {
        name: json.dumps(build(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        for name, build in builders.items()
    }


def write_schemas(out_dir: Path) -> list[Path]:
    """Write every schema file into ``out_dir`` (created if needed); return the paths. Raises
    :class:`~harness.errors.InputError` when the directory or a file cannot be written."""
    make_directory(out_dir, "a directory for the schema files")
    written = []
    for name, text in schema_documents().items():
        target = out_dir / name
        write_text_atomic(target, text)
        written.append(target)
    return written


def stale_schemas(out_dir: Path) -> list[Path]:
    """Schema files in ``out_dir`` that are missing or differ from what the code generates
    (compared as bytes, so a file that is not UTF-8 is simply out of date). Raises
    :class:`~harness.errors.InputError` for a file that cannot be read."""
    stale = []
    for name, text in schema_documents().items():
        path = out_dir / name
        try:
            same = path.is_file() and path.read_bytes() == text.encode("utf-8")
        except OSError as err:
            raise InputError(path, None, f"cannot be read ({err.strerror or err})") from None
        if not same:
            stale.append(path)
    return stale
