"""Calibration studies through the loopback server with the real openai and anthropic SDKs: a
scripted judge scores every item K times, pairwise items in both orders, a judge that always
says "A" comes out position-inconsistent, a failing call becomes a counted missing verdict,
the response cache makes a re-run free, and a study cut short resumes without judging any
item twice."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from harness.calibration.analysis import analyse
from harness.calibration.judgments import load_judgments
from harness.calibration.report import AnalysisOptions
from harness.calibration.study import run_calibration
from harness.errors import BudgetExceededError, InputError
from harness.testing.replies import RecordedRequest, Reply

OPTIONS = AnalysisOptions(n_resamples=200, seed=1)

RUBRIC = """\
id: helpful
version: 3
target: final_response
threshold: 0.75
criteria:
  - id: quality
    question: How helpful is the answer?
    scale: ordinal_1_5
  - id: polite
    question: Is it polite?
    scale: binary
"""

# item id, answer text, human ratings, the scripted judge's levels (one per sample)
POINTWISE = [
    ("q1", "Refund issued; it reaches your card in 3 days.", [5, 4, 5], [5, 5, 4]),
    ("q2", "Ask billing.", [1, 2, 1], [1, 2, 2]),
    ("q3", "Go to Settings > Plan > Cancel; the refund is automatic.", [4, 4, 5], [4, 4, 4]),
    ("q4", "Try turning it off and on.", [2, 2, 3], [3, 2, 3]),
    ("q5", "Your parcel left the depot today and arrives Friday.", [4, 5, 4], [5, 4, 5]),
    ("q6", "No idea.", [1, 1, 2], [1, 1, 1]),
]

# item id, input, output A, output B, gold
PAIRWISE = [
    ("p1", "Capital of Australia?", "Sydney", "Canberra", "B"),
    ("p2", "12 x 12?", "144", "124", "A"),
    ("p3", "Fix the typo 'recieve'.", "receive", "recieve", "A"),
    ("p4", "Translate 'good morning' into French.", "Bonne nuit.", "Bonjour.", "B"),
    ("p5", "Decline politely.", "No.", "Thank you for inviting me; I can't make it.", "B"),
]
BETTER = {"Canberra", "144", "receive", "Bonjour.", "Thank you for inviting me; I can't make it."}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def rubric_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "rubrics"
    directory.mkdir()
    (directory / "helpful.yaml").write_text(RUBRIC, encoding="utf-8")
    return directory


@pytest.fixture
def pointwise_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "items.jsonl", [
        {"item_id": i, "input": "A customer question", "text": text, "human": human,
         "scale": {"min": 1, "max": 5}} for i, text, human, _ in POINTWISE])


@pytest.fixture
def pairwise_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "pairs.jsonl", [
        {"item_id": i, "input": inp, "output_a": a, "output_b": b, "gold": gold}
        for i, inp, a, b, gold in PAIRWISE])


def prompt_text(request: RecordedRequest) -> str:
    """Every string in the request's messages, joined (system and user prompts)."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(request.body.get("messages"))
    walk(request.body.get("system"))
    return "\n".join(parts)


def pointwise_responder(levels: dict[str, list[int]], fail: set[str] = frozenset()
                        ) -> tuple[Callable[[RecordedRequest], Reply], Counter[str]]:
    """Scores the item whose text is in the prompt: its n-th request gets its n-th level.
    Items in ``fail`` get a server error."""
    calls: Counter[str] = Counter()
    texts = {text: item for item, text, _, _ in POINTWISE}

    def respond(request: RecordedRequest) -> Reply:
        prompt = prompt_text(request)
        [item] = [i for text, i in texts.items() if f"<final_response>\n{text}" in prompt]
        if item in fail:
            return Reply.server_error(503)
        level = levels[item][calls[item] % len(levels[item])]
        calls[item] += 1
        return Reply.json({"quality": {"reasoning": "Scripted.", "evidence": [], "score": level},
                           "polite": {"reasoning": "Scripted.", "evidence": [], "score": 1}})

    return respond, calls


