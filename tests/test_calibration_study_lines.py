"""The lines a calibration study writes and keeps: a record line leaves out empty optional
fields, a pointwise record keeps each sample's level and reasoning, a criterion that was not
scored says why, a resumed study keeps the records of judges not asked this time (once), and
the scale of a criterion whose levels are not evenly spaced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.calibration.datasets import PairwiseItem, PointwiseDataset, PointwiseItem
from harness.calibration.judgments import PointwiseJudgment, pointwise_judgment
from harness.calibration.report import AnalysisOptions
from harness.calibration.scale import Scale
from harness.calibration.study import run_calibration
from harness.calibration.study_records import (
    SampleResult,
    StudySettings,
    criterion_scale,
    label_mode,
    pairwise_records,
    pointwise_record,
    pointwise_sample,
    record_line,
)
from harness.errors import InputError
from harness.judging.rubric import parse_rubric
from harness.judging.verdicts import CriterionVerdict, Judgment
from harness.testing.replies import RecordedRequest, Reply
from tests.helpers.calibration_rubrics import HELPFUL_RUBRIC

RUBRIC = parse_rubric({
    "id": "r", "target": "final_response", "threshold": 0.5,
    "scales": {"odd": {"levels": [{"value": 1, "label": "low"}, {"value": 3, "label": "mid"},
                                  {"value": 5, "label": "high"}]},
               "uneven": {"levels": [{"value": 0, "label": "none"},
                                     {"value": 1, "label": "some"},
                                     {"value": 3, "label": "all"}]}},
    "criteria": [{"id": "quality", "question": "Good?", "scale": "ordinal_1_5"},
                 {"id": "odd", "question": "Odd?", "scale": "odd"},
                 {"id": "uneven", "question": "Uneven?", "scale": "uneven"}],
}, "inline")
OPTIONS = AnalysisOptions(n_resamples=0)


def _settings(**overrides: object) -> StudySettings:
    base: dict[str, object] = dict(
        kind="pointwise", dataset="d.jsonl", dataset_sha256="0", rubric="r@1",
        rubric_sha256="0", prompt_hash="0", criterion="quality", labels="levels", samples=2,
        swap=True, allow_ties=True)
    return StudySettings.model_validate({**base, **overrides})


def test_criterion_scales_step_by_the_common_spacing_of_their_levels() -> None:
    assert criterion_scale(RUBRIC, "odd") == Scale(min=1, max=5, step=2)
    assert criterion_scale(RUBRIC, "uneven") == Scale(min=0, max=3, step=1)


def test_mixed_human_labels_are_compared_as_pass_fail_wherever_the_boolean_is() -> None:
    items = [PointwiseItem(item_id=f"i{k}", text="t", human=h)
             for k, h in enumerate([True, 3.0, 4.0])]
    dataset = PointwiseDataset(source="d.jsonl", scale=None, items=items)
    assert label_mode(dataset, RUBRIC, "quality", None) == ("pass", None)
    with pytest.raises(InputError) as info:
        label_mode(dataset, RUBRIC, "quality", {1: 1.0})
    assert (info.value.source, info.value.field) == ("--scale-map", None)


def test_a_record_line_leaves_out_empty_optional_fields() -> None:
    item = PointwiseItem(item_id="q", text="two words", human=4, scale=Scale(min=1, max=5))
    record = pointwise_judgment(item, [4.0])
    assert record.scale == Scale(min=1, max=5) and record.output == "two words"
    bare = PointwiseJudgment(item_id="q", human=4.0, judge=[4.0])
    assert set(json.loads(record_line(bare))) == {"item_id", "human", "judge", "judge_id",
                                                  "metadata"}
    full = json.loads(record_line(record.model_copy(update={"length": 2.0})))
    assert (full["output"], full["length"], full["scale"]) == (
        "two words", 2.0, {"min": 1.0, "max": 5.0, "step": 1.0})
    pair = PairwiseItem(item_id="p", input="i", output_a="a", output_b="b c")
    [line] = pairwise_records(pair, "m", [SampleResult(verdicts={False: "A"})],
                              _settings(kind="pairwise", labels="pairwise", samples=1,
                                        swap=False), offline=False)
    assert {"sample", "length_a", "length_b"} <= set(json.loads(record_line(line)))
    assert "sample" not in json.loads(record_line(line.model_copy(update={"sample": None})))
    no_lengths = line.model_copy(update={"length_a": None, "length_b": None})
    assert not {"length_a", "length_b"} & set(json.loads(record_line(no_lengths)))


def _judgment(verdicts: list[CriterionVerdict], reason: str | None = None) -> Judgment:
    return Judgment(rubric_id="r", rubric_version=1, target="final_response", judge_model="m:x",
                    prompt_version="1", prompt_hash="h", verdicts=verdicts,
                    criterion_scores={}, score=None, passed=None, unscored_reason=reason)


def test_a_sample_keeps_its_reasoning_and_an_unscored_criterion_says_why() -> None:
    scored = pointwise_sample(_judgment([CriterionVerdict(
        criterion_id="quality", reasoning="clear and right", score=4, normalised=0.75)]),
        "quality")
    assert (scored.level, scored.reasoning, scored.not_applicable) == (
        4, {False: "clear and right"}, False)
    unscored = pointwise_sample(_judgment([], "the answer was empty"), "quality")
    assert (unscored.level, unscored.reasoning, unscored.not_applicable) == (
        None, {False: "the answer was empty"}, True)
    silent = pointwise_sample(_judgment([]), "quality")
    assert silent.reasoning == {False: "not scored"} and silent.not_applicable


def test_a_pointwise_record_keeps_each_samples_level_and_reasoning() -> None:
    item = PointwiseItem(item_id="q", text="t", human=4)
    samples = [SampleResult(level=5, reasoning={False: "great"}),
               SampleResult(level=3, reasoning={False: "so-so"})]
    record = pointwise_record(item, "m:x", samples, _settings(), RUBRIC, Scale(min=1, max=5),
                              offline=True)
    assert record.scale == Scale(min=1, max=5)
    assert record.metadata == {"rubric": "r@1", "criterion": "quality", "offline": True,
                               "levels": [5, 3], "reasoning": ["great", "so-so"],
                               "errors": {}, "not_applicable": []}


RUBRIC_YAML = HELPFUL_RUBRIC


async def test_a_study_resumed_with_fewer_judges_keeps_the_others_records_once(
        loopback: Any, make_hub: Any, tmp_path: Path) -> None:
    loopback.set_responder(lambda request: Reply.json({"reasoning": "ok", "verdict": "A"}))
    rubrics = tmp_path / "rubrics"
    rubrics.mkdir()
    (rubrics / "helpful.yaml").write_text(RUBRIC_YAML, encoding="utf-8")
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"item_id": f"p{k}", "input": "q", "output_a": "a",
                                        "output_b": "b", "gold": "A"}) + "\n"
                            for k in range(3)), encoding="utf-8")
    out = tmp_path / "out"
    await run_calibration(data, ["openai:one", "openai:two"], "helpful", out_dir=out,
                          rubric_dirs=[rubrics], options=OPTIONS, hub=make_hub())

    def lines() -> list[dict[str, Any]]:
        return [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]

    assert len(lines()) == 3 * 2 * 2  # items, orders, judges: every line is one JSON record
    before = loopback.request_count
    await run_calibration(data, ["openai:one"], "helpful", out_dir=out, rubric_dirs=[rubrics],
                          options=OPTIONS, hub=make_hub())
    assert loopback.request_count == before  # nothing left to judge
    kept = lines()
    assert len(kept) == 12
    assert sorted((r["judge_id"], r["item_id"], r["swapped"]) for r in kept) == sorted(
        (j, f"p{k}", s) for j in ("openai:one", "openai:two") for k in range(3)
        for s in (False, True))


def test_a_judgments_file_without_its_study_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "judgments.jsonl").write_text("", encoding="utf-8")
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"item_id": "a", "text": "t", "human": 3}) + "\n")
    with pytest.raises(InputError) as info:
        import asyncio
        asyncio.run(run_calibration(data, ["mock:judge"], "helpful", out_dir=out,
                                    rubric_dirs=[_rubric_dir(tmp_path)], options=OPTIONS))
    assert str(info.value) == (f"{out / 'judgments.jsonl'}: found without study.json: not a "
                               "study directory written by harness calibrate; use another --out")


def _rubric_dir(tmp_path: Path) -> Path:
    rubrics = tmp_path / "rubrics-b"
    rubrics.mkdir(exist_ok=True)
    (rubrics / "helpful.yaml").write_text(RUBRIC_YAML, encoding="utf-8")
    return rubrics


async def test_a_pointwise_request_carries_context_temperature_and_re_asks(
        loopback: Any, make_hub: Any, tmp_path: Path) -> None:
    answers = iter([{"quality": {"reasoning": "?", "evidence": [], "score": 9}},
                    {"quality": {"reasoning": "ok", "evidence": [], "score": 4}}])

    def respond(request: RecordedRequest) -> Reply:
        return Reply.json(next(answers))

    loopback.set_responder(respond)
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"item_id": "a", "input": "Where is it?", "text": "Friday.",
                                "context": "Order 7 shipped Monday.", "human": 4}) + "\n")
    report = await run_calibration(data, ["openai:judge"], "helpful", temperature=0.4,
                                   max_reasks=1, rubric_dirs=[_rubric_dir(tmp_path)],
                                   options=OPTIONS, hub=make_hub())
    first, second = loopback.requests  # the malformed score was re-asked once
    assert "Order 7 shipped Monday." in json.dumps(first.body)
    assert first.body.get("temperature") == second.body.get("temperature") == 0.4
    [judge] = report.judges
    assert judge.n_items == 1
