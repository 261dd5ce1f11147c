"""The simulator panel's page (``RUN_DIR/report.html`` of a panel, and ``harness report
RUN_DIR --html``): the table of ``simulator_panel.json`` (each simulator's mean score and
pass rate with their intervals, the paired difference against the first), the variance
shares, the gate and the flip line, with a link to each simulator's own run page. Every
name and note comes from outside (model names, scenario ids) and reaches the page through
the autoescaping environment only (:mod:`harness.report.html.page`)."""

from __future__ import annotations

import os
from pathlib import Path

from harness.report.html.page import render_page, write_page
from harness.report.html.run_page import REPORT_FILENAME
from harness.report.simulator_panel import COMPONENT_WORDS, variance_line
from harness.runs.simulator_panel import SimulatorPanel, read_panel


def panel_page(panel: SimulatorPanel, links: dict[str, str]) -> str:
    """The page's HTML; ``links`` maps each simulator's slug to its run page's address."""
    return render_page("simulator_panel.html.j2", title="Simulator panel", p=panel,
                       differences={d.simulator: d for d in panel.differences},
                       links=links, components=COMPONENT_WORDS,
                       variance_line=variance_line(panel))


def write_panel_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write the panel's page to ``out`` (default ``RUN_DIR/report.html``); its links to
    the sub-runs' pages are relative to where it is written. Raises
    :class:`~harness.errors.InputError` when ``simulator_panel.json`` cannot be read or the
    page cannot be written."""
    panel = read_panel(run_dir)
    path = out or run_dir / REPORT_FILENAME
    base = path.resolve().parent
    links = {m.slug: Path(os.path.relpath((run_dir / m.run_dir / REPORT_FILENAME).resolve(),
                                          base)).as_posix()
             for m in panel.members}
    return write_page(path, panel_page(panel, links))
