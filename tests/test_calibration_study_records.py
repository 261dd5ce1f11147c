"""The pure parts of a calibration study: criterion scales, the scale map, judge answers into
contract-3 records, and which recorded units a resumed study may skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.calibration.datasets import PairwiseItem, PointwiseDataset, PointwiseItem
from harness.calibration.judgments import PairwiseJudgment, PointwiseJudgment
from harness.calibration.scale import Scale
from harness.calibration.study_dir import canonical_order, complete_units
from harness.calibration.study_records import (
    SampleResult,
    StudySettings,
    criterion_scale,
    label_mode,
    pairwise_records,
    parse_scale_map,
    pointwise_record,
    pointwise_sample,
    record_line,
)
from harness.errors import InputError, ModelConfigError
from harness.judging.rubric import parse_rubric
from harness.judging.verdicts import CriterionVerdict, JudgeError, Judgment

RUBRIC = parse_rubric({
    "id": "r", "target": "final_response", "threshold": 0.5,
    "scales": {"even": {"levels": [{"value": 0, "label": "none"}, {"value": 2, "label": "some"},
                                   {"value": 4, "label": "all"}]}},
    "criteria": [{"id": "quality", "question": "Good?", "scale": "ordinal_1_5", "threshold": 4},
                 {"id": "coverage", "question": "Covered?", "scale": "even"},
                 {"id": "applies", "question": "Applies?", "scale": "binary",
                  "allow_na": True}],
}, "inline")


def settings(**overrides: object) -> StudySettings:
    base: dict[str, object] = dict(
        kind="pointwise", dataset="d.jsonl", dataset_sha256="0", rubric="r@1",
        rubric_sha256="0", prompt_hash="0", criterion="quality", labels="levels", samples=2,
        swap=True, allow_ties=True)
    return StudySettings.model_validate({**base, **overrides})


def dataset(humans: list[object], scale: Scale | None = None) -> PointwiseDataset:
    items = [PointwiseItem(item_id=f"i{k}", text="t", human=h) for k, h in enumerate(humans)]
    return PointwiseDataset(source="d.jsonl", scale=scale, items=items)


def test_criterion_scales_cover_every_level() -> None:
    assert criterion_scale(RUBRIC, "quality") == Scale(min=1, max=5, step=1)
    assert criterion_scale(RUBRIC, "coverage") == Scale(min=0, max=4, step=2)
    assert criterion_scale(RUBRIC, "applies") == Scale(min=0, max=1, step=1)


def test_label_modes() -> None:
    assert label_mode(dataset([[4, 5], 2]), RUBRIC, "quality", None) == (
        "levels", Scale(min=1, max=5))
    assert label_mode(dataset([True, [False, True]]), RUBRIC, "quality", None)[0] == "pass"
    three = Scale(min=1, max=3)
    mapping = {1: 1.0, 2: 1.0, 3: 2.0, 4: 3.0, 5: 3.0}
    assert label_mode(dataset([1, 3], three), RUBRIC, "quality", mapping) == ("mapped", three)
    with pytest.raises(InputError, match="level 5 maps to 4, which is off the human scale"):
        label_mode(dataset([1, 3], three), RUBRIC, "quality", {**mapping, 5: 4.0})
    with pytest.raises(InputError, match=r"d.jsonl:i1: human: 7 is off criterion 'quality'"):
        label_mode(dataset([1, 7]), RUBRIC, "quality", None)
    with pytest.raises(InputError, match="true/false; they are compared with the criterion"):
        label_mode(dataset([True]), RUBRIC, "quality", mapping)


def test_parse_scale_map() -> None:
    assert parse_scale_map("1=1, 2=1.5,3=2") == {1: 1.0, 2: 1.5, 3: 2.0}
    with pytest.raises(InputError, match="level 2 is mapped twice"):
        parse_scale_map("2=1,2=2")
    with pytest.raises(InputError, match="got 'x=1'"):
        parse_scale_map("1=1,x=1")


def _judgment(verdicts: list[CriterionVerdict]) -> Judgment:
    return Judgment(rubric_id="r", rubric_version=1, target="final_response", judge_model="m:x",
                    prompt_version="1", prompt_hash="h", verdicts=verdicts,
                    criterion_scores={}, score=None, passed=None)


def test_judge_outcomes_to_samples() -> None:
    scored = _judgment([CriterionVerdict(criterion_id="quality", reasoning="ok", score=4,
                                         normalised=0.75),
                        CriterionVerdict(criterion_id="applies", reasoning="n/a", score=None,
                                         normalised=None)])
    assert pointwise_sample(scored, "quality").level == 4
    assert pointwise_sample(scored, "applies").not_applicable
    failed = JudgeError(rubric_id="r", rubric_version=1, target="final_response",
                        judge_model="m:x", prompt_version="1", prompt_hash="h",
                        error_type="ModelUnavailableError", message="gave up after 5 attempts")
    sample = pointwise_sample(failed, "quality")
    assert sample.level is None and "gave up" in sample.errors[False]
    fatal = failed.model_copy(update={"error_type": "ModelConfigError",
                                      "message": "no OPENAI_API_KEY set"})
    with pytest.raises(ModelConfigError, match="no OPENAI_API_KEY set"):
        pointwise_sample(fatal, "quality")


def test_records_are_contract_3_lines() -> None:
    item = PointwiseItem(item_id="q", text="two words", human=[4, 5])
    samples = [SampleResult(level=5), SampleResult(errors={False: "boom"}),
               SampleResult(not_applicable=True)]
    passed = pointwise_record(item, "m:x", samples, settings(labels="pass", samples=3), RUBRIC,
                              None, offline=True)
    assert passed.judge == [True, None, None]  # level 5 reaches the criterion threshold 4
    line = json.loads(record_line(passed))
    assert line["metadata"]["errors"] == {"1": "boom"}
    assert line["metadata"]["not_applicable"] == [2]
    assert PointwiseJudgment.model_validate(line) == passed

    pair = PairwiseItem(item_id="p", input="q", output_a="a b c", output_b="d")
    sample = SampleResult(verdicts={False: "A", True: None}, said={False: "A"},
                          errors={True: "StructuredOutputError: invalid"})
    records = pairwise_records(pair, "m:x", [sample], settings(kind="pairwise",
                                                                labels="pairwise",
                                                                samples=1), offline=False)
    assert [(r.swapped, r.verdict) for r in records] == [(False, "A"), (True, None)]
    assert records[1].metadata["error"] == "StructuredOutputError: invalid"
    assert records[0].length_a == 3 and records[0].length_b == 1


def test_only_complete_error_free_units_are_skipped_on_resume() -> None:
    pw = settings(kind="pairwise", labels="pairwise", samples=1)

    def rec(item: str, swapped: bool, error: bool = False) -> PairwiseJudgment:
        return PairwiseJudgment(item_id=item, gold="A", verdict=None if error else "A",
                                swapped=swapped, judge_id="m:x", sample=0,
                                metadata={"error": "x"} if error else {})

    records = [rec("done", False), rec("done", True), rec("half", False),
               rec("failed", False), rec("failed", True, error=True)]
    assert set(complete_units(records, pw)) == {("m:x", "done")}
    one_order = pw.model_copy(update={"swap": False})
    assert set(complete_units(records, one_order)) == {("m:x", "half")}


def test_canonical_order_does_not_depend_on_finishing_order(tmp_path: Path) -> None:
    records = [PairwiseJudgment(item_id=i, gold="A", verdict="A", swapped=s, judge_id=j,
                                sample=k)
               for j in ("b", "a") for i in ("y", "x") for s in (True, False) for k in (1, 0)]
    ordered = canonical_order(records, ["a", "b"], ["x", "y"])
    keys = [(r.judge_id, r.item_id, r.swapped, r.sample) for r in ordered]
    assert keys[:4] == [("a", "x", False, 0), ("a", "x", False, 1), ("a", "x", True, 0),
                        ("a", "x", True, 1)]
    assert keys[-1] == ("b", "y", True, 1)
    assert canonical_order(reversed(records), ["a", "b"], ["x", "y"]) == ordered
