"""``harness run --simulator A --simulator B ...``: a simulator panel. Each simulator's run
is the run ``harness run`` makes for one simulator (:func:`~harness.runs.api.run_suite`, or
:func:`~harness.runs.api.resume_run` with ``--resume``), in ``RUN_DIR/simulators/<slug>/``,
one after the other; then the panel's figures (:mod:`harness.runs.simulator_panel`), its
table and its page. The gate of a panel fails when it fails under any simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from harness.errors import HarnessError
from harness.safe_text import terminal_console, terminal_text

if TYPE_CHECKING:
    from harness.choices import RunGateBasis
    from harness.runs.api import RunResult
    from harness.runs.config import RunConfig
    from harness.runs.simulator_panel import PanelPlan

# Options a panel cannot combine with, and why (one line each).
INCOMPATIBLE = {
    "shard": "--shard cannot be combined with a simulator panel (several --simulator): a "
             "panel compares complete runs, and a shard holds part of one; run the panel "
             "unsharded",
    "target_ci_width": "--target-ci-width cannot be combined with a simulator panel "
                       "(several --simulator): adaptive sampling would give each "
                       "simulator its own epochs, and the panel pairs the same scenarios x "
                       "epochs under each",
    "labels": "--labels cannot be combined with a simulator panel (several --simulator): a "
              "labels file holds one run's samples; the gate on the corrected lower bound "
              "uses each sub-run's stored labels (harness labels import "
              "RUN_DIR/simulators/<slug> FILE)",
}


def check_panel_options(given: dict[str, bool], simulators: list[str]) -> None:
    """Refuse, in one line, what a panel cannot do: a simulator given twice, and the
    options in :data:`INCOMPATIBLE` (``given`` says which were given)."""
    from harness.runs.simulator_panel import panel_simulators

    panel_simulators(simulators)
    for name, why in INCOMPATIBLE.items():
        if given.get(name):
            raise HarnessError(why)


def start_panel(config: RunConfig, simulators: list[str], run_dir: Path) -> PanelPlan:
    """Check every simulator's run as ``harness run`` would before it starts (a bad model
    among them stops the panel before any run), then write the panel's plan."""
    from harness.files import make_directory
    from harness.runs.api import preflight_run
    from harness.runs.simulator_panel import PLAN_FILENAME, is_panel, new_plan, write_plan
    from harness.runs.store import STORE_FILENAME

    held = (PLAN_FILENAME if is_panel(run_dir)
            else STORE_FILENAME if (run_dir / STORE_FILENAME).exists() else None)
    if held is not None:
        raise HarnessError(f"{run_dir} already holds a run ({held}); resume it with "
                           f"`harness run --resume {run_dir}` or choose another --out "
                           "directory")
    resolved = [preflight_run(config.with_design(simulator=model)) for model in simulators]
    plan = new_plan(resolved[0].with_design(simulator=None), simulators)
    make_directory(run_dir, "a simulator panel's directory")
    write_plan(run_dir, plan)
    return plan


def run_panel(plan: PanelPlan, run_dir: Path, *, resume: bool, overrides: dict[str, Any],
              retry_errors: bool, as_json: bool, min_pass_rate: float | None,
              min_score: float | None, gate_on: RunGateBasis,
              rerun_simulator_faults: bool = False) -> None:
    """Run (or resume) every sub-run, then gate each, write the panel's figures and page,
    print its table, and exit with the most telling code over the sub-runs.
    ``rerun_simulator_faults`` applies to each sub-run (its own simulator's faults)."""
    from harness.cli.run_finish import ERR, RunProgress, run_to_end
    from harness.runs.api import resume_run, run_suite
    from harness.runs.store import STORE_FILENAME

    results: dict[str, RunResult] = {}
    for i, sim in enumerate(plan.simulators, 1):
        sub = plan.run_dir(run_dir, sim)
        ERR.print(f"[bold]simulator {i} of {len(plan.simulators)}[/] "
                  f"{terminal_text(sim.model)} → {terminal_text(sub)}")
        progress = RunProgress(ERR)
        if resume and (sub / STORE_FILENAME).exists():
            coro = resume_run(sub, overrides=overrides, retry_errors=retry_errors,
                              on_start=progress.start, on_sample=progress.sample,
                              tune_collector=True,
                              rerun_simulator_faults=rerun_simulator_faults)
        else:
            config = plan.config_for(sim)
            if overrides:
                config = config.with_execution(**overrides)
            coro = run_suite(config, sub, on_start=progress.start, on_sample=progress.sample,
                             tune_collector=True,
                             rerun_simulator_faults=rerun_simulator_faults)
        results[sim.slug] = run_to_end(coro, progress, sub, resume_dir=run_dir)
    finish_panel(plan, run_dir, {slug: r.summary for slug, r in results.items()},
                 as_json=as_json, min_pass_rate=min_pass_rate, min_score=min_score,
                 gate_on=gate_on)