def shown_first(request: RecordedRequest) -> str:
    prompt = prompt_text(request)
    start = prompt.index("<response_a>\n") + len("<response_a>\n")
    return prompt[start:prompt.index("\n</response_a>")]


def always_a(request: RecordedRequest) -> Reply:
    return Reply.json({"reasoning": "The first one.", "verdict": "A"})


def picks_better(request: RecordedRequest) -> Reply:
    return Reply.json({"reasoning": "Compared.",
                       "verdict": "A" if shown_first(request) in BETTER else "B"})


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_pointwise_k_samples_per_item_through_the_sdks(
        loopback, make_hub, tmp_path, rubric_dir, pointwise_file, provider: str) -> None:
    respond, _ = pointwise_responder({i: lv for i, _, _, lv in POINTWISE})
    loopback.set_responder(respond)
    report = await run_calibration(
        pointwise_file, [f"{provider}:judge-model"], "helpful", samples=3,
        out_dir=tmp_path / "study", rubric_dirs=[rubric_dir], options=OPTIONS, hub=make_hub())
    assert loopback.request_count == len(POINTWISE) * 3
    assert {r.api for r in loopback.requests} == {provider}
    lines = [json.loads(line) for line in
             (tmp_path / "study" / "judgments.jsonl").read_text().splitlines()]
    assert [line["item_id"] for line in lines] == [i for i, *_ in POINTWISE]
    for line, (_, _, _, levels) in zip(lines, POINTWISE, strict=True):
        assert sorted(line["judge"]) == sorted(levels)
        assert line["judge_id"] == f"{provider}:judge-model"
        assert line["metadata"]["criterion"] == "quality"
        assert line["metadata"]["rubric"] == "helpful@3"
    [judge] = report.judges
    human = [np.mean(h) for _, _, h, _ in POINTWISE]
    judged = [np.mean(lv) for *_, lv in POINTWISE]
    assert judge.spearman.value == pytest.approx(stats.spearmanr(judged, human).statistic)
    assert judge.pearson.value == pytest.approx(stats.pearsonr(judged, human).statistic)
    assert judge.samples_per_item == (3, 3) and judge.n_items == 6
    # the criterion's own threshold (rubric 0.75 on 1..5 -> 4) gates pass/fail by default
    assert report.options.pass_threshold == 4
    assert not any(note.startswith("OFFLINE") for note in report.notes)
    # the same records analysed as contract 3 give the same report
    again = analyse(load_judgments(tmp_path / "study" / "judgments.jsonl"), report.options)
    assert again.judges == report.judges
    text = (tmp_path / "study" / "report.json").read_text()
    saved = json.loads(text)
    assert saved["spearman"]["value"] == judge.spearman.value
    # indented for people to read, strict JSON (no NaN), one final newline
    assert text.startswith('{\n  "') and text.endswith("}\n") and "NaN" not in text


