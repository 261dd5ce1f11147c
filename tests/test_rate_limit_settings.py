"""Where a run's rate limits come from: the models YAML, ``--rate-limit`` over it (refused by
name when malformed), stored with the run so ``--resume`` keeps them (and may change them),
split over worker processes, and a run through ``harness run`` held under a loopback server's
limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.rate_limit_option import PROVIDERS, parse_rate_limits
from harness.errors import HarnessError, InputError
from harness.models.config import (
    ModelsConfig,
    RateLimitProvider,
    RateLimits,
    merge_rate_limits,
    with_rate_limits,
)
from harness.runs.config import RunConfig
from harness.runs.settings import models_config_for
from harness.runs.workers import _worker_models
from harness.testing.hub import TEST_KEYS
from harness.testing.rate_limits import RateLimit
from harness.testing.server import LoopbackServer
from tests.helpers.cli import run_cli


def test_the_flag_reads_each_providers_limits():
    limits = parse_rate_limits(["openai:rpm=500,tpm=200000", "Anthropic: tpm = 40000"])
    assert limits == {"openai": RateLimits(requests_per_minute=500, tokens_per_minute=200_000),
                      "anthropic": RateLimits(tokens_per_minute=40_000)}
    assert parse_rate_limits(None) == {}


def test_the_flags_providers_are_the_model_layers():
    from typing import get_args

    assert set(PROVIDERS) == set(get_args(RateLimitProvider))


@pytest.mark.parametrize(("value", "why"), [
    ("openai:rpm=x", "rpm must be a whole number >= 1"),
    ("openai:rpm=0", "rpm must be a whole number >= 1"),
    ("openai:tpm=-5", "tpm must be a whole number >= 1"),
    ("openai:tpm=1.5", "tpm must be a whole number >= 1"),
    ("openai:rps=3", "'rps=3' is not rpm=N or tpm=N"),
    ("openai:rpm", "'rpm' is not rpm=N or tpm=N"),
    ("openai:rpm=1,rpm=2", "rpm is given twice"),
    ("openai:", "give rpm=N, tpm=N or both after the provider"),
    ("mistral:rpm=5", "expected PROVIDER:rpm=N,tpm=M with PROVIDER one of openai, "
                      "anthropic, gemini"),
    ("rpm=5", "expected PROVIDER:rpm=N,tpm=M"),
])
def test_a_bad_value_is_refused_naming_the_flag_the_value_and_what_was_expected(value, why):
    with pytest.raises(HarnessError) as caught:
        parse_rate_limits([value])
    assert str(caught.value).startswith(f"--rate-limit: {value!r}: {why}")


def test_a_provider_given_twice_is_refused():
    with pytest.raises(HarnessError, match="openai is given twice"):
        parse_rate_limits(["openai:rpm=5", "openai:tpm=10"])


def test_harness_run_refuses_a_bad_value_with_exit_2_and_no_traceback(tmp_path: Path):
    done = run_cli("run", tmp_path, "--offline", "--rate-limit", "openai:rpm=x")
    assert done.returncode == 2
    assert "--rate-limit: 'openai:rpm=x': rpm must be a whole number >= 1" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize(("yaml", "field"), [
    ("openai: {requests_per_minute: 0}", "openai.requests_per_minute"),
    ("anthropic: {tokens_per_minute: many}", "anthropic.tokens_per_minute"),
    ("openai: {requests_per_minut: 5}", "openai.requests_per_minut"),
])
def test_the_models_yaml_refuses_bad_limits_naming_the_file_and_field(tmp_path, yaml, field):
    path = tmp_path / "models.yaml"
    path.write_text(yaml + "\n")
    with pytest.raises(InputError) as caught:
        ModelsConfig.from_yaml(path)
    assert str(path) in str(caught.value) and field in str(caught.value)


def test_the_flag_replaces_only_the_limits_it_gives(tmp_path: Path):
    path = tmp_path / "models.yaml"
    path.write_text("openai: {requests_per_minute: 100, tokens_per_minute: 9000}\n"
                    "anthropic: {requests_per_minute: 50}\n")
    config = RunConfig.model_validate({
        "scenario_paths": ["s.yaml"], "models_config": str(path),
        "rate_limits": {"openai": {"requests_per_minute": 300}}})
    models = models_config_for(config)
    assert (models.openai.requests_per_minute, models.openai.tokens_per_minute) == (300, 9000)
    assert models.anthropic.requests_per_minute == 50
    assert models.gemini.requests_per_minute is None


def test_merging_keeps_what_is_not_given():
    merged = merge_rate_limits(
        {"openai": RateLimits(requests_per_minute=100, tokens_per_minute=9000)},
        {"openai": {"tokens_per_minute": 500}, "gemini": RateLimits(requests_per_minute=7)})
    assert merged == {"openai": RateLimits(requests_per_minute=100, tokens_per_minute=500),
                      "gemini": RateLimits(requests_per_minute=7)}
    assert with_rate_limits(ModelsConfig(), {}) == ModelsConfig()


def test_workers_split_the_limits_as_they_split_concurrency():
    config = RunConfig.model_validate({
        "scenario_paths": ["s.yaml"],
        "rate_limits": {"openai": {"requests_per_minute": 10, "tokens_per_minute": 1000}}})
    parts = [_worker_models(config, (i, 3)).openai for i in range(3)]
    assert [p.requests_per_minute for p in parts] == [4, 3, 3]
    assert sum(p.tokens_per_minute or 0 for p in parts) == 1000
    assert sum(p.concurrency for p in parts) == 32
    assert all(p.requests_per_minute is None for p in
               (_worker_models(config, (i, 3)).anthropic for i in range(3)))


# --- a run through the CLI, held under the loopback server's limit -----------------------------

def test_a_run_with_rate_limit_stays_under_the_servers_limit_and_resume_keeps_it(
        tmp_path: Path, loopback: LoopbackServer) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(json.dumps([
        {"id": "limited", "user": {"goal": "g", "script": ["hello there"]},
         "agent": {"model": "openai:loop-agent"},
         "expectations": {"required_phrases": ["auto reply"]}}]))
    loopback.set_rate_limit(RateLimit(rpm=600, headers=False))  # only the flag can pace
    env = {"OPENAI_API_KEY": TEST_KEYS["openai"], "OPENAI_BASE_URL": loopback.openai_base_url}
    out = tmp_path / "run"
    done = run_cli("run", suite, "--epochs", "16", "--concurrency", "16", "--cache-mode",
                   "off", "--rate-limit", "openai:rpm=600", "--out", out, "--json", env=env)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["counts"]["scored"] == 16
    assert loopback.rate_limited == 0
    assert summary["config"]["rate_limits"] == {
        "openai": {"requests_per_minute": 600, "tokens_per_minute": None}}

    again = run_cli("run", "--resume", out, "--rate-limit", "openai:tpm=100000", "--json",
                    env=env)
    assert again.returncode == 0, again.stderr
    resumed = json.loads(again.stdout)
    assert resumed["config"]["rate_limits"] == {
        "openai": {"requests_per_minute": 600, "tokens_per_minute": 100_000}}
    assert resumed["events"][-1]["overrides"] == {
        "rate_limits": {"openai": {"tokens_per_minute": 100_000}}}


# --- the dry run's time under the limits -------------------------------------------------------

def _two_turns(tmp_path: Path) -> Path:
    path = tmp_path / "two.yaml"
    path.write_text(json.dumps([
        {"id": "two-turns", "user": {"goal": "g", "script": ["Hello.", "Thanks."]},
         "agent": {"model": "openai:gpt-4.1", "system_prompt": "Be brief."}}]))
    return path


def _estimate(path: Path, limits: dict[str, RateLimits] | None) -> Any:
    from harness.models.prices import PriceTable
    from harness.runs.cost_estimate import estimate_run
    from harness.runs.engine import Suite

    config = RunConfig.model_validate({"scenario_paths": [str(path)], "epochs": 30})
    suite = Suite.load(config.design)
    return estimate_run(config, list(suite.scenarios.values()), suite.rubrics, PriceTable(),
                        rate_limits=limits)


def test_a_requests_limit_bounds_the_estimated_time_from_below(tmp_path: Path):
    path = _two_turns(tmp_path)
    free = _estimate(path, None)
    agent = next(r for r in free.roles if r.role == "agent")
    assert agent.calls == 60
    assert free.duration_s == pytest.approx(60 * 2.0 / 8)  # 2 s a call, 8 samples at a time
    limited = _estimate(path, {"openai": RateLimits(requests_per_minute=30)})
    assert limited.duration_s == pytest.approx(60 / 30 * 60)
    assert limited.duration_basis.startswith("openai's rate limit of 30 requests a minute")
    assert free.duration_basis in limited.duration_basis
    # A limit the run stays under, or another provider's, changes nothing.
    for limits in ({"openai": RateLimits(requests_per_minute=6000)},
                   {"anthropic": RateLimits(requests_per_minute=1)}):
        same = _estimate(path, limits)
        assert (same.duration_s, same.duration_basis) == (free.duration_s, free.duration_basis)


def test_a_tokens_limit_bounds_it_by_the_calls_tokens(tmp_path: Path):
    path = _two_turns(tmp_path)
    free = _estimate(path, None)
    agent = next(r for r in free.roles if r.role == "agent")
    tokens = agent.input_tokens + agent.output_tokens
    limited = _estimate(path, {"openai": RateLimits(requests_per_minute=6000,
                                                    tokens_per_minute=100)})
    assert limited.duration_s == pytest.approx(tokens / 100 * 60, rel=0.01)
    assert limited.duration_basis.startswith("openai's rate limit of 100 tokens a minute")


def test_dry_run_takes_the_flag_and_the_models_yaml_limits(tmp_path: Path):
    path = _two_turns(tmp_path)
    models = tmp_path / "models.yaml"
    models.write_text("openai: {requests_per_minute: 20}\n")
    env = {"OPENAI_API_KEY": None}
    from_yaml = run_cli("run", path, "--dry-run", "--epochs", "30", "--json",
                        "--models-config", models, cwd=tmp_path, env=env)
    assert from_yaml.returncode == 0, from_yaml.stderr
    estimate = json.loads(from_yaml.stdout)
    assert estimate["duration_s"] == pytest.approx(60 / 20 * 60)
    flag = run_cli("run", path, "--dry-run", "--epochs", "30", "--json", "--models-config",
                   models, "--rate-limit", "openai:rpm=40", cwd=tmp_path, env=env)
    assert flag.returncode == 0, flag.stderr
    assert json.loads(flag.stdout)["duration_s"] == pytest.approx(60 / 40 * 60)
    assert "rate limit of 40 requests a minute" in json.loads(flag.stdout)["duration_basis"]


@pytest.mark.parametrize("command", [
    ["pairwise", "a", "b", "--offline", "--rubric", "final_response_quality"],
    ["calibrate", "items.jsonl", "--offline", "--rubric", "final_response_quality"]])
def test_pairwise_and_calibrate_take_the_flag_and_refuse_bad_values(tmp_path: Path,
                                                                     command: list[str]):
    done = run_cli(*command, "--rate-limit", "anthropic:tpm=lots", cwd=tmp_path)
    assert done.returncode == 2
    assert "--rate-limit: 'anthropic:tpm=lots': tpm must be a whole number >= 1" in done.stderr
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def test_calibrate_refuses_the_flag_where_no_judge_is_called(tmp_path: Path):
    judgments = tmp_path / "j.jsonl"
    judgments.write_text('{"item_id": "a", "human": 1, "judge": 1}\n')
    done = run_cli("calibrate", "--judgments", judgments, "--rate-limit", "openai:rpm=5",
                   cwd=tmp_path)
    assert done.returncode == 2 and "--rate-limit" in done.stderr
