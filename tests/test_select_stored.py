"""``--tag``, ``--exclude-tag`` and ``-k`` on commands that read run directories: ``harness
report`` (figures recomputed for the selected samples), ``harness compare`` and ``harness
pairwise``; a store written before samples kept their tags says so."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from harness.runs.store import STORE_FILENAME
from harness.runs.summary import read_summary
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
WEATHER_IDS = ["weather-current-paris", "weather-forecast-tokyo", "weather-no-tool-needed",
               "weather-python-agent", "weather-service-retry", "weather-two-turns-paris"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("stored")
    for agent, name in (("mock:agent", "good"), ("mock:agent-flaky", "flaky")):
        done = run_cli("run", SCENARIOS, "--offline", "--agent", agent, "--epochs", "2",
                       "--cache-mode", "off", "--out", base / name)
        assert done.returncode in (0, 1), done.stderr
    return base / "good", base / "flaky"


def test_report_recomputes_the_figures_of_the_selected_samples(
        runs: tuple[Path, Path]) -> None:
    good, _ = runs
    done = run_cli("report", good, "--tag", "weather", "--json")
    assert done.returncode == 0, done.stderr
    selected = json.loads(done.stdout)
    assert [s["scenario_id"] for s in selected["score"]["scenarios"]] == WEATHER_IDS
    weather = read_summary(good).tags["weather"]
    assert weather.mean is not None and weather.pass_rate is not None
    assert selected["score"]["mean"] == pytest.approx(weather.mean.value, rel=1e-12)
    assert selected["score"]["pass_rate"] == weather.pass_rate.model_dump(mode="json")
    assert selected["notes"][0].startswith("selected with --tag weather: 6 of 11 scenarios")
    assert set(selected["tags"]) >= {"weather", "multi-turn"} and "home" not in selected["tags"]


def test_report_selects_by_keyword_and_exclusion(runs: tuple[Path, Path]) -> None:
    good, _ = runs
    done = run_cli("report", good, "-k", "weather", "--exclude-tag", "multi-turn")
    assert done.returncode == 0, done.stderr
    assert "weather-current-paris" in done.stdout
    assert "weather-two-turns-paris" not in done.stdout and "home-" not in done.stdout


def test_report_refuses_a_selection_with_html(runs: tuple[Path, Path], tmp_path: Path) -> None:
    done = run_cli("report", runs[0], "--tag", "weather", "--html", tmp_path / "x.html")
    assert done.returncode == 2 and "--tag weather applies to the tables" in done.stderr
    assert not (tmp_path / "x.html").exists()


def test_a_selection_that_selects_nothing_in_a_run_is_one_line(runs: tuple[Path, Path]) -> None:
    done = run_cli("report", runs[0], "--tag", "weathr")
    assert done.returncode == 2
    line, = done.stderr.strip().splitlines()
    assert "no scenario has the tag weathr (tags: files, home," in line
    assert "ids: files-action-items, home-" in line


def test_compare_compares_only_the_selected_scenarios(runs: tuple[Path, Path]) -> None:
    good, flaky = runs
    whole = json.loads(run_cli("compare", good, flaky, "--json").stdout)
    done = run_cli("compare", good, flaky, "--tag", "weather", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [s["scenario_id"] for s in data["scenarios"]] == WEATHER_IDS
    assert data["n_scenarios"] == 6 < whole["n_scenarios"]
    same = {s["scenario_id"]: s for s in whole["scenarios"]}
    assert all(s == same[s["scenario_id"]] for s in data["scenarios"])
    # The JSON says which scenarios it is about.
    assert data["selection"] == {"tags": ["weather"], "exclude_tags": [], "keywords": []}
    assert whole["selection"] is None


def test_pairwise_judges_only_the_selected_scenarios(runs: tuple[Path, Path]) -> None:
    good, flaky = runs
    done = run_cli("pairwise", good, flaky, "--offline", "--rubric", "task_completion",
                   "-k", "paris", "--json")
    assert done.returncode in (0, 1), done.stderr
    data = json.loads(done.stdout)
    assert sorted(s["scenario_id"] for s in data["scenarios"]) == [
        "weather-current-paris", "weather-two-turns-paris"]
    assert data["selection"] == {"tags": [], "exclude_tags": [], "keywords": ["paris"]}


def test_a_store_without_tags_says_so_for_a_tag_filter(runs: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(runs[0], old)
    with sqlite3.connect(old / STORE_FILENAME) as db:  # as samples were stored before tags
        db.execute("UPDATE samples SET record = json_remove(record, '$.tags')")
    done = run_cli("report", old, "--tag", "weather")
    assert done.returncode == 2
    assert "no stored sample has a tag (the store was written before" in done.stderr
    by_id = run_cli("report", old, "-k", "weather", "--json")
    assert by_id.returncode == 0, by_id.stderr
    assert len(json.loads(by_id.stdout)["score"]["scenarios"]) == 6
    compared = run_cli("compare", old, runs[1], "--exclude-tag", "home")
    assert compared.returncode == 2 and "no stored sample has a tag" in compared.stderr
