"""Reading scenario files: YAML to validated :class:`Scenario` objects, with every problem in
every file reported at once as ``file:line: field.path: what was expected``.

A file holds one scenario (a mapping) or a list of scenarios. YAML is read with two changes
from PyYAML's YAML 1.1 defaults, because both silently turn text into something else: only
``true``/``false`` are booleans (``status: ON`` stays the string ``"ON"``), and dates stay
strings (tool results must be JSON). Duplicate keys are errors rather than last-one-wins.
"""

from __future__ import annotations

import copy
import difflib
import re
import types
import typing
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from harness.errors import InputError, InputErrors, field_path
from harness.files import read_text
from harness.json_values import load_yaml
from harness.scenarios.formats import format_for, registered_suffixes
from harness.scenarios.schema import Scenario
from harness.scenarios.selectors import (
    ScenarioFilter,
    Selection,
    apply_filter,
    merge_selections,
    parse_selection,
    select,
)
from harness.scenarios.validation import FieldPath, Problem, scenario_problems

SCENARIO_SUFFIXES: tuple[str, ...] = (".yaml", ".yml")


# libyaml's parser when PyYAML was built with it (its wheels are): the same documents, nodes
# and marks, parsed several times faster than by the pure-Python one.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _ScenarioLoader(_SafeLoader):  # type: ignore[misc, valid-type]
    """SafeLoader without YAML 1.1's yes/no/on/off booleans and without timestamps."""


_ScenarioLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ScenarioLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


@dataclass
class ValidationReport:
    """What validating some paths found: the scenarios that loaded, the files read, and every
    problem (empty when all is well)."""

    scenarios: list[Scenario] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def raise_if_errors(self) -> None:
        """Raise :class:`InputError` for one problem, :class:`InputErrors` for several."""
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise InputErrors(self.errors)


def load_scenarios(
    paths: Iterable[str | Path], *, known_rubrics: Collection[str] | None = None,
    selector: ScenarioFilter | None = None,
) -> list[Scenario]:
    """Load every scenario in ``paths`` (files, or directories searched recursively for
    ``*.yaml``/``*.yml`` and the files of registered formats, such as ADK eval sets
    ``*.evalset.json``/``*.test.json`` once :mod:`harness.formats` is imported), in path order,
    then file order. A path ``FILE:id1,id2`` selects those scenarios of the file;
    ``selector`` (``--tag``, ``--exclude-tag``, ``-k``) then keeps some of them.

    ``known_rubrics``, when given, is the set of rubric ids scenarios may list. Raises
    :class:`InputError` for one problem or :class:`InputErrors` listing every problem in every
    file; nothing is returned unless all files are valid and ids are unique.
    """
    report = validate_paths(paths, known_rubrics=known_rubrics, selector=selector)
    report.raise_if_errors()
    return report.scenarios


def validate_paths(
    paths: Iterable[str | Path],
    *,
    known_rubrics: Collection[str] | None = None,
    check_imports: bool = True,
    selector: ScenarioFilter | None = None,
) -> ValidationReport:
    """Check every scenario file under ``paths`` and collect all problems (never raises for
    bad content). Scenario ids must be unique across all the files. ``selector``, applied
    once every file is valid, keeps some scenarios (a selector that keeps none, or names a
    tag no scenario has, is a problem); ``files`` still lists every file read."""
    paths = list(paths)
    report = ValidationReport()
    selections, errors = discover_files(paths)
    report.files, report.errors = [s.path for s in selections], errors
    first_seen: dict[str, str] = {}
    for selection in selections:
        path = selection.path
        scenarios, problems = read_scenario_file(
            path, known_rubrics=known_rubrics, check_imports=check_imports
        )
        report.errors.extend(problems)
        try:
            scenarios = select(scenarios, selection.ids, lambda item: _ids_of(item[0]), path)
        except InputError as err:
            report.errors.append(err)
            continue
        for scenario, where, line in scenarios:
            if scenario.id in first_seen:
                report.errors.append(
                    InputError(
                        path,
                        field_path((*where, "id")),
                        f"duplicate scenario id {scenario.id!r} (first in "
                        f"{first_seen[scenario.id]}); ids must be unique across the suite",
                        location=line,
                    )
                )
                continue
            first_seen[scenario.id] = f"{path}:{line}" if line else str(path)
            report.scenarios.append(scenario)
    if selector is not None and not report.errors:
        try:
            report.scenarios = apply_filter(report.scenarios, selector, lambda s: s.id,
                                            lambda s: s.tags, " ".join(map(str, paths)))
        except InputError as err:
            report.errors.append(err)
    return report


