"""`run_corrected_figures`: which of a run's samples and labels reach the corrected figures.

The statistics are tested in test_stats_corrected.py; here the store's rows are given by hand
(a scored sample, an errored one, one still unscored, a scored row without a score) and the
result is compared with `corrected_figures` called on the samples and labels the run's error
policy keeps, so every row the adapter drops or keeps, and every option it passes on, shows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from harness.runs.corrected_figures import run_corrected_figures
from harness.runs.gate import evaluate_gate
from harness.runs.label_model import Label
from harness.stats.corrected import CorrectedFigures, SampleLabel, corrected_figures
from tests.helpers.figures import gate_figures
from tests.helpers.labelled_runs import label

Row = tuple[str, int, str, float | None, bool | None]


class _Store:
    """What run_corrected_figures reads of a RunStore: its score rows and its labels."""

    def __init__(self, rows: list[Row], labels: list[Label]) -> None:
        self.rows, self.stored = rows, labels

    def score_rows(self) -> list[Row]:
        return self.rows

    def labels(self) -> list[Label]:
        return self.stored


def _rows() -> list[Row]:
    """Four scenarios of five epochs; epoch 4 of s1 errored, epoch 2 of s2 still unscored
    (status "pending"), epoch 3 of s3 "scored" with no score; scores vary by scenario."""
    rng = np.random.default_rng(11)
    rows: list[Row] = []
    for s in range(4):
        for e in range(5):
            score = float(np.clip(0.2 * s + rng.normal(0.3, 0.2), 0.0, 1.0))
            row: Row = (f"s{s}", e, "scored", score, score >= 0.5)
            if (s, e) == (1, 4):
                row = (f"s{s}", e, "errored", None, None)
            elif (s, e) == (2, 2):
                row = (f"s{s}", e, "pending", None, None)
            elif (s, e) == (3, 3):
                row = (f"s{s}", e, "scored", None, None)
            rows.append(row)
    return rows


def _labels(rows: list[Row]) -> list[Label]:
    """A random pass/fail and score label on every sample (errored ones too), each
    disagreeing with the judge on epoch 0 so the correction moves the figure."""
    out = []
    for sid, epoch, _, score, passed in rows:
        flip = epoch == 0
        out.append(label(sid, epoch, target="passed", value=bool(passed) != flip))
        out.append(label(sid, epoch, target="score",
                         value=round(1.0 - (score or 0.0) if flip else (score or 0.0), 3)))
    return out


def _expected(rows: list[Row], labels: list[Label], *, as_failures: bool,
              **options: Any) -> CorrectedFigures:
    """corrected_figures on the samples the policy keeps, labels mapped to their index."""
    kept = [(sid, e, score if status == "scored" else 0.0, bool(passed))
            for sid, e, status, score, passed in rows
            if (status == "scored" and score is not None)
            or (status == "errored" and as_failures)]
    index = {(sid, e): i for i, (sid, e, _, _) in enumerate(kept)}
    sizes = [sum(1 for k in kept if k[0] == sid) for sid in dict.fromkeys(k[0] for k in kept)]
    sample_labels = [SampleLabel(index=index[(lb.scenario_id, lb.epoch)], target=lb.target,
                                 value=float(lb.value), random=lb.random)
                     for lb in labels if (lb.scenario_id, lb.epoch) in index]
    return corrected_figures(
        np.array([k[2] for k in kept]), np.array([float(k[3]) for k in kept]),
        np.concatenate(([0], np.cumsum(sizes))), sample_labels, **options)


def _note(n: int) -> str:
    return f"{n} labels of samples with no score (errored or unscored) left out"


@pytest.mark.parametrize("policy", ["exclude", "as_failures"])
def test_the_error_policy_decides_which_samples_and_labels_count(policy: str) -> None:
    rows = _rows()
    labels = _labels(rows)
    got = run_corrected_figures(_Store(rows, labels), error_policy=policy, confidence=0.95,
                                seed=0)
    as_failures = policy == "as_failures"
    want = _expected(rows, labels, as_failures=as_failures, half_width=0.05)
    assert got is not None and got.mean is not None and got.pass_rate is not None
    # the two unscored samples always, the errored one unless errors count as failures
    left_out = 2 * (2 if as_failures else 3)
    assert got.notes == [*want.notes, _note(left_out)]
    assert got.model_copy(update={"notes": want.notes}) == want
    assert got.pass_rate.n_labelled == (18 if as_failures else 17)
    assert got.mean.n_labelled == got.pass_rate.n_labelled


def test_errors_as_failures_add_a_failing_zero_score_sample() -> None:
    rows = [("s0", 0, "errored", None, None), *_rows()[1:]]
    labels = [label("s0", 0, target="passed", value=False)]
    excluded = run_corrected_figures(_Store(rows, labels), error_policy="exclude",
                                     confidence=0.95, seed=0)
    failed = run_corrected_figures(_Store(rows, labels), error_policy="as_failures",
                                   confidence=0.95, seed=0)
    assert excluded is not None and failed is not None
    assert excluded.pass_rate is None
    assert excluded.notes == ["1 label of samples with no score (errored or unscored) left out"]
    assert failed.pass_rate is not None and failed.pass_rate.n_labelled == 1
    # each errored sample is one more failing sample (score 0) of the judge's figures
    # (the suite's pass rate: the mean of the scenarios' pass rates)
    flags: dict[str, list[bool]] = {}
    for sid, _, status, score, passed in rows:
        if status == "errored" or (status == "scored" and score is not None):
            flags.setdefault(sid, []).append(status == "scored" and bool(passed))
    assert failed.pass_rate.judge_value == pytest.approx(
        np.mean([np.mean(f) for f in flags.values()]))
    assert failed.pass_rate.n_samples == sum(map(len, flags.values())) == 18


def test_confidence_seed_and_half_width_are_passed_on() -> None:
    rows = _rows()
    labels = _labels(rows)
    store = _Store(rows, labels)
    for options in ({"confidence": 0.8, "seed": 0}, {"confidence": 0.95, "seed": 5}):
        got = run_corrected_figures(store, error_policy="exclude", half_width=0.2, **options)
        want = _expected(rows, labels, as_failures=False, half_width=0.2, **options)
        assert got is not None
        assert got.model_copy(update={"notes": want.notes}) == want
    wide = run_corrected_figures(store, error_policy="exclude", confidence=0.8, seed=0)
    narrow = run_corrected_figures(store, error_policy="exclude", confidence=0.95, seed=0)
    assert wide is not None and narrow is not None and wide.pass_rate and narrow.pass_rate
    assert wide.pass_rate.ci_low != narrow.pass_rate.ci_low


def test_given_labels_replace_the_stored_ones_and_no_scored_sample_gives_none() -> None:
    rows = _rows()
    stored = _labels(rows)
    given = [lb for lb in stored if lb.target == "passed"]
    got = run_corrected_figures(_Store(rows, stored), error_policy="exclude",
                                confidence=0.95, seed=0, labels=given)
    assert got is not None and got.mean is None and got.pass_rate is not None
    assert got.notes[-1] == _note(3)
    assert run_corrected_figures(_Store(rows, stored), error_policy="exclude",
                                 confidence=0.95, seed=0, labels=[]) is not None
    unscored = [(sid, e, "errored", None, None) for sid, e, *_ in rows]
    assert run_corrected_figures(_Store(unscored, stored), error_policy="exclude",
                                 confidence=0.95, seed=0) is None


def _figures(**update: Any) -> CorrectedFigures:
    """The corrected figures of the hand-made rows, their pass rate and mean changed."""
    rows = _rows()
    base = run_corrected_figures(_Store(rows, _labels(rows)), error_policy="exclude",
                                 confidence=0.95, seed=0)
    assert base is not None and base.mean is not None and base.pass_rate is not None
    return base.model_copy(update={
        name: getattr(base, name).model_copy(update=values) for name, values in update.items()})


def test_the_gate_on_the_corrected_mean_reads_the_score_labels() -> None:
    figures = _figures(mean={"value": 0.61, "ci_low": 0.52, "ci_high": 0.7,
                             "judge_value": 0.55, "n_labelled": 17})
    score = gate_figures(mean=0.9, ci_low=0.8, ci_high=1.0, pass_rate=0.9)
    at = evaluate_gate(score, min_score=0.52, gate_on="corrected-lower-bound",
                       corrected=figures)
    above = evaluate_gate(score, min_score=0.53, gate_on="corrected-lower-bound",
                          corrected=figures)
    assert at is not None and above is not None
    # a lower bound exactly on the threshold clears it
    assert at.passed and at.checks[0].value == 0.52
    assert at.checks[0].detail == (
        "mean score corrected lower bound 0.520 >= 0.520 (corrected with 17 human labels: "
        "0.610, interval 0.520–0.700; the judge's 0.550)")
    assert not above.passed
    assert above.checks[0].detail.startswith("mean score corrected lower bound 0.520 < 0.530")
    # no score labels: the mean's check names its own target, not the pass flags
    missing = evaluate_gate(score, min_score=0.5, gate_on="corrected-lower-bound",
                            corrected=figures.model_copy(update={"mean": None}))
    assert missing is not None and not missing.passed and missing.checks[0].value is None
    assert missing.checks[0].detail == (
        "mean score: no corrected figure (no random labels of 'score': needs at least 10); "
        "label samples from harness view's random queue, or give --labels FILE")


@pytest.mark.parametrize("field", ["value", "ci_low", "ci_high"])
def test_a_corrected_figure_without_its_interval_fails_the_gate(field: str) -> None:
    figures = _figures(pass_rate={field: None, "withheld": "too few labels"})
    score = gate_figures(mean=0.9, ci_low=0.8, ci_high=1.0, pass_rate=0.9)
    result = evaluate_gate(score, min_pass_rate=0.0, gate_on="corrected-lower-bound",
                           corrected=figures)
    assert result is not None and not result.passed
    assert result.checks[0].detail.startswith(
        "pass rate: no corrected figure (too few labels)")
