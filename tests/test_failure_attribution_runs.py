"""Attribution in runs: on the example suite with mock:simulator-faulty (which misbehaves in
every odd epoch) every sample it made fail is attributed to the simulator and no other, the
``attribution`` section counts the parties with Wilson intervals (checked against
statsmodels) and gives the agent's figures without those samples (checked by hand), and the
terminal, samples.jsonl and the HTML report show it."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.proportion import proportion_confint

from harness.report.html.run_page import REPORT_FILENAME
from harness.runs.attribution import PARTIES
from harness.runs.failure_attribution import DISRUPTIVE_KINDS, attribute
from harness.runs.reruns import RERUN_STRIDE
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.runs.summary import summary_so_far
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
EPOCHS = 6


def _run(tmp: Path, simulator: str) -> tuple[Path, str]:
    out = tmp / "run"
    done = run_cli("run", ROOT / "scenarios", "--offline", "--agent", "mock:agent-flaky",
                   "--simulator", simulator, "--epochs", str(EPOCHS), "--cache-mode", "off",
                   "--out", out)
    assert done.returncode == 0, done.stderr
    return out, done.stdout


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return _run(tmp_path_factory.mktemp("faulty"), "mock:simulator-faulty")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return _run(tmp_path_factory.mktemp("clean"), "mock:simulator")


def _records(run_dir: Path) -> list[SampleRecord]:
    with RunStore.open(run_dir, read_only=True) as store:
        return list(store.iter_samples())


def _walked_out(record: SampleRecord) -> bool:
    return any(f.kind == "ended_while_agent_pending" for f in record.simulator_findings)


def test_every_sample_the_faulty_simulator_made_fail_is_the_simulator_s(
        faulty: tuple[Path, str]) -> None:
    records = _records(faulty[0])
    made_fail = [r for r in records if r.passed is False and _walked_out(r)]
    assert made_fail and all(r.epoch % 2 == 1 for r in made_fail)
    for r in made_fail:
        assert r.attribution is not None and r.attribution.party == "simulator", r.scenario_id


def test_no_failure_where_the_simulator_behaved_is_attributed_to_it(
        faulty: tuple[Path, str], clean: tuple[Path, str]) -> None:
    faulty_records = _records(faulty[0])
    blamed = [r for r in faulty_records
              if r.attribution is not None and r.attribution.party == "simulator"]
    for r in blamed:  # only where it misbehaved: odd epochs, with a finding that disrupts
        assert r.epoch % 2 == 1 and {f.kind for f in r.simulator_findings} & DISRUPTIVE_KINDS
    clean_records = _records(clean[0])
    assert any(r.passed is False for r in clean_records)  # the flaky agent fails on its own
    assert all(r.attribution is None or r.attribution.party != "simulator"
               for r in clean_records)
    # in even epochs mock:simulator-faulty is mock:simulator: the same failures, the same party
    by_key = {(r.scenario_id, r.epoch): r for r in clean_records}
    for r in faulty_records:
        if r.epoch % 2 == 0:
            twin = by_key[(r.scenario_id, r.epoch)]
            assert r.passed == twin.passed and r.attribution == twin.attribution


def test_the_stored_attribution_is_what_the_record_gives(faulty: tuple[Path, str]) -> None:
    records = _records(faulty[0])
    assert all(r.attribution == attribute(r) for r in records)
    assert all((r.attribution is None) == ((r.status == "scored" and r.passed is True)
                                           or r.status == "unscored") for r in records)


def test_the_summary_counts_each_party_with_a_wilson_interval(
        faulty: tuple[Path, str]) -> None:
    section = json.loads((faulty[0] / "summary.json").read_text())["attribution"]
    records = _records(faulty[0])
    parties = [r.attribution.party for r in records if r.attribution is not None]
    n = len(parties)
    assert section["failed_samples"] == n
    assert section["by_party"] == {p: parties.count(p) for p in PARTIES}
    assert section["by_party"]["simulator"] > 0 and section["by_party"]["agent"] > 0
    for party in PARTIES:
        low, high = proportion_confint(parties.count(party), n, alpha=0.05, method="wilson")
        share = section["shares"][party]
        assert share["value"] == pytest.approx(parties.count(party) / n)
        assert (share["ci_low"], share["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert {e["party"] for e in section["examples"]} == {p for p in PARTIES if p in parties}


def test_the_agent_s_figures_without_the_simulator_s_samples_are_computed_by_hand(
        faulty: tuple[Path, str]) -> None:
    summary = json.loads((faulty[0] / "summary.json").read_text())
    lines = [json.loads(x) for x in (faulty[0] / "samples.jsonl").read_text().splitlines()]
    kept: dict[str, list[bool]] = defaultdict(list)
    every: dict[str, list[bool]] = defaultdict(list)
    for line in lines:
        every[line["scenario_id"]].append(line["passed"])
        if line.get("attribution", {}).get("party") != "simulator":
            kept[line["scenario_id"]].append(line["passed"])
    without = summary["attribution"]["without_simulator"]
    assert without["samples_left_out"] == sum(map(len, every.values())) - sum(
        map(len, kept.values()))
    rate = sum(sum(v) / len(v) for v in kept.values()) / len(kept)
    assert without["pass_rate"]["value"] == pytest.approx(rate)
    # the run's own figures keep every sample, and they are lower here
    all_rate = sum(sum(v) / len(v) for v in every.values()) / len(every)
    assert summary["score"]["pass_rate"]["value"] == pytest.approx(all_rate)
    assert without["pass_rate"]["value"] > summary["score"]["pass_rate"]["value"]


def test_a_clean_simulator_leaves_one_set_of_figures(clean: tuple[Path, str]) -> None:
    section = json.loads((clean[0] / "summary.json").read_text())["attribution"]
    assert section["by_party"]["simulator"] == 0 and section["without_simulator"] is None
    assert "without the simulator" not in clean[1]


def test_a_store_written_before_attributions_summarises_the_same(
        faulty: tuple[Path, str], tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    (old / "run.sqlite").write_bytes((faulty[0] / "run.sqlite").read_bytes())
    with sqlite3.connect(old / "run.sqlite") as db:
        db.execute("UPDATE samples SET record = json_remove(record, '$.attribution')")
    assert all(r.attribution is None for r in _records(old))
    with RunStore.open(old, read_only=True) as store:
        again = summary_so_far(store)
    stored = json.loads((faulty[0] / "summary.json").read_text())["attribution"]
    assert again.attribution is not None
    assert again.attribution.model_dump(mode="json") == stored


def test_the_terminal_shows_who_failed_and_both_figures_at_80_columns(
        faulty: tuple[Path, str]) -> None:
    out = faulty[1]
    flat = " ".join(out.split())
    assert "Who failed:" in flat and "each attributed to one party" in flat
    assert all(len(line) <= 80 for line in out.splitlines())
    block = out[out.index("Who failed"):out.index("Model usage")]
    rows = {line.split()[1]: line for line in block.splitlines()
            if line.startswith("│ ") and line.split()[1] in PARTIES}
    assert set(rows) == {"agent", "simulator"}
    section = json.loads((faulty[0] / "summary.json").read_text())["attribution"]
    assert str(section["by_party"]["simulator"]) in rows["simulator"].split()
    left_out = section["without_simulator"]["samples_left_out"]
    assert f"without the simulator's {left_out}" in out and "all samples" in out
    assert "the run's figures and its gate keep every sample" in flat


def test_samples_jsonl_carries_the_party_reason_and_evidence(faulty: tuple[Path, str]) -> None:
    lines = [json.loads(x) for x in (faulty[0] / "samples.jsonl").read_text().splitlines()]
    blamed = [x for x in lines if x.get("attribution", {}).get("party") == "simulator"]
    assert blamed
    for line in blamed:
        assert "ended_while_agent_pending" in line["attribution"]["reason"]
        assert line["attribution"]["evidence"][0].startswith("user turn ")
    assert all("attribution" not in x for x in lines if x["passed"] is True)


def test_the_report_shows_the_shares_and_each_sample_s_party(
        faulty: tuple[Path, str], open_report: Callable[..., OpenedPage]) -> None:
    records = _records(faulty[0])
    index = next(i for i, r in enumerate(records)
                 if r.attribution is not None and r.attribution.party == "simulator")
    opened = open_report(faulty[0] / REPORT_FILENAME)
    page = opened.page
    shares = page.locator("#attribution-shares tr[data-party]")
    assert sorted(shares.evaluate_all("rows => rows.map(r => r.dataset.party)")) == [
        "agent", "simulator"]
    assert page.locator("#attribution-without").is_visible()
    page.evaluate(f"location.hash = '#sample-{index}'")
    banner = page.locator("#drill .attribution")
    banner.wait_for(state="visible")
    assert banner.get_attribute("data-party") == "simulator"
    text: Any = banner.text_content()
    assert "Attributed to the simulator" in text and "ended_while_agent_pending" in text
    opened.assert_quiet()


def test_a_split_panel_of_real_aggregates_blames_the_judge(tmp_path: Path) -> None:
    # the rules read the stored aggregates' own keys: a strict and a lenient judge split
    done = run_cli("run", ROOT / "scenarios", "--offline", "--judge", "mock:judge-strict",
                   "--judge", "mock:judge-lenient", "--epochs", "2", "--cache-mode", "off",
                   "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    records = _records(tmp_path / "run")
    blamed = [r for r in records if r.attribution is not None and r.attribution.party == "judge"]
    assert blamed
    for r in blamed:
        failing = [j for j in r.judgments if j["passed"] is False]
        assert failing and all(
            {m["passed"] for m in j["members"]} == {True, False} or j["target"] == "tool_use"
            for j in failing)
    unanimous = [r for r in records if r.passed is False and r.judgments and all(
        len({m["passed"] for m in j["members"]}) == 1 for j in r.judgments if not j["passed"])]
    assert all(r.attribution is not None and r.attribution.party != "judge"
               for r in unanimous if not any(j["target"] == "tool_use" for j in r.judgments))


# --- --rerun-simulator-faults ---------------------------------------------------------------

def test_a_rerun_replaces_each_spoiled_sample_and_keeps_the_first(
        faulty: tuple[Path, str], tmp_path: Path) -> None:
    out = tmp_path / "rerun"
    done = run_cli("run", ROOT / "scenarios", "--offline", "--agent", "mock:agent-flaky",
                   "--simulator", "mock:simulator-faulty", "--epochs", str(EPOCHS),
                   "--cache-mode", "off", "--rerun-simulator-faults", "--out", out)
    assert done.returncode == 0, done.stderr
    spoiled = {(r.scenario_id, r.epoch): r for r in _records(faulty[0])
               if r.attribution is not None and r.attribution.party == "simulator"}
    with RunStore.open(out, read_only=True) as store:
        replaced = store.replaced_samples()
        records = {(r.scenario_id, r.epoch): r for r in store.iter_samples()}
    # the first attempts are the faulty run's own records, kept whole
    assert {(r.scenario_id, r.epoch): r.attribution for r in replaced} == {
        k: r.attribution for k, r in spoiled.items()}
    assert len(records) == len(_records(faulty[0]))
    for key in spoiled:
        again = records[key]
        assert again.rerun is not None and again.rerun.attempt == 1
        assert again.rerun.sample_index == key[1] + RERUN_STRIDE  # a new seed
        assert again.rerun.replaced == spoiled[key].attribution
        assert again.transcript.epoch == key[1]
        # an odd stride: the rerun of an odd epoch is an even sample index, where the
        # faulty simulator behaves
        assert not _walked_out(again)
        assert again.attribution is None or again.attribution.party != "simulator"
    others = [r for k, r in records.items() if k not in spoiled]
    assert all(r.rerun is None for r in others)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["attribution"]["reruns"] == len(spoiled)
    assert summary["attribution"]["reruns_blamed_again"] == 0
    assert [e["samples"] for e in summary["events"]
            if e["kind"] == "rerun_simulator_faults"] == [len(spoiled)]
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert sum("rerun" in x for x in lines) == len(spoiled)
    flat = " ".join(done.stdout.split())
    assert f"Re-run: {len(spoiled)} samples the simulator spoiled" in flat


def test_resume_reruns_the_faults_of_a_finished_run_once(
        faulty: tuple[Path, str], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "run.sqlite").write_bytes((faulty[0] / "run.sqlite").read_bytes())
    first = run_cli("run", "--resume", copy, "--rerun-simulator-faults")
    assert first.returncode == 0, first.stderr
    again = run_cli("run", "--resume", copy, "--rerun-simulator-faults")
    assert again.returncode == 0, again.stderr
    summary = json.loads((copy / "summary.json").read_text())
    spoiled = sum(r.attribution is not None and r.attribution.party == "simulator"
                  for r in _records(faulty[0]))
    assert [e["samples"] for e in summary["events"]
            if e["kind"] == "rerun_simulator_faults"] == [spoiled, 0]
    with RunStore.open(copy, read_only=True) as store:
        assert len(store.replaced_samples()) == spoiled


def test_a_store_without_reruns_has_no_replaced_sample(faulty: tuple[Path, str]) -> None:
    with RunStore.open(faulty[0], read_only=True) as store:
        assert store.replaced_samples() == []
    assert json.loads((faulty[0] / "summary.json").read_text())["attribution"]["reruns"] == 0