async def test_a_second_run_is_answered_by_the_cache(
        loopback, make_hub, tmp_path, rubric_dir, pointwise_file) -> None:
    respond, _ = pointwise_responder({i: lv for i, _, _, lv in POINTWISE})
    loopback.set_responder(respond)
    cache = tmp_path / "cache.sqlite"
    first = await run_calibration(
        pointwise_file, ["openai:judge-model"], "helpful", samples=3, rubric_dirs=[rubric_dir],
        options=OPTIONS, hub=make_hub(cache_path=cache))
    assert loopback.request_count == 18
    # a new study directory, so only the cache can spare the calls
    second = await run_calibration(
        pointwise_file, ["openai:judge-model"], "helpful", samples=3, rubric_dirs=[rubric_dir],
        options=OPTIONS, out_dir=tmp_path / "again", hub=make_hub(cache_path=cache))
    assert loopback.request_count == 18
    assert second.judges == first.judges


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_pairwise_both_orders_and_a_position_biased_judge(
        loopback, make_hub, rubric_dir, pairwise_file, provider: str) -> None:
    loopback.set_responder(always_a)
    report = await run_calibration(
        pairwise_file, [f"{provider}:first-picker"], "helpful", samples=2,
        rubric_dirs=[rubric_dir], options=OPTIONS, hub=make_hub())
    assert loopback.request_count == len(PAIRWISE) * 2 * 2
    [judge] = report.judges
    assert judge.n_units_both_orders == len(PAIRWISE) * 2
    assert judge.position_consistency.value == 0.0
    assert judge.first_position_rate.value == 1.0
    assert judge.accuracy_both_orders.value == 0.0
    # "A" is right on p2 and p3 in the original order, "A" said on the swapped order names
    # the original B, right on p1, p4 and p5
    assert judge.accuracy_original_order.value == pytest.approx(2 / 5)
    assert judge.accuracy_swapped_order.value == pytest.approx(3 / 5)


async def test_pairwise_consistent_judge_and_the_criterion_prompt(
        loopback, make_hub, rubric_dir, pairwise_file) -> None:
    loopback.set_responder(picks_better)
    report = await run_calibration(
        pairwise_file, ["openai:content-judge"], "helpful", criterion="polite",
        rubric_dirs=[rubric_dir], options=OPTIONS, hub=make_hub())
    [judge] = report.judges
    assert judge.position_consistency.value == 1.0
    assert judge.accuracy.value == 1.0 and judge.accuracy_both_orders.value == 1.0
    prompt = prompt_text(loopback.requests[0])
    assert "Compare two responses under one criterion: `polite`" in prompt
    assert "Is it polite?" in prompt
    # the item's input is shown as the user's goal
    assert any("<goal>\nDecline politely.\n</goal>" in prompt_text(r) for r in loopback.requests)


async def test_no_swap_asks_the_original_order_only(
        loopback, make_hub, rubric_dir, pairwise_file) -> None:
    loopback.set_responder(picks_better)
    report = await run_calibration(
        pairwise_file, ["openai:content-judge"], "helpful", swap=False,
        rubric_dirs=[rubric_dir], options=OPTIONS, hub=make_hub())
    assert loopback.request_count == len(PAIRWISE)
    [judge] = report.judges
    assert judge.accuracy_original_order.value == 1.0
    assert judge.position_consistency.value is None
    assert judge.position_consistency.undefined
    # In one order, naming the first output cannot be told from naming the gold one.
    assert judge.first_position_rate.value is None
    assert "confounded" in str(judge.first_position_rate.undefined)


async def test_a_failing_pairwise_call_is_a_counted_missing_verdict(
        loopback, make_hub, tmp_path, rubric_dir, pairwise_file) -> None:
    def respond(request: RecordedRequest) -> Reply:
        if "Capital of Australia?" in prompt_text(request):
            return Reply.server_error(500)
        return picks_better(request)

    loopback.set_responder(respond)
    report = await run_calibration(
        pairwise_file, ["anthropic:flaky"], "helpful", out_dir=tmp_path / "study",
        rubric_dirs=[rubric_dir], options=OPTIONS, hub=make_hub(max_attempts=2))
    [judge] = report.judges
    assert judge.n_missing_verdicts == 2  # p1 in both orders
    # missing verdicts count as wrong by the stated policy: 4 of 5 right in each order
    assert judge.accuracy.value == pytest.approx(4 / 5)
    assert any(p.startswith("missing verdicts: counted as wrong") for p in report.policies)
    assert any("2 judge calls failed" in note for note in report.notes)
    lines = [json.loads(line) for line in
             (tmp_path / "study" / "judgments.jsonl").read_text().splitlines()]
    failed = [line for line in lines if line["item_id"] == "p1"]
    assert [line["verdict"] for line in failed] == [None, None]
    assert all("ModelUnavailableError" in line["metadata"]["error"] for line in failed)
    counts = json.loads((tmp_path / "study" / "study.json").read_text())["counts"]
    assert counts["failed_calls"] == 2

    # re-running the study judges only the failed item again
    loopback.reset()
    loopback.set_responder(picks_better)
    healed = await run_calibration(
        pairwise_file, ["anthropic:flaky"], "helpful", out_dir=tmp_path / "study",
        rubric_dirs=[rubric_dir], options=OPTIONS, hub=make_hub())
    assert loopback.request_count == 2
    assert healed.judges[0].n_missing_verdicts == 0
    assert healed.judges[0].accuracy.value == 1.0


