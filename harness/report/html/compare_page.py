"""The compare page (``harness compare A B --html FILE``): two runs' paired comparison and
both runs' transcripts, side by side, as one HTML file.

The figures are the comparison's own (the dict
:func:`harness.runs.comparison.compare_run_dirs` returns, which ``--json`` prints). The page
orders the scenarios by what changed: regressions first (the interval of the difference lies
below 0), then improvements (above 0), then the rest by difference, most negative first.
Both runs' samples are read from their stores and embedded as data; the page's script draws
any (scenario, epoch) of run A next to the same of run B.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.report.html.page import embedded_data, render_page, write_page
from harness.report.html.plots import Forest, ForestPoint, forest, symmetric_domain
from harness.report.html.run_page import sample_view
from harness.report.judge_drift import agreement_rows
from harness.runs.store import RunStore

# What each kind of change is called on the page, and the tag colour it gets.
CHANGES: dict[str, tuple[str, str]] = {
    "regression": ("regression", "bad"),
    "improvement": ("improvement", "good"),
    "lower": ("lower, within noise", ""),
    "higher": ("higher, within noise", ""),
    "same": ("same mean", ""),
}
_ORDER = {"regression": 0, "improvement": 1}


def change_of(difference: float, ci_low: float | None, ci_high: float | None) -> str:
    """What happened to a scenario: ``regression`` when the interval of its difference (B -
    A) lies below 0, ``improvement`` when above, else ``lower``, ``higher`` or ``same`` by
    the difference's sign (no interval: by the sign only, never a regression)."""
    if ci_high is not None and ci_high < 0:
        return "regression"
    if ci_low is not None and ci_low > 0:
        return "improvement"
    return "lower" if difference < 0 else "higher" if difference > 0 else "same"


@dataclass(frozen=True)
class DifferenceRow:
    """One common scenario of the comparison; ``index`` is its place in the drill-down's
    scenario list."""

    index: int
    scenario_id: str
    baseline_mean: float
    candidate_mean: float
    difference: float
    ci_low: float | None
    ci_high: float | None
    baseline_epochs: int
    candidate_epochs: int
    change: str
    judge_changed: bool = False

    @property
    def label(self) -> str:
        return CHANGES[self.change][0]

    @property
    def tag(self) -> str:
        return CHANGES[self.change][1]


def difference_rows(comparison: Mapping[str, Any]) -> list[DifferenceRow]:
    """The comparison's scenarios, regressions first (most regressed first), then
    improvements (most improved first), then the rest by difference, lowest first."""
    rows = [DifferenceRow(
        index=0, scenario_id=s["scenario_id"], baseline_mean=s["baseline_mean"],
        candidate_mean=s["candidate_mean"], difference=s["difference"],
        ci_low=s.get("ci_low"), ci_high=s.get("ci_high"),
        baseline_epochs=s["baseline_epochs"], candidate_epochs=s["candidate_epochs"],
        change=change_of(s["difference"], s.get("ci_low"), s.get("ci_high")),
        judge_changed=bool(s.get("judge_changed")),
    ) for s in comparison["scenarios"]]

    def key(r: DifferenceRow) -> tuple[int, float, str]:
        rank = _ORDER.get(r.change, 2)
        return rank, -r.difference if rank == 1 else r.difference, r.scenario_id

    ordered = sorted(rows, key=key)
    return [replace(r, index=i) for i, r in enumerate(ordered)]


def difference_forest(comparison: Mapping[str, Any], rows: Sequence[DifferenceRow]) -> Forest:
    """The suite difference and each scenario's (B - A) with their intervals, in the
    table's order, around a zero line; regressions and improvements coloured."""
    d = comparison["difference"]
    estimates = [ForestPoint(
        label="all scenarios (mean)", value=d["value"], low=d["ci_low"], high=d["ci_high"],
        tooltip=f"mean difference {d['value']:+.3f} over {comparison['n_scenarios']} scenarios",
        tone="total")]
    for r in rows:
        interval = ("" if r.ci_low is None
                    else f", interval [{r.ci_low:+.3f}, {r.ci_high:+.3f}]")
        estimates.append(ForestPoint(
            label=r.scenario_id, value=r.difference, low=r.ci_low, high=r.ci_high,
            tooltip=(f"{r.scenario_id}: {r.baseline_mean:.3f} -> {r.candidate_mean:.3f}, "
                     f"difference {r.difference:+.3f}{interval} ({r.label})"),
            tone={"regression": "worse", "improvement": "better"}.get(r.change, "")))
    bounds = [v for e in estimates for v in (e.value, e.low, e.high)]
    return forest(estimates, symmetric_domain(bounds, 1.0), reference=0.0,
                  reference_label="no difference", tick_count=4)


