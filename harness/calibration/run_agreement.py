"""A run's human labels in its report (issue 27): how the run's judge agreed with its own
reviewers on the labelled samples, per target, beside the figures those labels correct.

:func:`run_labels_report` builds it from a run directory (its stored labels, or a contract-10
file that replaces them); :func:`target_agreement` turns one target's judgment records into
its agreement figures. Both go through the calibration analysis
(:func:`harness.calibration.analysis.analyse`): there is one implementation of every
statistic, and ``harness calibrate --from-run`` gives the same figures with more beside them.

What a target shows: for pass/fail (``passed``, ``rubric:``, and a criterion at its own pass
threshold) sensitivity, specificity, accuracy and Cohen's kappa, pass being the positive
class; for scores (``score``, a criterion on its scale) mean bias (judge − reviewers), MAE and
Spearman's rho. Each has its bootstrap interval over scenarios (a scenario's epochs are not
independent) and its n. Random and hand-chosen labels both count for agreement; only random
ones enter the corrected figures (:mod:`harness.stats.corrected`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.calibration.analysis import analyse
from harness.calibration.judgments import PointwiseJudgment, PointwiseJudgments, build_pointwise
from harness.calibration.report import AnalysisOptions, BootstrapEstimate, PointwiseJudgeReport
from harness.calibration.run_labels import store_label_judgments
from harness.calibration.scale import Scale
from harness.runs.config import RunDesign
from harness.runs.corrected_figures import run_corrected_figures
from harness.runs.label_files import label_counts, read_label_file
from harness.runs.label_model import Label, labelled_timestamp
from harness.runs.store import RunStore
from harness.stats.corrected import CorrectedFigures
from harness.stats.summary import StatsReport
from harness.wording import plural

AgreementKind = Literal["pass_fail", "score", "both"]
PASS_FAIL_STATISTICS = ("sensitivity", "specificity", "accuracy", "cohen_kappa")
SCORE_STATISTICS = ("mean_bias", "mae", "spearman")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetAgreement(_Model):
    """How the judge agreed with the reviewers on one target's labelled samples.

    ``kind`` says which figures it has: ``pass_fail`` (``sensitivity``, ``specificity``,
    ``accuracy``, ``cohen_kappa``), ``score`` (``mean_bias``, ``mae``, ``spearman``) or
    ``both`` (a criterion: its scale, and pass/fail at its own threshold); the others are
    ``None``. ``n_samples`` is the labelled samples with a judge verdict (each figure's ``n``
    may be smaller: sensitivity counts the samples the reviewers passed)."""

    target: str
    kind: AgreementKind
    n_samples: int
    n_labels: int
    n_random: int
    n_chosen: int
    pass_rule: str | None = Field(description="how a sample passes for the reviewers and for "
                                  "the judge, for the pass/fail figures")
    sensitivity: BootstrapEstimate | None = None
    specificity: BootstrapEstimate | None = None
    accuracy: BootstrapEstimate | None = None
    cohen_kappa: BootstrapEstimate | None = None
    mean_bias: BootstrapEstimate | None = None
    mae: BootstrapEstimate | None = None
    spearman: BootstrapEstimate | None = None
    notes: list[str] = Field(default_factory=list)

    def figures(self) -> list[tuple[str, BootstrapEstimate]]:
        """``(statistic, estimate)`` for each figure the target has, pass/fail first."""
        names = ((PASS_FAIL_STATISTICS if self.kind != "score" else ())
                 + (SCORE_STATISTICS if self.kind != "pass_fail" else ()))
        return [(name, est) for name in names if (est := getattr(self, name)) is not None]


class LeftOut(_Model):
    """Labels left out of the agreement, how many, and why."""

    count: int
    reason: str


class RunAgreement(_Model):
    """The ``agreement`` object: the judge against the reviewers, per labelled target, with
    what the labels were (``labels``: counts of labels, reviewers, samples, random and
    chosen), where they came from (``source``), which were left out and why."""

    source: str
    confidence: float
    method: str
    labels: dict[str, int]
    targets: list[TargetAgreement]
    left_out: list[LeftOut] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class RunLabels(_Model):
    """A run's labels in its report: the agreement and the corrected figures (``None`` when
    the run scored no sample)."""

    agreement: RunAgreement
    corrected: CorrectedFigures | None

    def to_json(self) -> dict[str, Any]:
        """The two objects ``harness report --json`` adds to the summary."""
        return {"agreement": self.agreement.model_dump(mode="json"),
                "corrected": (None if self.corrected is None
                              else self.corrected.model_dump(mode="json"))}


def bootstrap_method(options: AnalysisOptions) -> str:
    """How the agreement intervals are computed, in one line."""
    return (f"{options.confidence:.0%} percentile bootstrap over scenarios (a scenario's "
            f"labelled epochs resampled together), {options.n_resamples} resamples, seed "
            f"{options.seed}")


def _kind(pass_fail: bool, human_kind: str | None) -> AgreementKind:
    if human_kind == "bool":
        return "pass_fail"
    return "both" if pass_fail else "score"


def target_agreement(target: str, judgments: PointwiseJudgments, options: AnalysisOptions,
                     labels: Sequence[Label], notes: Sequence[str] = ()) -> TargetAgreement:
    """The agreement figures of one target from its judgment records (one per labelled
    sample, clustered by scenario) and the labels behind them, through the calibration
    analysis. Never raises for figures the data leave undefined (all labels equal, one label,
    a judge that never varies): each such figure has ``value`` ``None`` and says why."""
    report = analyse(judgments, options)
    judge = report.judges[0]
    assert isinstance(judge, PointwiseJudgeReport)  # pointwise records give pointwise reports
    pass_fail = judge.pass_fail
    kind = _kind(pass_fail is not None, judgments.human_kind)
    fields: dict[str, BootstrapEstimate | None] = {}
    if pass_fail is not None:
        # each figure's n is the samples it is a share of
        passed = pass_fail.human_pass_judge_pass + pass_fail.human_pass_judge_fail
        failed = pass_fail.human_fail_judge_pass + pass_fail.human_fail_judge_fail
        fields |= {"sensitivity": _with_n(pass_fail.sensitivity, passed),
                   "specificity": _with_n(pass_fail.specificity, failed),
                   "accuracy": pass_fail.accuracy, "cohen_kappa": pass_fail.cohen_kappa}
    if kind != "pass_fail":
        fields |= {"mean_bias": judge.mean_bias, "mae": judge.mae, "spearman": judge.spearman}
    missing = judge.n_missing_judge
    extra = ([f"{plural(missing, 'labelled sample')} without a judge verdict on this target "
              "(judged N/A, or not judged) left out"] if missing else [])
    if judge.n_off_scale_human_ratings:
        extra.append(f"{plural(judge.n_off_scale_human_ratings, 'label')} off the target's "
                     "scale counted as missing")
    return TargetAgreement(
        target=target, kind=kind, n_samples=judge.n_items, n_labels=len(labels),
        n_random=sum(lb.random for lb in labels),
        n_chosen=sum(not lb.random for lb in labels),
        pass_rule=(None if pass_fail is None
                   else f"reviewers: {pass_fail.human_rule}; judge: {pass_fail.judge_rule}"),
        notes=[*(n.removesuffix("; --pass-threshold overrides it") for n in notes), *extra],
        **fields)


def _with_n(estimate: BootstrapEstimate | None, n: int) -> BootstrapEstimate | None:
    return None if estimate is None else estimate.model_copy(update={"n": n})


def latest_labels(labels: Sequence[Label]) -> list[Label]:
    """The label that counts for each (sample, reviewer, target) of a file: the last
    labelled (by ``labelled_at``, then by line), as the store keeps them."""
    ordered = sorted(enumerate(labels), key=lambda p: (labelled_timestamp(p[1].labelled_at),
                                                       p[0]))
    by_key = {label.key: label for _, label in ordered}
    return [by_key[key] for key in sorted(by_key)]


def run_labels_report(run_dir: Path, labels_file: Path | None = None, *,
                      n_resamples: int = 2000, half_width: float = 0.05) -> RunLabels | None:
    """The labels of the run in ``run_dir`` in its report: ``labels_file`` (contract 10)
    replaces the stored labels when given. ``None`` when there are no labels and no file.
    The confidence, seed and error policy are the run's own (its ``summary.json``).

    Raises :class:`~harness.errors.InputError` naming the file, line and field for a label
    file that does not fit the run (a sample it does not have, a value off the target's
    scale, a line without ``random``), and :class:`~harness.runs.store.StoreError` for a
    folder that is not a run."""
    from harness.runs.summary import read_summary

    design = read_summary(run_dir).config.design
    with RunStore.open(run_dir, read_only=True) as store:
        return store_labels_report(store, run_dir, design, labels_file,
                                   n_resamples=n_resamples, half_width=half_width)


def store_labels_report(store: RunStore, run_dir: Path, design: RunDesign,
                        labels_file: Path | None = None, *, n_resamples: int = 2000,
                        half_width: float = 0.05) -> RunLabels | None:
    """:func:`run_labels_report` on a store already open, with the run's ``design``."""
    options = AnalysisOptions(n_resamples=n_resamples, confidence=design.confidence,
                              seed=design.seed)
    given = None if labels_file is None else latest_labels(read_label_file(labels_file, store))
    labels = store.labels() if given is None else given
    if not labels:
        return None
    corrected = run_corrected_figures(
        store, error_policy=design.error_policy, confidence=design.confidence,
        seed=design.seed, labels=labels, half_width=half_width)
    scored = {(s, e) for s, e, status, *_ in store.score_rows() if status == "scored"}
    targets: list[TargetAgreement] = []
    unscored = [lb for lb in labels if (lb.scenario_id, lb.epoch) not in scored]
    if len(unscored) < len(labels):
        data = store_label_judgments(store, run_dir, options, labels=labels)
        targets = [target_agreement(t.target, t.judgments, t.options, t.labels, t.notes)
                   for t in data.targets]
    left_out = ([LeftOut(count=len(unscored), reason="on samples the run did not score "
                         "(errored or unscored): no judge verdict to compare with")]
                if unscored else [])
    notes = [] if targets else ["no label is on a scored sample: no agreement to show"]
    agreement = RunAgreement(
        source=str(labels_file) if labels_file is not None else "the run's stored labels",
        confidence=design.confidence, method=bootstrap_method(options),
        labels=label_counts(labels), targets=targets, left_out=left_out, notes=notes)
    return RunLabels(agreement=agreement, corrected=corrected)


