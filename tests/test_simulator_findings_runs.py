"""The simulator checks in runs and reports: a run with mock:simulator-faulty stores a finding
in exactly the samples of its odd epochs (the store, samples.jsonl, summary.json's
``simulator`` section with its Wilson interval, the terminal, the HTML report), a run with
mock:simulator has none, the findings never change a score; and score-transcripts lines
with and without a ``user`` block."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.proportion import proportion_confint

from harness.report.html.run_page import REPORT_FILENAME, sample_view
from harness.runs import engine
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.simulation.user_checks import FINDING_KINDS, SimulatorFinding
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli
from tests.helpers.transcript_lines import transcript_line

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "transcripts" / "seed_transcripts.jsonl"
EPOCHS = 4

SCENARIOS = """\
- id: sim-asked-first
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
- id: sim-no-opening
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
- id: sim-scripted
  user:
    goal: cancel my order
    script: [Cancel order A-1 please.]
  agent: {model: mock:agent}
  tools:
    - {name: get_order, returns: {status: pending}}
  expectations:
    reference_answer: Order A-1 is pending.
"""
# What mock:simulator-faulty does wrong in an odd epoch, per scenario (module docstring of
# harness.simulation.offline): it walks out when the agent asks for the order id, and it
# gives every fact at once in a first move of its own.
ODD_EPOCH = {"sim-asked-first": [("ended_while_agent_pending", 1)],
             "sim-no-opening": [("fact_volunteered", 0), ("fact_volunteered", 0)],
             "sim-scripted": []}


def _run(tmp: Path, name: str, simulator: str) -> tuple[Path, Any]:
    tmp.mkdir(parents=True, exist_ok=True)
    suite = tmp / "suite.yaml"
    suite.write_text(SCENARIOS, encoding="utf-8")
    out = tmp / name
    done = run_cli("run", suite, "--offline", "--simulator", simulator, "--epochs", str(EPOCHS),
                   "--cache-mode", "off", "--out", out)
    assert done.returncode == 0, done.stderr
    return out, done


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    return _run(tmp_path_factory.mktemp("faulty"), "faulty", "mock:simulator-faulty")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    return _run(tmp_path_factory.mktemp("clean"), "clean", "mock:simulator")


def _records(run_dir: Path) -> list[SampleRecord]:
    with RunStore.open(run_dir, read_only=True) as store:
        return list(store.iter_samples())


def test_every_odd_epoch_of_the_faulty_simulator_is_flagged_and_no_even_one(
        faulty: tuple[Path, Any]) -> None:
    records = _records(faulty[0])
    assert len(records) == 3 * EPOCHS
    for r in records:
        expected = ODD_EPOCH[r.scenario_id] if r.epoch % 2 else []
        assert [(f.kind, f.turn) for f in r.simulator_findings] == expected, (r.scenario_id,
                                                                              r.epoch)
    lines = [json.loads(x) for x in (faulty[0] / "samples.jsonl").read_text().splitlines()]
    flagged = {(x["scenario_id"], x["epoch"]) for x in lines if "simulator_findings" in x}
    assert flagged == {(r.scenario_id, r.epoch) for r in records if r.simulator_findings}
    line = next(x for x in lines if x["scenario_id"] == "sim-asked-first" and x["epoch"] == 1)
    (finding,) = line["simulator_findings"]
    assert set(finding) == {"kind", "turn", "evidence"}
    assert "Could you tell me your order id?" in finding["evidence"]


def test_the_summary_counts_the_findings_with_a_wilson_interval(
        faulty: tuple[Path, Any]) -> None:
    section = json.loads((faulty[0] / "summary.json").read_text())["simulator"]
    checked, flagged = 3 * EPOCHS, 2 * (EPOCHS // 2)  # two simulated scenarios misbehave
    assert section["samples_checked"] == checked
    assert section["samples_with_findings"] == flagged
    assert section["findings"] == 3 * (EPOCHS // 2)
    assert set(section["by_kind"]) == set(FINDING_KINDS)
    assert section["by_kind"]["fact_volunteered"] == 2 * (EPOCHS // 2)
    assert section["samples_by_kind"]["fact_volunteered"] == EPOCHS // 2
    assert section["by_kind"]["ended_while_agent_pending"] == EPOCHS // 2
    share = section["share_with_findings"]
    low, high = proportion_confint(flagged, checked, alpha=0.05, method="wilson")
    assert share["value"] == pytest.approx(flagged / checked)
    assert (share["ci_low"], share["ci_high"]) == pytest.approx((low, high), abs=1e-12)
    assert {(e["scenario_id"], e["epoch"]) for e in section["examples"]} == {
        (sid, e) for sid in ("sim-asked-first", "sim-no-opening") for e in (1, 3)}


def test_the_terminal_shows_the_simulated_user_apart_at_80_columns(
        faulty: tuple[Path, Any], clean: tuple[Path, Any]) -> None:
    out = faulty[1].stdout
    assert "Simulated user (the simulator's findings, not the agent's)" in " ".join(out.split())
    assert "4 of 12 checked samples with a finding" in " ".join(out.split())
    rows = [line for line in out.splitlines() if "fact_volunteered" in line]
    assert rows and all(len(line) <= 80 for line in out.splitlines())
    assert "Simulated user" not in clean[1].stdout
    report = run_cli("report", faulty[0])
    assert "ended_while_agent_pending" in report.stdout


def test_mock_simulator_has_no_finding(clean: tuple[Path, Any]) -> None:
    assert all(r.simulator_findings == [] for r in _records(clean[0]))
    section = json.loads((clean[0] / "summary.json").read_text())["simulator"]
    assert section["samples_checked"] == 3 * EPOCHS and section["samples_with_findings"] == 0
    assert "simulator_findings" not in (clean[0] / "samples.jsonl").read_text()


def test_the_example_scenarios_with_mock_simulator_have_no_finding(tmp_path: Path) -> None:
    done = run_cli("run", ROOT / "scenarios", "--offline", "--epochs", "2", "--cache-mode",
                   "off", "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    assert all(r.simulator_findings == [] for r in _records(tmp_path / "run"))


def test_findings_never_change_a_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain, _ = _run(tmp_path / "a", "plain", "mock:simulator")
    always = [SimulatorFinding(kind="role_confusion", turn=0, evidence="made up")]
    monkeypatch.setattr(engine, "simulator_findings", lambda *a, **k: list(always))
    flagged, _ = _run(tmp_path / "b", "flagged", "mock:simulator")
    before, after = _records(plain), _records(flagged)
    assert all(r.simulator_findings == always for r in after)
    assert [(r.score, r.passed, r.metrics) for r in before] == [
        (r.score, r.passed, r.metrics) for r in after]
    figures = [json.loads((d / "summary.json").read_text()) for d in (plain, flagged)]
    assert figures[0]["score"] == figures[1]["score"]
    assert figures[0]["metrics"] == figures[1]["metrics"]


def test_a_simulator_error_is_not_checked() -> None:
    from harness.scenarios import parse_scenario
    from harness.transcript import Transcript

    scenario = parse_scenario({"id": "s", "user": {"goal": "g", "opening_message": "As an AI"},
                               "agent": {"model": "mock:agent"}}, check_imports=False)
    from harness.models.types import Message

    cut = Transcript(scenario_id="s", epoch=0, stop_reason="simulator_error",
                     messages=[Message(role="user", content="As an AI")])
    assert engine.episode_findings(scenario, cut) == []
    done = cut.model_copy(update={"stop_reason": "goal_met"})
    assert [f.kind for f in engine.episode_findings(scenario, done)] == ["role_confusion"]


# --- the HTML report -----------------------------------------------------------------------

def test_the_drill_down_data_carries_the_findings(faulty: tuple[Path, Any]) -> None:
    record = next(r for r in _records(faulty[0]) if r.simulator_findings)
    view = sample_view(record)
    assert view["simulator_findings"] == [f.model_dump(mode="json")
                                          for f in record.simulator_findings]
    page = (faulty[0] / REPORT_FILENAME).read_text()
    assert 'id="card-simulator"' in page and "Simulated user (not the agent)" in page


def test_the_clean_page_has_no_simulator_card(clean: tuple[Path, Any]) -> None:
    assert 'id="card-simulator"' not in (clean[0] / REPORT_FILENAME).read_text()


def test_the_drill_down_shows_each_finding_as_text(
        faulty: tuple[Path, Any], open_report: Callable[..., OpenedPage]) -> None:
    records = _records(faulty[0])
    index = next(i for i, r in enumerate(records)
                 if r.scenario_id == "sim-asked-first" and r.epoch == 1)
    opened = open_report(faulty[0] / REPORT_FILENAME)
    page = opened.page
    page.evaluate(f"location.hash = '#sample-{index}'")
    box = page.locator("#drill .simulator-findings")
    box.wait_for(state="visible")
    text = box.text_content() or ""
    assert "not the agent" in text
    item = box.locator(".sim-finding")
    assert item.count() == 1 and item.get_attribute("data-kind") == "ended_while_agent_pending"
    assert "user turn 1" in (item.text_content() or "")
    assert page.locator("#card-simulator").is_visible()
    opened.assert_quiet()


# --- score-transcripts ---------------------------------------------------------------------

USER = {"goal": "cancel", "known_facts": {"order_number": "98765"},
        "opening_message": "I want to cancel an order."}
MESSAGES = [{"role": "user", "content": "I want to cancel an order."},
            {"role": "assistant", "content": "Sure."},
            {"role": "user", "content": "My order number is 98765."},
            {"role": "assistant", "content": "Shall I cancel it?"},
            {"role": "user", "content": "Thanks, bye."}]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_score_transcripts_lists_the_findings_of_a_line_with_a_user(tmp_path: Path) -> None:
    file = _write(tmp_path / "t.jsonl", [
        transcript_line(id="with", messages=MESSAGES, user=USER),
        transcript_line(id="clean", user=USER | {"opening_message": "hi"}),
        transcript_line(id="without", messages=MESSAGES)])
    done = run_cli("score-transcripts", file, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    rows = {r["id"]: r for r in out["transcripts"]}
    assert [(f["kind"], f["turn"]) for f in rows["with"]["simulator_findings"]] == [
        ("fact_volunteered", 1), ("ended_while_agent_pending", 2)]
    assert all(set(f) == {"kind", "turn", "evidence"} for f in rows["with"]["simulator_findings"])
    assert rows["clean"]["simulator_findings"] == []
    assert "simulator_findings" not in rows["without"]
    counts = out["summary"]["simulator_findings"]
    assert counts["transcripts_checked"] == 2 and counts["transcripts_with_findings"] == 1
    assert counts["findings"] == 2 and counts["by_kind"]["fact_volunteered"] == 1
    # the agent's figures are the same with or without the user block
    assert {k: v for k, v in rows["with"].items() if k != "simulator_findings"} == {
        k: v for k, v in rows["without"].items() if k != "id"} | {"id": "with", "line": 1}


def test_score_transcripts_shows_the_findings_at_80_columns(tmp_path: Path) -> None:
    file = _write(tmp_path / "t.jsonl", [transcript_line(id="T-with-user", messages=MESSAGES,
                                                         user=USER)])
    done = run_cli("score-transcripts", file)
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.split())
    assert "Simulated user (the user's turns, not the agent's): 1 of 1 checked transcript" in flat
    assert all(len(line) <= 80 for line in done.stdout.splitlines())
    assert "fact_volunteered" in done.stdout and "ended_while_agent_pending" in done.stdout
    assert "T-with-user" in done.stdout  # the id whole, never split


def test_lines_without_a_user_are_scored_as_before(tmp_path: Path) -> None:
    plain = run_cli("score-transcripts", EXAMPLE, "--json")
    assert plain.returncode == 0, plain.stderr
    assert "simulator_findings" not in plain.stdout
    lines = [json.loads(x) for x in EXAMPLE.read_text().splitlines() if x.strip()]
    given = _write(tmp_path / "with_user.jsonl", [x | {"user": {"goal": "g"}} for x in lines])
    with_user = json.loads(run_cli("score-transcripts", given, "--json").stdout)
    for row in with_user["transcripts"]:
        row.pop("simulator_findings")
    with_user["summary"].pop("simulator_findings")
    assert with_user == json.loads(plain.stdout)


@pytest.mark.parametrize(("user", "field", "expected"), [
    ({"known_facts": {}}, "user.goal", "required field is missing"),
    ({"goal": ""}, "user.goal", "at least 1 character"),
    ({"goal": "g", "known_fact": {}}, "user.known_fact", "unknown field"),
    ({"goal": "g", "unknown_facts": "the date"}, "user.unknown_facts", "valid list"),
    ("a user", "user", "valid dictionary"),
])
def test_a_bad_user_block_is_one_line_naming_file_line_and_field(
        tmp_path: Path, user: Any, field: str, expected: str) -> None:
    file = _write(tmp_path / "bad.jsonl", [transcript_line(id="ok"),
                                           transcript_line(id="bad", user=user)])
    done = run_cli("score-transcripts", file, "--json")
    assert done.returncode == 2
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert "bad.jsonl" in message and ":2" in message and field in message
    assert expected in message


def test_outside_text_in_the_evidence_is_inert_in_the_terminal(tmp_path: Path) -> None:
    hostile = "As an AI [bold red]markup[/] \x1b[2J\x1b]0;title\x07 done"
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."},
                {"role": "user", "content": hostile}, {"role": "assistant", "content": "OK."}]
    file = _write(tmp_path / "t.jsonl", [transcript_line(id="h", messages=messages,
                                                         user={"goal": "g"})])
    done = run_cli("score-transcripts", file)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "[bold red]markup[/]" in done.stdout  # shown as written, never read as markup
