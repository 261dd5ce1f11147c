"""``.pre-commit-config.yaml`` runs the ruff and mypy the ``test`` extra pins, and mypy's
environment there holds the same stub packages and the package's own dependencies, so a
commit is checked as ``tests/test_static.py`` checks it and the two cannot drift."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CONFIG = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))


def _exact_pins() -> dict[str, str]:
    """The test extra's ``name==version`` requirements, by name."""
    pins: dict[str, str] = {}
    for line in PYPROJECT["project"]["optional-dependencies"]["test"]:
        requirement = Requirement(line)
        (specifier, *more) = requirement.specifier
        if specifier.operator == "==" and not more:
            pins[requirement.name] = specifier.version
    return pins


def _hook(repo: str, hook_id: str) -> tuple[str, dict[str, Any]]:
    """The ``rev`` of ``repo`` in the config and its hook ``hook_id``."""
    (entry,) = (r for r in CONFIG["repos"] if r["repo"] == repo)
    (hook,) = (h for h in entry["hooks"] if h["id"] == hook_id)
    return entry["rev"], hook


def test_ruff_and_mypy_run_at_the_versions_the_test_extra_pins() -> None:
    pins = _exact_pins()
    ruff_rev, _ = _hook("https://github.com/astral-sh/ruff-pre-commit", "ruff-check")
    mypy_rev, _ = _hook("https://github.com/pre-commit/mirrors-mypy", "mypy")
    assert ruff_rev == f"v{pins['ruff']}"
    assert mypy_rev == f"v{pins['mypy']}"


def test_mypy_sees_the_same_stubs_and_dependencies_as_the_tests() -> None:
    _, hook = _hook("https://github.com/pre-commit/mirrors-mypy", "mypy")
    stubs = sorted(f"{name}=={version}" for name, version in _exact_pins().items()
                   if name.startswith("types-"))
    assert stubs  # the extra pins stub packages: a renamed key must not make this vacuous
    expected = stubs + PYPROJECT["project"]["dependencies"]
    assert sorted(hook["additional_dependencies"]) == sorted(expected)
    # the whole package, as tests/test_static.py checks it, not only the files committed
    assert (hook["args"], hook["pass_filenames"]) == (["harness"], False)
