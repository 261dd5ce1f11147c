"""The tests' own layout: beside the test files only ``conftest.py`` (fixtures); every module
the tests share lives in ``tests/helpers/`` and is imported by one name, ``tests.helpers.NAME``.

A module imported by two names is two module objects with two copies of its module-level
state: ``http_agents`` and ``tests.http_agents`` were both in use, and so were ``conftest``
(which pytest itself loads) and ``tests.conftest``. The spellings that would still import are
the bare ones (pytest puts ``tests/`` on ``sys.path``): ``helpers.NAME``, ``conftest``,
``test_x``, and ``tests.conftest`` or ``tests.test_x`` from the root. Code one test file
needs from another moves to ``tests/helpers/`` too.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
HELPERS = TESTS / "helpers"


def _python_files() -> list[Path]:
    """Every module of the tests (test files, conftest, helpers) and of the benchmarks."""
    return sorted([*TESTS.glob("*.py"), *HELPERS.glob("*.py"), *(ROOT / "benchmarks").glob("*.py")])


def _helper_names() -> set[str]:
    return {path.stem for path in HELPERS.glob("*.py") if path.stem != "__init__"}


def _imported(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) for every import in ``tree``; a relative import as ``.NAME``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, "." * node.level + (node.module or "")


def _wrong_spelling(module: str, helpers: set[str]) -> str | None:
    """Why ``module`` is not how a test imports shared code, or None when it is fine."""
    if module.startswith("."):
        return "a relative import"
    parts = module.split(".")
    if parts[0] == "tests":
        parts = parts[1:]
        if len(parts) >= 2 and parts[0] == "helpers" and parts[1] in helpers:
            return None
    elif parts[0] not in helpers | {"helpers", "conftest"} and not parts[0].startswith("test_"):
        return None  # not the tests' own code
    first = parts[0] if parts else ""
    if first == "conftest":
        return "conftest.py is for pytest to load (fixtures only)"
    if first.startswith("test_"):
        return "a test file; move the code both need to tests/helpers/"
    if module.split(".")[0] != "tests":
        return "a bare name, a second module object beside tests.helpers.NAME"
    return "not a module of tests/helpers/"


def test_only_test_files_and_conftest_sit_beside_the_tests() -> None:
    others = [path.name for path in TESTS.glob("*.py")
              if path.name != "conftest.py" and not path.name.startswith("test_")]
    assert others == [], f"move these to tests/helpers/: {sorted(others)}"


def test_the_helpers_are_a_package_with_no_tests_or_fixtures() -> None:
    assert (HELPERS / "__init__.py").is_file()
    misplaced = [path.name for path in HELPERS.glob("*.py")
                 if path.name == "conftest.py" or path.name.startswith("test_")]
    assert misplaced == [], f"tests and fixtures belong in tests/, not tests/helpers/: {misplaced}"


def test_every_import_of_shared_test_code_is_spelt_tests_helpers_name() -> None:
    helpers = _helper_names()
    wrong = []
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, module in _imported(tree):
            why = _wrong_spelling(module, helpers)
            if why is not None:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: imports {module!r}: {why} "
                             "(shared test code is imported as tests.helpers.NAME)")
    assert wrong == [], "\n".join(wrong)


def test_the_spelling_rule_tells_bare_names_from_the_full_one() -> None:
    helpers = {"browser", "http_agents"}
    assert _wrong_spelling("tests.helpers.browser", helpers) is None
    assert _wrong_spelling("harness.runs.store", helpers) is None
    assert _wrong_spelling("browser_cookie", helpers) is None
    for bare in ("browser", "http_agents", "helpers.browser", "helpers", "conftest",
                 "tests.conftest", "tests.http_agents", "tests.helpers", "test_runs_cli",
                 "tests.test_runs_cli", ".browser", "..helpers.browser"):
        assert _wrong_spelling(bare, helpers) is not None, bare


def test_no_module_of_the_tests_is_loaded_under_two_names() -> None:
    """What the spelling rule prevents, seen in this process: once pytest has collected the
    suite (every xdist worker collects all of it), each file under tests/ is one module."""
    names: dict[Path, list[str]] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file is None:
            continue
        path = Path(file).resolve()
        if path.parent in (TESTS, HELPERS):
            names.setdefault(path, []).append(name)
    twice = {str(path.relative_to(ROOT)): sorted(found)
             for path, found in names.items() if len(found) > 1}
    assert twice == {}
