"""Where a run's rate limits come from: the models YAML, ``--rate-limit`` over it (refused by
name when malformed), stored with the run so ``--resume`` keeps them (and may change them),
split over worker processes, and a run through ``harness run`` held under a loopback server's
limit."""

from __future__ import annotations

import json
from pathlib import Path

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
