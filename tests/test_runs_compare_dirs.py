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
from harness.scenarios.selectors import ScenarioFilter

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
