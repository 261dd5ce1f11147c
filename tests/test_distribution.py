"""``python -m build`` makes an sdist and a wheel that install in a new virtual environment and
run ``harness demo`` there; the version is written once.

What this proves and what it does not, offline: the build runs without isolation (the
``test`` extra brings setuptools and build, so nothing is downloaded), the wheel is built
*from the sdist* (build's default when it makes both), so the sdist holds everything a build
needs. The wheel goes into a brand-new virtual environment with ``--no-deps --no-index``; its
dependencies are not resolved from an index there but borrowed from this test environment
through a ``.pth`` line (which reads neither our editable install's hook nor its files, so
the ``harness`` that runs is the wheel's). Resolving the dependencies from an index is what
``.ci/run``'s fresh virtual environment does. About 15 s on two shared cores.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import harness
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

# Left out of the copy the build starts from: only what is never part of a source tree.
_TOP_LEVEL_SCRATCH = {".git", "build", "dist", "runs", ".harness", ".venv"}
_ANYWHERE_SCRATCH = shutil.ignore_patterns("__pycache__", "*.egg-info", ".*_cache")


def _scratch(directory: str, names: list[str]) -> set[str]:
    ignored = set(_ANYWHERE_SCRATCH(directory, names))
    if Path(directory) == ROOT:  # harness/runs is code: only the top-level runs/ is output
        ignored |= _TOP_LEVEL_SCRATCH & set(names)
    return ignored


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False, env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done


def test_the_sdist_and_wheel_build_install_fresh_and_run_the_demo(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=_scratch)  # the build writes egg-info beside it
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, source, cwd=source)
    version = harness.__version__
    sdist = dist / f"agent_eval_harness-{version}.tar.gz"
    wheel = dist / f"agent_eval_harness-{version}-py3-none-any.whl"

    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for needed in ("LICENSE", "CHANGELOG.md", "CONTRIBUTING.md", "README.md", "setup.py",
                   "harness/py.typed", "rubrics/final_response_quality.yaml",
                   "scenarios/weather.yaml", "scenarios/example_agents/weather_bot.py",
                   "examples/calibration/pointwise_items.jsonl",
                   "harness/report/html/templates/base.html.j2",
                   "tests/data/llmbar-natural/LICENSE", "docs/design.md",
                   "docs/index.md", "mkdocs.yml"):
        assert needed in in_sdist, needed
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
        metadata = archive.read(f"agent_eval_harness-{version}.dist-info/METADATA").decode()
    for needed in ("harness/py.typed", "harness/_data/rubrics/final_response_quality.yaml",
                   "harness/_data/scenarios/weather.yaml",
                   f"agent_eval_harness-{version}.dist-info/licenses/LICENSE"):
        assert needed in in_wheel, needed
    assert f"\nVersion: {version}\n" in metadata
    assert "\nLicense-Expression: Apache-2.0\n" in metadata

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
         "--no-index", wheel, cwd=tmp_path)
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                   cwd=tmp_path).stdout.strip()
    (Path(purelib) / "borrowed_dependencies.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n", encoding="utf-8")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    harness_command = venv / "bin" / "harness"  # the wheel's console script
    where = _run(python, "-c", "import harness; print(harness.__file__)", cwd=elsewhere,
                 env=env).stdout.strip()
    assert Path(where).is_relative_to(venv), where  # the wheel's copy, not the source tree
    assert _run(harness_command, "version", cwd=elsewhere, env=env).stdout == f"{version}\n"
    demo = _run(harness_command, "demo", "--out", elsewhere / "demo", "--epochs", "1",
                cwd=elsewhere, env=env)
    assert "OFFLINE" in demo.stdout
    assert (elsewhere / "demo" / "suite" / "report.html").stat().st_size > 10_000
    assert (elsewhere / "demo" / "calibration" / "report.json").is_file()


def test_the_version_is_written_once_and_harness_version_prints_it() -> None:
    assert "version" not in PYPROJECT["project"]
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "harness.version.__version__"}
    done = run_cli("version")
    assert (done.returncode, done.stdout) == (0, f"{harness.__version__}\n")