async def test_failing_pointwise_samples_are_missing_judge_samples(
        loopback, make_hub, rubric_dir, pointwise_file) -> None:
    respond, _ = pointwise_responder({i: lv for i, _, _, lv in POINTWISE}, fail={"q6"})
    failed_once: list[str] = []

    def flaky(request: RecordedRequest) -> Reply:
        if "Ask billing." in prompt_text(request) and not failed_once:
            failed_once.append("q2")
            return Reply.server_error(503)
        return respond(request)

    loopback.set_responder(flaky)
    report = await run_calibration(
        pointwise_file, ["openai:judge-model"], "helpful", samples=2, rubric_dirs=[rubric_dir],
        options=OPTIONS, hub=make_hub(max_attempts=1))
    [judge] = report.judges
    # q6 failed in both samples: no judge score; q2 in one: scored on the other sample
    assert judge.n_missing_judge == 1 and judge.n_missing_judge_samples == 1
    assert judge.n_items == 5
    assert any("3 judge calls failed" in note for note in report.notes)


async def test_a_study_cut_short_resumes_without_judging_an_item_twice(
        loopback, make_hub, tmp_path, rubric_dir, pointwise_file) -> None:
    levels = {i: lv[:1] for i, _, _, lv in POINTWISE}
    respond, calls = pointwise_responder(levels)
    loopback.set_responder(respond)
    out = tmp_path / "study"
    # a call budget stops the study after four items, as a kill would
    with pytest.raises(BudgetExceededError):
        await run_calibration(pointwise_file, ["openai:judge-model"], "helpful",
                              out_dir=out, concurrency=1, rubric_dirs=[rubric_dir],
                              options=OPTIONS, hub=make_hub(max_calls=4))
    written = (out / "judgments.jsonl").read_text().splitlines()
    assert len(written) == 4
    assert json.loads((out / "study.json").read_text())["status"] == "running"
    report = await run_calibration(pointwise_file, ["openai:judge-model"], "helpful",
                                   out_dir=out, rubric_dirs=[rubric_dir], options=OPTIONS,
                                   hub=make_hub())
    assert loopback.request_count == 6
    assert set(calls.values()) == {1}  # every item judged exactly once over both runs
    assert report.judges[0].n_items == 6
    study = json.loads((out / "study.json").read_text())
    assert study["status"] == "finished"
    assert study["counts"]["units_resumed"] == 4 and study["counts"]["units_judged"] == 2


async def test_a_line_cut_off_by_a_kill_is_judged_again(
        loopback, make_hub, tmp_path, rubric_dir, pointwise_file) -> None:
    respond, _ = pointwise_responder({i: lv[:1] for i, _, _, lv in POINTWISE})
    loopback.set_responder(respond)
    out = tmp_path / "study"
    first = await run_calibration(pointwise_file, ["openai:judge-model"], "helpful",
                                  out_dir=out, rubric_dirs=[rubric_dir], options=OPTIONS,
                                  hub=make_hub())
    path = out / "judgments.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])  # killed mid-write
    loopback.reset()
    loopback.set_responder(respond)
    second = await run_calibration(pointwise_file, ["openai:judge-model"], "helpful",
                                   out_dir=out, rubric_dirs=[rubric_dir], options=OPTIONS,
                                   hub=make_hub())
    assert loopback.request_count == 3
    assert second.judges == first.judges
    assert path.read_text().splitlines() == lines


