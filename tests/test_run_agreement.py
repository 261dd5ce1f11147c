"""A run's human labels in its report (issue 27): ``harness report [--labels FILE]`` (terminal,
``--json``, ``--html``) and ``harness stats FILE --labels FILE`` show how the run's judge
agreed with its reviewers per labelled target, with figures checked against scikit-learn and
scipy, the same figures as ``calibrate --from-run`` (one implementation, scenarios
resampled), and the corrected figures beside the judge's; bad input is one line, or a
figure with a note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, cohen_kappa_score, recall_score

from harness.runs.corrected_figures import run_corrected_figures
from harness.runs.label_files import label_file_text
from harness.runs.labels import Label
from harness.runs.store import RunStore
from harness.runs.summary import read_summary
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli
from tests.helpers.labelled_runs import label, offline_run

CORRECTNESS = "criterion:final_response_quality/correctness"
FLIPPED = {1, 6}  # samples the reviewers judged the other way from the judge
CHOSEN = {0, 4, 8}  # samples the reviewer picked by hand


def _judge(run_dir: Path) -> list[tuple[str, int, float, bool]]:
    with RunStore.open(run_dir) as store:
        return [(sid, epoch, float(score), bool(ok))
                for sid, epoch, _, score, ok in store.score_rows()]


def _labels(samples: list[tuple[str, int, float, bool]]) -> list[Label]:
    out = []
    for i, (sid, epoch, score, ok) in enumerate(samples):
        random = i not in CHOSEN
        out.append(label(sid, epoch, target="passed", value=ok != (i in FLIPPED),
                         random=random))
        out.append(label(sid, epoch, target="score", value=round(max(0.0, score - 0.1 * (i % 3)),
                                                                   3), random=random))
    return out


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Any]]:
    """A run with its labels imported, the label file, and the judge's verdicts."""
    base = tmp_path_factory.mktemp("agreement")
    run_dir = offline_run(base / "run")
    samples = _judge(run_dir)
    path = base / "labels.jsonl"
    path.write_text(label_file_text(_labels(samples)), encoding="utf-8")
    done = run_cli("labels", "import", run_dir, path)
    assert done.returncode == 0, done.stderr
    return run_dir, path, samples


