"""Suite figures made to order for the tests of the gate: :func:`gate_figures`."""

from __future__ import annotations

from harness.stats.summary import SuiteFigures


def gate_figures(*, mean: float, ci_low: float | None, ci_high: float | None,
                 pass_rate: float, pass_rate_ci: tuple[float | None, float] | None = None,
                 ci_clipped: bool = False) -> SuiteFigures:
    """The figures of a small real suite with the mean, its interval and the pass rate (with
    ``pass_rate_ci``, default the mean's interval) set to what a gate test needs."""
    from harness.stats.suite import suite_stats
    from harness.stats.summary import summary_head

    figures = summary_head(suite_stats({"a": [1.0, 0.0], "b": [1.0, 1.0]},
                                       bootstrap_resamples=0))
    low, high = pass_rate_ci or (ci_low, ci_high)
    return figures.model_copy(update={
        "mean": mean, "ci_low": ci_low, "ci_high": ci_high, "ci_clipped": ci_clipped,
        "pass_rate": figures.pass_rate.model_copy(
            update={"value": pass_rate, "ci_low": low, "ci_high": high, "clipped": False}),
    })
