"""Packaging hook: the wheel carries the built-in rubrics, the example scenarios and the
calibration examples under ``harness/_data/``, so a non-editable install (``pip install .``,
or from an index) finds them. In a source checkout they are read where they are
(``rubrics/``, ``scenarios/``, ``examples/calibration/``); see :mod:`harness.resources`.
Everything else about the package is in ``pyproject.toml``."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATA = ("rubrics", "scenarios", "examples/calibration")


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the source tree
        for name in DATA:
            target = Path(self.build_lib) / "harness" / "_data" / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(ROOT / name, target,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithData})