def _ids_of(scenario: Scenario) -> list[str]:
    """The ids a selector may use for a scenario: its id, and an ADK eval case's own id."""
    adk = scenario.metadata.get("adk")
    eval_id = adk.get("eval_id") if isinstance(adk, dict) else None
    return [scenario.id, *([eval_id] if isinstance(eval_id, str) else [])]


def is_scenario_file(path: Path) -> bool:
    """Whether a directory's file is read as scenarios: YAML, or a registered format's."""
    return path.suffix in SCENARIO_SUFFIXES or format_for(path) is not None


def _scenario_file_patterns() -> str:
    """The file names a directory is searched for, as a message lists them."""
    return ", ".join(f"*{s}" for s in (*SCENARIO_SUFFIXES, *registered_suffixes()))


def discover_files(paths: Iterable[str | Path]) -> tuple[list[Selection], list[InputError]]:
    """Expand directories (recursively: ``*.yaml``, ``*.yml`` and the registered formats'
    files, sorted), parse ``FILE:ids`` selectors and check that every path exists.
    A file named explicitly is read whatever its suffix."""
    selections: list[Selection] = []
    errors: list[InputError] = []
    given = list(paths)
    if not given:
        errors.append(InputError("<arguments>", None, "no scenario paths given"))
    for raw in given:
        try:
            selection = parse_selection(raw)
        except InputError as err:
            errors.append(err)
            continue
        path = selection.path
        if path.is_dir():
            named = sorted(p for p in path.rglob("*") if is_scenario_file(p))
            found = [p for p in named if p.is_file()]
            # A link that loops or leads nowhere is named, not skipped in silence.
            broken = [InputError(p, None, "a symbolic link that loops or leads nowhere; "
                                 "expected a scenario file") for p in named
                      if p.is_symlink() and not p.exists()]
            errors.extend(broken)
            if not found and not broken:
                errors.append(InputError(path, None, f"no scenario files "
                                         f"({_scenario_file_patterns()}) in this directory"))
            selections.extend(Selection(p) for p in found)
        elif path.is_file():
            selections.append(selection)
        else:
            errors.append(InputError(path, None, "no such file or directory"))
    return merge_selections(selections), errors


