"""Rubric scoring: normalisation, weighted mean over applicable criteria, N/A, thresholds."""

from __future__ import annotations

import numpy as np
import pytest

from harness.judging.rubric import parse_rubric
from harness.judging.scoring import criterion_passed, score_rubric

RUBRIC = parse_rubric({
    "id": "r", "target": "conversation", "threshold": 0.7,
    "scales": {"three": {"levels": [{"value": 0, "label": "bad"}, {"value": 5, "label": "ok"},
                                    {"value": 10, "label": "good"}]}},
    "criteria": [
        {"id": "a", "question": "A?", "scale": "ordinal_1_5", "weight": 2},
        {"id": "b", "question": "B?", "scale": "binary", "weight": 1, "allow_na": True},
        {"id": "c", "question": "C?", "scale": "three", "weight": 0.5, "threshold": 10},
    ],
}, "inline")


def test_normalisation_maps_lowest_to_0_and_highest_to_1() -> None:
    assert [RUBRIC.scale_of("a").normalise(v) for v in (1, 2, 3, 4, 5)] == [
        0, 0.25, 0.5, 0.75, 1]
    assert [RUBRIC.scale_of("c").normalise(v) for v in (0, 5, 10)] == [0, 0.5, 1]


@pytest.mark.parametrize(
    "scores",
    [{"a": 0.75, "b": 1.0, "c": 0.5}, {"a": 0.25, "b": 0.0, "c": 1.0},
     {"a": 1.0, "b": None, "c": 0.5}, {"a": 0.5, "b": None, "c": None}],
)
def test_rubric_score_is_the_weighted_mean_over_applicable_criteria(scores) -> None:
    weights = {"a": 2, "b": 1, "c": 0.5}
    keys = [k for k, v in scores.items() if v is not None]
    expected = np.average([scores[k] for k in keys], weights=[weights[k] for k in keys])
    result = score_rubric(RUBRIC, scores)
    assert result.score == pytest.approx(expected)
    assert result.passed == (expected >= 0.7)


def test_na_is_left_out_not_counted_as_zero() -> None:
    with_na = score_rubric(RUBRIC, {"a": 1.0, "b": None, "c": 1.0})
    assert with_na.score == 1.0 and with_na.passed


def test_all_na_is_explicitly_not_scored() -> None:
    rubric = parse_rubric({"id": "n", "target": "conversation", "threshold": 0.5, "criteria": [
        {"id": "x", "question": "?", "allow_na": True}]}, "inline")
    result = score_rubric(rubric, {"x": None})
    assert result.score is None and result.passed is None
    assert "all N/A" in (result.unscored_reason or "")


def test_threshold_boundary_passes_despite_float_error() -> None:
    rubric = parse_rubric({"id": "t", "target": "conversation", "threshold": 0.7, "criteria": [
        {"id": "x", "question": "?", "scale": "binary", "weight": 0.7},
        {"id": "y", "question": "?", "scale": "binary", "weight": 0.3}]}, "inline")
    assert score_rubric(rubric, {"x": 1.0, "y": 0.0}).passed is True
    assert score_rubric(rubric, {"x": 0.0, "y": 1.0}).passed is False


def test_failed_criteria_use_their_own_threshold_in_scale_units() -> None:
    # c's threshold is 10 on 0/5/10, i.e. 1.0 normalised; a and b use the rubric's 0.7
    result = score_rubric(RUBRIC, {"a": 0.75, "b": 0.0, "c": 0.5})
    assert result.failed_criteria == ["b", "c"]
    assert criterion_passed(RUBRIC, "c", 1.0) is True
    assert criterion_passed(RUBRIC, "b", None) is None


def test_a_missing_criterion_is_an_error_not_a_silent_gap() -> None:
    with pytest.raises(KeyError):
        score_rubric(RUBRIC, {"a": 1.0, "b": 1.0})
