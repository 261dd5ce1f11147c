"""One source per setting: a setting given in more than one place follows one documented
precedence (command line over the models YAML over the default; docs/running.md, "Where a
setting comes from"), and the models YAML's ``cache`` and ``budget`` blocks are used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from harness.testing.server import LoopbackServer
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "scenarios" / "weather.yaml"


def models_yaml(path: Path, cache: str) -> Path:
    path.write_text(
        "timeout_s: 5\n"
        "retry: {max_attempts: 2, backoff_initial_s: 0.01, backoff_max_s: 0.01, "
        "backoff_jitter_s: 0}\n"
        f"cache: {cache}\n", encoding="utf-8")
    return path


def stored_config(run_dir: Path) -> dict[str, object]:
    config = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))["config"]
    assert isinstance(config, dict)
    return config


def test_the_models_yaml_cache_block_is_the_run_cache(tmp_path: Path) -> None:
    """The bug of issue 24: ``cache: {path, mode}`` in the models YAML became
    ``.harness/cache.sqlite``, ``read-write``."""
    elsewhere = tmp_path / "else.sqlite"
    models = models_yaml(tmp_path / "models.yaml", f"{{path: {elsewhere}, mode: replay}}")
    result = run_cli("run", WEATHER, "--offline", "--epochs", "1", "--models-config", models,
                     "--out", tmp_path / "run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    config = stored_config(tmp_path / "run")
    assert (config["cache_path"], config["cache_mode"]) == (str(elsewhere), "replay")
    assert not (tmp_path / ".harness").exists()


def test_the_command_line_wins_over_the_models_yaml(tmp_path: Path) -> None:
    elsewhere, given = tmp_path / "else.sqlite", tmp_path / "given.sqlite"
    models = models_yaml(tmp_path / "models.yaml", f"{{path: {elsewhere}, mode: replay}}")
    result = run_cli("run", WEATHER, "--offline", "--epochs", "1", "--models-config", models,
                     "--cache", given, "--cache-mode", "refresh", "--out", tmp_path / "run",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    config = stored_config(tmp_path / "run")
    assert (config["cache_path"], config["cache_mode"]) == (str(given), "refresh")
    # Nothing silent: the run's log names both sources of each setting the flag decided.
    log = (tmp_path / "run" / "harness.log").read_text(encoding="utf-8")
    assert "--cache-mode refresh (command line) overrides cache.mode: replay" in log
    assert str(models) in log


def test_without_flags_or_yaml_the_default_cache(tmp_path: Path) -> None:
    result = run_cli("run", WEATHER, "--offline", "--epochs", "1", "--out", tmp_path / "run",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    config = stored_config(tmp_path / "run")
    assert (config["cache_path"], config["cache_mode"]) == (
        str(tmp_path / ".harness" / "cache.sqlite"), "read-write")


async def test_the_python_api_uses_the_models_yaml_cache_path_and_mode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer) -> None:
    """A real provider's answers land in the YAML's cache file, and its ``replay`` mode
    answers a second run from there with no request."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-settings")
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.openai_base_url)
    elsewhere = tmp_path / "else.sqlite"
    fields = {"scenario_paths": [str(WEATHER)], "agent": "openai:loop-agent",
              "simulator": "mock:simulator", "no_judge": True, "epochs": 1,
              "bootstrap_resamples": 0}
    writing = models_yaml(tmp_path / "w.yaml", f"{{path: {elsewhere}, mode: read-write}}")
    first = await run_suite(RunConfig.model_validate({**fields, "models_config": str(writing)}),
                            tmp_path / "a")
    made = loopback.request_count
    assert made > 0 and first.summary.counts.scored > 0
    assert elsewhere.exists() and not (tmp_path / ".harness").exists()
    replaying = models_yaml(tmp_path / "r.yaml", f"{{path: {elsewhere}, mode: replay}}")
    second = await run_suite(
        RunConfig.model_validate({**fields, "models_config": str(replaying)}), tmp_path / "b")
    assert loopback.request_count == made, "replay mode from the models YAML sent requests"
    assert second.summary.counts.scored == first.summary.counts.scored
