"""What a pairwise calibration study sends the judge: each sample its own request (so samples
are not one cached answer repeated), the study's temperature and re-ask budget, and, with
``swap=False``, the very request the original order gets with ``swap=True`` (the two modes
share cache entries and an offline judge decides alike)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.calibration.report import AnalysisOptions
from harness.calibration.study import run_calibration
from harness.testing.replies import RecordedRequest, Reply
from tests.helpers.calibration_rubrics import HELPFUL_RUBRIC

OPTIONS = AnalysisOptions(n_resamples=0)

RUBRIC = HELPFUL_RUBRIC

PAIRS = [
    {"item_id": "p1", "input": "Capital of Australia?", "output_a": "Sydney",
     "output_b": "Canberra", "gold": "B"},
    {"item_id": "p2", "input": "12 x 12?", "output_a": "144", "output_b": "124", "gold": "A"},
]


@pytest.fixture
def rubric_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "rubrics"
    directory.mkdir()
    (directory / "helpful.yaml").write_text(RUBRIC, encoding="utf-8")
    return directory


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in PAIRS), encoding="utf-8")
    return path


def _shown_first(request: RecordedRequest) -> str:
    text = json.dumps(request.body)
    start = text.index("<response_a>\\n") + len("<response_a>\\n")
    return text[start:text.index("\\n</response_a>")]


def _answer(request: RecordedRequest) -> Reply:
    return Reply.json({"reasoning": "Compared.", "verdict": "A"})


def _body(request: RecordedRequest) -> dict[str, Any]:
    return request.body


async def test_every_sample_is_asked_even_with_a_response_cache(
        loopback: Any, make_hub: Any, rubric_dir: Path, pairs: Path, tmp_path: Path) -> None:
    loopback.set_responder(_answer)
    cache = tmp_path / "cache.sqlite"
    for swap in (True, False):
        before = loopback.request_count
        report = await run_calibration(
            pairs, ["openai:judge"], "helpful", samples=3, swap=swap, temperature=0.7,
            rubric_dirs=[rubric_dir], options=OPTIONS,
            hub=make_hub(cache_path=cache / str(swap)))
        orders = 2 if swap else 1
        # three samples of each item in each order reach the model: none is a cache hit
        assert loopback.request_count - before == len(PAIRS) * 3 * orders
        [judge] = report.judges
        assert judge.n_records == len(PAIRS) * 3 * orders
        sent = loopback.requests[-len(PAIRS) * 3 * orders:]
        assert {r.body.get("temperature") for r in sent} == {0.7}


async def test_without_swap_the_original_order_request_is_the_swap_modes_one(
        loopback: Any, make_hub: Any, rubric_dir: Path, pairs: Path) -> None:
    loopback.set_responder(_answer)
    bodies: dict[bool, list[dict[str, Any]]] = {}
    for swap in (True, False):
        start = loopback.request_count
        await run_calibration(pairs, ["openai:judge"], "helpful", swap=swap, allow_ties=False,
                              temperature=0.3, rubric_dirs=[rubric_dir], options=OPTIONS,
                              hub=make_hub())
        sent = loopback.requests[start:]
        # the original order shows output A first
        originals = [r for r in sent
                     if _shown_first(r) in {row["output_a"] for row in PAIRS}]
        bodies[swap] = sorted((_body(r) for r in originals), key=json.dumps)
    assert len(bodies[False]) == len(PAIRS)
    assert bodies[False] == bodies[True]
    text = json.dumps(bodies[False])
    # both outputs and the item's input are in the prompt; with ties not allowed the answer
    # schema has no "tie"
    assert all(row[key] in text for row in PAIRS for key in ("input", "output_a", "output_b"))
    assert '"tie"' not in text


@pytest.mark.parametrize("max_reasks", [0, 1])
async def test_the_study_re_asks_a_malformed_answer_as_often_as_it_says(
        loopback: Any, make_hub: Any, rubric_dir: Path, pairs: Path, max_reasks: int) -> None:
    loopback.set_responder(lambda request: Reply.json({"reasoning": "?", "verdict": "maybe"}))
    for swap in (True, False):
        start = loopback.request_count
        report = await run_calibration(
            pairs, ["openai:judge"], "helpful", swap=swap, max_reasks=max_reasks,
            rubric_dirs=[rubric_dir], options=OPTIONS, hub=make_hub())
        orders = 2 if swap else 1
        assert loopback.request_count - start == len(PAIRS) * orders * (1 + max_reasks)
        [judge] = report.judges
        assert judge.n_missing_verdicts == len(PAIRS) * orders


async def test_an_offline_judge_decides_the_original_order_alike_in_both_modes(
        rubric_dir: Path, pairs: Path, tmp_path: Path) -> None:
    verdicts = {}
    for swap in (True, False):
        out = tmp_path / f"study-{swap}"
        await run_calibration(pairs, ["mock:judge"], "helpful", swap=swap, samples=2,
                              allow_ties=False, rubric_dirs=[rubric_dir], options=OPTIONS,
                              out_dir=out)
        [judgments] = out.glob("judgments*.jsonl")
        records = [json.loads(line) for line in judgments.read_text().splitlines()]
        verdicts[swap] = sorted((r["item_id"], r["sample"], r["verdict"]) for r in records
                                if not r["swapped"])
    assert verdicts[False] == verdicts[True]
    assert {v for _, _, v in verdicts[False]} <= {"A", "B"}


async def test_a_pointwise_item_is_judged_with_its_question(
        loopback: Any, make_hub: Any, rubric_dir: Path, tmp_path: Path) -> None:
    loopback.set_responder(lambda request: Reply.json(
        {"quality": {"reasoning": "Scripted.", "evidence": [], "score": 4}}))
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"item_id": "q1", "input": "Where is my parcel?",
                                 "text": "It arrives Friday.", "human": 4}) + "\n",
                     encoding="utf-8")
    await run_calibration(items, ["openai:judge"], "helpful", rubric_dirs=[rubric_dir],
                          options=OPTIONS, hub=make_hub())
    [request] = loopback.requests
    text = json.dumps(request.body)
    assert "Where is my parcel?" in text and "It arrives Friday." in text


async def test_without_swap_a_record_keeps_what_the_judge_said_and_why(
        rubric_dir: Path, pairs: Path, tmp_path: Path) -> None:
    out = tmp_path / "study"
    await run_calibration(pairs, ["mock:judge"], "helpful", swap=False, rubric_dirs=[rubric_dir],
                          options=OPTIONS, out_dir=out)
    records = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(records) == len(PAIRS)
    for record in records:
        assert record["swapped"] is False
        assert record["metadata"]["said"] == record["verdict"] in ("A", "B", "tie")
        assert record["metadata"]["reasoning"]


@pytest.mark.parametrize("swap", [True, False])
async def test_a_missing_key_stops_the_study_in_either_mode(
        loopback: Any, make_hub: Any, rubric_dir: Path, pairs: Path, swap: bool,
        tmp_path: Path) -> None:
    from harness.errors import ModelConfigError

    # with a response cache the key is not checked up front: the first call's failure stops it
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        await run_calibration(pairs, ["anthropic:judge"], "helpful", swap=swap,
                              rubric_dirs=[rubric_dir], options=OPTIONS,
                              hub=make_hub(keys=False, cache_path=tmp_path / "cache.sqlite"))
