"""How far a run's random labels are from a corrected figure of a given width: the progress
the labelling page and the run's page in ``harness view`` show (issue 27).

The numbers are the run's corrected figures (:func:`~harness.runs.corrected_figures.
run_corrected_figures`, the same as the gate on the corrected lower bound uses) and their
labels-needed plan (:class:`~harness.stats.corrected.LabelsNeeded`: from this run's judge
variance and its agreement with the labels so far), for the mean score and the pass rate.
Below :data:`~harness.stats.corrected.MIN_LABELS` random labels the corrected figure is
withheld and there is nothing to plan from, so the progress says what is known (how many
until the figure, and that the estimate follows) rather than a number made up without
labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from harness.runs.corrected_figures import run_corrected_figures
from harness.runs.label_model import Label
from harness.runs.store import RunStore
from harness.stats.corrected import MIN_LABELS, CorrectedEstimate, CorrectedFigures
from harness.wording import plural

DEFAULT_HALF_WIDTH = 0.05
"""The half-width planned for unless the address asks for another (as ``harness stats
--half-width``)."""

Stage = Literal["withheld", "planned", "reached", "unreachable"]


class FigureProgress(BaseModel):
    """One figure's progress: ``labelled`` random labels (samples, a sample labelled by
    several reviewers once) towards ``goal`` (``None`` when no count can be given), and
    the sentence that says it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    figure: str
    stage: Stage
    labelled: int
    goal: int | None
    text: str


class LabelsProgress(BaseModel):
    """Both figures' progress for one half-width, or why there is none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    half_width: float
    confidence: float
    figures: list[FigureProgress]
    unavailable: str | None = None
    note: str | None = None


def check_half_width(text: str | None) -> float:
    """A half-width from an address (``None``: the default), as a share of the score range
    strictly between 0 and 1. Raises :class:`ValueError` with the line to show."""
    if text is None:
        return DEFAULT_HALF_WIDTH
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < 1.0:  # NaN fails too
        raise ValueError("half_width: expected a share of the score range between 0 and 1 "
                         f"(e.g. 0.05), got {text!r}")
    return value


def _width(value: float) -> str:
    return f"±{value:.3g}"


def figure_progress(figure: str, est: CorrectedEstimate | None,
                    half_width: float) -> FigureProgress:
    """The progress of one figure (``"pass rate"`` or ``"mean score"``) from its corrected
    estimate (``None``: no random label of its target yet)."""
    want = _width(half_width)
    compound = figure.replace(" ", "-")
    n = 0 if est is None else est.n_labelled
    if est is None or est.value is None or est.ci_low is None or est.ci_high is None:
        if est is not None and n >= MIN_LABELS:  # enough labels, but not spread enough
            return FigureProgress(
                figure=figure, stage="withheld", labelled=n, goal=None,
                text=f"{plural(n, 'random label')}; no corrected {figure} yet: "
                f"{est.withheld}")
        return FigureProgress(
            figure=figure, stage="withheld", labelled=n, goal=MIN_LABELS,
            text=f"{n} of the {MIN_LABELS} random labels before a corrected {figure} is "
            f"given (withheld below {MIN_LABELS})")
    now = _width((est.ci_high - est.ci_low) / 2)
    need = est.labels_needed
    if (est.ci_high - est.ci_low) / 2 <= half_width:
        return FigureProgress(
            figure=figure, stage="reached", labelled=n, goal=n,
            text=f"{plural(n, 'random label')}: the corrected {figure}'s interval is {now}, "
            f"within {want}")
    if need is None or need.corrected is None:
        why = need.note.replace("+/-", "±") if need is not None and need.note else (
            f"no number of labels reaches {want}")
        return FigureProgress(figure=figure, stage="unreachable", labelled=n, goal=None,
                              text=f"{plural(n, 'random label')} (interval {now}); {why}")
    alone = ("" if need.humans_alone is None
             else f"; about {need.humans_alone} from humans alone")
    note = f"; {need.note.replace('+/-', '±')}" if need.note else ""
    if need.corrected > n:
        return FigureProgress(
            figure=figure, stage="planned", labelled=n, goal=need.corrected,
            text=f"{n} of about {need.corrected} random labels for a {compound} interval of "
            f"{want} (now {now}{alone}){note}")
    # The plan (a normal quantile) is met, the t interval on few scenarios not yet.
    return FigureProgress(
        figure=figure, stage="planned", labelled=n, goal=None,
        text=f"{plural(n, 'random label')}, about the {need.corrected} planned for {want}; "
        f"the interval is still {now} (its t quantile on few scenarios is wider): a few more "
        "labels narrow it")


def progress_of(figures: CorrectedFigures | None, half_width: float,
                confidence: float) -> LabelsProgress:
    """Both figures' progress from a run's corrected figures (``None``: nothing scored)."""
    if figures is None:
        return LabelsProgress(half_width=half_width, confidence=confidence, figures=[],
                              unavailable="no scored sample yet: nothing to correct")
    shown = [figure_progress("pass rate", figures.pass_rate, half_width),
             figure_progress("mean score", figures.mean, half_width)]
    note = None
    if any(f.stage == "withheld" and f.goal == MIN_LABELS for f in shown):
        note = (f"From {MIN_LABELS} random labels on, the number an interval of "
                f"{_width(half_width)} needs is estimated from this run's judge variance and "
                "its agreement with the labels; before that there is nothing to estimate it "
                "from.")
    return LabelsProgress(half_width=half_width, confidence=confidence, figures=shown,
                          note=note)


def labels_progress(store: RunStore, *, half_width: float = DEFAULT_HALF_WIDTH,
                    labels: Sequence[Label] | None = None) -> LabelsProgress:
    """The progress of the run in ``store`` (its stored labels unless ``labels`` are given,
    under the run's own error policy, confidence and seed). A run whose figures cannot be
    computed (a damaged configuration, a non-finite score) gets ``unavailable`` saying why;
    labelling goes on."""
    from harness.runs.store import StoreError

    try:
        design = store.run_config().design
        figures = run_corrected_figures(
            store, error_policy=design.error_policy, confidence=design.confidence,
            seed=design.seed, labels=labels, half_width=half_width)
    except (StoreError, ValueError) as err:
        return LabelsProgress(half_width=half_width, confidence=0.95, figures=[],
                              unavailable=f"the corrected figures cannot be computed: {err}")
    return progress_of(figures, half_width, design.confidence)


def progress_json(progress: LabelsProgress) -> dict[str, Any]:
    """The progress as the pages' scripts read it."""
    return progress.model_dump(mode="json")
