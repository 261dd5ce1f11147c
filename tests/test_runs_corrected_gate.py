"""`--gate-on corrected-lower-bound` (issue 27): the gate on the lower end of the figures
corrected by the run's random human labels, stored or given with --labels; with too few
labels it fails and says how many more it needs. The run's corrected figures are the same as
`harness stats samples.jsonl --labels FILE` gives from the run's own files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.runs.corrected_figures import run_corrected_figures
from harness.runs.gate import evaluate_gate
from harness.runs.label_files import label_file_text
from harness.runs.label_model import Label
from harness.runs.store import RunStore
from harness.stats.corrected import MIN_LABELS, SampleLabel, corrected_figures
from tests.helpers.cli import run_cli
from tests.helpers.figures import gate_figures
from tests.helpers.labelled_runs import label, offline_run


def _labels(run_dir: Path, count: int, *, flip_first_epoch: bool = True) -> list[Label]:
    """``count`` random pass/fail labels of the run's first scored samples, disagreeing with
    the judge on epoch 0 (so the correction moves the figure)."""
    with RunStore.open(run_dir) as store:
        rows = [r for r in store.score_rows() if r[2] == "scored"][:count]
    return [label(sid, epoch, target="passed",
                  value=(not ok) if flip_first_epoch and epoch == 0 else bool(ok))
            for sid, epoch, _, _, ok in rows]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return offline_run(tmp_path_factory.mktemp("corrected") / "run", epochs=4)


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run_dir, tmp_path / "run"))


def test_too_few_labels_fail_the_gate_and_say_how_many_more(run_dir: Path,
                                                               tmp_path: Path) -> None:
    run = _copy(run_dir, tmp_path)
    done = run_cli("run", "--resume", run, "--min-pass-rate", "0.3", "--gate-on",
                   "corrected-lower-bound")
    assert done.returncode == 1
    text = " ".join(done.stderr.split()) + " ".join(done.stdout.split())
    assert f"no random labels of 'passed': needs at least {MIN_LABELS}" in text
    with RunStore.open(run) as store:
        store.add_labels(_labels(run, 4))
    done = run_cli("run", "--resume", run, "--min-pass-rate", "0.3", "--gate-on",
                   "corrected-lower-bound", "--json")
    assert done.returncode == 1
    [check] = json.loads(done.stdout)["gate"]["checks"]
    assert check["basis"] == "corrected-lower-bound" and check["value"] is None
    assert f"needs at least {MIN_LABELS} random labels, got 4: {MIN_LABELS - 4} more" in (
        check["detail"])


def test_the_gate_uses_the_stored_labels_or_a_file(run_dir: Path, tmp_path: Path) -> None:
    run = _copy(run_dir, tmp_path)
    labels = _labels(run, 14)
    with RunStore.open(run) as store:
        store.add_labels(labels)
    stored = run_cli("run", "--resume", run, "--min-pass-rate", "0.3", "--gate-on",
                     "corrected-lower-bound", "--json")
    summary = json.loads(stored.stdout)
    [check] = summary["gate"]["checks"]
    with RunStore.open(run) as store:
        corrected = run_corrected_figures(store, error_policy="exclude", confidence=0.95,
                                          seed=0)
    assert corrected is not None and corrected.pass_rate is not None
    assert check["value"] == pytest.approx(corrected.pass_rate.ci_low)
    assert stored.returncode == (0 if check["value"] >= 0.3 else 1)
    assert "corrected with 14 human labels" in check["detail"]
    # the judge agreed on later epochs and not on epoch 0: the correction moves the figure
    assert corrected.pass_rate.value != pytest.approx(summary["score"]["pass_rate"]["value"])
    # a file of the same labels gives the same gate; a stricter threshold fails it
    other = _copy(run_dir, tmp_path / "other")
    path = tmp_path / "labels.jsonl"
    path.write_text(label_file_text(labels), encoding="utf-8")
    given = run_cli("run", "--resume", other, "--min-pass-rate", "0.99", "--gate-on",
                    "corrected-lower-bound", "--labels", path, "--json")
    assert given.returncode == 1
    [strict] = json.loads(given.stdout)["gate"]["checks"]
    assert strict["value"] == pytest.approx(check["value"]) and not strict["passed"]


def test_run_figures_are_the_stats_commands(run_dir: Path, tmp_path: Path) -> None:
    run = _copy(run_dir, tmp_path)
    labels = _labels(run, 14) + [label(lb.scenario_id, lb.epoch, target="score", value=0.5)
                                 for lb in _labels(run, 12)]
    path = tmp_path / "labels.jsonl"
    path.write_text(label_file_text(labels), encoding="utf-8")
    done = run_cli("stats", run / "samples.jsonl", "--labels", path, "--json",
                   "--bootstrap-resamples", "0")
    assert done.returncode == 0, done.stderr
    from_file = json.loads(done.stdout)["corrected"]
    with RunStore.open(run) as store:
        from_run = run_corrected_figures(store, error_policy="exclude", confidence=0.95,
                                         seed=0, labels=labels)
    assert from_run is not None
    assert from_run.model_dump(mode="json") == from_file


def test_labels_without_the_corrected_gate_are_refused(run_dir: Path, tmp_path: Path) -> None:
    done = run_cli("run", "--resume", _copy(run_dir, tmp_path), "--min-pass-rate", "0.3",
                   "--labels", tmp_path / "labels.jsonl")
    assert done.returncode == 2
    assert "--labels: applies only with --gate-on corrected-lower-bound" in done.stderr


def test_evaluate_gate_on_given_corrected_figures() -> None:
    rng = np.random.default_rng(3)
    judge = (rng.random(60) < 0.7).astype(float)
    human = np.where(rng.random(60) < 0.9, judge, 1 - judge)
    labels = [SampleLabel(index=i, target="passed", value=float(human[i]), random=True)
              for i in range(0, 60, 2)]
    figures = corrected_figures(judge, judge, np.arange(0, 61, 3), labels)
    assert figures.pass_rate is not None and figures.pass_rate.ci_low is not None
    low = figures.pass_rate.ci_low
    score = gate_figures(mean=0.9, ci_low=0.8, ci_high=1.0, pass_rate=0.9)
    above = evaluate_gate(score, min_pass_rate=low - 0.01, gate_on="corrected-lower-bound",
                          corrected=figures)
    below = evaluate_gate(score, min_pass_rate=low + 0.01, gate_on="corrected-lower-bound",
                          corrected=figures)
    assert above is not None and above.passed and above.checks[0].value == low
    assert below is not None and not below.passed
    assert "corrected with 30 human labels" in below.checks[0].detail
