"""The calibration page: its plot geometry."""

from __future__ import annotations

import pytest

from harness.report.html.plots import Point, heatmap, scatter

# --- geometry ------------------------------------------------------------------------------


def test_heatmap_places_cells_row_by_row_and_shades_by_the_largest_count() -> None:
    m = heatmap([[4, 1], [0, 2]], ["1", "2"], ["1", "2"], row_title="people",
                col_title="judge", cell=40)
    cells = {(c.row, c.col): c for c in m.cells}
    assert [cells[0, 0].count, cells[0, 1].count, cells[1, 0].count] == [4, 1, 0]
    assert cells[0, 1].x - cells[0, 0].x == 40 and cells[1, 0].y - cells[0, 0].y == 40
    assert (cells[0, 0].shade, cells[0, 1].shade, cells[1, 0].shade) == (1.0, 0.25, 0.0)
    assert [c.diagonal for c in m.cells] == [True, False, False, True]
    assert cells[0, 1].tooltip == "people 1, judge 2: 1 (20% of the row)"
    assert m.width == m.left + 2 * 40 + 28 and [t.label for t in m.row_labels] == ["1", "2"]


def test_heatmap_diagonal_leaves_out_labels_that_are_no_agreement() -> None:
    m = heatmap([[1, 0], [0, 1]], ["A", "none"], ["A", "none"], not_agreement=["none"])
    assert [c.diagonal for c in m.cells] == [True, False, False, False]
    assert all(c.shade == 0 for c in heatmap([[0]], ["a"], ["a"]).cells)
    with pytest.raises(ValueError, match="one label per row"):
        heatmap([[1, 2]], ["a"], ["a"])


def test_scatter_maps_the_domain_to_the_plot_and_draws_the_diagonal() -> None:
    s = scatter([Point(1, 1), Point(5, 5), Point(3, 1)], domain=(1, 5), tick_values=[1, 3, 5])
    low, high, side = s.points
    assert (low.cx, low.cy) == (s.left, s.bottom) and (high.cx, high.cy) == (s.right, s.top)
    assert side.cx == (s.left + s.right) / 2 and side.cy == s.bottom
    assert s.diagonal == (s.left, s.bottom, s.right, s.top)
    assert [t.label for t in s.x_ticks] == ["1", "3", "5"] and s.y_ticks[1].at == (
        s.top + s.bottom) / 2


def test_scatter_jitter_is_bounded_and_the_same_every_time() -> None:
    points = [Point(3, 3)] * 200
    first = scatter(points, domain=(1, 5), jitter=0.2, seed=1)
    per_unit = (first.right - first.left) / 4
    xs = [p.cx for p in first.points]
    centre = (first.left + first.right) / 2
    assert max(abs(x - centre) for x in xs) <= 0.2 * per_unit + 0.01
    assert len(set(xs)) > 150  # told apart
    assert scatter(points, domain=(1, 5), jitter=0.2, seed=1) == first
    assert scatter(points, domain=(1, 5), jitter=0.2, seed=2) != first
    assert {p.cx for p in scatter(points, domain=(1, 5)).points} == {centre}
