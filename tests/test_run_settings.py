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
from tests.helpers.cli import run_cli

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


# The configuration as the code before the split into design and execution stored it (read
# from a run of that code, `harness run weather.yaml --offline --epochs 1 --cache FILE`).
BEFORE_THE_SPLIT: dict[str, object] = {
    "scenario_paths": [str(WEATHER)],
    "select": {"tags": [], "exclude_tags": [], "keywords": []}, "rubric_paths": [],
    "agent": "mock:agent", "agent_base_url": None, "simulator": "mock:simulator",
    "judges": ["mock:judge"], "judge_samples": None, "judge_temperature": None,
    "judge_aggregation": None, "no_judge": False, "offline": True, "epochs": 1,
    "concurrency": 8, "workers": 1, "executor": "local", "ray_address": None,
    "error_policy": "exclude", "confidence": 0.95, "seed": 0, "bootstrap_resamples": 2000,
    "adaptive": None, "shard": None, "max_cost_usd": None, "max_calls": None,
    "episode_timeout_s": None, "models_config": None, "cache_path": "CACHE",
    "cache_mode": "read-write",
}


@pytest.mark.parametrize("cache", ["file", None])
def test_a_run_stored_before_the_split_resumes_and_reports(tmp_path: Path,
                                                           cache: str | None) -> None:
    """Its stored configuration loads, ``--resume`` runs its samples with the cache it was
    started with (none, for a run started from Python with ``cache_path=None``), and
    ``harness report`` shows it with the configuration as it was stored."""
    from harness.runs.store import RunStore

    old = {**BEFORE_THE_SPLIT,
           "cache_path": None if cache is None else str(tmp_path / "cache.sqlite")}
    RunStore.create(tmp_path / "run", {"run": old}).close()
    resumed = run_cli("run", "--resume", tmp_path / "run", "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["counts"]["samples"] > 0
    assert (tmp_path / "cache.sqlite").exists() == (cache is not None)
    assert not (tmp_path / ".harness" / "cache.sqlite").exists()
    report = run_cli("report", tmp_path / "run", "--json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["config"] == old
    with RunStore.open(tmp_path / "run") as store:
        assert store.run_config().model_dump(mode="json") == old


def test_a_cache_file_with_the_cache_off_is_refused(tmp_path: Path) -> None:
    result = run_cli("run", WEATHER, "--offline", "--cache", tmp_path / "c.sqlite",
                     "--cache-mode", "off", "--out", tmp_path / "run", cwd=tmp_path)
    assert result.returncode == 2
    assert "--cache PATH and --cache-mode off disagree" in result.stderr
    assert not (tmp_path / "run").exists()


def test_judge_samples_come_from_one_place_in_the_documented_order() -> None:
    """The command line, then the scenario's rubric_options, then the rubric, then 1/mean."""
    from harness.judging.judge import settings_for_rubric
    from harness.judging.rubric import load_rubrics

    rubric = next(iter(load_rubrics([]).values())).model_copy(
        update={"samples": 3, "aggregation": "majority"})
    chosen = [settings_for_rubric(rubric, **given) for given in (
        {"samples": 5, "method": "mean", "scenario_samples": 4, "scenario_method": "majority"},
        {"scenario_samples": 4, "scenario_method": "mean"}, {})]
    assert [(s.samples, s.method) for s in chosen] == [(5, "mean"), (4, "mean"),
                                                       (3, "majority")]
    plain = rubric.model_copy(update={"samples": None, "aggregation": None})
    assert (settings_for_rubric(plain).samples, settings_for_rubric(plain).method) == (1, "mean")


def test_the_two_parts_store_as_one_flat_mapping_and_copy_by_field_name() -> None:
    from harness.runs.config import RunDesign, RunExecution

    config = RunConfig(design=RunDesign(scenario_paths=["s"], epochs=3),
                       execution=RunExecution(concurrency=4))
    stored = config.model_dump(mode="json")
    assert list(stored) == [*BEFORE_THE_SPLIT]
    assert RunConfig.model_validate(stored) == config
    copy = config.model_copy(update={"epochs": 2, "cache_mode": "replay"})
    assert (copy.design.epochs, copy.execution.cache_mode) == (2, "replay")
    with pytest.raises(ValueError, match="no field 'epoch'"):
        config.model_copy(update={"epoch": 2})
    with pytest.raises(ValueError, match="epochs"):
        config.model_copy(update={"epochs": 0})
