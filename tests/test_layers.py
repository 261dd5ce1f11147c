"""The package's layers run one way: a module imports only from its own layer or the layers
below it, and no module imports itself back through others. The order is written down in
docs/design.md ("Layers"); this test reads every ``import`` in ``harness/`` (top-level, inside
functions and under ``TYPE_CHECKING`` alike, since each ties the two modules together) and
fails naming the file, the line and the two layers."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "harness"

# Lowest first. A module belongs to the longest prefix that names it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base utilities", ("harness.errors", "harness.redact", "harness.choices",
                        "harness.resources", "harness.files", "harness.safe_text",
                        "harness.user_code", "harness.version", "harness.logs",
                        "harness.json_values", "harness.wording")),
    ("models", ("harness.models",)),
    ("transcript and statistics", ("harness.transcript", "harness.stats")),
    ("checks and judging", ("harness.checks", "harness.judging")),
    ("scenarios and tools", ("harness.scenarios", "harness.tools")),
    ("simulation and MCP", ("harness.simulation", "harness.mcp")),
    ("formats of other tools", ("harness.formats",)),
    ("runs", ("harness.runs",)),
    ("calibration", ("harness.calibration",)),
    ("report", ("harness.report",)),
    ("view", ("harness.view",)),
    ("commands, the pytest plugin, the front door",
     ("harness.cli", "harness.pytest_plugin", "harness.testing", "harness.__main__",
      "harness")),
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module of ours that ``name`` (a module, or a name inside one) loads."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """``(imported module, line)`` for every import of ours in ``path``. ``from pkg import
    sub`` imports the module ``pkg.sub`` (its package's ``__init__`` runs first whatever
    imports it, so that is not counted as an edge of its own)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent) + (f".{base}" if base else "")
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                     for a in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name) if name.split(".")[0] == "harness" else None
            if target is not None and target != module:
                yield target, node.lineno


def layer_of(module: str) -> int:
    matches = [(len(prefix), i) for i, (_, prefixes) in enumerate(LAYERS)
               for prefix in prefixes if module == prefix or module.startswith(prefix + ".")]
    assert matches, f"{module} is in no layer: add it to LAYERS and docs/design.md"
    return max(matches)[1]


def _graph() -> dict[str, list[tuple[str, int]]]:
    return {module: list(_imports(module, path)) for module, path in MODULES.items()}


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_no_module_imports_from_a_higher_layer() -> None:
    upward = [
        f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: {module} "
        f"({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, edges in _graph().items() for target, line in edges
        if layer_of(target) > layer_of(module)
    ]
    assert not upward, "imports that run up the layers:\n" + "\n".join(upward)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the groups of two or more modules that import each
    other, directly or through others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_module_imports_itself_back_through_others() -> None:
    graph = {module: {target for target, _ in edges} for module, edges in _graph().items()}
    assert strongly_connected(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("source, expected", [
    ("from harness.report import terminal", "harness.report.terminal"),
    ("from harness.report.terminal import render_run", "harness.report.terminal"),
    ("import harness.runs.store", "harness.runs.store"),
    ("from . import terminal", "harness.report.terminal"),
    ("from ..runs import store", "harness.runs.store"),
])
def test_imports_are_read_as_the_module_they_load(source: str, expected: str,
                                                  tmp_path: Path) -> None:
    path = tmp_path / "latency.py"
    path.write_text(source + "\n", encoding="utf-8")
    assert [t for t, _ in _imports("harness.report.latency", path)] == [expected]


def test_the_layers_in_the_design_notes_are_these() -> None:
    design = (PACKAGE.parent / "docs" / "design.md").read_text(encoding="utf-8")
    for name, prefixes in LAYERS:
        assert name in design, f"docs/design.md does not name the layer {name!r}"
        for prefix in prefixes:
            assert f"`{prefix}`" in design, f"docs/design.md does not place `{prefix}`"
