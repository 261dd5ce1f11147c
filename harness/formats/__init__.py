"""Readers and writers of other tools' files, one layer above the harness's own types, which
they convert into: Google ADK eval sets and their ``test_config.json`` (:mod:`.adk`), Vertex
AI evaluation datasets (:mod:`.vertex_dataset`) and OpenAI-format transcript files
(:mod:`.transcript_file`, :mod:`.transcript_judging`).

Importing this package registers the scenario formats among them with scenario loading
(:mod:`harness.scenarios.formats`), which never imports them itself. ``load_scenarios``,
``validate_paths`` and ``is_scenario_file`` are scenario loading's, named here so that a
caller who loads a user's paths gets every format known by importing them from here.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.formats.adk import ADK_SUFFIXES
from harness.scenarios.formats import LoadedScenarios, ScenarioFormat, register_format

if TYPE_CHECKING:
    from harness.scenarios.loading import is_scenario_file, load_scenarios, validate_paths

__all__ = ["is_scenario_file", "load_scenarios", "validate_paths"]


def _read_adk_file(path: Path, *, known_rubrics: Collection[str] | None,
                   check_imports: bool) -> LoadedScenarios:
    # ADK's converter is imported only when an eval set is read.
    from harness.formats.adk.loading import read_adk_file

    return read_adk_file(path, known_rubrics=known_rubrics, check_imports=check_imports)


register_format(ScenarioFormat("ADK eval set", ADK_SUFFIXES, _read_adk_file))


def __getattr__(name: str) -> Any:
    # Scenario loading takes half a second to import: only when it is asked for.
    if name in __all__:
        from harness.scenarios import loading

        return getattr(loading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