def _score_gap(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float:
    """How different one epoch's two samples are: 2 when exactly one errored, the score
    difference when both were scored, else 0."""
    if a is None or b is None:
        return 0.0
    if (a["status"] == "errored") != (b["status"] == "errored"):
        return 2.0
    if a["score"] is None or b["score"] is None:
        return 0.0
    return float(abs(a["score"] - b["score"]))


def _views(run_dir: Path) -> dict[str, dict[int, dict[str, Any]]]:
    views: dict[str, dict[int, dict[str, Any]]] = {}
    with RunStore.open(run_dir, read_only=True) as store:
        for record in store.iter_samples():
            views.setdefault(record.scenario_id, {})[record.epoch] = sample_view(record)
    return views


def side_by_side_data(order: Sequence[str], baseline: Mapping[str, Mapping[int, Any]],
                      candidate: Mapping[str, Mapping[int, Any]]) -> dict[str, Any]:
    """What the drill-down draws: for each scenario of ``order`` (then any other scenario of
    either run), the epochs of either run, the epoch shown first (the one whose two
    samples differ most: one errored, else the largest score gap; the lowest on a tie),
    and each run's sample views by epoch (a list per scenario, aligned with ``scenarios``).
    """
    ids = list(order) + sorted((baseline.keys() | candidate.keys()) - set(order))
    scenarios, a_views, b_views = [], [], []
    for sid in ids:
        a, b = baseline.get(sid, {}), candidate.get(sid, {})
        epochs = sorted(a.keys() | b.keys())
        first = max(epochs, key=lambda e: (_score_gap(a.get(e), b.get(e)), -e))
        scenarios.append({"id": sid, "epochs": epochs, "first_epoch": first,
                          "in_baseline": sid in baseline, "in_candidate": sid in candidate})
        a_views.append([a[e] for e in sorted(a)])
        b_views.append([b[e] for e in sorted(b)])
    return {"scenarios": scenarios, "baseline": a_views, "candidate": b_views}


def compare_page(comparison: Mapping[str, Any], baseline: Path, candidate: Path) -> str:
    """The HTML page of ``comparison`` (as :func:`harness.runs.comparison.compare_run_dirs`
    returns it) of the runs in ``baseline`` and ``candidate``, their samples included.

    Raises :class:`~harness.runs.store.StoreError` when a store cannot be read."""
    return render_page("compare.html.j2", **compare_page_context(comparison, baseline,
                                                                 candidate))


def compare_page_context(comparison: Mapping[str, Any], baseline: Path,
                         candidate: Path) -> dict[str, Any]:
    """What ``compare.html.j2`` draws (``title`` included), for :func:`compare_page` and for
    pages that show the comparison another way (``harness view``). Raises as
    :func:`compare_page` does."""
    rows = difference_rows(comparison)
    data = side_by_side_data([r.scenario_id for r in rows], _views(baseline),
                             _views(candidate))
    verdict_p = comparison["t_test" if comparison["verdict_test"] == "t"
                           else "permutation_test"]["p_value"]
    names = {"baseline": baseline.resolve().name, "candidate": candidate.resolve().name}
    return dict(
        title=f"Comparison: {names['baseline']} → {names['candidate']}",
        c=comparison, rows=rows, forest=difference_forest(comparison, rows),
        verdict_p=verdict_p, paths={"baseline": str(baseline), "candidate": str(candidate)},
        names=names, drill=data["scenarios"], level=f"{100 * (1 - comparison['alpha']):g}%",
        counts={which: sum(len(v) for v in data[which]) for which in names},
        samples_data=embedded_data("compare-data", data),
        agreement=(agreement_rows(comparison["corrected"]["baseline"],
                                  comparison["corrected"]["candidate"])
                   if comparison.get("corrected") else []),
    )


def write_compare_report(comparison: Mapping[str, Any], baseline: Path, candidate: Path,
                         out: Path) -> Path:
    """Write the compare page to ``out`` in one step and return its path. Raises as
    :func:`compare_page` does, and :class:`~harness.errors.InputError` when the file cannot
    be written."""
    return write_page(out, compare_page(comparison, baseline, candidate))
