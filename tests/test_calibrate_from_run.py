"""``harness calibrate --from-run RUN_DIR``: the run's judge verdicts against its reviewers'
labels, per target, with the statistics of ``--judgments`` (checked against scipy and
scikit-learn), the labels and reviewers counted, and one-line errors."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, cohen_kappa_score

from harness.calibration import reviewer_agreement
from harness.runs.labels import Label, label_targets
from harness.runs.store import RunStore
from tests.helpers.cli import run_cli
from tests.helpers.labelled_runs import label, offline_run

COMPLETENESS = "criterion:final_response_quality/completeness"
# Ana's view of each sample's completeness, in the store's order (scenario, epoch).
ANA = [4, 5, 5, 3, 5, 4, 5, 5, 2, 3, 5, 4]
BO = {0: 5, 3: 4, 4: 5, 8: 3, 9: 3}  # bo labelled some of the same samples


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Label], list[float]]:
    run_dir = offline_run(tmp_path_factory.mktemp("from-run") / "run")
    labels: list[Label] = []
    judge: list[float] = []
    with RunStore.open(run_dir) as store:
        rubrics = store.rubrics()
        for i, record in enumerate(store.iter_samples()):
            key = {"scenario_id": record.scenario_id, "epoch": record.epoch}
            targets = {t.target: t for t in label_targets(record, rubrics)}
            judge.append(float(targets[COMPLETENESS].judge_value or 0))
            labels.append(label(**key, target=COMPLETENESS, value=ANA[i], random=i % 3 != 0))
            labels.append(label(**key, target="passed", value=ANA[i] >= 4, random=True))
            if i in BO:
                labels.append(label(**key, annotator="bo", target=COMPLETENESS, value=BO[i],
                                    random=False))
        store.add_labels(labels)
    return run_dir, labels, judge


def test_every_statistic_per_target_matches_scipy_and_scikit_learn(
        labelled: tuple[Path, list[Label], list[float]]) -> None:
    run_dir, labels, judge = labelled
    result = run_cli("calibrate", "--from-run", run_dir, "--json", "--resamples", "200")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["labels"] == {"labels": 29, "reviewers": 2, "samples": 12, "random": 20,
                                "chosen": 9, "reviewer_names": ["ana", "bo"], "left_out": 0}
    assert list(report["targets"]) == [COMPLETENESS, "passed"]
    crit = report["targets"][COMPLETENESS]
    human = np.array([np.mean([ANA[i], BO[i]]) if i in BO else ANA[i] for i in range(12)])
    assert crit["n_items"] == 12
    assert crit["spearman"]["value"] == pytest.approx(stats.spearmanr(judge, human).statistic)
    assert crit["kendall_tau_b"]["value"] == pytest.approx(stats.kendalltau(judge, human)
                                                           .statistic)
    assert crit["pearson"]["value"] == pytest.approx(stats.pearsonr(judge, human).statistic)
    assert crit["mean_bias"]["value"] == pytest.approx(float(np.mean(np.array(judge) - human)))
    # kappa on the consensus rounded half up to the scale, as the policy says
    rounded = np.floor(human + 0.5)
    assert crit["cohen_kappa_quadratic"]["value"] == pytest.approx(cohen_kappa_score(
        rounded, judge, labels=[1, 2, 3, 4, 5], weights="quadratic"))
    # The human baseline is the reviewers' own agreement: the same alpha as
    # reviewer_agreement gives for the target.
    alpha = reviewer_agreement(labels, n_resamples=200)[COMPLETENESS].alpha
    assert crit["human_baseline"]["krippendorff_alpha_ordinal"]["value"] == pytest.approx(
        alpha.value)
    assert crit["human_baseline"]["n_items"] == len(BO)
    # pass/fail uses the criterion's own threshold (final_response_quality: 0.75 → 4 of 1..5)
    assert crit["pass_fail"]["judge_rule"].endswith("4")
    assert any("criterion's own pass threshold, 4" in note for note in crit["notes"])
    assert any("29 labels by 2 reviewers (ana, bo) on 12 samples; 20 from the random queue, "
               "9 chosen by hand" in note for note in crit["notes"])
    passed = report["targets"]["passed"]
    with RunStore.open(run_dir) as store:
        verdicts = [bool(p) for *_, p in store.score_rows()]
    assert passed["pass_fail"]["accuracy"]["value"] == pytest.approx(
        accuracy_score([a >= 4 for a in ANA], verdicts))


def test_the_terminal_report_says_what_it_rests_on_and_html_pages_per_target(
        labelled: tuple[Path, list[Label], list[float]], tmp_path: Path) -> None:
    run_dir, *_ = labelled
    page = tmp_path / "cal.html"
    result = run_cli("calibrate", "--from-run", run_dir, "--resamples", "50", "--html", page)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # wrapped at 80 columns
    assert text.startswith(f"{run_dir}: 29 labels by 2 reviewers (ana, bo) on 12 samples")
    assert COMPLETENESS in result.stdout and "Judge calibration" in result.stdout
    pages = sorted(p.name for p in tmp_path.glob("cal-*.html"))
    assert pages == ["cal-criterion-final_response_quality-completeness.html", "cal-passed.html"]
    one = run_cli("calibrate", "--from-run", run_dir, "--target", "passed", "--json",
                  "--resamples", "0")
    assert list(json.loads(one.stdout)["targets"]) == ["passed"]


def test_clear_one_line_errors(labelled: tuple[Path, list[Label], list[float]],
                               tmp_path: Path) -> None:
    run_dir, *_ = labelled
    cases = [
        (("--from-run", tmp_path), f"{tmp_path}: no run store found"),
        (("--from-run", run_dir, "--target", "rubric:safety"),
         "--target: no label on a scored sample of"),
        (("--target", "passed", "--judgments", "x.jsonl"), "--target: chooses labelled targets"),
        (("--from-run", run_dir, "--judgments", "x.jsonl"), "(only one of them)"),
        (("--from-run", run_dir, "--judge", "mock:judge"), "--judge: runs judges on a DATASET"),
    ]
    fresh = offline_run(tmp_path / "fresh")
    no_labels = run_cli("calibrate", "--from-run", fresh)
    assert no_labels.returncode == 2
    assert no_labels.stderr.startswith(f"error: {fresh}: has no human labels yet")
    with RunStore.open(fresh) as store:
        store.add_labels([label()])
    db = sqlite3.connect(fresh / "run.sqlite")
    with db:
        db.execute("UPDATE samples SET status = 'errored'")
    db.close()
    cases.append((("--from-run", fresh), "its label is on a sample the run did not score"))
    for args, expected in cases:
        result = run_cli("calibrate", *args)
        assert result.returncode == 2, (args, result.stdout)
        assert expected in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1