async def test_resuming_with_other_settings_is_refused(
        loopback, make_hub, tmp_path, rubric_dir, pointwise_file) -> None:
    respond, _ = pointwise_responder({i: lv for i, _, _, lv in POINTWISE})
    loopback.set_responder(respond)
    out = tmp_path / "study"
    await run_calibration(pointwise_file, ["openai:judge-model"], "helpful", out_dir=out,
                          rubric_dirs=[rubric_dir], options=OPTIONS, hub=make_hub())
    before = loopback.request_count
    with pytest.raises(InputError, match=r"settings\.samples: this directory holds a study "
                                         r"with samples=1, not 2"):
        await run_calibration(pointwise_file, ["openai:judge-model"], "helpful", samples=2,
                              out_dir=out, rubric_dirs=[rubric_dir], options=OPTIONS,
                              hub=make_hub())
    assert loopback.request_count == before


async def test_a_missing_key_stops_the_study_instead_of_recording_missing_verdicts(
        loopback, make_hub, tmp_path, rubric_dir, pairwise_file) -> None:
    from harness.errors import ModelConfigError

    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        await run_calibration(pairwise_file, ["anthropic:judge"], "helpful",
                              out_dir=tmp_path / "study", rubric_dirs=[rubric_dir],
                              options=OPTIONS, hub=make_hub(keys=False))
    assert loopback.request_count == 0
    assert (tmp_path / "study" / "judgments.jsonl").read_text() == ""


async def test_mapped_scale_and_pass_fail_labels(
        loopback, make_hub, tmp_path, rubric_dir) -> None:
    respond, _ = pointwise_responder({i: lv[:1] for i, _, _, lv in POINTWISE})
    loopback.set_responder(respond)
    three = write_jsonl(tmp_path / "three.jsonl", [
        {"item_id": i, "text": text, "human": 3 if max(h) >= 4 else 1,
         "scale": {"min": 1, "max": 3}} for i, text, h, _ in POINTWISE])
    with pytest.raises(InputError, match="scale: the human labels are a number from 1 to 3"):
        await run_calibration(three, ["openai:j"], "helpful", rubric_dirs=[rubric_dir],
                              hub=make_hub())
    mapping = {1: 1, 2: 1, 3: 2, 4: 3, 5: 3}
    report = await run_calibration(three, ["openai:j"], "helpful", scale_map=mapping,
                                   out_dir=tmp_path / "mapped", rubric_dirs=[rubric_dir],
                                   options=OPTIONS, hub=make_hub())
    judged = [json.loads(line)["judge"] for line in
              (tmp_path / "mapped" / "judgments.jsonl").read_text().splitlines()]
    assert judged == [[float(mapping[lv[0]])] for *_, lv in POINTWISE]
    assert report.options.pass_threshold is None  # no gate guessed across scales

    passfail = write_jsonl(tmp_path / "passfail.jsonl", [
        {"item_id": i, "text": text, "human": [x >= 4 for x in h]}
        for i, text, h, _ in POINTWISE])
    report = await run_calibration(passfail, ["openai:j"], "helpful",
                                   out_dir=tmp_path / "passfail", rubric_dirs=[rubric_dir],
                                   options=OPTIONS, hub=make_hub())
    judged = [json.loads(line)["judge"] for line in
              (tmp_path / "passfail" / "judgments.jsonl").read_text().splitlines()]
    # quality passes at the rubric threshold 0.75 of 1..5, i.e. level 4
    assert judged == [[lv[0] >= 4] for *_, lv in POINTWISE]
    [judge] = report.judges
    assert judge.pass_fail is not None and judge.pass_fail.n == 6
