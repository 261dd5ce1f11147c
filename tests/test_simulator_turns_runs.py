"""The per-turn judge of the simulated user in offline runs: listed as ``simulator_turns`` it
stores one verdict per user turn with the sample, its score is in summary.json beside the
other rubrics, ``mock:simulator-faulty``'s odd epochs score lower than its even ones, the
agent's score and pass do not move, the HTML drill-down shows each turn's verdict, and a
scenario with nothing to judge is refused in one line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.report.html.run_page import REPORT_FILENAME, sample_view
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli

EPOCHS = 4
SUITE = """\
- id: asks-first
  user:
    goal: cancel my order
    known_facts: {order_id: A-1}
    opening_message: I want to cancel my order.
  agent: {model: mock:agent}
  tools:
    - {name: get_order, returns: {status: pending}}
  expectations:
    tool_calls:
      - {name: get_order, args: {order_id: A-1}, turn: 1}
    reference_answer: Order A-1 is pending.
  rubrics: [task_completion%(extra)s]
- id: no-opening
  user:
    goal: know my order's status
    known_facts: {order_id: A-1, email: jo@example.com}
  agent: {model: mock:agent}
  tools:
    - {name: get_order, returns: {status: pending}}
  expectations:
    tool_calls:
      - {name: get_order, args: {order_id: A-1}}
    reference_answer: Order A-1 is pending.
  rubrics: [task_completion%(extra)s]
"""


def _run(tmp: Path, *, listed: bool, simulator: str = "mock:simulator-faulty") -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    suite = tmp / "suite.yaml"
    suite.write_text(SUITE % {"extra": ", simulator_turns" if listed else ""},
                     encoding="utf-8")
    out = tmp / "run"
    done = run_cli("run", suite, "--offline", "--simulator", simulator, "--epochs",
                   str(EPOCHS), "--judge-samples", "3", "--cache-mode", "off", "--out", out)
    assert done.returncode in (0, 1), done.stderr  # 1: the faulty epochs fail the gate
    return out


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("listed"), listed=True)


@pytest.fixture(scope="module")
def unlisted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("unlisted"), listed=False)


def _records(run_dir: Path) -> list[SampleRecord]:
    with RunStore.open(run_dir, read_only=True) as store:
        return sorted(store.iter_samples(), key=lambda r: (r.scenario_id, r.epoch))


def _turn_judgment(record: SampleRecord) -> dict[str, Any]:
    (judgment,) = [j for j in record.judgments if j["rubric_id"] == "simulator_turns"]
    return judgment


def _user_turns(record: SampleRecord) -> int:
    t = record.transcript
    sent = sum(1 for m in t.messages if m.role == "user")
    ended_by_user = t.stop_reason in ("goal_met", "user_gave_up", "off_topic")
    return sent + int(ended_by_user and bool(t.stop_detail))


def test_one_verdict_per_user_turn_is_stored_and_the_score_is_the_passing_share(
        listed: Path) -> None:
    for record in _records(listed):
        judgment = _turn_judgment(record)
        turns = judgment["user_turns"]
        assert [t["turn"] for t in turns] == list(range(_user_turns(record)))
        assert judgment["score"] == pytest.approx(
            sum(t["passed"] for t in turns) / len(turns))
        assert len(judgment["judgments"]) == 3  # --judge-samples 3
        for sample in judgment["judgments"]:
            judged = {t["turn"] for t in sample["user_turns"] if t["checked"] == "judge"}
            assert {v["turn"] for v in sample["verdicts"]} == judged
        checked = [t["checked"] for t in turns]
        if record.scenario_id == "asks-first":  # its opening message is compared, not judged
            assert checked[0] == "opening_message" and set(checked[1:]) == {"judge"}
        else:
            assert set(checked) == {"judge"}


def test_the_faulty_simulators_odd_epochs_score_lower_than_its_even_ones(
        listed: Path) -> None:
    for sid in ("asks-first", "no-opening"):
        scores = {r.epoch: _turn_judgment(r)["score"] for r in _records(listed)
                  if r.scenario_id == sid}
        assert max(scores[e] for e in (1, 3)) < min(scores[e] for e in (0, 2)), (sid, scores)
    walked_out = next(r for r in _records(listed) if r.scenario_id == "asks-first"
                      and r.epoch == 1)
    last = _turn_judgment(walked_out)["user_turns"][-1]
    assert not last["passed"] and last["failed_criteria"] == ["pursues_goal"]


def test_the_agents_score_and_pass_do_not_move(listed: Path, unlisted: Path) -> None:
    with_it, without = _records(listed), _records(unlisted)
    assert [(r.scenario_id, r.epoch, r.score, r.passed) for r in with_it] == [
        (r.scenario_id, r.epoch, r.score, r.passed) for r in without]
    summaries = [json.loads((d / "summary.json").read_text()) for d in (listed, unlisted)]
    assert summaries[0]["score"] == summaries[1]["score"]
    assert "rubric:simulator_turns" in summaries[0]["metrics"]
    assert "rubric:simulator_turns" not in summaries[1]["metrics"]
    figure = summaries[0]["metrics"]["rubric:simulator_turns"]
    per_sample = [_turn_judgment(r)["score"] for r in with_it]
    assert figure["value"] == pytest.approx(sum(per_sample) / len(per_sample))
    assert figure["ci_low"] <= figure["value"] <= figure["ci_high"]
    leads = json.dumps(summaries[0]["failure_analysis"])
    assert "simulator_turns" not in leads  # the simulator's failing is no lead for the agent


def test_the_drill_down_data_carries_each_turns_verdict(listed: Path) -> None:
    record = next(r for r in _records(listed) if r.scenario_id == "asks-first" and r.epoch == 1)
    (view,) = [j for j in sample_view(record)["judgments"] if j["rubric_id"] == "simulator_turns"]
    assert view["judges_simulator"] is True
    assert [(t["turn"], t["passed"]) for t in view["user_turns"]] == [(0, True), (1, False)]


def test_the_drill_down_shows_the_turns_as_text(
        listed: Path, open_report: Callable[..., OpenedPage]) -> None:
    opened = open_report(listed / REPORT_FILENAME)
    page = opened.page
    # find a walked-out sample's drill-down by what it shows, whatever the page's order
    for index in range(len(_records(listed))):
        page.evaluate(f"location.hash = '#sample-{index}'")
        box = page.locator("#drill [data-rubric='simulator_turns']")
        box.wait_for(state="visible")
        row = box.locator("tr[data-user-turn='1']")
        if row.count() and row.get_attribute("data-passed") == "false":
            text = box.text_content() or ""
            assert "compared with the opening message" in text
            assert "pursues_goal" in (row.text_content() or "")
            assert "never part of the agent's score or pass" in text
            assert "user turn 1" in text
            break
    else:
        pytest.fail("no drill-down shows a failing user turn")
    opened.assert_quiet()


def test_a_scripted_user_with_one_turn_is_refused_in_one_line(tmp_path: Path) -> None:
    suite = tmp_path / "one.yaml"
    suite.write_text("""\
- id: scripted
  user:
    goal: cancel
    script: [Cancel order A-1 please.]
  agent: {model: mock:agent}
  rubrics: [simulator_turns]
""", encoding="utf-8")
    done = run_cli("run", suite, "--offline", "--out", tmp_path / "run")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, done.stderr
    assert "one.yaml" in lines[0] and "rubrics[0]" in lines[0]
    assert "scripted with one turn" in lines[0]
    assert "Traceback" not in done.stderr
