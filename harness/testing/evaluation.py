"""Run scenarios from a test written in code: :func:`evaluate` is ``harness run`` (the same
engine, store, cache and HTML report) returning the :class:`~harness.runs.api.RunResult`,
for :func:`~harness.testing.outcome.assert_passes` to judge."""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.runs import event_loop
from harness.runs.api import RunResult, run_suite
from harness.runs.config import RunConfig


def run_config(scenarios: str | Path | Sequence[str | Path], *, agent: str | None = None,
               simulator: str | None = None, judge: str | Sequence[str] | None = None,
               offline: bool = False, epochs: int = 5, **options: Any) -> RunConfig:
    """The :class:`RunConfig` of ``harness run SCENARIOS --agent ... --epochs K``:
    ``scenarios`` are files, folders or ``FILE:id1,id2`` selectors; ``judge`` one model or
    a panel; ``options`` any other field of the run's design or execution (``no_judge``,
    ``cache_mode``, ``concurrency``, ...). Raises :class:`pydantic.ValidationError` for a
    bad value."""
    paths = [scenarios] if isinstance(scenarios, str | Path) else list(scenarios)
    judges = [judge] if isinstance(judge, str) else list(judge or [])
    return RunConfig.model_validate({
        "scenario_paths": [str(p) for p in paths], "agent": agent, "simulator": simulator,
        "judges": judges, "offline": offline, "epochs": epochs, **options})


def write_report(run_dir: Path) -> Path | None:
    """Write ``RUN_DIR/report.html`` as ``harness run`` does; a page that cannot be written
    is a warning, not a lost run (the results are already in the store)."""
    from harness.report.html.run_page import write_run_report

    try:
        return write_run_report(run_dir)
    except HarnessError as err:
        warnings.warn(f"the HTML report was not written: {err}", stacklevel=2)
        return None


def evaluate(scenarios: str | Path | Sequence[str | Path], *, out: str | Path | None = None,
             agent: str | None = None, simulator: str | None = None,
             judge: str | Sequence[str] | None = None, offline: bool = False, epochs: int = 5,
             **options: Any) -> RunResult:
    """Run ``scenarios`` (as :func:`run_config` reads its arguments) into the run directory
    ``out`` (default: a new temporary directory), write its HTML report, and return the
    :class:`RunResult` (``result.summary`` is ``summary.json``'s model).

    Blocking: it runs its own event loop, so call it from a plain test function; from a
    coroutine, ``await harness.run_suite(run_config(...), out)`` instead. Raises
    :class:`~harness.errors.HarnessError` (one line naming the file and field) for bad
    scenarios, models or an ``out`` that already holds a run, before any model is called.
    """
    config = run_config(scenarios, agent=agent, simulator=simulator, judge=judge,
                        offline=offline, epochs=epochs, **options)
    run_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="harness-run-"))
    result = event_loop.run(run_suite(config, run_dir))
    write_report(result.run_dir)
    return result
