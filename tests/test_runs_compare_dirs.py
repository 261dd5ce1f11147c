"""``compare_run_dirs`` in process (the CLI tests run it in a subprocess): two offline runs of
the example suite compared with the documented defaults (alpha 0.05, the paired t test),
every figure a user reads checked against the stored samples — scipy's paired t test on the
scenario means, McNemar's counts from the stored pass flags paired by epoch — and a tag
selection that compares only the selected scenarios, or names the run it found none in."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from harness.errors import InputError
from harness.runs.api import run_suite
from harness.runs.comparison import compare_run_dirs
from harness.runs.config import RunConfig
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.scenarios.selectors import ScenarioFilter
from harness.transcript import ErrorInfo, Transcript

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("compare")
    for agent, name in (("mock:agent", "good"), ("mock:agent-flaky", "flaky")):
        config = RunConfig(scenario_paths=[str(ROOT / "scenarios")], offline=True, epochs=2,
                           cache_mode="off", agent=agent, bootstrap_resamples=0)
        asyncio.run(run_suite(config, base / name))
    return base / "good", base / "flaky"


def _samples(run_dir: Path) -> dict[str, list[dict[str, object]]]:
    per: dict[str, list[dict[str, object]]] = defaultdict(list)
    for line in (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        per[record["scenario_id"]].append(record)
    return {sid: sorted(xs, key=lambda r: r["epoch"]) for sid, xs in per.items()}  # type: ignore[arg-type, return-value]


def _t_p(base: dict[str, list[dict[str, object]]], cand: dict[str, list[dict[str, object]]],
         ids: list[str]) -> float:
    def mean(xs: list[dict[str, object]]) -> float:
        return float(np.mean([x["score"] for x in xs]))
    return float(stats.ttest_rel([mean(cand[s]) for s in ids],
                                 [mean(base[s]) for s in ids]).pvalue)


def test_two_runs_compare_with_the_documented_defaults(runs: tuple[Path, Path]) -> None:
    good, flaky = runs
    base, cand = _samples(good), _samples(flaky)
    data = compare_run_dirs(good, flaky)
    assert data["alpha"] == 0.05 and data["verdict_test"] == "t"
    assert data["n_scenarios"] == len(base) == 11
    assert data["t_test"]["p_value"] == pytest.approx(_t_p(base, cand, sorted(base)))
    # McNemar on the stored pass flags, epoch i against epoch i.
    pairs = [(b["passed"], c["passed"]) for sid in base
             for b, c in zip(base[sid], cand[sid], strict=True)]
    mc = data["mcnemar"]
    assert (mc["n_pairs"], mc["both_passed"], mc["both_failed"], mc["only_baseline_passed"],
            mc["only_candidate_passed"]) == (
        len(pairs), pairs.count((True, True)), pairs.count((False, False)),
        pairs.count((True, False)), pairs.count((False, True)))
    assert mc["only_baseline_passed"] + mc["only_candidate_passed"] > 0
    # Both runs offline, every sample of each.
    assert data["offline"] == {"baseline": True, "candidate": True}
    assert data["offline_samples"] == {"baseline": 22, "candidate": 22}
    assert data["roles"]["candidate"]["agent"]["offline_models"] == ["mock:agent-flaky"]
    assert data["notice"].startswith("OFFLINE models in both runs. baseline: OFFLINE roles: "
                                     "agent (mock:agent)")
    assert data["selection"] is None
    assert data["verdict"]["headline"].startswith(
        "no significant difference in the mean over 11 scenarios (paired t test")


def test_the_permutation_test_and_its_seed_are_passed_on(runs: tuple[Path, Path]) -> None:
    data = compare_run_dirs(*runs, test="permutation", alpha=0.2)
    assert data["verdict_test"] == "permutation" and data["alpha"] == 0.2
    assert "paired permutation test" in data["verdict"]["headline"]


def test_a_tag_selection_compares_only_its_scenarios(runs: tuple[Path, Path]) -> None:
    good, flaky = runs
    base, cand = _samples(good), _samples(flaky)
    weather = sorted(s for s in base if s.startswith("weather-"))
    selector = ScenarioFilter(tags=["weather"])
    data = compare_run_dirs(good, flaky, selector=selector)
    assert sorted(r["scenario_id"] for r in data["scenarios"]) == weather
    assert data["n_scenarios"] == len(weather)
    assert data["t_test"]["p_value"] == pytest.approx(_t_p(base, cand, weather))
    assert data["mcnemar"]["n_pairs"] == 2 * len(weather)
    assert data["selection"] == {"tags": ["weather"], "exclude_tags": [], "keywords": []}


def test_a_tag_no_stored_scenario_has_names_the_run(runs: tuple[Path, Path]) -> None:
    with pytest.raises(InputError) as err:
        compare_run_dirs(*runs, selector=ScenarioFilter(tags=["weathr"]))
    assert str(err.value).startswith(f"{runs[0]}: no scenario has the tag weathr")


# --- each run's own error policy, and the stored pass flags -------------------------------

# Per scenario, the (score, passed) of epochs 0..2; None is an errored sample. The pass flags
# are the rubric's (0.8 passes a threshold of 0.7), not score >= 1.
BASELINE = {"s1": [(0.8, True), (0.8, True), (0.8, True)],
            "s2": [(0.6, False), (0.8, True), (0.6, False)],
            "s3": [(1.0, True), (0.4, False), (1.0, True)]}
CANDIDATE = {"s1": [(0.8, True), (0.9, True), None],
             "s2": [(0.8, True), (0.8, True), (0.8, True)],
             "s3": [(0.4, False), None, (1.0, True)]}


def _hand_made_run(run_dir: Path, samples: dict[str, list[tuple[float, bool] | None]],
                   policy: str | None) -> Path:
    run = {} if policy is None else {"error_policy": policy}
    with RunStore.create(run_dir, {"run": run}) as store:
        for sid, epochs in samples.items():
            for epoch, sample in enumerate(epochs):
                transcript = Transcript(scenario_id=sid, epoch=epoch, stop_reason="goal_met")
                if sample is None:
                    record = SampleRecord(scenario_id=sid, epoch=epoch, status="errored",
                                          transcript=transcript,
                                          error=ErrorInfo(kind="agent_error", message="500"))
                else:
                    record = SampleRecord(scenario_id=sid, epoch=epoch, status="scored",
                                          score=sample[0], passed=sample[1],
                                          transcript=transcript)
                store.write_sample(record)
    return run_dir


def _as_read(samples: dict[str, list[tuple[float, bool] | None]], policy: str
             ) -> tuple[dict[str, list[float]], dict[str, list[bool]]]:
    scores = {sid: [0.0 if s is None else s[0] for s in xs if s is not None
                    or policy == "as_failures"] for sid, xs in samples.items()}
    passed = {sid: [False if s is None else s[1] for s in xs if s is not None
                    or policy == "as_failures"] for sid, xs in samples.items()}
    return scores, passed


@pytest.mark.parametrize("policy", [None, "exclude", "as_failures"])
def test_each_run_is_read_under_its_own_error_policy(tmp_path: Path, policy: str | None
                                                     ) -> None:
    base = _hand_made_run(tmp_path / "base", BASELINE, "exclude")
    cand = _hand_made_run(tmp_path / "cand", CANDIDATE, policy)
    data = compare_run_dirs(base, cand)
    cand_scores, cand_passed = _as_read(CANDIDATE, policy or "exclude")
    base_scores, base_passed = _as_read(BASELINE, "exclude")
    ids = sorted(BASELINE)
    assert [r["candidate_epochs"] for r in data["scenarios"]] == [
        len(cand_scores[s]) for s in ids]
    means_b = [float(np.mean(cand_scores[s])) for s in ids]
    means_a = [float(np.mean(base_scores[s])) for s in ids]
    assert data["candidate_mean"] == pytest.approx(np.mean(means_b))
    assert data["t_test"]["p_value"] == pytest.approx(
        float(stats.ttest_rel(means_b, means_a).pvalue))
    # McNemar pairs the i-th stored pass flag of each run, up to the shorter run
    pairs = [(b, c) for s in ids for b, c in zip(base_passed[s], cand_passed[s], strict=False)]
    mc = data["mcnemar"]
    assert (mc["n_pairs"], mc["both_passed"], mc["both_failed"], mc["only_baseline_passed"],
            mc["only_candidate_passed"]) == (
        len(pairs), pairs.count((True, True)), pairs.count((False, False)),
        pairs.count((True, False)), pairs.count((False, True)))
    # the stored flags, not score >= 1: 0.8 passes here
    assert mc["both_passed"] >= 3
    if policy == "as_failures":
        assert data["candidate_mean"] < data["baseline_mean"]
        assert mc["n_pairs"] == 9
    else:
        assert data["candidate_mean"] > data["baseline_mean"]
        assert mc["n_pairs"] == 7


def test_a_selection_pairs_the_stored_pass_flags_of_its_scenarios_only(tmp_path: Path) -> None:
    base = _hand_made_run(tmp_path / "base", BASELINE, "exclude")
    cand = _hand_made_run(tmp_path / "cand", CANDIDATE, "exclude")
    data = compare_run_dirs(base, cand, selector=ScenarioFilter(keywords=["s2", "s3"]))
    (_, base_passed), (_, cand_passed) = _as_read(BASELINE, "exclude"), _as_read(
        CANDIDATE, "exclude")
    pairs = [(b, c) for s in ("s2", "s3")
             for b, c in zip(base_passed[s], cand_passed[s], strict=False)]
    mc = data["mcnemar"]
    assert [r["scenario_id"] for r in data["scenarios"]] == ["s2", "s3"]
    assert (mc["n_pairs"], mc["both_passed"], mc["only_baseline_passed"],
            mc["only_candidate_passed"]) == (
        len(pairs), pairs.count((True, True)), pairs.count((True, False)),
        pairs.count((False, True))) == (5, 1, 1, 3)