def read_scenario_file(
    path: Path,
    *,
    known_rubrics: Collection[str] | None = None,
    check_imports: bool = True,
) -> tuple[list[tuple[Scenario, FieldPath, int | None]], list[InputError]]:
    """Parse and check one file. Returns ``(scenarios, errors)``; each scenario comes with its
    field-path prefix (``()`` or ``(index,)`` in a list file) and its line. A file of a
    registered format (:mod:`harness.scenarios.formats`) is read by that format's reader."""
    fmt = format_for(path)
    if fmt is not None:
        return fmt.read(path, known_rubrics=known_rubrics, check_imports=check_imports)
    try:
        text = read_text(path, "a scenario file (YAML)")
    except InputError as err:
        return [], [err]
    try:
        node, data = _parse_yaml(text, path)
    except InputError as err:  # a limit of harness.json_values passed
        return [], [err]
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else None
        return [], [InputError(path, None, f"not valid YAML: {err.problem or err}", location=line)]
    except yaml.YAMLError as err:
        return [], [InputError(path, None, f"not valid YAML: {err}")]

    lines = _LineFinder(node)
    errors = [
        InputError(path, field_path(p), f"duplicate key {p[-1]!r}", location=line)
        for p, line in _duplicate_keys(node)
    ]
    if data is None:
        return [], [
            *errors,
            InputError(
                path, None, "empty file; expected a scenario (a mapping) or a list of scenarios"
            ),
        ]
    items: list[tuple[FieldPath, Any]]
    if isinstance(data, list):
        items = [((i,), item) for i, item in enumerate(data)]
        if not items:
            errors.append(InputError(path, None, "an empty list; expected at least one scenario"))
    elif isinstance(data, dict):
        items = [((), data)]
    else:
        return [], [
            *errors,
            InputError(
                path,
                None,
                "expected a scenario (a mapping) or a list "
                f"of scenarios, got {type(data).__name__}",
            ),
        ]

    loaded: list[tuple[Scenario, FieldPath, int | None]] = []
    for prefix, item in items:
        problems, scenario = _check_item(
            item, path, known_rubrics=known_rubrics, check_imports=check_imports
        )
        errors.extend(
            InputError(
                path,
                field_path((*prefix, *p.path)) or None,
                p.expected,
                location=lines.line((*prefix, *p.path)),
            )
            for p in problems
        )
        if scenario is not None and not problems:
            loaded.append((scenario, prefix, lines.line(prefix)))
    if errors:
        # A file with any problem contributes no scenarios, so a run never uses half a file.
        return [], errors
    return loaded, []


def parse_scenario(
    data: Mapping[str, Any],
    *,
    source: str | Path = "<scenario>",
    base_dir: Path | None = None,
    known_rubrics: Collection[str] | None = None,
    check_imports: bool = True,
) -> Scenario:
    """Validate one scenario given as a mapping (for the Python API). ``base_dir`` is where its
    Python paths are resolved first. Raises :class:`InputError`/:class:`InputErrors` naming
    ``source`` and the field paths."""
    problems, scenario = _check_item(
        data, None, base_dir=base_dir, known_rubrics=known_rubrics, check_imports=check_imports
    )
    errors = [InputError(source, field_path(p.path) or None, p.expected) for p in problems]
    ValidationReport(errors=errors).raise_if_errors()
    assert scenario is not None
    return scenario


def _check_item(
    item: Any,
    path: Path | None,
    *,
    base_dir: Path | None = None,
    known_rubrics: Collection[str] | None,
    check_imports: bool,
) -> tuple[list[Problem], Scenario | None]:
    if not isinstance(item, dict):
        return [Problem((), f"expected a scenario (a mapping), got {type(item).__name__}")], None
    try:
        scenario = Scenario.model_validate(item)
    except ValidationError as err:
        errors = err.errors()
        problems = [_problem_from_pydantic(e) for e in errors]
        # The checks that span fields still run on what is valid, so one pass shows them too.
        rest = _without_bad_keys(item, [tuple(e["loc"]) for e in errors])
        if rest is not None:
            bad = [p.path for p in problems]
            problems += [
                p for p in _cross_field_problems(rest, path, base_dir, known_rubrics, check_imports)
                if not any(p.path[: len(b)] == b or b[: len(p.path)] == p.path for b in bad)
            ]
        return problems, None
    return _cross_field_problems(scenario, path, base_dir, known_rubrics, check_imports), scenario


def _cross_field_problems(
    scenario: Scenario,
    path: Path | None,
    base_dir: Path | None,
    known_rubrics: Collection[str] | None,
    check_imports: bool,
) -> list[Problem]:
    scenario.with_source(path.resolve() if path is not None else None)
    return scenario_problems(
        scenario,
        base_dir=base_dir if base_dir is not None else scenario.base_dir,
        known_rubrics=known_rubrics,
        check_imports=check_imports,
    )


