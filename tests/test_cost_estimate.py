"""The cost of a run before it starts: ``harness run --dry-run`` (calls, tokens and cost per
role, with and without prompt caches and batch prices, the time, what a gate needs),
measured on an earlier run where one has the scenarios, and ``--max-cost`` refusing a run
estimated over it before the first call."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from scipy import stats as sps
from statsmodels.stats.power import NormalIndPower

from harness.models.prices import PriceTable
from harness.runs.config import RunConfig, RunDesign
from harness.runs.cost_estimate import (
    ALLOWANCE,
    MIN_CACHED_PREFIX,
    CostEstimate,
    _growing,
    estimate_run,
    measure,
    user_turns,
)
from harness.runs.engine import Suite
from harness.stats.power import epochs_for_margin
from harness.stats.variance import variance_components
from harness.testing.hub import TEST_KEYS
from harness.testing.server import LoopbackServer
from tests.helpers.cli import run_cli

EXAMPLES = Path(__file__).resolve().parents[1] / "scenarios"


def write_scenarios(path: Path, scenarios: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(scenarios))  # JSON is YAML
    return path


def test_a_growing_conversation_reads_what_the_request_before_it_stored() -> None:
    # prompts 1000, 1100, 1300: the first is under the minimum (nothing stored), the second
    # stores all of itself, the third reads it and stores its own 200 more
    total, read, write = _growing(1000, [100, 200])
    assert total == 1000 + 1100 + 1300
    assert read == 1100
    assert write == 1100 + 200
    assert _growing(10, [5]) == (25, 0, 0)  # never long enough to be cached
    assert MIN_CACHED_PREFIX == 1024


def _scenario_file(tmp_path: Path, **extra: Any) -> Path:
    return write_scenarios(tmp_path / "s.yaml", [{
        "id": "orders", "rubrics": ["final_response_quality"],
        "user": {"goal": "cancel", "script": ["Cancel order 12.", "Yes, do it."]},
        "agent": {"model": "openai:gpt-4.1", "system_prompt": "You help with orders."},
        "tools": [{"name": "cancel_order", "returns": {"ok": True}}],
        "expectations": {"tool_calls": [{"name": "cancel_order", "args": {"id": 12}}]},
        **extra}])


def _estimate(path: Path, **design: Any) -> CostEstimate:
    config = RunConfig(design=RunDesign(scenario_paths=[str(path)], **design))
    suite = Suite.load(config.design)
    return estimate_run(config, list(suite.scenarios.values()), suite.rubrics, PriceTable())


def test_a_scripted_scenario_is_counted_from_its_script_tools_and_rubrics(
        tmp_path: Path) -> None:
    estimate = _estimate(_scenario_file(tmp_path), epochs=4,
                         judges=["anthropic:claude-sonnet-4-5", "openai:gpt-4.1"],
                         judge_samples=3)
    roles = {r.role: r for r in estimate.roles}
    assert set(roles) == {"agent", "judge"}  # a scripted user calls no simulator
    # two user turns and one expected tool call: three agent steps an episode
    assert roles["agent"].calls == 3 * 4
    assert roles["agent"].output_tokens == 4 * (2 * ALLOWANCE["agent_reply"]
                                                + ALLOWANCE["tool_call"])
    # one rubric x three samples x two judges an episode
    assert roles["judge"].calls == 6 * 4
    assert estimate.samples == 4
    # the judges' list price is split over the panel; batch halves it
    judge = roles["judge"]
    assert judge.cost_with_batch_and_cache_usd == pytest.approx(judge.cost_with_cache_usd / 2)
    assert judge.cost_with_cache_usd <= judge.cost_usd
    assert roles["agent"].cost_with_batch_and_cache_usd == roles["agent"].cost_with_cache_usd
    assert estimate.cost_usd == pytest.approx(sum(r.cost_usd for r in estimate.roles))


def test_a_simulated_users_turns_follow_its_plan_within_the_limit(tmp_path: Path) -> None:
    path = write_scenarios(tmp_path / "u.yaml", [
        {"id": "planned", "user": {"goal": "g", "plan": "ask\nconfirm\nthank"},
         "agent": {"model": "mock:agent"}},
        {"id": "open", "user": {"goal": "g"}, "agent": {"model": "mock:agent"}},
        {"id": "short", "user": {"goal": "g", "plan": "a\nb\nc\nd"},
         "agent": {"model": "mock:agent"}, "limits": {"max_user_turns": 2}}])
    suite = Suite.load(RunDesign(scenario_paths=[str(path)], simulator="mock:simulator"))
    assert [user_turns(suite.scenarios[s]) for s in ("planned", "open", "short")] == [4, 3, 2]


def test_models_without_a_price_leave_the_cost_unknown(tmp_path: Path) -> None:
    path = _scenario_file(tmp_path, agent={"model": "openai:my-local-model"})
    estimate = _estimate(path, judges=["openai:gpt-4.1"])
    assert estimate.unpriced_models == ["openai:my-local-model"]
    assert estimate.cost_usd is None  # never a silent zero
    assert {r.role: r.cost_usd is None for r in estimate.roles} == {"agent": True,
                                                                    "judge": False}


def test_estimate_from_an_earlier_run_repeats_its_measured_calls_and_tokens(
        tmp_path: Path) -> None:
    out = tmp_path / "first"
    done = run_cli("run", EXAMPLES, "--offline", "--epochs", "2", "--out", out,
                   "--cache-mode", "off", cwd=tmp_path)
    assert done.returncode in (0, 1), (done.stdout + done.stderr)
    measured = measure(out)
    assert measured.samples > 0
    summary = json.loads((out / "summary.json").read_text())
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert all(r["status"] != "errored" for r in records)
    config = RunConfig.model_validate(summary["config"])
    suite = Suite.load(config.design)
    estimate = estimate_run(config, list(suite.scenarios.values()), suite.rubrics,
                            PriceTable(), measured=measured)
    assert estimate.measured_scenarios == len(suite.scenarios)
    for role in estimate.roles:
        stored = summary["usage"]["by_role"][role.role]
        # the same design again: the mean per sample times the samples is what was used
        assert role.calls == stored["calls"]
        assert role.input_tokens == stored["input_tokens"]
        assert role.output_tokens == stored["output_tokens"]


def test_epochs_for_a_margin_agree_with_statsmodels_for_one_scenario() -> None:
    # one scenario, no between part: n = ((z_{1-a/2} + z_power) sigma / margin)^2, as a
    # one-sample z test's sample size (statsmodels counts the far tail too: a hair fewer)
    for p, margin in ((0.9, 0.1), (0.8, 0.05), (0.95, 0.15)):
        sigma = math.sqrt(p * (1 - p))
        ours = epochs_for_margin(margin, n_scenarios=1, between_variance=0.0,
                                 within_variance=p * (1 - p))
        theirs = NormalIndPower().solve_power(effect_size=margin / sigma, alpha=0.05,
                                              power=0.8, ratio=0, alternative="two-sided")
        assert ours.achievable and ours.epochs is not None
        assert ours.epochs in (math.ceil(theirs), math.ceil(theirs) + 1)
        z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
        assert ours.achieved_difference == pytest.approx(z * sigma / math.sqrt(ours.epochs))
        assert ours.achieved_difference <= margin


def test_epochs_for_a_margin_say_when_epochs_cannot_get_there() -> None:
    floor = epochs_for_margin(0.05, n_scenarios=4, between_variance=0.04,
                              within_variance=0.2)
    assert not floor.achievable and floor.epochs is None
    assert floor.scenarios_needed is not None and floor.scenarios_needed > 4
    assert "between scenarios" in (floor.reason or "")
    below = epochs_for_margin(-0.1, n_scenarios=4, between_variance=0.0, within_variance=0.2)
    assert not below.achievable and "below the threshold" in (below.reason or "")


def test_dry_run_prints_the_estimate_at_80_columns_and_writes_nothing(tmp_path: Path) -> None:
    done = run_cli("run", EXAMPLES, "--dry-run", "--agent", "openai:gpt-4.1", "--simulator",
                   "openai:gpt-4.1-mini", "--judge", "anthropic:claude-sonnet-4-5",
                   "--epochs", "3", "--min-pass-rate", "0.8", cwd=tmp_path,
                   env={"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None})
    assert done.returncode == 0, (done.stdout + done.stderr)
    text = (done.stdout + done.stderr)
    assert "Estimated cost of 11 scenarios x 3 epochs = 33 samples" in text
    for role in ("agent", "simulator", "judge", "total"):
        assert any(line.startswith(f"│ {role}") for line in text.splitlines()), role
    assert "needs a previous run of every scenario" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 80
    assert list(tmp_path.iterdir()) == []  # no run directory, no cache


def test_dry_run_json_measured_and_with_a_gate(tmp_path: Path) -> None:
    first = tmp_path / "first"
    assert run_cli("run", EXAMPLES, "--offline", "--agent", "mock:agent-flaky", "--epochs",
                   "4", "--out", first, cwd=tmp_path).returncode in (0, 1)
    done = run_cli("run", EXAMPLES, "--offline", "--agent", "mock:agent-flaky", "--epochs",
                   "4", "--dry-run", "--estimate-from", first, "--min-pass-rate", "0.5",
                   "--json", cwd=tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)
    estimate = CostEstimate.model_validate_json(done.stdout)
    assert estimate.measured_from == str(first)
    assert estimate.measured_scenarios == estimate.scenarios == 11
    decision = estimate.decision
    assert decision is not None and decision.n_scenarios == 11
    records = [json.loads(line) for line in (first / "samples.jsonl").read_text().splitlines()]
    passes: dict[str, list[float]] = {}
    for r in records:
        passes.setdefault(r["scenario_id"], []).append(float(r["passed"]))
    components = variance_components(passes)
    rate = sum(sum(v) for v in passes.values()) / len(records)
    expected = epochs_for_margin(rate - 0.5, n_scenarios=11,
                                 between_variance=components.between,
                                 within_variance=components.within)
    assert (decision.achievable, decision.epochs) == (expected.achievable, expected.epochs)
    if expected.epochs is not None:
        assert decision.samples == expected.epochs * 11
        per_sample = estimate.cost_usd / estimate.samples if estimate.cost_usd else None
        assert decision.cost_usd == (None if per_sample is None
                                     else pytest.approx(per_sample * decision.samples))


@pytest.mark.parametrize(("args", "message"), [
    (["--estimate-from", "x"], "--estimate-from goes with --dry-run"),
    (["--dry-run", "--resume", "x"], "--dry-run cannot be given with"),
])
def test_dry_run_options_that_do_not_go_together(tmp_path: Path, args: list[str],
                                                 message: str) -> None:
    paths = [] if "--resume" in args else [EXAMPLES, "--offline"]
    done = run_cli("run", *paths, *args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in (done.stdout + done.stderr)


def test_an_estimate_from_a_directory_that_is_no_run_names_it(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = run_cli("run", EXAMPLES, "--offline", "--dry-run", "--estimate-from",
                   tmp_path / "empty", cwd=tmp_path)
    assert done.returncode == 2
    said = done.stdout + done.stderr
    assert "--estimate-from" in said and "Traceback" not in said


def test_max_cost_refuses_a_run_estimated_over_it_before_any_call(
        tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEYS["openai"])
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.openai_base_url)
    path = _scenario_file(tmp_path)
    out = tmp_path / "run"
    done = run_cli("run", path, "--no-judge", "--epochs", "50", "--max-cost", "0.001",
                   "--out", out,
                   "--cache-mode", "off", cwd=tmp_path)
    assert done.returncode == 2, (done.stdout + done.stderr)
    words = " ".join((done.stdout + done.stderr).split())
    assert "--max-cost" in words and "over the budget of $0.0010" in words
    assert loopback.request_count == 0
    assert not (out / "store.sqlite").exists()
