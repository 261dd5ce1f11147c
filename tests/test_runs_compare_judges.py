"""Judge drift in ``harness compare``: runs judged alike compare as before; runs judged
differently are said to be, naming what differs, and their judge-based differences are not
called the agent's; ``--fail-on-regression`` fails on a changed judge unless
``--allow-judge-change``; one run without a record, rubric sets that differ only on
scenarios not compared, a merged run of mixed judges, scenarios scored by checks alone; and
the corrected figures of two labelled runs with their difference."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.runs.api import run_suite
from harness.runs.comparison import compare_run_dirs
from harness.runs.config import RunConfig
from harness.runs.judge_drift import judge_comparison
from harness.runs.judge_record import (
    JUDGE_KEY,
    JudgePart,
    JudgeRecord,
    RubricJudging,
    read_judge_record,
    write_judge_record,
)
from harness.runs.label_model import Label
from harness.runs.store import RunStore
from harness.scenarios.selectors import ScenarioFilter
from harness.stats.compare import difference_interval
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]


def _run(run_dir: Path, **extra: object) -> Path:
    config = RunConfig.model_validate({"scenario_paths": [str(ROOT / "scenarios")],
                                       "offline": True, "epochs": 2, "cache_mode": "off",
                                       "bootstrap_resamples": 0, **extra})
    asyncio.run(run_suite(config, run_dir))
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("judges")
    _run(base / "base")
    _run(base / "same", agent="mock:agent-flaky")
    _run(base / "drift", agent="mock:agent-flaky", judge_samples=2)
    return base


def _copy(runs: Path, name: str, tmp_path: Path) -> Path:
    out = tmp_path / name
    shutil.copytree(runs / name, out)
    return out


def _record(run_dir: Path) -> JudgeRecord:
    with RunStore.open(run_dir, read_only=True) as store:
        record = read_judge_record(store)
    assert record is not None
    return record


def test_runs_judged_alike_compare_as_before(runs: Path) -> None:
    data = compare_run_dirs(runs / "base", runs / "same")
    judges = data["judges"]
    assert (judges["same"], judges["warning"], judges["differences"]) == (True, None, [])
    assert judges["baseline"]["models"] == ["mock:judge"]
    assert not any(row["judge_changed"] for row in data["scenarios"])
    assert data["verdict"]["judge_changed"] is False
    assert "judge" not in data["verdict"]["headline"]
    assert data["corrected"] is None  # no labels in either run


def test_a_changed_judge_is_named_and_the_verdict_is_not_the_agents(runs: Path) -> None:
    data = compare_run_dirs(runs / "base", runs / "drift")
    judges = data["judges"]
    assert judges["same"] is False
    assert len(judges["differences"]) == 1
    assert judges["differences"][0].startswith("samples: 1 vs 2 of ")
    assert len(judges["changed_scenarios"]) == data["n_scenarios"]
    assert all(row["judge_changed"] for row in data["scenarios"])
    verdict = data["verdict"]
    assert verdict["judge_changed"] is True
    assert "judge changed" in verdict["headline"]
    assert "not a regression or an improvement of the agent" in verdict["judge"]


def test_the_terminal_and_the_gate_name_the_changed_judge(runs: Path) -> None:
    done = run_cli("compare", runs / "base", runs / "drift", "--fail-on-regression")
    assert done.returncode == 1
    assert "JUDGES DIFFER" in done.stdout
    assert "samples: 1 vs 2 of" in done.stdout
    assert "lower*" in done.stdout or "higher*" in done.stdout
    assert "gate FAIL the judges differ (samples: 1 vs 2" in " ".join(done.stderr.split())
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    allowed = run_cli("compare", runs / "base", runs / "drift", "--fail-on-regression",
                      "--allow-judge-change")
    assert allowed.returncode == 0, allowed.stderr  # no significant regression here
    alike = run_cli("compare", runs / "base", runs / "same", "--fail-on-regression")
    assert alike.returncode == 0 and "JUDGES DIFFER" not in alike.stdout


def test_one_run_without_a_record_is_not_recorded_not_guessed(runs: Path,
                                                             tmp_path: Path) -> None:
    old = _copy(runs, "base", tmp_path)
    with RunStore.open(old) as store:
        store._db.execute("DELETE FROM meta WHERE key = ?", (JUDGE_KEY,))
        store._db.commit()
    data = compare_run_dirs(old, runs / "drift")
    judges = data["judges"]
    assert judges["same"] is None
    assert judges["baseline"]["status"] == "not recorded"
    assert judges["candidate"]["status"] == "recorded"
    assert judges["warning"].startswith("judge not recorded for the baseline")
    assert data["verdict"]["judge_changed"] is False
    done = run_cli("compare", old, runs / "drift", "--fail-on-regression")
    assert done.returncode == 0, done.stderr
    assert "Judge not recorded for the baseline (a run written before judges were " \
        "recorded)" in " ".join(done.stdout.split())


def test_rubrics_that_differ_only_on_scenarios_not_compared_are_no_drift(
        runs: Path, tmp_path: Path) -> None:
    cand = _copy(runs, "same", tmp_path)
    record = _record(cand)
    assert record.definition is not None
    d = record.definition
    # files-action-items is judged under a reworded rubric in the candidate only
    changed = [RubricJudging(**{**r.model_dump(), "sha256": "0" * 64}) for r in d.rubrics]
    rubrics = [*d.rubrics, *changed]
    scenarios = {sid: ([i + len(d.rubrics) for i in idx] if sid == "files-action-items"
                       else idx) for sid, idx in d.scenarios.items()}
    with RunStore.open(cand) as store:
        write_judge_record(store, JudgeRecord(definition=d.model_copy(
            update={"rubrics": rubrics, "scenarios": scenarios})))
    everything = compare_run_dirs(runs / "base", cand)
    assert everything["judges"]["changed_scenarios"] == ["files-action-items"]
    assert everything["judges"]["differences"][0].startswith("rubric text of ")
    assert "(in 1 of 11 scenarios)" in everything["judges"]["differences"][0]
    weather = compare_run_dirs(runs / "base", cand,
                               selector=ScenarioFilter(keywords=["weather"]))
    assert weather["judges"]["same"] is True and weather["judges"]["warning"] is None


def test_scenarios_scored_by_checks_alone_are_not_affected(runs: Path) -> None:
    a, b = _record(runs / "base"), _record(runs / "drift")
    assert a.definition is not None and b.definition is not None
    ids = list(a.definition.scenarios)
    checks_only = ids[0]
    a2, b2 = (JudgeRecord(definition=r.definition.model_copy(update={"scenarios": {
        **r.definition.scenarios, checks_only: []}})) for r in (a, b)
        if r.definition is not None)
    out = judge_comparison(a2, b2, ids)
    assert out["checks_only"] == [checks_only]
    assert checks_only not in out["changed_scenarios"]
    assert len(out["changed_scenarios"]) == len(ids) - 1


def test_a_merged_run_of_mixed_judges_is_not_one_judge(runs: Path, tmp_path: Path) -> None:
    mixed = _copy(runs, "drift", tmp_path)
    a, b = _record(runs / "base"), _record(runs / "drift")
    with RunStore.open(mixed) as store:
        write_judge_record(store, JudgeRecord(mixed=[
            JudgePart(part="shard 1/2", definition=a.definition),
            JudgePart(part="shard 2/2", definition=b.definition)]))
    data = compare_run_dirs(runs / "base", mixed)
    judges = data["judges"]
    assert judges["same"] is False
    assert judges["candidate"]["status"] == "mixed"
    assert judges["differences"][0] == "the candidate mixes judges (shard 1/2, shard 2/2)"
    assert any(d.startswith("shard 2/2 against the other run: samples: 1 vs 2")
               for d in judges["differences"])
    assert data["verdict"]["judge_changed"] is True
    done = run_cli("compare", runs / "base", mixed, "--fail-on-regression")
    assert done.returncode == 1 and "mixes judges" in " ".join(done.stderr.split())


def _label(run_dir: Path, shift: float, n: int = 14) -> None:
    rng = random.Random(7)
    with RunStore.open(run_dir) as store:
        rows = [r for r in store.score_rows() if r[2] == "scored"]
        labels = []
        for sid, epoch, _status, score, _ok in rng.sample(rows, n):
            assert score is not None
            value = min(1.0, max(0.0, score - shift + rng.uniform(-0.05, 0.05)))
            labels += [Label(scenario_id=sid, epoch=epoch, annotator="ana", target="score",
                             value=value, random=True),
                       Label(scenario_id=sid, epoch=epoch, annotator="ana", target="passed",
                             value=value > 0.8, random=True)]
        store.add_labels(labels)


def test_two_labelled_runs_compare_on_the_reviewers_scale(runs: Path, tmp_path: Path) -> None:
    base, cand = _copy(runs, "base", tmp_path), _copy(runs, "drift", tmp_path)
    _label(base, 0.05)
    only_base = compare_run_dirs(base, cand)["corrected"]
    assert only_base["candidate"] is None and only_base["difference"]["mean"] is None
    assert only_base["note"].startswith("only the baseline has human labels")
    _label(cand, 0.3)
    data = compare_run_dirs(base, cand)
    corrected = data["corrected"]
    a, b = corrected["baseline"]["mean"], corrected["candidate"]["mean"]
    assert corrected["baseline"]["n_labelled_samples"] == 14
    assert "agreement" not in corrected["baseline"]  # the reports' layer adds it
    d = corrected["difference"]["mean"]
    assert d["value"] == pytest.approx(b["value"] - a["value"])
    low, high = difference_interval(a["value"], a["ci_low"], a["ci_high"], b["value"],
                                     b["ci_low"], b["ci_high"])
    assert (d["ci_low"], d["ci_high"]) == pytest.approx((low, high))
    assert d["ci_high"] < 0  # the reviewers marked the candidate down far more
    assert data["verdict"]["corrected"].startswith(
        "On the reviewers' scale (corrected by human labels), the candidate's mean score is "
        "lower")
    done = run_cli("compare", base, cand)
    assert "On the reviewers' scale: corrected by human labels" in done.stdout
    assert "Each judge against its own reviewers" in done.stdout
    page = tmp_path / "compare.html"
    assert run_cli("compare", base, cand, "--html", page).returncode == 0
    html = page.read_text(encoding="utf-8")
    assert 'id="judge-drift"' in html and 'id="corrected-table"' in html
    assert f"{d['value']:+.3f}" in html and 'id="agreement-table"' in html
    # each judge's agreement with its own reviewers, as compare --json gives it: the
    # baseline's judge scores near its reviewers (shift 0.05), the candidate's 0.3 above
    shown = json.loads(run_cli("compare", base, cand, "--json").stdout)["corrected"]
    for which, path, shift in (("baseline", base, 0.05), ("candidate", cand, 0.3)):
        agreement = {t["target"]: t for t in shown[which]["agreement"]}
        assert set(agreement) == {"passed", "score"}
        with RunStore.open(path) as store:
            labels = [lb for lb in store.labels() if lb.target == "score"]
            judge = {(s, e): score for s, e, _, score, _ in store.score_rows()}
        bias = np.mean([judge[(lb.scenario_id, lb.epoch)] - lb.value for lb in labels])
        assert agreement["score"]["mean_bias"]["value"] == pytest.approx(bias)
        assert bias == pytest.approx(shift, abs=0.03)
        assert agreement["score"]["n_samples"] == 14


def test_corrected_figures_cover_the_compared_scenarios_only(runs: Path,
                                                             tmp_path: Path) -> None:
    base, cand = _copy(runs, "base", tmp_path), _copy(runs, "same", tmp_path)
    _label(base, 0.05, n=22)  # every scored sample
    _label(cand, 0.05, n=22)
    data = compare_run_dirs(base, cand, selector=ScenarioFilter(keywords=["weather"]))
    weather = [row["scenario_id"] for row in data["scenarios"]]
    mean = data["corrected"]["baseline"]["mean"]
    assert (mean["n_scenarios"], mean["n_samples"]) == (len(weather), 2 * len(weather))
    assert data["corrected"]["baseline"]["n_labelled_samples"] == 2 * len(weather)


def test_a_compared_scenario_missing_from_a_record_is_not_vouched_for(runs: Path) -> None:
    a, b = _record(runs / "base"), _record(runs / "same")
    assert a.definition is not None and b.definition is not None
    ids = list(a.definition.scenarios)
    scenarios = {sid: idx for sid, idx in b.definition.scenarios.items() if sid != ids[0]}
    b2 = JudgeRecord(definition=b.definition.model_copy(update={"scenarios": scenarios}))
    out = judge_comparison(a, b2, ids)
    assert out["same"] is False and out["changed_scenarios"] == [ids[0]]
    assert out["differences"] == [
        f"1 compared scenario missing from a run's judge record (first: {ids[0]})"]


def test_only_the_candidate_labelled_or_too_few_labels_say_what_is_missing(
        runs: Path, tmp_path: Path) -> None:
    base, cand = _copy(runs, "base", tmp_path), _copy(runs, "drift", tmp_path)
    _label(cand, 0.1)
    only_cand = compare_run_dirs(base, cand)["corrected"]
    assert only_cand["baseline"] is None
    assert only_cand["candidate"]["n_labels"] == 28  # 14 samples, a score and a pass each
    assert only_cand["difference"] == {"mean": None, "pass_rate": None}
    assert only_cand["note"] == (
        "only the candidate has human labels of the compared scenarios: label a random "
        "sample of the baseline's samples (harness view) to compare the runs on the "
        "reviewers' scale")
    # Both labelled, one too thinly: its figures are withheld, so there is no difference.
    _label(base, 0.05, n=3)
    thin = compare_run_dirs(base, cand)["corrected"]
    assert thin["baseline"]["mean"]["withheld"] is not None
    assert thin["baseline"]["pass_rate"]["withheld"] is not None
    assert thin["difference"] == {"mean": None, "pass_rate": None}
    assert thin["note"] == (
        "no difference on the reviewers' scale: a run's corrected figures are withheld or "
        "it has no random labels (see each run's notes)")


def test_the_corrected_pass_rates_difference_is_the_two_runs_intervals_combined(
        runs: Path, tmp_path: Path) -> None:
    base, cand = _copy(runs, "base", tmp_path), _copy(runs, "drift", tmp_path)
    _label(base, 0.05)
    _label(cand, 0.3)
    corrected = compare_run_dirs(base, cand)["corrected"]
    assert corrected["note"] is None
    a, b = corrected["baseline"]["pass_rate"], corrected["candidate"]["pass_rate"]
    assert a["target"] == "pass_rate" and b["target"] == "pass_rate"
    d = corrected["difference"]["pass_rate"]
    assert d["value"] == pytest.approx(b["value"] - a["value"])
    low, high = difference_interval(a["value"], a["ci_low"], a["ci_high"], b["value"],
                                    b["ci_low"], b["ci_high"])
    assert (d["ci_low"], d["ci_high"]) == pytest.approx((low, high))
