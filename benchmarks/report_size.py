"""Size and speed of the run's HTML report on a large run, in headless Chromium.

Builds a run directory of N episodes (default 1,000: 100 scenarios x 10 epochs) of T user
turns each (default 11), every turn with an agent reply and a tool call with arguments and a
result, every sample with its checks and a judged rubric with reasoning and evidence, as a
real run stores them. Then prints:

- the time to write report.html from the store, and its size;
- in Debian's Chromium (Playwright, no network): the time until the page has loaded and
  until it is interactive (its script has run: the filters are shown), the time to open a
  sample's drill-down, and the time of the first search over every transcript (which
  inflates the embedded, gzipped transcripts).

Usage: python benchmarks/report_size.py [--episodes N] [--turns T] [--keep DIR]
Targets (issue 12): under 15 MB, interactive in under 2 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import random
import shutil
import string
import sys
import tempfile
import time
from pathlib import Path

from harness.runs.config import RunConfig
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.runs.summary import summarise, write_summary
from harness.transcript import StepRecord, ToolCallRecord, Transcript

REPLY = ("Your order {order} is on its way: the parcel left our warehouse on Monday and the "
         "carrier expects to deliver it on Thursday between 9:00 and 13:00. ")
# Text that compresses like prose (gzip ~3x), not like one sentence repeated a million times.
_RNG = random.Random(0)
_WORDS = ["".join(_RNG.choices(string.ascii_lowercase, k=_RNG.randint(2, 9)))
          for _ in range(3000)]


def prose(words: int) -> str:
    return " ".join(_RNG.choices(_WORDS, k=words)).capitalize() + "."


def _record(scenario: int, epoch: int, turns: int) -> SampleRecord:
    sid = f"scenario-{scenario:03d}"
    messages: list[dict[str, object]] = []
    calls, steps = [], []
    for turn in range(turns):
        order = f"A-{1000 + turn}"
        call_id = f"c{turn}"
        result = {"order_id": order, "status": "shipped", "carrier": "DHL",
                  "eta": "Thursday", "items": [{"sku": f"SKU-{turn}", "qty": 1}]}
        messages += [
            {"role": "user", "content": f"Customer {scenario:03d}-{epoch}: where is my order "
                                        f"{order}? {prose(25)}"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": call_id, "name": "get_order", "arguments": {"order_id": order}}]},
            {"role": "tool", "content": str(result), "tool_call_id": call_id,
             "name": "get_order"},
            {"role": "assistant", "content": REPLY.format(order=order) + prose(40)},
        ]
        calls.append(ToolCallRecord(call_id=call_id, name="get_order",
                                    arguments={"order_id": order}, result=result, turn=turn,
                                    latency_s=0.01))
        steps += [StepRecord(role="agent", turn=turn, step=0, model="m", latency_s=0.2),
                  StepRecord(role="agent", turn=turn, step=1, model="m", latency_s=0.3)]
    transcript = Transcript(scenario_id=sid, epoch=epoch, messages=messages,  # type: ignore[arg-type]
                            tool_calls=calls, steps=steps, stop_reason="goal_met",
                            system_prompt="You are a support agent. " * 10)
    passed = (scenario + epoch) % 3 != 0
    checks = [{"scenario_id": sid, "epoch": epoch, "warnings": [], "error": None, "results": [
        {"name": "trajectory_exact_match", "value": float(passed), "passed": passed,
         "details": {"reference_calls": turns, "actual_calls": turns, "matched": turns},
         "findings": [] if passed else [{"kind": "wrong_order", "message": "out of order"}],
         "unscored_reason": None}]}]
    verdicts = [{"criterion_id": c, "turn": None, "score": 4, "normalised": 0.75,
                 "reasoning": prose(60),
                 "evidence": [REPLY.format(order="A-1000")], "unverified_evidence": []}
                for c in ("correctness", "completeness", "tone")]
    judgments = [{"rubric_id": "quality", "score": 0.75, "passed": True, "status": "scored",
                  "failed_criteria": [], "unscored_reason": None, "error": None,
                  "criteria": [{"criterion_id": v["criterion_id"], "value": 0.75,
                                "passed": True, "votes": [0.75]} for v in verdicts],
                  "judgments": [{"judge_model": "m", "sample_index": 0,
                                 "verdicts": verdicts}]}]
    score = 0.9 if passed else 0.4
    return SampleRecord(scenario_id=sid, epoch=epoch, status="scored", score=score,
                        passed=passed, metrics={"trajectory_exact_match": float(passed)},
                        transcript=transcript, checks=checks, judgments=judgments,
                        tags=[f"group-{scenario % 5}"], started_at=0.0, finished_at=6.0)


def build_run(run_dir: Path, episodes: int, turns: int) -> str:
    """Write the run; return a text that one sample's conversation holds and no other's."""
    epochs = 10 if episodes >= 10 else 1
    config = RunConfig(scenario_paths=["synthetic.yaml"], offline=True, epochs=epochs)
    with RunStore.create(run_dir, config.model_dump(mode="json")) as store:
        for i in range(episodes):
            store.write_sample(_record(i // epochs, i % epochs, turns))
        write_summary(run_dir, summarise(store, config, run_dir=run_dir))
    last = episodes - 1
    return f"customer {last // epochs:03d}-{last % epochs}:"


def measure_in_browser(report: Path, search_for: str) -> dict[str, float]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: tests.helpers
    from playwright.sync_api import sync_playwright

    from tests.helpers.browser import chromium_path

    path = chromium_path()
    if path is None:
        raise SystemExit("no Chromium: apt-get install chromium (or set HARNESS_CHROMIUM)")
    url = report.resolve().as_uri()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1366, "height": 860})
        page.route("**/*", lambda r: r.continue_() if r.request.url == url else r.abort())
        start = time.perf_counter()
        page.goto(url)
        loaded = time.perf_counter() - start
        page.locator("#filters").wait_for(state="visible")
        interactive = time.perf_counter() - start
        start = time.perf_counter()
        page.locator("#sample-table a").nth(5).click()
        page.locator("#drill .sample").wait_for()
        drill = time.perf_counter() - start
        start = time.perf_counter()
        page.fill("#f-text", search_for)  # one sample's user says it
        page.locator("#f-count").filter(has_text="1 of").wait_for()
        search = time.perf_counter() - start - 0.15  # the search box waits 150 ms for typing
        browser.close()
    return {"loaded_s": loaded, "interactive_s": interactive, "drill_down_s": drill,
            "first_search_s": search}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=11)
    parser.add_argument("--keep", type=Path, help="build the run here and keep it")
    args = parser.parse_args()
    from harness.report.html.run_page import write_run_report

    scratch = Path(tempfile.mkdtemp())
    run_dir = args.keep or scratch / "run"
    try:
        start = time.perf_counter()
        unique = build_run(run_dir, args.episodes, args.turns)
        print(f"built a run of {args.episodes} episodes x {args.turns} turns in "
              f"{time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        report = write_run_report(run_dir)
        written = time.perf_counter() - start
        size = report.stat().st_size
        print(f"report.html: {size / 1e6:.2f} MB, written in {written:.2f} s")
        for name, seconds in measure_in_browser(report, unique).items():
            print(f"{name}: {seconds:.2f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
