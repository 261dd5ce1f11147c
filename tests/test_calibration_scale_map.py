"""The one-line errors of ``--scale-map`` (the file-less option names itself, says what is
wrong and what was expected), what each pairwise record keeps of its own sample and order, the
error a fatal judge failure stops a study with, and the scale inferred for labels that declare
none."""

from __future__ import annotations

import math

import pytest

from harness.calibration.datasets import PairwiseItem, PointwiseDataset, PointwiseItem
from harness.calibration.scale import Scale, infer_scale
from harness.calibration.study_records import (
    SampleResult,
    StudySettings,
    label_mode,
    pairwise_records,
    parse_scale_map,
    raise_if_fatal,
)
from harness.errors import InputError, ModelConfigError
from harness.judging.rubric import parse_rubric

RUBRIC = parse_rubric({
    "id": "r", "target": "final_response", "threshold": 0.5,
    "criteria": [{"id": "quality", "question": "Good?", "scale": "ordinal_1_5"}],
}, "inline")
THREE = Scale(min=1, max=3)
FULL_MAP = {1: 1.0, 2: 1.0, 3: 2.0, 4: 3.0, 5: 3.0}


def _error(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        parse_scale_map(text)
    return info.value


def _map_error(mapping: dict[int, float], scale: Scale | None = THREE) -> InputError:
    items = [PointwiseItem(item_id="i", text="t", human=1)]
    with pytest.raises(InputError) as info:
        label_mode(PointwiseDataset(source="d.jsonl", scale=scale, items=items), RUBRIC,
                   "quality", mapping)
    return info.value


@pytest.mark.parametrize(("text", "expected"), [
    ("", "expected LEVEL=VALUE pairs, got nothing"),
    (" , ,", "expected LEVEL=VALUE pairs, got nothing"),
    ("1=1,2=2,1=3", "level 1 is mapped twice"),
    ("1=1,2", "expected LEVEL=VALUE pairs separated by commas, e.g. 1=1,2=1,3=2,4=3,5=3; "
              "got '2'"),
    ("1=2=3", "expected LEVEL=VALUE pairs separated by commas, e.g. 1=1,2=1,3=2,4=3,5=3; "
              "got '1=2=3'"),
])
def test_a_bad_scale_map_is_one_line_naming_the_option(text: str, expected: str) -> None:
    error = _error(text)
    assert (error.source, error.field, error.location) == ("--scale-map", None, None)
    assert str(error) == f"--scale-map: {expected}"


def test_the_map_must_cover_the_criterion_levels_exactly() -> None:
    missing = _map_error({1: 1.0, 2: 1.0, 3: 2.0})
    assert str(missing) == ("--scale-map: map every level of criterion 'quality' (1, 2, 3, 4, "
                            "5) exactly once; missing [4, 5]")
    extra = _map_error({**FULL_MAP, 6: 3.0, 0: 1.0})
    assert str(extra) == ("--scale-map: map every level of criterion 'quality' (1, 2, 3, 4, "
                          "5) exactly once; not levels: [6, 0]")


def test_a_mapped_value_off_the_human_scale_says_what_was_expected() -> None:
    off = _map_error({**FULL_MAP, 5: 4.0})
    assert (off.source, off.field) == ("--scale-map", None)
    assert str(off) == ("--scale-map: level 5 maps to 4, which is off the human scale; "
                        "expected a number from 1 to 3 in steps of 1")
    continuous = _map_error({**FULL_MAP, 2: 0.5}, Scale(min=1, max=3, step=None))
    assert str(continuous).endswith("level 2 maps to 0.5, which is off the human scale; "
                                    "expected a number from 1 to 3")


def test_pairwise_records_keep_each_samples_own_words_per_order() -> None:
    item = PairwiseItem(item_id="p", input="q", output_a="a", output_b="b")
    samples = [
        SampleResult(verdicts={False: "A", True: "B"}, said={False: "A", True: "A"},
                     reasoning={False: "first, original", True: "first, swapped"}),
        SampleResult(verdicts={False: "B", True: None}, said={False: "B"},
                     reasoning={False: "second, original"},
                     errors={True: "ModelUnavailableError: gave up"}),
    ]
    settings = StudySettings(kind="pairwise", dataset="d", dataset_sha256="0", rubric="r@1",
                             rubric_sha256="0", prompt_hash="0", criterion="quality",
                             labels="pairwise", samples=2, swap=True, allow_ties=True)
    records = pairwise_records(item, "m:x", samples, settings, offline=True)
    seen = {(r.swapped, r.sample): (r.verdict, r.metadata) for r in records}
    base = {"rubric": "r@1", "criterion": "quality", "offline": True}
    assert seen == {
        (False, 0): ("A", {**base, "said": "A", "reasoning": "first, original"}),
        (True, 0): ("B", {**base, "said": "A", "reasoning": "first, swapped"}),
        (False, 1): ("B", {**base, "said": "B", "reasoning": "second, original"}),
        (True, 1): (None, {**base, "said": None, "reasoning": None,
                           "error": "ModelUnavailableError: gave up"}),
    }


def test_a_fatal_failure_stops_the_study_saying_what_is_kept() -> None:
    with pytest.raises(ModelConfigError) as info:
        raise_if_fatal("ModelConfigError", "no OPENAI_API_KEY set")
    assert str(info.value) == "no OPENAI_API_KEY set (the judgments finished so far are kept)"
    raise_if_fatal("ModelUnavailableError", "gave up")  # not fatal: recorded, the study goes on
    raise_if_fatal(None, None)


@pytest.mark.parametrize(("values", "expected"), [
    ([None, 2.0, math.nan, 4.0, None], Scale(min=2, max=4, step=1.0)),
    ([3.0, 3.0, None], Scale(min=3, max=4, step=1.0)),  # one distinct value: two points
    ([0.0, 1.0, 1.0], Scale(min=0, max=1, step=1.0)),
    ([1.0, 2.5], None),
    ([None, math.nan], None),
])
def test_the_scale_inferred_from_labels(values: list[float], expected: Scale | None) -> None:
    assert infer_scale(values) == expected


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_mapped_value_that_is_not_finite_is_refused_without_a_human_scale(
        value: float) -> None:
    error = _map_error({**FULL_MAP, 3: value}, scale=None)
    assert (error.source, error.field) == ("--scale-map", None)
    assert str(error) == (f"--scale-map: level 3 maps to {value:g}, which is off the human "
                          "scale; expected a finite number")
    assert math.isnan(parse_scale_map("1=nan")[1])  # the option reads it as a number
