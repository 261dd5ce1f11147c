"""The registry of scenario file formats other than the harness's own YAML.

Scenario loading asks this registry which reader takes a file, by the end of its name, and
never imports another tool's code: the readers of other tools' files (ADK eval sets) live in
:mod:`harness.formats`, a layer above, which registers them when it is imported. Whatever
loads scenario files from paths a user gave (runs, commands, the pytest plugin) imports
:mod:`harness.formats` (or calls its ``load_scenarios``), so every format is known there.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harness.errors import InputError
    from harness.scenarios.schema import Scenario
    from harness.scenarios.validation import FieldPath

LoadedScenarios = tuple[list[tuple["Scenario", "FieldPath", int | None]], list["InputError"]]
"""What a reader returns: each scenario with its field-path prefix and its line (or
``None``), or the problems, each naming the file and the field."""


class ScenarioReader(Protocol):
    """Reads one file of a format into validated scenarios (see :data:`LoadedScenarios`)."""

    def __call__(self, path: Path, *, known_rubrics: Collection[str] | None,
                 check_imports: bool) -> LoadedScenarios: ...


@dataclass(frozen=True)
class ScenarioFormat:
    """A format of scenario files: its name (for messages), the ends of the file names it
    takes (``.evalset.json``), and its reader."""

    name: str
    suffixes: tuple[str, ...]
    read: ScenarioReader

    def takes(self, path: Path) -> bool:
        return path.name.endswith(self.suffixes)


_FORMATS: dict[str, ScenarioFormat] = {}


def register_format(fmt: ScenarioFormat) -> None:
    """Make ``fmt`` known to scenario loading (again under the same name replaces it)."""
    _FORMATS[fmt.name] = fmt


def format_for(path: Path) -> ScenarioFormat | None:
    """The registered format that takes ``path``, or ``None`` (the harness's own YAML)."""
    return next((fmt for fmt in _FORMATS.values() if fmt.takes(path)), None)


def registered_suffixes() -> tuple[str, ...]:
    """The ends of file names the registered formats take, in registration order."""
    return tuple(s for fmt in _FORMATS.values() for s in fmt.suffixes)
