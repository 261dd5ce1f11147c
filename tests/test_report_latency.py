"""The latency figures and the per-tool table as the terminal and the HTML report show them,
on the fixed store of tests/helpers/latency_runs.py: the summary's numbers, at 80 columns, the
per-scenario latency on the page, a summary written before these figures (computed from the
store by the same code), and outside text (a tool name) shown as text in a browser."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from harness.models.types import ToolSpec
from harness.report.html.run_page import write_run_report
from harness.report.terminal import render_run
from harness.runs.summary import read_summary
from tests.helpers.browser import OpenedPage
from tests.helpers.hostile import HOSTILE, PWN
from tests.helpers.latency_runs import agent_step, fixed_run, make_sample, tool_call


def _terminal(run_dir: Path) -> str:
    out = io.StringIO()
    render_run(read_summary(run_dir), Console(file=out, width=80, highlight=False,
                                              emoji=False, color_system=None))
    return out.getvalue()


def _row(text: str, first: str) -> list[str]:
    """The cells of the line starting with ``first`` (cells are two or more spaces apart)."""
    line = next(x for x in text.splitlines() if x.startswith(first))
    return re.split(r" {2,}", line.strip())


def test_the_terminal_tables_fit_80_columns_and_show_the_summary(tmp_path: Path) -> None:
    fixed_run(tmp_path)
    text = _terminal(tmp_path)
    assert max(len(line) for line in text.splitlines()) <= 80
    # mean 3.8, median 3, p95 8, max 9 (by hand in test_runs_latency.py)
    assert _row(text, "episode")[1:] == ["5", "3.80 s", "3.00 s", "8.00 s", "9.00 s"]
    assert _row(text, "tool call")[1] == "7"
    assert _row(text, "simulator call")[1:3] == ["1", "250 ms"]
    # calls, used, prec, rec, args, inval, errors, p50, p95
    assert _row(text, "book") == [
        "book", "2", "0.50", "0.50", "0.50", "0.50", "1 50%", "1 50%", "100 ms", "190 ms"]
    assert _row(text, "search")[:8] == [
        "search", "4", "0.75", "0.75", "1.00", "—", "0", "1 25%"]
    assert "episode: no judging" in text


def _section(text: str, element_id: str) -> str:
    start = text.index(f'id="{element_id}"')
    return text[start:text.index("</section>", start)]


def test_the_page_shows_the_figures_and_the_latency_per_scenario(tmp_path: Path) -> None:
    fixed_run(tmp_path)
    text = write_run_report(tmp_path).read_text(encoding="utf-8")
    latency = _section(text, "latency")
    overall = latency[latency.index('id="latency-overall"'):latency.index("</table>")]
    assert re.search(r"<td>episode</td><td class=\"num\">5</td><td class=\"num\">3\.80 s</td>"
                     r"<td class=\"num\">3\.00 s</td><td class=\"num\">8\.00 s</td>"
                     r"<td class=\"num\">9\.00 s</td>", overall)
    # Named as the terminal names them: an agent's step may be a request to an HTTP agent.
    assert re.search(r"<td>simulator call</td><td class=\"num\">1</td>", overall)
    assert "model call</td>" not in overall
    scenarios = latency[latency.index('id="latency-scenarios"'):]
    assert '<td rowspan="3">s1</td>' in scenarios and '<td rowspan="3">s2</td>' in scenarios
    # s2's episodes: 2, 1 and 9 s (mean 4, median 2)
    assert re.search(r"s2</td><td>episode</td><td class=\"num\">3</td><td class=\"num\">"
                     r"4\.00 s</td><td class=\"num\">2\.00 s</td>", scenarios)
    tools = _section(text, "tools")
    book = tools[tools.index("<td>book</td>"):]
    book = book[:book.index("</tr>")]
    assert re.findall(r"\b0\.500\b", re.sub(r"<[^>]+>", " ", book)) == ["0.500"] * 4
    assert "1 (50%)" in book


def test_a_summary_written_before_these_figures_gets_them_from_the_store(
        tmp_path: Path) -> None:
    fixed_run(tmp_path)
    path = tmp_path / "summary.json"
    current = _section(write_run_report(tmp_path).read_text(encoding="utf-8"), "latency")
    current_tools = _section((tmp_path / "report.html").read_text(encoding="utf-8"), "tools")
    data = json.loads(path.read_text())
    del data["latency"], data["tools"]
    path.write_text(json.dumps(data))
    older = read_summary(tmp_path)  # an older summary still reads
    assert older.latency is None and older.tools is None
    text = write_run_report(tmp_path).read_text(encoding="utf-8")
    assert _section(text, "latency") == current
    assert _section(text, "tools") == current_tools
    assert "No tool was offered or called" not in current_tools


def test_the_tools_table_in_a_browser_shows_outside_text_as_text(
        tmp_path: Path, open_report: Callable[..., OpenedPage]) -> None:
    name = HOSTILE["scenario"]
    hostile = make_sample(HOSTILE["tag"], 0, [tool_call(name, {"q": 1}, 0.01)],
                          [agent_step(0, 0.1)], 0.5, tools=[ToolSpec(name=name)])
    fixed_run(tmp_path, extra=[hostile])
    opened = open_report(write_run_report(tmp_path))
    page = opened.page
    cells = page.eval_on_selector_all(
        "#tools-table tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert [row[0] for row in cells] == sorted([name, "book", "search"])
    book = next(row for row in cells if row[0] == "book")
    # an interval where there are two scenarios (used), none with one
    assert book[1:] == ["2", "0.500 [0.000, 1.000]", "0.500", "0.500", "0.500", "1 (50%)",
                        "1 (50%)", "100 ms", "190 ms"]
    page.locator("#latency-scenarios summary").click()
    assert HOSTILE["tag"] in (page.text_content("#latency-scenarios") or "")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#tools img, #latency img").count() == 0
    assert PWN in (page.text_content("#tools-table") or "")
    page.locator("#tools").scroll_into_view_if_needed()
    opened.screenshot(tmp_path / "tools.png")
    opened.assert_quiet()