def finish_panel(plan: PanelPlan, run_dir: Path, summaries: dict[str, Any], *,
                 as_json: bool, min_pass_rate: float | None, min_score: float | None,
                 gate_on: RunGateBasis) -> None:
    """Gate each sub-run (its summary.json and report.html rewritten as for one run), then
    the panel's ``simulator_panel.json``, its page (``RUN_DIR/report.html``) and its table;
    exit with the most telling code of all the sub-runs (the gate: 1 when it fails under
    any simulator)."""
    from harness.cli.app import EXIT_GATE_FAILED
    from harness.cli.run_finish import (
        ERR,
        apply_gate,
        exit_with,
        run_problems,
        write_html_report,
    )
    from harness.report.html.panel_page import write_panel_report
    from harness.report.simulator_panel import render_panel
    from harness.runs.simulator_panel import summarise_panel, write_panel

    codes: list[int] = []
    for sim in plan.simulators:
        sub = plan.run_dir(run_dir, sim)
        summaries[sim.slug] = apply_gate(sub, summaries[sim.slug], min_pass_rate=min_pass_rate,
                                         min_score=min_score, gate_on=gate_on)
        write_html_report(sub)
        codes += run_problems(summaries[sim.slug], sub)
    panel = summarise_panel(run_dir, plan, summaries)
    write_panel(run_dir, panel)
    html = None
    try:
        html = write_panel_report(run_dir)
    except HarnessError as err:
        ERR.print(f"[bold red]error:[/] the HTML report was not written: {terminal_text(err)}")
    if as_json:
        typer.echo(json.dumps(panel.model_dump(mode="json"), indent=2))
    else:
        render_panel(panel, terminal_console(), run_dir=str(run_dir))
        also = " and report.html" if html else ""
        ERR.print(f"[dim]wrote {terminal_text(run_dir)}/simulator_panel.json{also}; each "
                  f"simulator's run in {terminal_text(run_dir)}/simulators/ (harness report "
                  "DIR shows its tables)[/]")
    if any(code != EXIT_GATE_FAILED for code in codes):
        ERR.print(f"[yellow]the lines above name a simulator's run; continue the whole panel "
                  f"with harness run --resume {terminal_text(run_dir)}[/]")
    exit_with(codes)


def report_panel(run_dir: Path, *, as_json: bool, html: str | None,
                 refused: list[str]) -> None:
    """``harness report RUN_DIR`` on a panel: its table again, ``--json`` its
    ``simulator_panel.json``, ``--html`` its page. Options that read one run's samples are
    refused, naming the sub-runs that take them."""
    from harness.cli.run_finish import ERR
    from harness.report.simulator_panel import render_panel
    from harness.runs.simulator_panel import PANEL_FILENAME, read_panel

    if refused:
        raise HarnessError(f"{', '.join(refused)}: {run_dir} is a simulator panel; give one "
                           f"simulator's run instead (harness report {run_dir}/simulators/"
                           "<slug> ...)")
    if not (run_dir / PANEL_FILENAME).exists():
        raise HarnessError(f"{run_dir} is a simulator panel whose runs have not all finished "
                           f"(no {PANEL_FILENAME}); continue it with harness run --resume "
                           f"{run_dir}, or report one simulator's run (harness report "
                           f"{run_dir}/simulators/<slug>)")
    if html is not None:
        from harness.report.html.panel_page import write_panel_report

        path = write_panel_report(run_dir, Path(html) if html else None)
        ERR.print(f"wrote {terminal_text(path)}")
        return
    panel = read_panel(run_dir)
    if as_json:
        typer.echo(json.dumps(panel.model_dump(mode="json"), indent=2))
        return
    render_panel(panel, terminal_console(), run_dir=str(run_dir))
