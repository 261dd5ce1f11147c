"""Per-tag figures (summary.json ``tags``, the terminal's "Tags" table): each tag's mean and
pass rate equal the suite figures of a run of only that tag's scenarios, and the mean and
its standard error agree with scipy on the tag's scenario means."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from scipy import stats

from harness.runs.summary import read_summary
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
RUN = ("--offline", "--agent", "mock:agent-flaky", "--epochs", "3", "--cache-mode", "off")


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tags") / "all"
    done = run_cli("run", SCENARIOS, *RUN, "--out", out)
    assert done.returncode in (0, 1), done.stderr
    return out


@pytest.mark.parametrize("tag", ["weather", "stateful", "multi-turn"])
def test_a_tags_figures_are_the_suite_figures_of_a_run_of_its_scenarios(
        whole_run: Path, tag: str, tmp_path: Path) -> None:
    figures = read_summary(whole_run).tags[tag]
    only = run_cli("run", SCENARIOS, *RUN, "--tag", tag, "--out", tmp_path / "only")
    assert only.returncode in (0, 1), only.stderr
    suite = read_summary(tmp_path / "only")
    assert suite.score is not None and figures.mean is not None
    assert figures.scenarios == suite.counts.scenarios >= 2
    assert figures.samples == suite.counts.samples and figures.scored == suite.counts.scored
    assert (figures.mean.value, figures.mean.stderr, figures.mean.ci_low,
            figures.mean.ci_high) == pytest.approx(
        (suite.score.mean, suite.score.stderr, suite.score.ci_low, suite.score.ci_high),
        rel=1e-12)
    assert figures.pass_rate == suite.score.pass_rate


def test_a_tags_mean_and_stderr_agree_with_scipy(whole_run: Path) -> None:
    by_scenario: dict[str, list[float]] = defaultdict(list)
    for line in (whole_run / "samples.jsonl").read_text().splitlines():
        sample = json.loads(line)
        by_scenario[sample["scenario_id"]].append(sample["score"])
    summary = read_summary(whole_run)
    members = sorted(sid for sid in by_scenario if "weather" in sid)  # the weather file's ids
    means = [sum(by_scenario[s]) / len(by_scenario[s]) for s in members]
    weather = summary.tags["weather"].mean
    assert weather is not None and weather.n_clusters == len(members) == 6
    assert weather.value == pytest.approx(sum(means) / len(means), rel=1e-12)
    # equal epochs: the clustered SE is the standard error of the scenario means
    assert weather.stderr == pytest.approx(stats.sem(means), rel=1e-12)
    low, high = stats.t.interval(0.95, len(means) - 1, loc=sum(means) / len(means),
                                 scale=stats.sem(means))
    assert (weather.ci_low, weather.ci_high) == pytest.approx((max(low, 0), min(high, 1)))


def test_the_terminal_shows_a_tags_table_only_when_scenarios_have_tags(
        whole_run: Path, tmp_path: Path) -> None:
    shown = run_cli("report", whole_run)
    assert "Tags (suite figures on each tag's scenarios)" in shown.stdout
    assert max(len(line) for line in shown.stdout.splitlines()) <= 80
    untagged = tmp_path / "untagged.yaml"
    text = (SCENARIOS / "weather.yaml").read_text()
    untagged.write_text("\n".join(line for line in text.splitlines()
                                  if not line.strip().startswith("tags:")) + "\n")
    run = run_cli("run", f"{untagged}:weather-current-paris,weather-forecast-tokyo", *RUN,
                  "--out", tmp_path / "r")
    assert run.returncode in (0, 1), run.stderr
    assert "Tags" not in run.stdout
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["tags"] == {}
