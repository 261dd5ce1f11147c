"""Selecting scenarios and samples: ``--tag``, ``--exclude-tag`` and ``-k`` (one module,
harness.scenarios.selectors) on ``harness run`` and ``harness validate``; a selector that
selects nothing is one line naming what exists, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.scenarios.loading import load_scenarios
from harness.scenarios.selectors import ScenarioFilter, apply_filter
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"

ITEMS = [("a-one", ["x", "y"]), ("b-two", ["y"]), ("c-One", [])]


def _kept(selector: ScenarioFilter) -> list[str]:
    return [i for i, _ in apply_filter(ITEMS, selector, lambda it: it[0], lambda it: it[1],
                                       "suite")]


@pytest.mark.parametrize(("selector", "kept"), [
    (ScenarioFilter(), ["a-one", "b-two", "c-One"]),
    (ScenarioFilter(tags=["x"]), ["a-one"]),
    (ScenarioFilter(tags=["x", "y"]), ["a-one", "b-two"]),  # any of the tags
    (ScenarioFilter(exclude_tags=["x"]), ["b-two", "c-One"]),
    (ScenarioFilter(tags=["y"], exclude_tags=["x"]), ["b-two"]),  # both must hold
    (ScenarioFilter(keywords=["one"]), ["a-one", "c-One"]),  # case-insensitive substring
    (ScenarioFilter(keywords=["two", "c-"]), ["b-two", "c-One"]),  # any of the keywords
    (ScenarioFilter(tags=["y"], keywords=["one"]), ["a-one"]),
])
def test_what_each_selector_keeps(selector: ScenarioFilter, kept: list[str]) -> None:
    assert _kept(selector) == kept


@pytest.mark.parametrize(("selector", "message"), [
    (ScenarioFilter(tags=["nope"]), "suite: no scenario has the tag nope (tags: x, y; ids: "
                                    "a-one, b-two, c-One)"),
    (ScenarioFilter(exclude_tags=["z"]), "no scenario has the tag z"),
    (ScenarioFilter(keywords=["zzz"]), "-k zzz matches no scenario id (tags: x, y;"),
    (ScenarioFilter(tags=["x"], keywords=["two"]), "--tag x -k two selects no scenario"),
])
def test_a_selector_that_selects_nothing_names_what_exists(selector: ScenarioFilter,
                                                           message: str) -> None:
    with pytest.raises(InputError) as caught:
        _kept(selector)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_listing_of_ids_is_cut_short() -> None:
    many = [(f"s{i:03}", ["t"]) for i in range(50)]
    with pytest.raises(InputError, match=r"ids: s000, .*, s019 and 30 more\)$"):
        apply_filter(many, ScenarioFilter(keywords=["zz"]), lambda it: it[0],
                     lambda it: it[1], "suite")


def test_load_scenarios_applies_the_filter_after_file_selectors() -> None:
    picked = load_scenarios([SCENARIOS], selector=ScenarioFilter(tags=["weather"],
                                                                  exclude_tags=["no-tool"]))
    assert [s.id for s in picked] == [
        s.id for s in load_scenarios([SCENARIOS / "weather.yaml"]) if "no-tool" not in s.tags]
    assert all("weather" in s.tags for s in picked) and len(picked) == 5


def test_validate_counts_the_selected_scenarios() -> None:
    done = run_cli("validate", SCENARIOS, "--tag", "home", "--no-imports")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: 2 scenarios")


def test_validate_refuses_an_unknown_tag_in_one_line() -> None:
    done = run_cli("validate", SCENARIOS, "--tag", "hom", "--no-imports")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and "no scenario has the tag hom (tags: files, home," in lines[0]
    assert lines[1] == "1 problem in 1 file"


def test_run_runs_only_the_selected_scenarios_and_resume_keeps_the_selection(
        tmp_path: Path) -> None:
    out = tmp_path / "r"
    done = run_cli("run", SCENARIOS, "--offline", "--epochs", "2", "--cache-mode", "off",
                   "--tag", "weather", "--exclude-tag", "multi-turn", "-k", "PARIS", "-k",
                   "tokyo", "--out", out, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    ids = sorted(s["scenario_id"] for s in summary["score"]["scenarios"])
    expected = sorted(s.id for s in load_scenarios([SCENARIOS / "weather.yaml"])
                      if "multi-turn" not in s.tags
                      and ("paris" in s.id or "tokyo" in s.id))
    assert ids == expected == ["weather-current-paris", "weather-forecast-tokyo"]
    assert summary["counts"]["scenarios_loaded"] == len(expected)
    assert summary["config"]["select"] == {"tags": ["weather"], "exclude_tags": ["multi-turn"],
                                           "keywords": ["PARIS", "tokyo"]}
    resumed = run_cli("run", "--resume", out, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["counts"]["scenarios_loaded"] == len(expected)
    again = run_cli("run", "--resume", out, "--tag", "home")
    assert again.returncode == 2 and "--tag" in again.stderr


def test_run_with_a_selector_that_selects_nothing_writes_nothing(tmp_path: Path) -> None:
    done = run_cli("run", SCENARIOS, "--offline", "-k", "nothing-like-this", "--out",
                   tmp_path / "r")
    assert done.returncode == 2
    assert "-k nothing-like-this matches no scenario id" in done.stderr
    assert not (tmp_path / "r" / "summary.json").exists()


@pytest.mark.parametrize("paths", [
    ("weather.yaml", "weather.yaml:weather-current-paris"),
    ("weather.yaml:weather-current-paris", "weather.yaml"),
])
def test_a_file_named_whole_and_with_ids_is_selected_whole(paths: tuple[str, ...]) -> None:
    whole = [s.id for s in load_scenarios([SCENARIOS / "weather.yaml"])]
    assert len(whole) > 1
    assert [s.id for s in load_scenarios([SCENARIOS / p for p in paths])] == whole


def test_ids_of_one_file_named_twice_are_joined_once_each() -> None:
    weather = SCENARIOS / "weather.yaml"
    paths = [f"{weather}:weather-forecast-tokyo,weather-current-paris",
             f"{weather}:weather-current-paris"]
    assert [s.id for s in load_scenarios(paths)] == ["weather-current-paris",
                                                     "weather-forecast-tokyo"]


# --- ids holding the selector's own characters (issue 31) ----------------------------------

COLON_IDS = """\
- id: "greeting:v2"
  user: {goal: g, script: [hi]}
  agent: {model: "mock:echo"}
