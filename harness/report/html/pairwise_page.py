"""The pairwise page (``harness pairwise A B --html FILE``): B's win rate over A with its
interval, overall and per scenario, the judges' position statistics, and every pair's
comparisons: both orders' answers and verdicts with the judge's reasoning, so position
consistency shows pair by pair.

The figures are the report's own (:class:`~harness.runs.pairwise_runs_report.PairwiseRunReport`,
which ``--json`` prints); the pairs are the ``--out`` lines
(:func:`~harness.runs.pairwise_runs_report.jsonl_lines`). Verdicts and reasoning are rendered on
the server, so they read with scripts off; the two transcripts of a pair are embedded as
data and drawn side by side by the page's script.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.report.html.page import embedded_data, render_page, write_page
from harness.report.html.plots import Forest, ForestPoint, forest
from harness.report.html.run_page import sample_view
from harness.runs.store import RunStore
from harness.wording import plural

# What the judge said, by position: "A" is the response shown first.
POSITION = {"A": "first", "B": "second", "tie": "tie"}


@dataclass(frozen=True)
class OrderView:
    """One order of a comparison: which run was shown first, what the judge answered by
    position (``first``, ``second``, ``tie``), the verdict that names the run, and why."""

    shown_first: str
    said: str
    verdict: str
    reasoning: str


@dataclass(frozen=True)
class ComparisonView:
    """One judge sample of a pair, asked in both orders."""

    judge: str
    sample: int
    consistent: bool | None
    orders: list[OrderView]
    error: str | None


@dataclass(frozen=True)
class PairView:
    """One judged pair (a scenario and epoch of both runs)."""

    index: int
    scenario_id: str
    epoch: int
    winner: str | None
    votes: list[dict[str, Any]]
    n_comparisons: int
    n_inconsistent: int
    n_failed: int
    comparisons: list[ComparisonView]

    @property
    def consistency(self) -> str:
        """``consistent`` (every decided comparison's orders agreed), ``inconsistent`` (at
        least one disagreed) or ``undecided`` (no comparison was decided)."""
        if self.n_comparisons == self.n_failed:
            return "undecided"
        return "inconsistent" if self.n_inconsistent else "consistent"


def _comparison(c: Mapping[str, Any]) -> ComparisonView:
    orders = [OrderView(shown_first="B" if o["swapped"] else "A", said=POSITION[o["said"]],
                        verdict=o["verdict"], reasoning=o["reasoning"])
              for o in sorted(c["orders"], key=lambda o: o["swapped"])]
    error = None if c["status"] == "decided" else f"{c['error_type']}: {c['message']}"
    return ComparisonView(judge=c["judge_model"], sample=c["sample_index"],
                          consistent=c["consistent"], orders=orders, error=error)


def pair_views(lines: Sequence[Mapping[str, Any]]) -> list[PairView]:
    """The judged pairs of the ``--out`` lines (skipped samples left out), in their order,
    each comparison's orders with the original order (A shown first) first."""
    judged = [line for line in lines if line["status"] != "skipped"]
    return [PairView(
        index=i, scenario_id=p["scenario_id"], epoch=p["epoch"], winner=p["winner"],
        votes=p["votes"], n_comparisons=p["n_comparisons"],
        n_inconsistent=p["n_inconsistent"], n_failed=p["n_failed"],
        comparisons=[_comparison(c) for c in p["comparisons"]],
    ) for i, p in enumerate(judged)]


def _tone(low: float | None, high: float | None) -> str:
    if high is not None and high < 0.5:
        return "worse"
    if low is not None and low > 0.5:
        return "better"
    return ""


def scenario_order(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's scenarios, B's worst first (no decided pair last), as the terminal
    lists them."""
    return sorted(report["scenarios"], key=lambda s: (s["b_win_rate"] is None,
                                                      s["b_win_rate"] or 0.0, s["scenario_id"]))


def win_rate_forest(report: Mapping[str, Any], scenarios: Sequence[Mapping[str, Any]]
                    ) -> Forest | None:
    """B's win rate over all pairs and per scenario with their intervals, around the 0.5
    line (no preference); ``None`` when no pair was decided."""
    rate = report["b_win_rate"]
    if rate is None:
        return None
    estimates = [ForestPoint(
        label="all scenarios", value=rate["value"], low=rate["ci_low"], high=rate["ci_high"],
        tooltip=f"B's win rate {rate['value']:.3f} over {plural(rate['n'], 'decided pair')} in "
        f"{plural(rate['n_clusters'], 'scenario')}", tone="total")]
    for s in scenarios:
        if s["b_win_rate"] is None:
            continue
        low, high = s.get("b_win_rate_ci_low"), s.get("b_win_rate_ci_high")
        estimates.append(ForestPoint(
            label=s["scenario_id"], value=s["b_win_rate"], low=low, high=high,
            tooltip=(f"{s['scenario_id']}: B won {s['wins_b']}, A won {s['wins_a']}, "
                     f"{s['ties']} ties of {s['decided']} decided pairs"),
            tone=_tone(low, high)))
    return forest(estimates, (0.0, 1.0), reference=0.5, reference_label="no preference",
                  tick_count=4)


def _views(run_dir: Path) -> dict[tuple[str, int], dict[str, Any]]:
    with RunStore.open(run_dir) as store:
        return {(r.scenario_id, r.epoch): sample_view(r) for r in store.iter_samples()}


def pairwise_page(report: Mapping[str, Any], lines: Sequence[Mapping[str, Any]]) -> str:
    """The HTML page of a pairwise comparison: ``report`` is the
    :class:`~harness.runs.pairwise_runs_report.PairwiseRunReport` as its JSON dict, ``lines`` the
    per-pair lines; the two transcripts of each pair are read from the runs' stores
    (``run_a``, ``run_b``).

    Raises :class:`~harness.runs.store.StoreError` when a store cannot be read."""
    pairs = pair_views(lines)
    scenarios = scenario_order(report)
    views_a, views_b = _views(Path(report["run_a"])), _views(Path(report["run_b"]))
    transcripts = {
        "a": [views_a.get((p.scenario_id, p.epoch)) for p in pairs],
        "b": [views_b.get((p.scenario_id, p.epoch)) for p in pairs],
    }
    names = [Path(report[run]).resolve().name for run in ("run_a", "run_b")]
    return render_page(
        "pairwise.html.j2", title=f"Pairwise: {names[0]} vs {names[1]}", r=report,
        scenarios=scenarios, forest=win_rate_forest(report, scenarios),
        pairs=pairs, scenario_ids=sorted({p.scenario_id for p in pairs}),
        transcripts_data=embedded_data("pair-transcripts", transcripts),
    )


def write_pairwise_report(report: Mapping[str, Any], lines: Sequence[Mapping[str, Any]],
                          out: Path) -> Path:
    """Write the pairwise page to ``out`` in one step and return its path. Raises as
    :func:`pairwise_page` does, and :class:`~harness.errors.InputError` when the file cannot
    be written."""
    return write_page(out, pairwise_page(report, lines))