class StatsWithAgreement(StatsReport):
    """``harness stats --labels --json``'s head: the suite figures, ``corrected``, and the
    judge's ``agreement`` with the labels of the overall targets (``passed``, ``score``)."""

    agreement: RunAgreement


def file_agreement(samples: Sequence[tuple[str, int, float, bool]],
                   labels: Sequence[tuple[int, Label]], *, source: str,
                   options: AnalysisOptions, score_range: tuple[float, float] = (0.0, 1.0)
                   ) -> RunAgreement:
    """The agreement of a JSONL file's judge (``samples``: scenario id, epoch, score,
    passed) with ``labels`` (each with the index of its sample), for the targets ``passed``
    and ``score``; labels of rubrics and criteria are counted and left out (a JSONL of
    scores has no judge verdict on them). ``score`` labels, in [0, 1], are read on
    ``score_range`` as the corrected figures read them."""
    low, high = score_range
    targets = []
    for target in ("passed", "score"):
        given = [(i, lb) for i, lb in labels if lb.target == target]
        if not given:
            continue
        by_sample: dict[int, list[Label]] = {}
        for index, label in given:
            by_sample.setdefault(index, []).append(label)
        records = []
        for index, mine in by_sample.items():
            sid, epoch, score, passed = samples[index]
            human = [bool(lb.value) if target == "passed" else low + float(lb.value) * (high - low)
                     for lb in mine]
            records.append(PointwiseJudgment(
                item_id=f"{sid}#{epoch}", cluster=sid, human=human if len(human) > 1 else human[0],
                judge=passed if target == "passed" else score,
                scale=None if target == "passed" else Scale(min=low, max=high, step=None)))
        targets.append(target_agreement(target, build_pointwise(records, f"{source} ({target})"),
                                        options, [lb for _, lb in given]))
    other = sum(1 for _, lb in labels if lb.target not in ("passed", "score"))
    left_out = ([LeftOut(count=other, reason="of rubrics or criteria: a file of sample scores "
                         "has no judge verdict on them")] if other else [])
    notes = [] if targets else ["no label of passed or score: no agreement to show"]
    return RunAgreement(source=source, confidence=options.confidence,
                        method=bootstrap_method(options),
                        labels=label_counts([lb for _, lb in labels]), targets=targets,
                        left_out=left_out, notes=notes)


