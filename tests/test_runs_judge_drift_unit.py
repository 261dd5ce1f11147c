"""Judge drift decided on hand-made judge records, in process: which scenarios a changed judge
touches, what ``harness compare`` says in words (word for word, since a user reads it), the
mixed and unrecorded cases, and the verdict line on the reviewers' scale with its MOVER
interval. The end-to-end behaviour through real runs is in tests/test_runs_compare_judges.py.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from harness.runs.judge_drift import (
    CORRECTED_DIFFERENCE_METHOD,
    WHAT_TO_DO,
    _difference,
    _scenario_changed,
    corrected_verdict,
    judge_comparison,
)
from harness.runs.judge_record import (
    JudgeDefinition,
    JudgePart,
    JudgeRecord,
    RubricJudging,
    judge_differences,
    mixed_judge_notes,
)
from harness.stats.corrected import CorrectedEstimate


def _rubric(rid: str, *, sha: str = "s", prompt: str = "p", samples: int = 1,
            aggregation: Any = "mean") -> RubricJudging:
    return RubricJudging(rubric=rid, sha256=sha, prompt_hash=prompt, samples=samples,
                         aggregation=aggregation)


def _definition(*, models: list[str] | None = None, temperature: float | None = 0.0,
                version: str = "v1", rubrics: list[RubricJudging] | None = None,
                scenarios: dict[str, list[int]] | None = None) -> JudgeDefinition:
    return JudgeDefinition(
        models=["openai:judge"] if models is None else models, temperature=temperature,
        prompt_version=version, rubrics=[_rubric("helpful")] if rubrics is None else rubrics,
        scenarios={"a": [0], "b": [0], "checks": []} if scenarios is None else scenarios)


def _one(definition: JudgeDefinition) -> JudgeRecord:
    return JudgeRecord(definition=definition)


IDS = ["a", "b", "checks"]


def test_the_same_judge_is_same_with_no_warning_and_the_checks_only_scenarios_named() -> None:
    out = judge_comparison(_one(_definition()), _one(_definition()), IDS)
    assert out == {
        "baseline": {"status": "recorded", "models": ["openai:judge"], "temperature": 0.0,
                     "prompt_version": "v1", "parts": []},
        "candidate": {"status": "recorded", "models": ["openai:judge"], "temperature": 0.0,
                      "prompt_version": "v1", "parts": []},
        "same": True, "differences": [], "changed_scenarios": [], "checks_only": ["checks"],
        "warning": None}


def test_another_model_changes_every_judged_scenario_and_says_what_to_do() -> None:
    out = judge_comparison(_one(_definition()),
                           _one(_definition(models=["openai:a", "anthropic:b"])), IDS)
    assert out["same"] is False
    assert out["differences"] == ["model: openai:judge vs panel openai:a + anthropic:b"]
    assert out["changed_scenarios"] == ["a", "b"]
    assert out["checks_only"] == ["checks"]
    assert out["warning"] == (
        "the judges differ (model: openai:judge vs panel openai:a + anthropic:b) for 2 "
        "compared scenarios: their differences are the agent's and the judge's change "
        "together, not a regression or an improvement of the agent. " + WHAT_TO_DO)


@pytest.mark.parametrize(("changed", "words"), [
    ({"temperature": None}, ["temperature: 0 vs provider default"]),
    ({"temperature": 0.25}, ["temperature: 0 vs 0.25"]),
    ({"version": "v2"}, ["prompt version: v1 vs v2"]),
    # Judging skipped: no model, and so no rubric judged on the two judged scenarios.
    ({"models": []}, ["model: openai:judge vs no judge",
                      "rubrics: judged vs not judged of helpful (in 2 of 3 scenarios)"]),
])
def test_each_part_of_the_judge_is_named_with_both_values(changed: dict[str, Any],
                                                          words: list[str]) -> None:
    assert judge_differences(_definition(), _definition(**changed), IDS) == words


def test_rubric_differences_name_the_rubric_the_values_and_how_many_scenarios() -> None:
    a = _definition(rubrics=[_rubric("helpful"), _rubric("tone")],
                    scenarios={"a": [0, 1], "b": [0], "c": [1]})
    b = _definition(rubrics=[_rubric("helpful", sha="other", samples=3,
                                     aggregation="majority"), _rubric("tone", prompt="q")],
                    scenarios={"a": [0], "b": [0, 1], "c": [1]})
    assert judge_differences(a, b) == [
        "rubric text of helpful (in 2 of 3 scenarios)",
        "samples: 1 vs 3 of helpful (in 2 of 3 scenarios)",
        "aggregation: mean vs majority of helpful (in 2 of 3 scenarios)",
        "rubrics: judged vs not judged of tone (in 1 of 3 scenarios)",
        "rubrics: not judged vs judged of tone (in 1 of 3 scenarios)",
        "prompt templates (same version) of tone (in 1 of 3 scenarios)",
    ]
    # Over the scenarios asked for only; a new prompt version already says the templates
    # changed, so their hashes are not named again.
    assert judge_differences(a, b, ["c"]) == [
        "prompt templates (same version) of tone (in 1 of 1 scenarios)"]
    c = b.model_copy(update={"prompt_version": "v2"})
    assert judge_differences(a, c, ["c"]) == ["prompt version: v1 vs v2"]
    assert judge_differences(a, None) == ["one judge not recorded"]
    assert judge_differences(None, None) == []


def test_a_scenario_changed_only_where_its_own_judge_differs() -> None:
    a = _definition(rubrics=[_rubric("helpful"), _rubric("tone")],
                    scenarios={"a": [0], "b": [1], "checks": [], "gone": [0]})
    b = _definition(rubrics=[_rubric("helpful"), _rubric("tone", sha="new")],
                    scenarios={"a": [0], "b": [1], "checks": []})
    assert not _scenario_changed(a, b, "a")
    assert _scenario_changed(a, b, "b")
    assert not _scenario_changed(a, b, "checks")
    assert _scenario_changed(a, b, "gone")  # in one record only: nothing vouches for it
    # A scenario no judge scores is unchanged whatever the models; a judged one is not.
    other = b.model_copy(update={"models": ["x:y"]})
    assert not _scenario_changed(a, other, "checks")
    assert _scenario_changed(a, other, "a")
    out = judge_comparison(_one(a), _one(b), ["a", "b", "checks"])
    assert (out["same"], out["changed_scenarios"], out["checks_only"]) == (
        False, ["b"], ["checks"])
    assert out["differences"] == ["rubric text of tone (in 1 of 3 scenarios)"]
    assert "for 1 compared scenario:" in out["warning"]


def test_a_compared_scenario_missing_from_a_record_is_a_difference() -> None:
    a = _definition(scenarios={"a": [0], "b": [0]})
    b = _definition(scenarios={"a": [0]})
    out = judge_comparison(_one(a), _one(b), ["a", "b"])
    assert out["same"] is False
    assert out["changed_scenarios"] == ["b"]
    assert out["differences"] == ["1 compared scenario missing from a run's judge record "
                                  "(first: b)"]
    # Missing but otherwise alike: the judges still are not the same.
    same_elsewhere = judge_comparison(_one(a), _one(a), ["a"])
    assert same_elsewhere["same"] is True and same_elsewhere["differences"] == []


def test_a_run_without_a_record_is_not_recorded_and_nothing_is_guessed() -> None:
    out = judge_comparison(None, _one(_definition()), IDS)
    assert out["baseline"] == {"status": "not recorded", "models": None, "temperature": None,
                               "prompt_version": None, "parts": []}
    assert out["same"] is None and out["differences"] == [] and out["changed_scenarios"] == []
    assert out["checks_only"] == ["checks"]  # read from the run that has a record
    assert out["warning"] == (
        "judge not recorded for the baseline (a run written before judges were recorded): "
        "whether both runs were judged alike cannot be checked")
    both = judge_comparison(None, None, IDS)
    assert both["checks_only"] == []
    assert both["warning"].startswith("judge not recorded for the baseline and the candidate ")


def test_a_mixed_run_is_never_one_judge() -> None:
    one = _definition()
    other = _definition(temperature=1.0)
    mixed = JudgeRecord(mixed=[JudgePart(part="shard 1/2", definition=one),
                               JudgePart(part="shard 2/2", definition=other)])
    out = judge_comparison(_one(one), mixed, IDS)
    assert out["candidate"] == {"status": "mixed", "models": None, "temperature": None,
                                "prompt_version": None, "parts": ["shard 1/2", "shard 2/2"]}
    assert out["same"] is False
    assert out["differences"] == [
        "the candidate mixes judges (shard 1/2, shard 2/2)",
        "shard 2/2 against the other run: temperature: 0 vs 1"]
    assert out["changed_scenarios"] == ["a", "b"]
    assert out["checks_only"] == ["checks"]
    assert out["warning"].startswith(
        "the judges differ (the candidate mixes judges (shard 1/2, shard 2/2); shard 2/2 "
        "against the other run: temperature: 0 vs 1) for 2 compared scenarios: ")
    both = judge_comparison(mixed, mixed, IDS)
    assert both["differences"] == ["the baseline mixes judges (shard 1/2, shard 2/2)",
                                   "the candidate mixes judges (shard 1/2, shard 2/2)"]
    assert mixed_judge_notes(mixed) == [
        "mixed judges: the samples of this run were judged by 2 different judges; against "
        "shard 1/2, shard 2/2: temperature: 0 vs 1. Its judge-based figures mix them: re-run "
        "the parts judged otherwise, or compare them apart"]
    assert mixed_judge_notes(_one(one)) == [] and mixed_judge_notes(None) == []


def _estimate(value: float | None, low: float | None, high: float | None,
              confidence: float = 0.95) -> CorrectedEstimate:
    return CorrectedEstimate(
        target="mean", value=value, ci_low=low, ci_high=high, stderr=None, df=None,
        confidence=confidence, n_labelled=10, n_labelled_scenarios=3, n_samples=20,
        n_scenarios=3, lam=0.5, judge_value=0.5, labels_only=None, effective_labels=None,
        labels_needed=None, method="m")


def _mover(a: float, al: float, ah: float, b: float, bl: float, bh: float
           ) -> tuple[float, float]:
    # Zou & Donner's MOVER for b - a, written out from their paper's formula.
    d = b - a
    return (d - math.sqrt((b - bl) ** 2 + (ah - a) ** 2),
            d + math.sqrt((bh - b) ** 2 + (a - al) ** 2))


def test_the_corrected_difference_is_movers_and_missing_parts_give_none() -> None:
    a, b = _estimate(0.6, 0.5, 0.75), _estimate(0.8, 0.7, 0.85, confidence=0.9)
    d = _difference(a, b)
    assert d is not None
    low, high = _mover(0.6, 0.5, 0.75, 0.8, 0.7, 0.85)
    assert d["value"] == pytest.approx(0.2)
    assert (d["ci_low"], d["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert d["confidence"] == 0.9 and d["method"] == CORRECTED_DIFFERENCE_METHOD
    for broken in (_estimate(None, None, None), _estimate(0.6, None, 0.7),
                   _estimate(0.6, 0.5, None)):
        assert _difference(broken, b) is None
        assert _difference(a, broken) is None
    assert _difference(None, b) is None and _difference(a, None) is None


def _corrected(value: float, low: float, high: float) -> dict[str, Any]:
    return {"difference": {"mean": {"value": value, "ci_low": low, "ci_high": high,
                                    "confidence": 0.95}}}


def test_the_verdict_on_the_reviewers_scale_in_words() -> None:
    assert corrected_verdict(_corrected(-0.2, -0.3, -0.05)) == (
        "On the reviewers' scale (corrected by human labels), the candidate's mean score is "
        "lower: candidate - baseline -0.200 [-0.300, -0.050], 95% interval.")
    assert corrected_verdict(_corrected(0.2, 0.01, 0.3)) == (
        "On the reviewers' scale (corrected by human labels), the candidate's mean score is "
        "higher: candidate - baseline +0.200 [+0.010, +0.300], 95% interval.")
    assert corrected_verdict(_corrected(0.1, -0.1, 0.3)) == (
        "On the reviewers' scale (corrected by human labels), no clear difference: "
        "candidate - baseline +0.100 [-0.100, +0.300], 95% interval including 0.")
    # An interval ending exactly at 0 includes it.
    assert "no clear difference" in str(corrected_verdict(_corrected(0.1, 0.0, 0.2)))
    assert "no clear difference" in str(corrected_verdict(_corrected(-0.1, -0.2, 0.0)))
    assert corrected_verdict(None) is None
    assert corrected_verdict({"difference": {"mean": None}}) is None


def test_a_rubric_added_or_a_scenario_recorded_once_changes_that_scenario() -> None:
    a = _definition(scenarios={"a": [], "b": [0], "only_b": []})
    b = _definition(scenarios={"a": [0], "b": [0], "only_b": [], "new": []})
    assert _scenario_changed(a, b, "a")  # judged in the candidate only
    assert _scenario_changed(b, a, "a")  # dropped
    assert _scenario_changed(a, b, "new")  # a checks-only scenario in one record only
    assert not _scenario_changed(a, b, "only_b")
    out = judge_comparison(_one(a), _one(b), ["a", "b", "only_b"])
    assert out["changed_scenarios"] == ["a"]
    # judged in one run only: changed, and not scored by checks alone
    assert out["checks_only"] == ["only_b"]
    dropped = judge_comparison(_one(b), _one(a), ["a", "b", "only_b"])
    assert dropped["checks_only"] == ["only_b"]


def test_a_new_model_on_checks_only_scenarios_is_the_same_judge_for_them() -> None:
    out = judge_comparison(_one(_definition()), _one(_definition(models=["x:y"])), ["checks"])
    assert (out["same"], out["differences"], out["changed_scenarios"], out["warning"]) == (
        True, [], [], None)
    assert out["checks_only"] == ["checks"]


def test_differences_are_told_over_the_compared_scenarios_only() -> None:
    a = _definition(rubrics=[_rubric("helpful"), _rubric("tone")],
                    scenarios={"a": [0], "b": [1]})
    b = _definition(models=["x:y"], rubrics=[_rubric("helpful"), _rubric("tone", sha="new")],
                    scenarios={"a": [0], "b": [1]})
    out = judge_comparison(_one(a), _one(b), ["a"])
    assert out["differences"] == ["model: openai:judge vs x:y"]
    # the same through a mixed run: its parts are told against the single judge likewise
    mixed = JudgeRecord(mixed=[JudgePart(part="first", definition=a),
                               JudgePart(part="second", definition=b)])
    out = judge_comparison(mixed, _one(a), ["a"])
    assert out["differences"] == ["the baseline mixes judges (first, second)",
                                  "second against the other run: model: openai:judge vs x:y"]


def test_a_mixed_baseline_is_told_against_the_candidates_judge() -> None:
    one = _definition()
    other = _definition(temperature=1.0, version="v2")
    mixed = JudgeRecord(mixed=[JudgePart(part="before", definition=one),
                               JudgePart(part="after", definition=other),
                               JudgePart(part="old", definition=None)])
    out = judge_comparison(mixed, _one(one), IDS)
    assert out["differences"] == [
        "the baseline mixes judges (before, after, old)",
        "after against the other run: temperature: 0 vs 1; prompt version: v1 vs v2",
        "old against the other run: one judge not recorded"]
    # a part not recorded judges nothing that can be read: the judged scenarios come from
    # the parts that are
    assert out["changed_scenarios"] == ["a", "b"] and out["checks_only"] == ["checks"]
