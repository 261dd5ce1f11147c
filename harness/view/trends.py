"""Per scenario, its pass rate across the runs that hold it, oldest run first, each with its
interval: a small line per scenario (``GET /trends``). Where a run's interval lies wholly
below the previous run's, the segment between them is drawn broken (a regression), and
wholly above, the point is marked improved: a change larger than the noise shows as a break
in the line, a change within it does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aiohttp import web

from harness.report.html.plots import PixelScale
from harness.view.catalog import RunEntry, ScenarioPoint, run_url
from harness.view.pages import html_response
from harness.view.state import catalog, in_thread

routes = web.RouteTableDef()

WIDTH, HEIGHT, PAD = 240.0, 56.0, 6.0
MAX_RUNS = 60  # points per line; older runs are left out of the drawing (and said so)


@dataclass(frozen=True)
class TrendPoint:
    x: float
    y: float
    low: float
    high: float
    tone: str  # "", "regressed" or "improved" against the run before
    tooltip: str
    url: str


@dataclass(frozen=True)
class Trend:
    scenario_id: str
    points: list[TrendPoint]
    segments: list[tuple[float, float, float, float, bool]]  # x1, y1, x2, y2, broken
    runs: int  # runs holding the scenario (the drawing shows the last MAX_RUNS)
    latest: ScenarioPoint
    regressions: int
    width: float = WIDTH
    height: float = HEIGHT


def _tone(prev: ScenarioPoint | None, this: ScenarioPoint) -> str:
    if prev is None:
        return ""
    if this.ci_high < prev.ci_low:
        return "regressed"
    if this.ci_low > prev.ci_high:
        return "improved"
    return ""


def trend(scenario_id: str, history: Sequence[tuple[RunEntry, ScenarioPoint]]) -> Trend:
    """The drawing of one scenario's ``history`` (its runs, oldest first)."""
    shown = list(history)[-MAX_RUNS:]
    sx = PixelScale(0, max(len(shown) - 1, 1), PAD, WIDTH - PAD)
    sy = PixelScale(0.0, 1.0, HEIGHT - PAD, PAD)
    points, segments = [], []
    prev: ScenarioPoint | None = None
    regressions = 0
    for i, (entry, p) in enumerate(shown):
        tone = _tone(prev, p)
        regressions += tone == "regressed"
        x = sx(i) if len(shown) > 1 else WIDTH / 2
        points.append(TrendPoint(
            x=x, y=sy(p.pass_rate), low=sy(p.ci_low), high=sy(p.ci_high), tone=tone,
            tooltip=(f"{entry.id}: pass rate {p.pass_rate:.2f} [{p.ci_low:.2f}, "
                     f"{p.ci_high:.2f}] over {p.epochs} epochs"
                     + (f" ({tone})" if tone else "")),
            url=run_url(entry.id)))
        if i:
            last = points[-2]
            segments.append((last.x, last.y, x, points[-1].y, tone == "regressed"))
        prev = p
    return Trend(scenario_id=scenario_id, points=points, segments=segments,
                 runs=len(history), latest=history[-1][1], regressions=regressions)


def trends(entries: Sequence[RunEntry]) -> list[Trend]:
    """Every scenario of the readable runs in ``entries``: those whose last change was a
    regression first, then by id."""
    by_scenario: dict[str, list[tuple[RunEntry, ScenarioPoint]]] = {}
    for entry in sorted(entries, key=lambda e: (e.created_at, e.id)):
        for point in entry.scenario_points:
            by_scenario.setdefault(point.scenario_id, []).append((entry, point))
    drawn = [trend(sid, history) for sid, history in by_scenario.items()]
    return sorted(drawn, key=lambda t: (not (t.points and t.points[-1].tone == "regressed"),
                                        -t.regressions, t.scenario_id))


@routes.get("/trends")
async def trends_page(request: web.Request) -> web.Response:
    entries = await in_thread(catalog(request).entries)
    drawn = trends([e for e in entries if e.error is None])
    return html_response("trends.html.j2", title="Trends per scenario", trends=drawn,
                         max_runs=MAX_RUNS, runs=sum(e.error is None for e in entries))