- id: "greeting"
  user: {goal: g, script: [hi]}
  agent: {model: "mock:echo"}
"""


@pytest.mark.parametrize(("selector", "ids"), [
    ("greeting:v2", ["greeting:v2"]),  # the path ends at the longest part that exists
    ("greeting", ["greeting"]),
    ("greeting,greeting:v2", ["greeting:v2", "greeting"]),
])
def test_ids_holding_colons_are_selectable(selector: str, ids: list[str],
                                                      tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(COLON_IDS, encoding="utf-8")
    assert [s.id for s in load_scenarios([f"{suite}:{selector}"])] == ids


def test_a_missing_file_with_a_colon_id_is_named_whole(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nofile.yaml: file not found|nofile.yaml: no such"):
        load_scenarios([f"{tmp_path}/nofile.yaml:greeting:v2"])


@pytest.mark.parametrize("eval_id", ["greeting:v2", "a,b"])  # no id "a": "a,b" is one id
def test_run_selects_an_adk_eval_id_holding_a_colon_or_a_comma(eval_id: str,
                                                                tmp_path: Path) -> None:
    data = json.loads((ROOT / "tests/data/adk/dice/dice.evalset.json").read_text("utf-8"))
    data["evalCases"][0]["evalId"] = eval_id
    evalset = tmp_path / "dice.evalset.json"
    evalset.write_text(json.dumps(data), encoding="utf-8")
    done = run_cli("run", f"{evalset}:{eval_id}", "--offline", "--epochs", "1", "--out",
                   tmp_path / "r", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["scenarios_loaded"] == 1
