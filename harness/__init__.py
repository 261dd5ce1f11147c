"""An evaluation harness for LLM agents: simulated users, mocked tools, rubric judges, repeated
sampling with confidence intervals, and judge calibration against human labels.

The public Python API is what this module exports (``__all__``); everything else is the
implementation, whose module paths may change between releases. Each name is imported on
first use, so ``import harness`` (and every ``harness`` command) stays quick.

- Run a suite: :func:`evaluate` (blocking, for scripts and tests) or ``await``
  :func:`run_suite` with a :class:`RunConfig` (the run's :class:`RunDesign` and its
  :class:`RunExecution`; :func:`run_config` builds one as the command line would);
  :func:`resume_run` finishes a stopped run. Both give a :class:`RunResult`;
  :func:`assert_passes` turns it into a test's verdict.
- Scenarios: :func:`load_scenarios` and :func:`validate_paths` read scenario YAML and other
  tools' files (ADK eval sets) into :class:`Scenario` objects.
- Checks of your own: :func:`check` registers a function returning a :class:`CheckResult`.
- Judge calibration: :func:`run_calibration` runs judges on labelled items into a
  :class:`CalibrationReport`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from harness.version import __version__

if TYPE_CHECKING:
    from harness.calibration.report import CalibrationReport
    from harness.calibration.study import run_calibration
    from harness.checks.registry import check
    from harness.checks.result import CheckResult
    from harness.formats import load_scenarios, validate_paths
    from harness.runs.api import RunResult, resume_run, run_suite
    from harness.runs.config import RunConfig, RunDesign, RunExecution
    from harness.scenarios.schema import Scenario
    from harness.testing.evaluation import evaluate, run_config
    from harness.testing.outcome import assert_passes

# Each exported name and the module that defines it.
_EXPORTS: dict[str, str] = {
    "run_suite": "harness.runs.api",
    "resume_run": "harness.runs.api",
    "RunResult": "harness.runs.api",
    "RunConfig": "harness.runs.config",
    "RunDesign": "harness.runs.config",
    "RunExecution": "harness.runs.config",
    "run_config": "harness.testing.evaluation",
    "evaluate": "harness.testing.evaluation",
    "assert_passes": "harness.testing.outcome",
    "load_scenarios": "harness.formats",
    "validate_paths": "harness.formats",
    "Scenario": "harness.scenarios.schema",
    "check": "harness.checks.registry",
    "CheckResult": "harness.checks.result",
    "run_calibration": "harness.calibration.study",
    "CalibrationReport": "harness.calibration.report",
}

__all__ = [
    "CalibrationReport",
    "CheckResult",
    "RunConfig",
    "RunDesign",
    "RunExecution",
    "RunResult",
    "Scenario",
    "__version__",
    "assert_passes",
    "check",
    "evaluate",
    "load_scenarios",
    "resume_run",
    "run_calibration",
    "run_config",
    "run_suite",
    "validate_paths",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
