"""Comparing two prompts (rubrics) in one study: `--rubric` repeated makes every (model,
rubric) pair a judge of its own, `MODEL@RUBRIC_ID`, so the paired judge comparison covers
prompts; through the loopback server, with resume, and offline through the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from harness.calibration.report import AnalysisOptions
from harness.calibration.study import run_calibration
from harness.cli import app
from harness.errors import BudgetExceededError, InputError
from harness.testing.replies import RecordedRequest, Reply

OPTIONS = AnalysisOptions(n_resamples=300, seed=6, confidence=0.9)

RUBRIC = """\
id: {id}
version: 1
target: final_response
threshold: 0.75
criteria:
  - id: quality
    question: {question}
    scale: ordinal_1_5
"""
PLAIN_Q = "How helpful is the answer?"
TERSE_Q = "Rate it."

# item id, answer text, human ratings, the level under the plain prompt, under the terse one
ITEMS = [
    ("q1", "The refund reaches your card in 3 days.", [5, 5], 5, 3),
    ("q2", "Ask billing.", [1, 2], 1, 3),
    ("q3", "Settings > Plan > Cancel; the refund is automatic.", [4, 5], 4, 2),
    ("q4", "Turn it off and on.", [2, 2], 2, 4),
    ("q5", "Your parcel arrives Friday.", [4, 4], 4, 4),
    ("q6", "No idea.", [1, 1], 1, 1),
    ("q7", "Reset the password from the login page.", [3, 4], 3, 5),
    ("q8", "Your plan renews on the 1st; you can switch to yearly.", [5, 4], 5, 2),
    ("q9", "Please hold.", [2, 1], 2, 1),
    ("q10", "Your invoice is attached; VAT is itemised.", [3, 3], 3, 3),
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def prompt_text(request: RecordedRequest) -> str:
    """The text of every message of the request (system and user), joined."""
    parts: list[str] = []
    system = request.body.get("system")
    for message in [*request.body.get("messages", []), *([{"content": system}] if system else [])]:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [block.get("text", "") for block in content if isinstance(block, dict)]
    return "\n".join(parts)


@pytest.fixture
def rubric_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "rubrics"
    directory.mkdir()
    (directory / "plain.yaml").write_text(RUBRIC.format(id="plain", question=PLAIN_Q))
    (directory / "terse.yaml").write_text(RUBRIC.format(id="terse", question=TERSE_Q))
    (directory / "yesno.yaml").write_text(RUBRIC.format(id="yesno", question=PLAIN_Q).replace(
        "ordinal_1_5", "binary"))
    return directory


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "items.jsonl", [
        {"item_id": i, "text": text, "human": human, "scale": {"min": 1, "max": 5}}
        for i, text, human, _, _ in ITEMS])


def responder(calls: Counter[tuple[str, str]]):  # type: ignore[no-untyped-def]
    """Scores by prompt: the plain question gets the plain level, the terse one the other."""
    def respond(request: RecordedRequest) -> Reply:
        prompt = prompt_text(request)
        [(item, plain, terse)] = [(i, p, t) for i, text, _, p, t in ITEMS
                                  if f"<final_response>\n{text}\n" in prompt]
        rubric = "plain" if PLAIN_Q in prompt else "terse"
        assert (TERSE_Q in prompt) == (rubric == "terse")
        calls[(rubric, item)] += 1
        level = plain if rubric == "plain" else terse
        return Reply.json({"quality": {"reasoning": "Scripted.", "evidence": [], "score": level}})
    return respond


async def test_two_prompts_become_two_judges_compared_on_the_same_items(
        loopback, make_hub, tmp_path, rubric_dir, items_file) -> None:
    calls: Counter[tuple[str, str]] = Counter()
    loopback.set_responder(responder(calls))
    out = tmp_path / "study"
    report = await run_calibration(items_file, ["openai:judge-model"], ["plain", "terse"],
                                   out_dir=out, rubric_dirs=[rubric_dir], options=OPTIONS,
                                   hub=make_hub())
    assert loopback.request_count == 2 * len(ITEMS)
    assert set(calls.values()) == {1}
    assert [j.judge_id for j in report.judges] == ["openai:judge-model@plain",
                                                   "openai:judge-model@terse"]
    human = np.array([np.mean(h) for _, _, h, _, _ in ITEMS])
    plain = np.array([p for *_, p, _ in ITEMS], dtype=float)
    terse = np.array([t for *_, t in ITEMS], dtype=float)
    by_id = {j.judge_id: j for j in report.judges}
    assert by_id["openai:judge-model@plain"].spearman.value == pytest.approx(
        stats.spearmanr(plain, human).statistic)
    assert by_id["openai:judge-model@terse"].spearman.value == pytest.approx(
        stats.spearmanr(terse, human).statistic)
    [spearman] = [c for c in report.comparisons if c.statistic == "spearman"]
    assert (spearman.judge_a, spearman.judge_b, spearman.n_items) == (
        "openai:judge-model@plain", "openai:judge-model@terse", len(ITEMS))
    # the paired interval, recomputed with scipy on the documented resamples
    n = len(ITEMS)
    diffs = []
    for idx in np.random.default_rng(6).integers(0, n, (300, n)):
        with np.errstate(all="ignore"):
            a = stats.spearmanr(plain[idx], human[idx]).statistic
            b = stats.spearmanr(terse[idx], human[idx]).statistic
        if np.isfinite(a) and np.isfinite(b):
            diffs.append(a - b)
    assert spearman.difference.value == pytest.approx(
        stats.spearmanr(plain, human).statistic - stats.spearmanr(terse, human).statistic)
    assert spearman.difference.ci_low == pytest.approx(np.percentile(diffs, 5))
    assert spearman.difference.ci_high == pytest.approx(np.percentile(diffs, 95))
    assert spearman.difference.ci_low > 0  # the plain prompt is better, and the data say so
    assert any(p.startswith("judge scores: rubric terse@1") for p in report.policies)
    assert any(p.startswith("several rubrics:") for p in report.policies)
    study = json.loads((out / "study.json").read_text())
    assert [s["rubric"] for s in study["settings"]] == ["plain@1", "terse@1"]
    assert study["judges"] == ["openai:judge-model@plain", "openai:judge-model@terse"]
    lines = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert Counter(line["metadata"]["rubric"] for line in lines) == {"plain@1": n, "terse@1": n}


async def test_a_two_prompt_study_cut_short_resumes_and_keeps_its_rubrics(
        loopback, make_hub, tmp_path, rubric_dir, items_file) -> None:
    calls: Counter[tuple[str, str]] = Counter()
    loopback.set_responder(responder(calls))
    out = tmp_path / "study"
    with pytest.raises(BudgetExceededError):
        await run_calibration(items_file, ["openai:judge-model"], ["plain", "terse"],
                              out_dir=out, concurrency=1, rubric_dirs=[rubric_dir],
                              options=OPTIONS, hub=make_hub(max_calls=7))
    assert len((out / "judgments.jsonl").read_text().splitlines()) == 7
    # the same study with one of its rubrics is another study
    with pytest.raises(InputError, match=r"settings\.rubric: this directory holds a study with "
                                         r"rubric\(s\) plain@1, terse@1, not plain@1;"):
        await run_calibration(items_file, ["openai:judge-model"], "plain", out_dir=out,
                              rubric_dirs=[rubric_dir], options=OPTIONS, hub=make_hub())
    report = await run_calibration(items_file, ["openai:judge-model"], ["plain", "terse"],
                                   out_dir=out, rubric_dirs=[rubric_dir], options=OPTIONS,
                                   hub=make_hub())
    assert set(calls.values()) == {1} and len(calls) == 2 * len(ITEMS)
    assert [j.n_items for j in report.judges] == [len(ITEMS), len(ITEMS)]
    study = json.loads((out / "study.json").read_text())
    assert study["counts"]["units_resumed"] == 7
    assert study["counts"]["units_judged"] == 2 * len(ITEMS) - 7


async def test_prompts_on_different_scales_are_refused_before_any_call(
        loopback, make_hub, tmp_path, rubric_dir) -> None:
    # labels of 1 only and no declared scale fit both 1–5 and 0–1 on their own
    ones = write_jsonl(tmp_path / "ones.jsonl", [
        {"item_id": i, "text": text, "human": 1} for i, text, *_ in ITEMS])
    with pytest.raises(InputError, match=r"--rubric: rubric 'plain' \(criterion 'quality'\) "
                                         r"gives levels on a number from 1 to 5.*but rubric "
                                         r"'yesno'"):
        await run_calibration(ones, ["openai:judge-model"], ["plain", "yesno"],
                              rubric_dirs=[rubric_dir], options=OPTIONS, hub=make_hub())
    assert loopback.request_count == 0


def test_cli_repeated_rubric_offline_and_resume(tmp_path: Path) -> None:
    pairs = Path(__file__).parents[1] / "examples" / "calibration" / "pairwise_items.jsonl"
    out = tmp_path / "study"
    args = ["calibrate", str(pairs), "--offline", "--rubric", "final_response_quality",
            "--rubric", "task_completion", "--out", str(out), "--cache-mode", "off",
            "--resamples", "50", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    report = json.loads(result.stdout)
    assert [j["judge_id"] for j in report["judges"]] == [
        "mock:judge@final_response_quality", "mock:judge@task_completion"]
    assert {c["statistic"] for c in report["comparisons"]} == {
        "accuracy", "accuracy_both_orders", "position_consistency"}
    assert all(c["n_items"] == 8 for c in report["comparisons"])
    assert "16 judge×item judged, 0 resumed" in result.stderr
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "0 judge×item judged, 16 resumed" in again.stderr
    assert json.loads(again.stdout)["judges"] == report["judges"]
    # one rubric keeps the plain model id
    single = CliRunner().invoke(app, [*args[:5], "--out", str(tmp_path / "one"),
                                      *args[-5:]])
    assert single.exit_code == 0, single.output
    assert json.loads(single.stdout)["judge_id"] == "mock:judge"
