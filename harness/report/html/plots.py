"""The geometry of the report's plots, in SVG pixels; ``templates/plots.html.j2`` draws it.

Each function turns figures into positioned shapes (points, segments, polylines, rectangles,
tick labels), so the template stays a list of SVG elements and the arithmetic stays here,
where it is tested. Values outside a plot's domain are clamped to its edge.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

LABEL_WIDTH = 230
PLOT_WIDTH = 460
ROW_HEIGHT = 18
MARGIN = 28


@dataclass(frozen=True)
class PixelScale:
    """A linear map from the domain ``[lo, hi]`` to pixels ``[start, end]``."""

    lo: float
    hi: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        if self.hi == self.lo:
            return (self.start + self.end) / 2
        clamped = min(max(value, self.lo), self.hi)
        return round(self.start + (clamped - self.lo) / (self.hi - self.lo)
                     * (self.end - self.start), 2)


@dataclass(frozen=True)
class Tick:
    at: float
    label: str


def ticks(scale: PixelScale, count: int = 5) -> list[Tick]:
    """``count`` + 1 evenly spaced ticks over the domain, labelled to 2 significant places."""
    step = (scale.hi - scale.lo) / count
    values = [scale.lo + i * step for i in range(count + 1)]
    return [Tick(at=scale(v), label=f"{v:.2g}") for v in values]


@dataclass(frozen=True)
class ForestRow:
    y: float
    label: str
    x: float | None
    low: float | None
    high: float | None
    marked: bool
    tooltip: str
    tone: str = ""


@dataclass(frozen=True)
class Forest:
    """Estimates with intervals, one row each (a forest plot)."""

    width: float
    height: float
    plot_left: float
    plot_right: float
    axis_y: float
    rows: list[ForestRow]
    ticks: list[Tick]
    reference_x: float | None
    reference_label: str


@dataclass(frozen=True)
class ForestPoint:
    """One row of a forest plot: a label, the estimate and its interval (any may be missing),
    whether it is marked (e.g. flaky), a hover text, and a tone (a CSS class of the row:
    ``worse``, ``better``, ``total``)."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    marked: bool = False
    tooltip: str = ""
    tone: str = ""


def forest(estimates: Sequence[ForestPoint], domain: tuple[float, float], *,
           reference: float | None = None, reference_label: str = "",
           tick_count: int = 5) -> Forest:
    """A forest plot of ``estimates`` in the given order over ``domain``, with an optional
    vertical reference line (e.g. 0 for differences, the suite mean for scenarios) and
    ``tick_count`` + 1 ticks (4 puts one at the middle of the domain)."""
    left = LABEL_WIDTH
    scale = PixelScale(domain[0], domain[1], left, left + PLOT_WIDTH)
    rows = []
    for i, e in enumerate(estimates):
        y = MARGIN / 2 + (i + 0.5) * ROW_HEIGHT
        rows.append(ForestRow(
            y=y, label=e.label,
            x=None if e.value is None else scale(e.value),
            low=None if e.low is None else scale(e.low),
            high=None if e.high is None else scale(e.high),
            marked=e.marked, tooltip=e.tooltip, tone=e.tone,
        ))
    axis_y = MARGIN / 2 + len(estimates) * ROW_HEIGHT + 4
    return Forest(
        width=left + PLOT_WIDTH + MARGIN, height=axis_y + MARGIN, plot_left=left,
        plot_right=left + PLOT_WIDTH, axis_y=axis_y, rows=rows, ticks=ticks(scale, tick_count),
        reference_x=None if reference is None else scale(reference),
        reference_label=reference_label,
    )


# Half-widths of a domain centred on 0, as shares of the widest difference: round ticks at
# a quarter of each (0.05 -> 0.025 steps ... 1 -> 0.25 steps).
SYMMETRIC_STEPS = (0.05, 0.1, 0.2, 0.5, 1.0)


def symmetric_domain(values: Sequence[float | None], limit: float) -> tuple[float, float]:
    """The narrowest domain ``(-h, h)`` that holds every value (``None`` ignored), with
    ``h`` a round share of ``limit`` (the widest possible difference, e.g. 1 for scores in
    [0, 1]): a plot of differences centred on its zero line."""
    widest = max((abs(v) for v in values if v is not None), default=0.0)
    half = next((step * limit for step in SYMMETRIC_STEPS if widest <= step * limit), limit)
    return -half, half