def _without_bad_keys(item: dict[str, Any], locations: list[FieldPath]) -> Scenario | None:
    """The scenario with every key that failed validation removed, when that leaves a valid
    scenario (the bad keys were optional); else None."""
    data = copy.deepcopy(item)
    for loc in locations:
        parent: Any = data
        for part in loc[:-1]:
            try:
                parent = parent[part]
            except (KeyError, IndexError, TypeError):
                return None
        if not (isinstance(parent, dict) and loc and loc[-1] in parent):
            return None  # a missing field, or an error not tied to one key
        del parent[loc[-1]]
    try:
        return Scenario.model_validate(data)
    except ValidationError:
        return None


# --- pydantic errors as one-line messages --------------------------------------------------


def _problem_from_pydantic(error: Any) -> Problem:
    loc: FieldPath = tuple(error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        allowed = _allowed_keys(loc[:-1])
        text = f"unknown key {key!r}"
        if allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            if close:
                text += f"; did you mean {close[0]!r}?"
            text += f" (expected one of: {', '.join(allowed)})"
        return Problem(loc, text)
    if kind == "missing":
        return Problem(loc, "required field is missing")
    if kind == "value_error_at":  # a field's validator naming a place inside the field
        return Problem((*loc, *error["ctx"]["at"]), str(error["ctx"]["expected"]))
    message = str(error["msg"])
    if kind == "value_error":
        return Problem(loc, message.removeprefix("Value error, "))
    return Problem(loc, f"{message} (got {_short(error.get('input'))})")


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _allowed_keys(loc: FieldPath) -> list[str] | None:
    """The field names of the model at ``loc`` in the scenario schema (for 'did you mean')."""
    annotation: Any = Scenario
    for part in loc:
        annotation = _step(annotation, part)
        if annotation is None:
            return None
    model = _model_in(annotation)
    return list(model.model_fields) if model is not None else None


def _step(annotation: Any, part: str | int) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(annotation):
            found = _step(option, part)
            if found is not None:
                return found
        return None
    if origin is list:
        return typing.get_args(annotation)[0] if isinstance(part, int) else None
    if origin is dict:
        return typing.get_args(annotation)[1] if isinstance(part, str) else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(part, str):
        info = annotation.model_fields.get(part)
        return info.annotation if info is not None else None
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for option in typing.get_args(annotation):
        model = _model_in(option)
        if model is not None:
            return model
    return None


# --- YAML nodes: lines and duplicate keys --------------------------------------------------


def _parse_yaml(text: str, path: Path) -> tuple[yaml.Node | None, Any]:
    return load_yaml(text, path, loader=_ScenarioLoader)


class _LineFinder:
    """Maps a field path to the 1-based line of the deepest YAML node it reaches (for a
    mapping entry, the line of its key)."""

    def __init__(self, root: yaml.Node | None) -> None:
        self.root = root

    def line(self, path: FieldPath) -> int | None:
        if self.root is None:
            return None
        node, mark = self.root, self.root.start_mark
        for part in path:
            found = _child(node, part)
            if found is None:
                break
            key, node = found
            mark = (key or node).start_mark
        return mark.line + 1


def _child(node: yaml.Node, part: str | int) -> tuple[yaml.Node | None, yaml.Node] | None:
    """``(key node or None, value node)`` of one step down the tree."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return key, value
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        return None, node.value[part]
    return None


def _duplicate_keys(
    node: yaml.Node | None, path: FieldPath = (), seen_nodes: set[int] | None = None
) -> list[tuple[FieldPath, int]]:
    """Every mapping key written twice in the same mapping, with its path and line."""
    if node is None:
        return []
    seen_nodes = set() if seen_nodes is None else seen_nodes
    if id(node) in seen_nodes:  # an alias: already checked where the anchor is
        return []
    seen_nodes.add(id(node))
    found: list[tuple[FieldPath, int]] = []
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            if name is not None and name != "<<":
                if name in keys:
                    found.append(((*path, name), key.start_mark.line + 1))
                keys.add(name)
            found.extend(
                _duplicate_keys(value, (*path, name if name is not None else "?"), seen_nodes)
            )
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found.extend(_duplicate_keys(item, (*path, i), seen_nodes))
    return found
