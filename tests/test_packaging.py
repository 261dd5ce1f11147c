"""A package built from this tree (what a wheel or ``pip install .`` holds) carries the
built-in rubrics, the example scenarios, the calibration examples and the HTML report's
templates and assets, and finds them when it is imported from somewhere else than the source
tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import harness
from harness.cli.demo_cmd import EXAMPLE_CALIBRATION, EXAMPLE_SCENARIOS
from harness.judging.rubric import BUILTIN_RUBRICS_DIR, load_rubrics
from harness.scenarios import load_scenarios
print(harness.__file__)
for path in (BUILTIN_RUBRICS_DIR, EXAMPLE_SCENARIOS, EXAMPLE_CALIBRATION):
    print(path)
print(len(load_rubrics([])), len(load_scenarios([str(EXAMPLE_SCENARIOS)])))
from harness.report.html.page import render_page
print(len(render_page("base.html.j2", title="t")))
"""


def test_a_built_package_carries_and_finds_its_data(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    built = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    data = lib / "harness" / "_data"
    for relative in ("rubrics/final_response_quality.yaml", "scenarios/weather.yaml",
                     "scenarios/example_agents/weather_bot.py",
                     "examples/calibration/pointwise_items.jsonl"):
        assert (data / relative).is_file(), relative
    assert not list(data.rglob("__pycache__"))

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=elsewhere, capture_output=True,
                           text=True, timeout=300, check=False,
                           env={**os.environ, "PYTHONPATH": str(lib)})
    assert probe.returncode == 0, probe.stderr[-3000:]
    module, rubrics, scenarios, calibration, counts, page = probe.stdout.strip().splitlines()
    assert int(page) > 10_000  # the HTML report's templates, stylesheet and script came along
    assert Path(module).is_relative_to(lib)  # the built copy, not the source tree
    assert (Path(rubrics), Path(scenarios), Path(calibration)) == (
        data / "rubrics", data / "scenarios", data / "examples" / "calibration")
    n_rubrics, n_scenarios = map(int, counts.split())
    assert n_rubrics == len(list((ROOT / "rubrics").glob("*.yaml")))
    assert n_scenarios >= 10  # every example scenario loads, its Python agents import