@dataclass(frozen=True)
class Series:
    """A named line through ``points`` (x, y), with an optional band (x, low, high)."""

    name: str
    points: Sequence[tuple[float, float]]
    band: Sequence[tuple[float, float, float]] = ()
    css_class: str = "s1"


@dataclass(frozen=True)
class DrawnSeries:
    name: str
    css_class: str
    polyline: str
    band: str
    dots: list[tuple[float, float, str]]


@dataclass(frozen=True)
class LineChart:
    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    series: list[DrawnSeries]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    x_label: str
    y_label: str
    extra: list[tuple[float, float, float, float]] = field(default_factory=list)


def line_chart(series: Sequence[Series], *, x_domain: tuple[float, float],
               y_domain: tuple[float, float] = (0.0, 1.0), x_label: str = "",
               y_label: str = "", x_ticks: Sequence[float] | None = None,
               width: float = 520, height: float = 260,
               diagonal: bool = False) -> LineChart:
    """Lines (with shaded interval bands) over shared axes. ``x_ticks`` are the x values to
    label (default: 5 even steps); ``diagonal`` draws the y = x line (for reliability
    plots)."""
    left, right, top, bottom = 48.0, width - 16, 12.0, height - 36
    sx = PixelScale(x_domain[0], x_domain[1], left, right)
    sy = PixelScale(y_domain[0], y_domain[1], bottom, top)
    drawn = []
    for s in series:
        polyline = " ".join(f"{sx(x)},{sy(y)}" for x, y in s.points)
        band = ""
        if s.band:
            upper = [f"{sx(x)},{sy(hi)}" for x, _, hi in s.band]
            lower = [f"{sx(x)},{sy(lo)}" for x, lo, _ in reversed(s.band)]
            band = " ".join(upper + lower)
        dots = [(sx(x), sy(y), f"{s.name}: x={x:g}, y={y:.3f}") for x, y in s.points]
        drawn.append(DrawnSeries(s.name, s.css_class, polyline, band, dots))
    x_tick_list = (ticks(sx) if x_ticks is None
                   else [Tick(at=sx(v), label=f"{v:g}") for v in x_ticks])
    extra = []
    if diagonal:
        lo, hi = max(x_domain[0], y_domain[0]), min(x_domain[1], y_domain[1])
        extra.append((sx(lo), sy(lo), sx(hi), sy(hi)))
    return LineChart(width=width, height=height, left=left, right=right, top=top,
                     bottom=bottom, series=drawn, x_ticks=x_tick_list, y_ticks=ticks(sy),
                     x_label=x_label, y_label=y_label, extra=extra)


@dataclass(frozen=True)
class Segment:
    label: str
    share: float
    x: float
    width: float
    css_class: str


def shares_bar(parts: Sequence[tuple[str, float]], width: float = 520) -> list[Segment]:
    """One horizontal bar split into each part's share of the total (parts of zero or less
    are left out; nothing when the total is zero)."""
    kept = [(label, value) for label, value in parts if value > 0]
    total = sum(value for _, value in kept)
    if total <= 0:
        return []
    segments, x = [], 0.0
    for i, (label, value) in enumerate(kept):
        w = round(value / total * width, 2)
        segments.append(Segment(label=label, share=value / total, x=x, width=w,
                                css_class=f"s{i + 1}"))
        x += w
    return segments


@dataclass(frozen=True)
class HeatCell:
    """One cell of a heat map: its box, count, shade (count over the largest count, 0–1),
    whether it is on the diagonal (row and column name the same category) and a hover text."""

    row: int
    col: int
    x: float
    y: float
    size: float
    count: int
    shade: float
    diagonal: bool
    tooltip: str


@dataclass(frozen=True)
class HeatMap:
    """A matrix of counts as shaded squares, rows labelled on the left, columns on top."""

    width: float
    height: float
    left: float
    top: float
    cell: float
    cells: list[HeatCell]
    row_labels: list[Tick]
    col_labels: list[Tick]
    row_title: str
    col_title: str


