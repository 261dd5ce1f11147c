"""How figures are written in the terminal and the HTML page alike (three places, a dash for
what could not be computed, p-values never shown as ``0.000``), the house style of a
terminal table, and how an identifier sits in a narrow table cell (whole, or shortened in
the middle, never broken across lines). The lowest module of the report package: every
renderer uses it."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from harness.safe_text import visible_controls
from harness.transcript import UsageTotals

ELLIPSIS = "…"


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


def middle_ellipsis(text: str, width: int) -> str:
    """``text`` whole when it fits in ``width`` terminal cells, else its start and its end
    joined by an ellipsis (``krippendorff…_ordinal``): ids that share a prefix (three
    ``krippendorff_alpha_*`` statistics, scenarios of one family) stay told apart, which an
    ellipsis at the end would hide. Never less than one cell of each side when ``width`` is
    at least 3."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    room = width - 1
    head_room = (room + 1) // 2
    head, used = "", 0
    for char in text:
        if used + cell_len(char) > head_room:
            break
        head, used = head + char, used + cell_len(char)
    tail, used = "", 0
    for char in reversed(text):
        if used + cell_len(char) > room - cell_len(head):
            break
        tail, used = char + tail, used + cell_len(char)
    return head + ELLIPSIS + tail


class Identifier:
    """A table cell holding an identifier (a scenario, sample or transcript id, a statistic,
    metric, tag or model name), or a short label of such words: wrapped only at spaces, and a
    word wider than its column shortened in the middle (:func:`middle_ellipsis`), so no
    identifier is ever split across lines. Outside text is shown with its control characters
    visible (:func:`~harness.safe_text.visible_controls`) and is never read as markup; the
    JSON output and the HTML page keep every identifier whole."""

    def __init__(self, value: object, style: str = "", mark: str = "") -> None:
        self.text = visible_controls(str(value))
        self.style = style
        self.mark = mark  # kept whole after the last word (" *": a footnote's mark)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        words = self.text.split(" ")
        return Measurement(min(max(map(cell_len, words)), 8) + cell_len(self.mark),
                           cell_len(self.text) + cell_len(self.mark))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(1, options.max_width)
        words = self.text.split(" ")
        shown = [middle_ellipsis(word, width) for word in words[:-1]]
        shown.append(middle_ellipsis(words[-1], max(1, width - cell_len(self.mark))))
        yield Text(" ".join(shown) + self.mark, style=self.style, overflow="fold")

    def __str__(self) -> str:
        return self.text


def ident(value: object, style: str = "", mark: str = "") -> Identifier:
    """``value`` as an :class:`Identifier` cell (``mark`` kept whole after it)."""
    return Identifier(value, style, mark)


def widen_for_identifiers(table: Table, column: int = 0, limit: int = 30) -> None:
    """Give ``table``'s ``column`` the width of its longest identifier word (at most
    ``limit`` cells), so that, at a narrow width, the other wrapped columns (notes, "how")
    give up their room first and the identifiers stay whole. Labels of several words still
    wrap at their spaces."""
    col = table.columns[column]
    words = [cell_len(word) for cell in col.cells if isinstance(cell, Identifier)
             for word in cell.text.split(" ")]
    if words:
        col.width = min(max(max(words), cell_len(str(col.header))), limit)


def prompt_cache_share(usage: UsageTotals) -> str:
    """The share of a role's input tokens its provider's prompt cache served, as a percent
    (``—`` with no input)."""
    if not usage.input_tokens:
        return "—"
    return f"{100 * usage.prompt_cache_read_tokens / usage.input_tokens:.0f}%"
