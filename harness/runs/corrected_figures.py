"""A run's mean score and pass rate corrected by its human labels (issue 27): the run's scored
samples (under its error policy, as its summary counts them) and its labels (stored, or given)
handed to :func:`harness.stats.corrected.corrected_figures`. Used by the gate on the corrected
lower bound; the figures are the same as ``harness stats samples.jsonl --labels FILE``
computes from the run's own files."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from harness.runs.config import RunDesign
from harness.runs.label_model import Label
from harness.runs.store import RunStore
from harness.stats.corrected import CorrectedFigures, SampleLabel, corrected_figures
from harness.wording import plural


def run_corrected_figures(
    store: RunStore, *, error_policy: str, confidence: float, seed: int,
    labels: Sequence[Label] | None = None, half_width: float = 0.05,
    scenarios: Collection[str] | None = None,
) -> CorrectedFigures | None:
    """The corrected figures of the run in ``store`` from ``labels`` (default: the store's,
    the last of each reviewer's versions). ``None`` when no sample was scored. Labels of
    samples with no score (errored or unscored, unless errors count as failures) are left out
    and counted in the notes."""
    scores: list[float] = []
    passed: list[bool] = []
    index: dict[tuple[str, int], int] = {}
    counts: dict[str, int] = {}
    for sid, epoch, status, score, ok in store.score_rows():  # by scenario, then epoch
        if scenarios is not None and sid not in scenarios:
            continue
        if status == "scored" and score is not None:
            value, flag = score, bool(ok)
        elif status == "errored" and error_policy == "as_failures":
            value, flag = 0.0, False
        else:
            continue
        index[(sid, epoch)] = len(scores)
        scores.append(value)
        passed.append(flag)
        counts[sid] = counts.get(sid, 0) + 1
    if not scores:
        return None
    offsets = np.concatenate(([0], np.cumsum(list(counts.values())))).astype(np.int64)
    given = store.labels() if labels is None else list(labels)
    usable = [SampleLabel(index=index[(lb.scenario_id, lb.epoch)], target=lb.target,
                          value=float(lb.value), random=lb.random)
              for lb in given if (lb.scenario_id, lb.epoch) in index]
    out = corrected_figures(
        np.asarray(scores), np.asarray(passed, dtype=float), offsets, usable,
        confidence=confidence, seed=seed, half_width=half_width)
    unscored = len(given) - len(usable)
    if unscored:
        out = out.model_copy(update={"notes": [
            *out.notes, f"{plural(unscored, 'label')} of samples with no score (errored or "
            "unscored) left out"]})
    return out


def gate_corrected_figures(run_dir: Path, design: RunDesign,
                           labels_file: Path | None = None) -> CorrectedFigures | None:
    """The corrected figures the gate on the corrected lower bound uses: the run's in
    ``run_dir`` under its ``design`` (error policy, confidence, seed), from the labels of
    ``labels_file`` (contract 10, every line checked against the run: raises
    :class:`~harness.errors.InputError` naming the file, line and field) or else the run's
    stored ones."""
    from harness.runs.label_files import read_label_file

    with RunStore.open(run_dir) as store:
        given = None if labels_file is None else read_label_file(labels_file, store)
        return run_corrected_figures(store, error_policy=design.error_policy,
                                     confidence=design.confidence, seed=design.seed,
                                     labels=given)