COMPARED_TARGETS = ("passed", "score")
"""The targets ``harness compare`` shows each run's agreement on: the sample's own."""


def compared_agreement(run_dir: Path, scenario_ids: Collection[str], *, confidence: float,
                       n_resamples: int = 2000) -> list[TargetAgreement]:
    """How the judge of the run in ``run_dir`` agreed with its reviewers on the samples of
    ``scenario_ids`` (the scenarios a comparison covers), for :data:`COMPARED_TARGETS`, from
    its stored labels (random and chosen alike). Empty when no such label is on a scored
    sample."""
    keep = set(scenario_ids)
    with RunStore.open(run_dir, read_only=True) as store:
        scored = {(s, e) for s, e, status, *_ in store.score_rows() if status == "scored"}
        labels = [lb for lb in store.labels() if lb.scenario_id in keep
                  and lb.target in COMPARED_TARGETS and (lb.scenario_id, lb.epoch) in scored]
        if not labels:
            return []
        options = AnalysisOptions(n_resamples=n_resamples, confidence=confidence,
                                  seed=store.run_config().design.seed)
        data = store_label_judgments(store, run_dir, options, labels=labels)
    return [target_agreement(t.target, t.judgments, t.options, t.labels, t.notes)
            for t in data.targets]


def with_compared_agreement(comparison: dict[str, Any], baseline: Path,
                            candidate: Path) -> dict[str, Any]:
    """``comparison`` (:func:`harness.runs.comparison.compare_run_dirs`' dict) with, when it
    compares corrected figures, each labelled run's ``agreement`` (a list of
    :class:`TargetAgreement` as JSON, see :func:`compared_agreement`) beside them, so the two
    judges' agreement with their reviewers is read side by side."""
    corrected = comparison.get("corrected")
    if not corrected:
        return comparison
    compared = [row["scenario_id"] for row in comparison["scenarios"]]
    for which, path in (("baseline", baseline), ("candidate", candidate)):
        run = corrected.get(which)
        if run is not None:
            run["agreement"] = [t.model_dump(mode="json") for t in compared_agreement(
                path, compared, confidence=1.0 - comparison["alpha"])]
    return comparison
