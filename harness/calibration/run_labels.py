"""A run's judge verdicts against its reviewers' labels (``harness calibrate --from-run``).

Each labelled target becomes a set of pointwise judgment records (contract 3), one per
labelled sample: ``human`` is the reviewers' labels that count (one per reviewer), ``judge``
the run's verdict on the same scale (a criterion's judge samples, each on the rubric's own
scale; a rubric's or the sample's pass/fail; the sample's score). The records then go through
the same analysis as ``calibrate --judgments``, so every statistic, interval and note is the
same. Random and chosen labels both count: agreement is measured on whatever was labelled.
Each record's cluster is its scenario: the intervals resample scenarios, since a scenario's
epochs are not independent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce
from itertools import pairwise
from pathlib import Path

from harness.calibration.judgments import PointwiseJudgment, PointwiseJudgments, build_pointwise
from harness.calibration.report import AnalysisOptions
from harness.calibration.scale import Scale, Score
from harness.errors import InputError
from harness.runs.label_files import RunLabelChecker, label_counts, reviewers
from harness.runs.labels import Label, LabelTarget
from harness.runs.store import RunStore
from harness.wording import plural


@dataclass
class TargetJudgments:
    """One labelled target's judgment records, the analysis options for it (a criterion's
    own pass threshold), and the labels behind them."""

    target: str
    judgments: PointwiseJudgments
    options: AnalysisOptions
    labels: list[Label] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class RunLabelJudgments:
    """What ``calibrate --from-run`` analyses: per target, its records; and the labels used
    (on scored samples) and left out (on samples the run did not score)."""

    run_dir: Path
    targets: list[TargetJudgments]
    used: list[Label]
    left_out: list[Label]

    def summary(self) -> str:
        """One line: how many labels and reviewers the figures rest on."""
        count = label_counts(self.used)
        line = (f"{self.run_dir}: {plural(count['labels'], 'label')} by "
                f"{plural(count['reviewers'], 'reviewer')} ({', '.join(reviewers(self.used))}) "
                f"on {plural(count['samples'], 'sample')}; {count['random']} from the random "
                f"queue, {count['chosen']} chosen by hand (both count for agreement)")
        if self.left_out:
            line += (f"; {plural(len(self.left_out), 'label')} on samples the run did not "
                     "score left out")
        return line


def _scale(target: LabelTarget) -> Scale | None:
    if target.kind == "unit":
        return Scale(min=0.0, max=1.0, step=None)
    if target.kind == "bool":
        return None
    values = sorted(float(p.value) for p in target.values)
    gaps = [round(b - a) for a, b in pairwise(values)]
    step = float(reduce(math.gcd, gaps)) if gaps and all(g > 0 for g in gaps) else 1.0
    return Scale(min=values[0], max=values[-1], step=step or 1.0)


def _judge(target: LabelTarget) -> Score | list[Score | None] | None:
    if target.kind == "scale" and target.judge_votes:
        return [float(v) for v in target.judge_votes]
    value = target.judge_value
    if value is None or isinstance(value, bool):
        return value
    return float(value)


def _threshold(target: LabelTarget, checker: RunLabelChecker, scenario_id: str) -> float | None:
    """A criterion's own pass threshold in its scale's units (from the run's rubric)."""
    if target.rubric_id is None or target.criterion_id is None:
        return None
    rubric = checker.rubrics_for(scenario_id).get(target.rubric_id)
    if rubric is None:
        return None
    criterion = rubric.criterion(target.criterion_id)
    scale = rubric.scale_of(criterion)
    return scale.lowest + rubric.criterion_threshold(criterion) * (scale.highest - scale.lowest)


def run_label_judgments(run_dir: Path, options: AnalysisOptions,
                        targets: Sequence[str] = (),
                        labels: Sequence[Label] | None = None) -> RunLabelJudgments:
    """The judgment records of every labelled target of the run in ``run_dir`` (only
    ``targets`` when given), from ``labels`` (default: the run's stored ones). Raises
    :class:`~harness.runs.store.StoreError` when it is not a run, and :class:`InputError`
    when it has no labels, none on a scored sample, or none on a target asked for."""
    with RunStore.open(run_dir) as store:
        return store_label_judgments(store, run_dir, options, targets, labels)


def store_label_judgments(store: RunStore, run_dir: Path, options: AnalysisOptions,
                          targets: Sequence[str] = (),
                          labels: Sequence[Label] | None = None) -> RunLabelJudgments:
    """:func:`run_label_judgments` on a store already open."""
    labels = store.labels() if labels is None else list(labels)
    if not labels:
        raise InputError(run_dir, None, "has no human labels yet; add some with `harness "
                         "labels import RUN_DIR FILE` (contract 10) or label in `harness "
                         "view`")
    scored = {(s, e) for s, e, status, *_ in store.score_rows() if status == "scored"}
    checker = RunLabelChecker(store)
    used = [lb for lb in labels if (lb.scenario_id, lb.epoch) in scored]
    left_out = [lb for lb in labels if (lb.scenario_id, lb.epoch) not in scored]
    if not used:
        where = ("its label is on a sample" if len(labels) == 1 else
                 f"its {len(labels)} labels are all on samples")
        raise InputError(run_dir, None, f"{where} the run did not score (errored or "
                         "missing), so there is no judge verdict to compare with")
    wanted = list(targets) or list(dict.fromkeys(lb.target for lb in used))
    missing = [t for t in wanted if not any(lb.target == t for lb in used)]
    if missing:
        raise InputError("--target", None, f"no label on a scored sample of {run_dir} has "
                         f"target {missing[0]!r}; labelled: "
                         f"{', '.join(dict.fromkeys(lb.target for lb in used))}")
    out = [_target_judgments(target, [lb for lb in used if lb.target == target], checker,
                             options, run_dir) for target in wanted]
    return RunLabelJudgments(run_dir=run_dir, targets=out, used=used, left_out=left_out)


def _target_judgments(target: str, labels: list[Label], checker: RunLabelChecker,
                      options: AnalysisOptions, run_dir: Path) -> TargetJudgments:
    by_sample: dict[tuple[str, int], list[Label]] = {}
    for label in labels:
        by_sample.setdefault((label.scenario_id, label.epoch), []).append(label)
    records = []
    found: LabelTarget | None = None
    first_sid = labels[0].scenario_id
    for (sid, epoch), given in by_sample.items():
        found = next((t for t in checker.targets(sid, epoch) if t.target == target), None)
        human: list[Score | None] = [lb.value if isinstance(lb.value, bool) else float(lb.value)
                                     for lb in given]
        records.append(PointwiseJudgment(
            item_id=f"{sid}#{epoch}", cluster=sid, human=human if len(human) > 1 else human[0],
            judge=_judge(found) if found is not None else None,
            scale=_scale(found) if found is not None else None))
    scales = {r.scale for r in records if r.scale is not None}
    scale = scales.pop() if len(scales) == 1 else None
    records = [r.model_copy(update={"scale": scale}) for r in records]
    source = f"{run_dir} ({target})"
    judgments = build_pointwise(records, source)
    notes = []
    threshold = None
    if found is not None and options.pass_threshold is None:
        threshold = _threshold(found, checker, first_sid)
        if threshold is not None:
            notes.append(f"pass/fail statistics use the criterion's own pass threshold, "
                         f"{threshold:g} on its scale; --pass-threshold overrides it")
    target_options = (options.model_copy(update={"pass_threshold": threshold})
                      if threshold is not None else options)
    return TargetJudgments(target=target, judgments=judgments, options=target_options,
                           labels=labels, notes=notes)
