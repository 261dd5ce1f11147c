"""A setting given on the command line and in the models YAML: the run's log says the
command line overrode the file only when the two really differ. A path written relative in
one and absolute in the other names the same file; a number written 1 and 1.0 is one value.
A user reads that line to find out which cache or budget the run used."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness.runs.config import RunConfig
from harness.runs.settings import resolve_settings

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "scenarios" / "weather.yaml"


def _resolve(tmp_path: Path, yaml: str, caplog: pytest.LogCaptureFixture,
             **given: object) -> tuple[RunConfig, list[str]]:
    models = tmp_path / "models.yaml"
    models.write_text(yaml, encoding="utf-8")
    config = RunConfig(scenario_paths=[str(WEATHER)], offline=True, epochs=1,
                       models_config=str(models), **given)  # type: ignore[arg-type]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="harness.runs.settings"):
        resolved = resolve_settings(config)
    return resolved, [r.getMessage() for r in caplog.records if "overrides" in r.getMessage()]


def test_the_same_cache_file_written_two_ways_is_no_override(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    resolved, lines = _resolve(tmp_path, "cache: {path: c.sqlite}\n", caplog,
                               cache_path=str(tmp_path / "c.sqlite"))
    assert lines == []
    assert resolved.execution.cache_path == str(tmp_path / "c.sqlite")


def test_another_cache_file_is_an_override_naming_both(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    resolved, lines = _resolve(tmp_path, "cache: {path: c.sqlite}\n", caplog,
                               cache_path="d.sqlite")
    assert lines == [f"--cache d.sqlite (command line) overrides cache.path: c.sqlite "
                     f"({tmp_path / 'models.yaml'})"]
    assert resolved.execution.cache_path == str(tmp_path / "d.sqlite")


def test_equal_budgets_written_differently_are_no_override(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    resolved, lines = _resolve(tmp_path, "budget: {max_cost_usd: 1}\n", caplog,
                               max_cost_usd=1.0)
    assert lines == [] and resolved.execution.max_cost_usd == 1.0
    _, lines = _resolve(tmp_path, "budget: {max_cost_usd: 1}\n", caplog, max_cost_usd=2.0)
    assert lines == [f"--max-cost 2.0 (command line) overrides budget.max_cost_usd: 1.0 "
                     f"({tmp_path / 'models.yaml'})"]


def test_a_block_the_file_does_not_write_is_not_an_override(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The file writes budget.max_calls only: the cache flags override nothing of the file's.
    resolved, lines = _resolve(tmp_path, "budget: {max_calls: 7}\n", caplog,
                               cache_mode="refresh", max_cost_usd=3.0)
    assert lines == []
    assert resolved.execution.max_calls == 7
    assert resolved.execution.cache_mode == "refresh"
