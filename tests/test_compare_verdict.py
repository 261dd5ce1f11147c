"""What ``harness compare`` concludes, in words: the suite-level verdict and the scenarios'
own intervals agree or say why both hold; an interval that looks wrong says why where it is
printed; two runs' offline notices are said once, not twice."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from harness.report.terminal import render_comparison
from harness.runs.comparison import comparison_notice, comparison_verdict
from harness.stats.compare import compare_runs


def _comparison(baseline: dict[str, list[float]], candidate: dict[str, list[float]]
                ) -> dict[str, Any]:
    data = compare_runs(baseline, candidate).model_dump(mode="json")
    data["notice"] = None
    data["verdict"] = comparison_verdict(data)
    return data


def _printed(data: dict[str, Any]) -> str:
    out = io.StringIO()
    render_comparison(data, Console(file=out, width=80))
    return out.getvalue()


# Eleven scenarios, each a little lower in the candidate: the suite test sees the shift,
# no scenario's own interval (five epochs a run) does.
SMALL_DROP = ({f"s{i}": [0.9, 0.8, 0.85, 0.95, 0.9] for i in range(11)},
              {f"s{i}": [0.85 - 0.01 * (i % 3), 0.75, 0.8, 0.9, 0.85] for i in range(11)})


def test_a_suite_regression_no_scenario_shows_alone_says_why_both_hold() -> None:
    data = _comparison(*SMALL_DROP)
    verdict = data["verdict"]
    assert data["significant_regression"] and verdict["outcome"] == "regression"
    assert verdict["headline"].startswith("significant regression: the candidate's mean over "
                                          "11 scenarios is lower (paired t test, p = ")
    assert verdict["scenarios"].startswith("Per scenario, 0 regressed and 0 improved")
    assert verdict["reconcile"] is not None and verdict["reconcile"].startswith("Both hold")
    text = _printed(data)
    assert "significant regression" in text and "Both hold" in " ".join(text.split())
    assert "regression" not in text.split("Per scenario (most regressed first)")[1].split(
        "significant regression")[0].replace("most regressed", "")


def test_identical_runs_are_no_difference_and_say_why_their_intervals_are_wide() -> None:
    runs = {f"s{i}": [1.0] * 5 for i in range(3)} | {"t": [0.5, 1.0, 0.5, 1.0, 0.5]}
    data = _comparison(runs, runs)
    assert data["verdict"]["outcome"] == "none" and data["verdict"]["reconcile"] is None
    text = _printed(data)
    flat = " ".join(text.split())
    assert "no significant difference in the mean over 4 scenarios" in flat
    # Every row is "same" with a wide interval, and the caption says why it is wide.
    assert text.count(" same") >= 4
    assert "same: equal means in both runs; the interval stays wide" in flat


def test_scenarios_beyond_their_interval_without_a_suite_change_name_multiplicity() -> None:
    baseline = {f"s{i}": [0.5, 0.6, 0.5, 0.6, 0.5] for i in range(6)}
    candidate = dict(baseline)
    candidate["s0"] = [0.0, 0.05, 0.0, 0.05, 0.0]  # one scenario falls, the rest stay
    candidate["s1"] = [0.7, 0.75, 0.7, 0.8, 0.7]
    candidate["s2"] = [0.7, 0.75, 0.7, 0.8, 0.7]
    data = _comparison(baseline, candidate)
    assert data["verdict"]["outcome"] == "none"
    assert data["verdict"]["scenarios"].startswith("Per scenario, 1 regressed")
    assert "not adjusted for multiplicity" in data["verdict"]["reconcile"]


def test_the_methods_are_notes_under_the_table_never_broken_mid_word() -> None:
    text = _printed(_comparison(*SMALL_DROP))
    assert "[1] mean of per-scenario differences" in text
    assert "sd(differences)/sqrt(C);" in text
    assert "scipy.stats.permutation_test," in text
    assert max(len(line) for line in text.splitlines()) <= 80


NOTICE = ("OFFLINE roles: agent ({agent}), simulator (mock:simulator); no real model was "
          "called by the harness. Figures that depend on an offline role come from a mock "
          "model, not a real one.")


def test_two_runs_offline_notices_are_said_once_with_what_differs() -> None:
    notice = comparison_notice({"baseline": NOTICE.format(agent="mock:agent"),
                                "candidate": NOTICE.format(agent="mock:agent-flaky")})
    assert notice is not None and " | " not in notice
    assert notice.count("Figures that depend on an offline role") == 1
    assert notice.count("No real model was called by the harness") == 1
    assert "baseline: OFFLINE roles: agent (mock:agent), simulator (mock:simulator)" in notice
    assert "candidate: OFFLINE roles: agent (mock:agent-flaky)" in notice


def test_the_same_notice_twice_is_said_once_and_one_offline_run_is_named() -> None:
    same = NOTICE.format(agent="mock:agent")
    assert comparison_notice({"baseline": same, "candidate": same}) == same
    one = comparison_notice({"baseline": None, "candidate": same})
    assert one is not None and one.startswith("OFFLINE models in the candidate only.")
    assert comparison_notice({"baseline": None, "candidate": None}) is None
