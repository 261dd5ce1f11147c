"""The front door: ``harness`` exports, with ``__all__``, what the documentation tells users to
call; each name is imported on first use, so ``import harness`` (every command's first step)
stays light; and docs/api.md documents every exported name from its docstring."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import harness

ROOT = Path(__file__).resolve().parents[1]


def test_every_exported_name_resolves_to_what_its_module_defines() -> None:
    from harness.calibration.study import run_calibration
    from harness.runs.api import run_suite
    from harness.scenarios.schema import Scenario

    assert set(harness.__all__) == {"__version__", *harness._EXPORTS}
    for name in harness.__all__:
        assert getattr(harness, name) is not None, name
    assert (harness.run_suite, harness.Scenario, harness.run_calibration) == (
        run_suite, Scenario, run_calibration)
    assert set(harness.__all__) <= set(dir(harness))


def test_a_name_the_package_does_not_export_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'run_suit'"):
        _ = harness.run_suit  # type: ignore[attr-defined]


def test_importing_the_package_imports_none_of_its_layers() -> None:
    code = ("import sys, harness; print(sorted(m for m in sys.modules "
            "if m.startswith('harness.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == "['harness.version']"


def test_the_api_page_documents_every_exported_name() -> None:
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    documented = re.findall(r"^::: harness\.(\w+)$", page, flags=re.MULTILINE)
    assert sorted(documented) == sorted(n for n in harness.__all__ if n != "__version__")


def test_loading_from_the_front_door_knows_other_tools_formats() -> None:
    evalset = ROOT / "tests" / "data"
    found = sorted(evalset.rglob("*.evalset.json"))
    assert found, "the test data holds ADK eval sets"
    scenarios = harness.load_scenarios([found[0]])
    assert scenarios and all(isinstance(s, harness.Scenario) for s in scenarios)
