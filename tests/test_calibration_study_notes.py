"""What a judge-calibration study says about itself, word for word: the policy of each rubric
(how the judge's answers were obtained and compared with the human labels) and the notes
(offline judges, failed calls, N/A answers, the threshold, judges left out) that the report
prints under its figures. A reader decides from these sentences whether a figure applies."""

from __future__ import annotations

from typing import Any

import pytest

from harness.calibration.study import study_notes
from harness.calibration.study_records import StudyCounts, StudySettings


def _settings(**changes: Any) -> StudySettings:
    base: dict[str, Any] = {
        "kind": "pointwise", "dataset": "items.jsonl", "dataset_sha256": "d", "rubric":
        "quality@1", "rubric_sha256": "r", "prompt_hash": "p", "criterion": "correctness",
        "labels": "levels", "samples": 3, "swap": True, "allow_ties": True}
    return StudySettings.model_validate(base | changes)


def _policies(*settings: StudySettings) -> list[str]:
    return study_notes(settings, ["openai:gpt-x"], StudyCounts(), [], None)[0]


TAIL = ("an N/A answer and a call that failed after retries are missing judge samples, never "
        "scores")


@pytest.mark.parametrize(("changes", "expected"), [
    ({}, "judge scores: rubric quality@1, criterion correctness, 3 samples per item; its level "
         f"is compared with the human labels directly (same scale); {TAIL}"),
    ({"samples": 1, "labels": "mapped", "scale_map": {1: 0, 2: 0.5, 3: 1}},
     "judge scores: rubric quality@1, criterion correctness, 1 sample per item; its level is "
     f"mapped onto the human scale by --scale-map 1=0,2=0.5,3=1; {TAIL}"),
    ({"labels": "pass"},
     "judge scores: rubric quality@1, criterion correctness, 3 samples per item; its pass "
     "verdict (normalised score at or above the criterion's threshold) is compared with the "
     f"true/false human labels; {TAIL}"),
    ({"kind": "pairwise", "criterion": None, "labels": "pairwise", "samples": 2},
     "judge verdicts: pairwise comparison under rubric quality@1, 2 samples per item in both "
     "orders, ties allowed; a call that failed after retries is a missing verdict"),
    ({"kind": "pairwise", "criterion": "clarity", "labels": "pairwise", "samples": 1,
      "swap": False, "allow_ties": False},
     "judge verdicts: pairwise comparison under rubric quality@1, criterion clarity, 1 sample "
     "per item in the original order only (--no-swap), ties not allowed; a call that failed "
     "after retries is a missing verdict"),
])
def test_each_rubric_says_how_its_answers_were_compared(changes: dict[str, Any],
                                                        expected: str) -> None:
    assert _policies(_settings(**changes)) == [expected]


def test_several_rubrics_are_several_judges() -> None:
    policies = _policies(_settings(), _settings(rubric="tone@2", criterion="tone"))
    assert len(policies) == 3
    assert policies[1].startswith("judge scores: rubric tone@2, criterion tone, ")
    assert policies[2] == ("several rubrics: each (model, rubric) pair is a judge of its own, "
                           "named MODEL@RUBRIC_ID, and compared with the others on the same "
                           "items")


def test_no_notes_for_a_clean_study_with_real_judges() -> None:
    assert study_notes([_settings()], ["openai:gpt-x"], StudyCounts(), [], None)[1] == []


def test_every_note_in_order_word_for_word() -> None:
    counts = StudyCounts(failed_calls=2, not_applicable=3)
    notes = study_notes([_settings()], ["mock:judge", "mock:lenient"], counts,
                        ["openai:a", "openai:b"], "the threshold is 4 (the criterion's own)")[1]
    assert notes == [
        "OFFLINE: these numbers come from mock: models (mock:judge, mock:lenient), not from a "
        "real judge; no model service was called. Use them to try the pipeline, not to decide "
        "whether to trust a judge.",
        "2 judge calls failed after retries or re-asks and are missing scores/verdicts (see "
        "the policies); running the study again with the same --out judges those items again",
        "3 judge answers were N/A (missing judge samples)",
        "the threshold is 4 (the criterion's own)",
        "the study directory also holds judgments by openai:a, openai:b, not asked for this "
        "time and left out of this report"]
    one = study_notes([_settings()], ["openai:gpt-x"], StudyCounts(failed_calls=1,
                                                                   not_applicable=1), [], None)
    assert one[1] == [
        "1 judge call failed after retries or re-asks and is a missing score/verdict (see the "
        "policies); running the study again with the same --out judges those items again",
        "1 judge answer was N/A (missing judge samples)"]


def test_mixed_judges_name_the_mock_and_the_real_with_their_calls() -> None:
    usage = {"calls": 7, "cached_calls": 2, "cost_usd": 0.0123}
    notes = study_notes([_settings()], ["mock:judge", "openai:gpt-x"], StudyCounts(usage=usage),
                        [], None)[1]
    assert notes == [
        "OFFLINE roles: judge (mock:judge); REAL roles: judge (openai:gpt-x, 7 calls (2 "
        "cached) in all, mock calls included, $0.0123). Figures that depend on an offline role "
        "come from a mock model, not a real one."]