def heatmap(counts: Sequence[Sequence[int]], row_labels: Sequence[str],
            col_labels: Sequence[str], *, row_title: str = "", col_title: str = "",
            not_agreement: Sequence[str] = (), cell: float = 44,
            label_width: float = 64) -> HeatMap:
    """A heat map of ``counts[i][j]`` (row ``row_labels[i]``, column ``col_labels[j]``). A
    cell's shade is its count over the largest count; the diagonal is the cells whose row
    and column labels are equal, but for the labels in ``not_agreement`` (e.g. "no
    answer" on both sides). Raises ValueError when the labels do not match the counts'
    shape."""
    if len(counts) != len(row_labels) or any(len(r) != len(col_labels) for r in counts):
        raise ValueError("heatmap: one label per row and per column of counts")
    left, top = label_width + 20, 40.0
    largest = max((c for row in counts for c in row), default=0)
    cells = []
    for i, row in enumerate(counts):
        total = sum(row)
        for j, count in enumerate(row):
            share = f" ({count / total:.0%} of the row)" if total else ""
            cells.append(HeatCell(
                row=i, col=j, x=left + j * cell, y=top + i * cell, size=cell, count=count,
                shade=round(count / largest, 4) if largest else 0.0,
                diagonal=row_labels[i] == col_labels[j] and row_labels[i] not in not_agreement,
                tooltip=f"{row_title} {row_labels[i]}, {col_title} {col_labels[j]}: "
                        f"{count}{share}"))
    return HeatMap(
        width=left + len(col_labels) * cell + MARGIN, height=top + len(row_labels) * cell + 8,
        left=left, top=top, cell=cell, cells=cells,
        row_labels=[Tick(at=top + (i + 0.5) * cell, label=label)
                    for i, label in enumerate(row_labels)],
        col_labels=[Tick(at=left + (j + 0.5) * cell, label=label)
                    for j, label in enumerate(col_labels)],
        row_title=row_title, col_title=col_title)


@dataclass(frozen=True)
class Point:
    """One point of a scatter plot, a hover text, and an in-page anchor to link to."""

    x: float
    y: float
    tooltip: str = ""
    anchor: str | None = None


@dataclass(frozen=True)
class DrawnPoint:
    cx: float
    cy: float
    tooltip: str
    anchor: str | None


@dataclass(frozen=True)
class Scatter:
    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    points: list[DrawnPoint]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    x_label: str
    y_label: str
    diagonal: tuple[float, float, float, float]


def scatter(points: Sequence[Point], *, domain: tuple[float, float],
            tick_values: Sequence[float] | None = None, jitter: float = 0.0, seed: int = 0,
            x_label: str = "", y_label: str = "", size: float = 320) -> Scatter:
    """A square scatter plot over ``domain`` on both axes (``tick_values`` labelled, default
    5 even steps), with the y = x diagonal. ``jitter`` moves each point by up to that much
    (in data units) on each axis, drawn from a generator seeded with ``seed``, so points on
    the same grid cell of a discrete scale are told apart and the page is the same every
    time it is written."""
    left, right, top, bottom = 48.0, size - 12, 12.0, size - 36
    sx = PixelScale(domain[0], domain[1], left, right)
    sy = PixelScale(domain[0], domain[1], bottom, top)
    rng = random.Random(seed)
    drawn = []
    for p in points:
        dx, dy = (rng.uniform(-jitter, jitter), rng.uniform(-jitter, jitter)) if jitter else (0, 0)
        drawn.append(DrawnPoint(cx=sx(p.x + dx), cy=sy(p.y + dy), tooltip=p.tooltip,
                                anchor=p.anchor))

    def marks(scale: PixelScale) -> list[Tick]:
        if tick_values is None:
            return ticks(scale)
        return [Tick(at=scale(v), label=f"{v:g}") for v in tick_values]

    return Scatter(width=size, height=size, left=left, right=right, top=top, bottom=bottom,
                   points=drawn, x_ticks=marks(sx), y_ticks=marks(sy), x_label=x_label,
                   y_label=y_label,
                   diagonal=(sx(domain[0]), sy(domain[0]), sx(domain[1]), sy(domain[1])))
