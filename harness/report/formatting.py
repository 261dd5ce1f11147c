"""How figures are written in the terminal and the HTML page alike (three places, a dash for
what could not be computed, p-values never shown as ``0.000``) and the house style of a
terminal table. The lowest module of the report package: every renderer uses it."""

from __future__ import annotations

from rich.table import Table


def fmt_num(value: float | None, digits: int = 3) -> str:
    """A figure to ``digits`` places, or a dash when it could not be computed."""
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_ci(low: float | None, high: float | None, digits: int = 3) -> str:
    """An interval ``[low, high]`` to ``digits`` places, or a dash when it could not be
    computed."""
    if low is None or high is None:
        return "—"
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def fmt_seconds(value: float | None) -> str:
    """A duration in s or ms, or a dash."""
    if value is None:
        return "—"
    if value < 0.001:
        return f"{value * 1000:.2f} ms"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def fmt_p(p: float | None) -> str:
    """A p-value to 3 places, ``<0.001`` below that (never a misleading ``0.000``)."""
    if p is None:
        return "—"
    return "<0.001" if p < 0.0005 else f"{p:.3f}"


def make_table(title: str, *columns: str, text: tuple[str, ...] = ()) -> Table:
    """A table in the house style: the first column, and those named in ``text``, left-aligned
    and wrapped when the terminal is narrow; figures right-aligned and never broken."""
    table = Table(title=title, title_justify="left", title_style="bold", caption_justify="left")
    for i, col in enumerate(columns):
        if i == 0 or col in text:
            table.add_column(col, justify="left", overflow="fold")
        else:
            table.add_column(col, justify="right", no_wrap=True)
    return table