def _report_json(*args: str | Path) -> dict[str, Any]:
    done = run_cli("report", *args, "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _targets(agreement: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["target"]: t for t in agreement["targets"]}


def test_the_agreement_matches_scikit_learn_and_scipy(
        labelled: tuple[Path, Path, list[Any]]) -> None:
    run_dir, _, samples = labelled
    out = _report_json(run_dir)
    agreement = out["agreement"]
    assert agreement["labels"] == {"labels": 24, "reviewers": 1, "samples": 12, "random": 18,
                                   "chosen": 6}
    assert agreement["source"] == "the run's stored labels" and agreement["left_out"] == []
    targets = _targets(agreement)
    judge = np.array([ok for *_, ok in samples])
    human = np.array([ok != (i in FLIPPED) for i, (*_, ok) in enumerate(samples)])
    passed = targets["passed"]
    assert (passed["kind"], passed["n_samples"], passed["n_random"], passed["n_chosen"]) == (
        "pass_fail", 12, 9, 3)
    assert passed["sensitivity"]["value"] == pytest.approx(recall_score(human, judge))
    assert passed["sensitivity"]["n"] == int(human.sum())
    assert passed["specificity"]["value"] == pytest.approx(
        recall_score(human, judge, pos_label=False))
    assert passed["specificity"]["n"] == int((~human).sum())
    assert passed["accuracy"]["value"] == pytest.approx(accuracy_score(human, judge))
    assert passed["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(human, judge))
    assert passed["mean_bias"] is None  # a pass/fail target has the pass/fail figures
    score = targets["score"]
    judge_score = np.array([s for _, _, s, _ in samples])
    human_score = np.array([round(max(0.0, s - 0.1 * (i % 3)), 3)
                            for i, (_, _, s, _) in enumerate(samples)])
    assert score["kind"] == "score" and score["sensitivity"] is None
    assert score["mean_bias"]["value"] == pytest.approx(np.mean(judge_score - human_score))
    assert score["mae"]["value"] == pytest.approx(np.mean(np.abs(judge_score - human_score)))
    assert score["spearman"]["value"] == pytest.approx(
        stats.spearmanr(judge_score, human_score).statistic)
    for target in (passed, score):
        for name in ("accuracy", "mean_bias"):
            est = target[name]
            if est is not None:
                assert est["ci_low"] <= est["value"] <= est["ci_high"]
    assert "over scenarios" in agreement["method"]


def test_one_implementation_with_calibrate_from_run_scenarios_resampled(
        labelled: tuple[Path, Path, list[Any]]) -> None:
    """The report's figures, intervals included, are calibrate --from-run's: the same
    analysis, the same resamples of scenarios."""
    run_dir, *_ = labelled
    ours = _targets(_report_json(run_dir)["agreement"])
    done = run_cli("calibrate", "--from-run", run_dir, "--json")
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)["targets"]
    assert ours["passed"]["accuracy"] == theirs["passed"]["pass_fail"]["accuracy"]
    assert ours["passed"]["cohen_kappa"] == theirs["passed"]["pass_fail"]["cohen_kappa"]
    assert ours["score"]["spearman"] == theirs["score"]["spearman"]
    assert any("over clusters" in p for p in json.loads(done.stdout)["targets"]["passed"]
               ["policies"])


def test_the_corrected_figures_are_the_runs_own(labelled: tuple[Path, Path, list[Any]]
                                                ) -> None:
    run_dir, *_ = labelled
    out = _report_json(run_dir)
    design = read_summary(run_dir).config.design
    with RunStore.open(run_dir) as store:
        expected = run_corrected_figures(store, error_policy=design.error_policy,
                                         confidence=design.confidence, seed=design.seed)
    assert expected is not None
    assert out["corrected"] == expected.model_dump(mode="json")
    assert out["corrected"]["n_chosen_left_out"] == 6
    assert out["corrected"]["pass_rate"]["n_labelled"] == 9  # the random ones only


def test_the_terminal_shows_agreement_then_corrected_after_the_suite(
        labelled: tuple[Path, Path, list[Any]]) -> None:
    run_dir, *_ = labelled
    done = run_cli("report", run_dir)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    order = [text.index(s) for s in ("Suite (", "24 labels by 1 reviewer on 12 samples",
                                     "Judge vs reviewers", "Judge and human-corrected",
                                     "Scenarios (")]
    assert order == sorted(order)
    flat = " ".join(text.split())
    for words in ("18 from the random queue, 6 chosen by hand", "sensitivity", "specificity",
                  "Cohen's kappa", "mean bias", "Spearman", "corrected with 9",
                  "6 labels chosen by hand (random: false) left out of the correction"):
        assert words in flat, words


def test_no_labels_changes_nothing(tmp_path: Path) -> None:
    run_dir = offline_run(tmp_path / "run")
    done = run_cli("report", run_dir, "--json")
    assert done.returncode == 0, done.stderr
    summary = read_summary(run_dir).model_dump(mode="json")
    assert done.stdout == json.dumps(summary, indent=2) + "\n"
    assert "Judge vs reviewers" not in run_cli("report", run_dir).stdout
    # a summary without its store (copied alone) still reports
    (run_dir / "run.sqlite").rename(tmp_path / "elsewhere.sqlite")
    assert run_cli("report", run_dir, "--json").stdout == done.stdout


def test_a_label_file_replaces_the_stored_labels(labelled: tuple[Path, Path, list[Any]],
                                                 tmp_path: Path) -> None:
    run_dir, _, samples = labelled
    path = tmp_path / "only-passed.jsonl"
    sid, epoch, *_ = samples[2]
    path.write_text(label_file_text([
        label(sid, epoch, target="passed", value=True),
        label(sid, epoch, target="passed", value=False, labelled_at="2020-01-01T00:00:00Z"),
    ]), encoding="utf-8")
    out = _report_json(run_dir, "--labels", path)
    agreement = out["agreement"]
    assert agreement["source"] == str(path)
    # the later of one reviewer's two labels counts, as the store keeps them
    assert agreement["labels"]["labels"] == 1
    assert [t["target"] for t in agreement["targets"]] == ["passed"]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _one_line_error(done: Any, expected: str) -> None:
    assert done.returncode == 2, done.stdout
    assert expected in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("line, expected", [
    ({"scenario_id": "no-such-scenario"}, "scenario_id: 'no-such-scenario' is not a scenario"),
    ({"epoch": 7}, "epoch: scenario 'weather-current-paris' has no epoch 7"),
    ({"target": CORRECTNESS, "value": 7}, "value: 7 is not on the scale"),
    ({"random": None}, "random: required field is missing"),
])
def test_bad_label_files_are_one_line(labelled: tuple[Path, Path, list[Any]], tmp_path: Path,
                                      line: dict[str, Any], expected: str) -> None:
    run_dir, *_ = labelled
    good = {"scenario_id": "weather-current-paris", "epoch": 0, "annotator": "ana",
            "target": "passed", "value": True, "random": True}
    bad = {k: v for k, v in {**good, **line}.items() if v is not None}
    path = _write(tmp_path / "bad.jsonl", [good, bad])
    for args in (("report", run_dir), ("report", run_dir, "--json"),
                 ("report", run_dir, "--html", tmp_path / "page.html")):
        _one_line_error(run_cli(*args, "--labels", path), f"{path}:2: {expected}")
    if "scenario" in expected or "epoch" in expected:
        _one_line_error(run_cli("stats", run_dir / "samples.jsonl", "--labels", path),
                        f"{path}:2: {expected.split(':')[0]}")


def test_labels_with_a_scenario_selection_is_one_line(
        labelled: tuple[Path, Path, list[Any]]) -> None:
    run_dir, path, _ = labelled
    _one_line_error(run_cli("report", run_dir, "--labels", path, "--tag", "weather"),
                    "--labels: the labels are measured against the whole run")


def test_one_label_and_labels_all_equal_give_figures_with_notes(
        labelled: tuple[Path, Path, list[Any]], tmp_path: Path) -> None:
    run_dir, _, samples = labelled
    one = tmp_path / "one.jsonl"
    sid, epoch, *_ = samples[0]
    one.write_text(label_file_text([label(sid, epoch, target="passed", value=True)]),
                   encoding="utf-8")
    out = _report_json(run_dir, "--labels", one)
    passed = _targets(out["agreement"])["passed"]
    assert passed["n_samples"] == 1
    assert passed["specificity"]["value"] is None
    assert passed["specificity"]["undefined"] == "specificity: the humans failed no output"
    assert "needs at least 10 random labels, got 1" in out["corrected"]["pass_rate"]["withheld"]
    done = run_cli("report", run_dir, "--labels", one)
    flat = " ".join(done.stdout.split())
    assert ("passed: specificity: no figure (the humans failed no output)"
            in flat)
    assert "pass rate: withheld: needs at least 10 random labels, got 1: 9 more" in flat
    # every reviewer passes every sample: what agreement cannot say is said, not guessed
    same = tmp_path / "same.jsonl"
    same.write_text(label_file_text([label(s, e, target="passed", value=True)
                                     for s, e, *_ in samples]), encoding="utf-8")
    passed = _targets(_report_json(run_dir, "--labels", same)["agreement"])["passed"]
    assert passed["sensitivity"]["value"] == pytest.approx(np.mean([ok for *_, ok in samples]))
    assert passed["specificity"]["undefined"] == "specificity: the humans failed no output"


def test_labels_on_unscored_samples_are_left_out_and_said(
        labelled: tuple[Path, Path, list[Any]], tmp_path: Path) -> None:
    import shutil
    import sqlite3

    run_dir = tmp_path / "run"
    shutil.copytree(labelled[0], run_dir)
    sid, epoch, *_ = labelled[2][0]
    db = sqlite3.connect(run_dir / "run.sqlite")
    with db:
        db.execute("UPDATE samples SET status = 'errored' WHERE scenario_id = ? AND epoch = ?",
                   (sid, epoch))
    db.close()
    agreement = _report_json(run_dir)["agreement"]
    assert agreement["left_out"] == [{"count": 2, "reason": "on samples the run did not score "
                                      "(errored or unscored): no judge verdict to compare with"}]
    assert _targets(agreement)["passed"]["n_samples"] == 11


def test_a_judge_with_no_variance_gives_a_figure_with_a_note(tmp_path: Path) -> None:
    scores = _write(tmp_path / "scores.jsonl", [
        {"scenario_id": f"s{i}", "epoch": e, "score": 1.0} for i in range(6) for e in range(2)])
    labels = _write(tmp_path / "labels.jsonl", [
        {"scenario_id": f"s{i}", "epoch": e, "annotator": "ana", "target": "score",
         "value": (i + e) / 7, "random": True} for i in range(6) for e in range(2)])
    done = run_cli("stats", scores, "--labels", labels, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert list(out)[-3:] == ["corrected", "agreement", "scenarios"]
    score = _targets(out["agreement"])["score"]
    assert score["spearman"]["value"] is None and "constant" in score["spearman"]["undefined"]
    assert score["mean_bias"]["value"] == pytest.approx(
        np.mean([1 - (i + e) / 7 for i in range(6) for e in range(2)]))
    text = " ".join(run_cli("stats", scores, "--labels", labels).stdout.split())
    assert "score: Spearman: no figure (" in text


def test_stats_gives_the_same_agreement_as_the_report(
        labelled: tuple[Path, Path, list[Any]]) -> None:
    run_dir, path, _ = labelled
    done = run_cli("stats", run_dir / "samples.jsonl", "--labels", path, "--json")
    assert done.returncode == 0, done.stderr
    ours = json.loads(done.stdout)
    report = _report_json(run_dir, "--labels", path)
    assert _targets(ours["agreement"]) == _targets(report["agreement"])
    assert ours["agreement"]["labels"] == report["agreement"]["labels"]
    assert "agreement" not in json.loads(run_cli("stats", run_dir / "samples.jsonl",
                                                 "--json").stdout)


def test_the_html_report_shows_both_sources_and_escapes_outside_text(
        labelled: tuple[Path, Path, list[Any]], tmp_path: Path) -> None:
    run_dir, path, _ = labelled
    hostile = tmp_path / "<img src=x onerror=alert(1)>.jsonl"
    hostile.write_bytes(path.read_bytes())
    page = tmp_path / "page.html"
    done = run_cli("report", run_dir, "--html", page, "--labels", hostile)
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    assert '<section id="labels">' in html and 'href="#labels"' in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;.jsonl" in html
    assert 'data-source="judge"' in html
    assert 'data-source="corrected with 9 human labels"' in html
    assert 'data-target="passed" data-statistic="sensitivity"' in html
    assert "6 labels chosen by hand (random: false) left out of the correction" in html
    # without labels the page has no such section
    bare = offline_run(tmp_path / "bare")
    assert run_cli("report", bare, "--html", tmp_path / "bare.html").returncode == 0
    assert 'id="labels"' not in (tmp_path / "bare.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("width", [1366, 420])
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_labels_section_reads_at_laptop_and_phone_widths(
        labelled: tuple[Path, Path, list[Any]], tmp_path_factory: pytest.TempPathFactory,
        open_report: Any, width: int, dark: bool) -> None:
    run_dir, *_ = labelled
    page = tmp_path_factory.mktemp("labels-page") / "page.html"
    assert run_cli("report", run_dir, "--html", page).returncode == 0
    opened: OpenedPage = open_report(page, dark=dark)
    opened.page.set_viewport_size({"width": width, "height": 860})
    assert opened.page.evaluate("document.documentElement.scrollWidth") <= width
    section = opened.page.locator("#labels")
    assert section.is_visible()
    assert opened.page.locator("#agreement tr[data-statistic]").count() == 7
    section.screenshot(path=str(page.with_name(f"labels-{width}-{'dark' if dark else 'light'}"
                                               ".png")))
    opened.assert_quiet()
