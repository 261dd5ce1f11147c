"""ADK eval set files as scenarios: read, convert with the ``test_config.json`` beside them
(or ADK's default criteria), and validate each converted scenario like a scenario file."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from harness.errors import InputError, InputErrors
from harness.formats.adk.convert import eval_set_to_scenarios
from harness.formats.adk.criteria import EvalConfig, config_for
from harness.formats.adk.evalset import read_eval_set
from harness.scenarios.schema import Scenario

FieldPath = tuple[str | int, ...]


def adk_scenario_mappings(
    path: Path, config: EvalConfig | None = None
) -> list[dict[str, Any]]:
    """The scenario mappings of an ADK eval set file, with ``config`` (default: the
    ``test_config.json`` beside the file, else ADK's defaults). Raises :class:`InputError`."""
    eval_set = read_eval_set(path)
    return eval_set_to_scenarios(eval_set, config if config is not None else config_for(path),
                                 path)


def read_adk_file(
    path: Path,
    *,
    known_rubrics: Collection[str] | None = None,
    check_imports: bool = True,
    config: EvalConfig | None = None,
) -> tuple[list[tuple[Scenario, FieldPath, int | None]], list[InputError]]:
    """Every eval case of ``path`` as a validated scenario, each with its field path
    (``("eval_cases", i)``), in the shape :func:`harness.scenarios.loading.read_scenario_file`
    returns; or the problems, each naming the file and the eval case."""
    from harness.scenarios.loading import parse_scenario

    try:
        mappings = adk_scenario_mappings(path, config)
    except InputError as err:
        return [], [err]
    loaded: list[tuple[Scenario, FieldPath, int | None]] = []
    errors: list[InputError] = []
    for i, data in enumerate(mappings):
        try:
            scenario = parse_scenario(data, source=path, base_dir=path.parent,
                                      known_rubrics=known_rubrics, check_imports=check_imports)
        except InputErrors as err:
            errors.extend(_in_case(path, i, e) for e in err.errors)
            continue
        except InputError as err:
            errors.append(_in_case(path, i, err))
            continue
        loaded.append((scenario.with_source(path.resolve()), ("eval_cases", i), None))
    return ([], errors) if errors else (loaded, [])


def _in_case(path: Path, index: int, err: InputError) -> InputError:
    field = f"eval_cases[{index}]" + (f" (as scenario {err.field})" if err.field else "")
    hint = ""
    if "unknown rubric" in err.expected:
        hint = " (a criterion of test_config.json maps to this rubric id; pass --rubrics with " \
               "a rubric of that id)"
    return InputError(path, field, err.expected + hint)
