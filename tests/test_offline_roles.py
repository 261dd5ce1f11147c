"""Offline labels per role (issue 11): a run whose agent is a real model and whose simulator
and judge are `mock:` ones was labelled "OFFLINE ... no real model was called" although its
agent made real, paid calls. Every output that carries the offline notice now says which
roles were offline and which real, with the real ones' calls and cost: `run` (summary.json
and terminal), `report`, `compare`, `stats` on samples.jsonl, `calibrate` with mixed judges,
`pairwise` (tests/test_pairwise_runs.py).

The real models are on the loopback server; the agent is priced so its cost is not zero.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from harness.calibration.report import AnalysisOptions
from harness.calibration.study import run_calibration
from harness.cli import app
from harness.models.provenance import RoleCollector, roles_notice
from harness.testing.hub import TEST_KEYS
from harness.testing.replies import Reply
from harness.testing.server import LoopbackServer

EPOCHS = 2
SCENARIO = {"id": "capital", "user": {"persona": "A curious student.",
                                      "goal": "Learn the capital of France.",
                                      "opening_message": "What is the capital of France?"},
            "agent": {"model": "mock:agent", "system_prompt": "Answer briefly."},
            "rubrics": ["final_response_quality"]}


def harness(*args: str) -> Result:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.fixture
def real_agent_run(tmp_path: Path, loopback: LoopbackServer,
                   monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run of two scenarios whose agent is openai:loop-agent (loopback, priced) while the
    simulator and the judge are mock: models."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEYS["openai"])
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.openai_base_url)
    models = tmp_path / "models.yaml"
    models.write_text("prices:\n  'openai:loop-agent': {input_per_mtok: 1000, "
                      "output_per_mtok: 1000}\n")
    suite = tmp_path / "capital.yaml"
    suite.write_text(json.dumps([SCENARIO, {**SCENARIO, "id": "capital-again"}]))
    out = tmp_path / "run"
    done = harness("run", str(suite), "--agent", "openai:loop-agent", "--simulator",
                   "mock:simulator", "--judge", "mock:judge", "--epochs", str(EPOCHS),
                   "--cache-mode", "off", "--models-config", str(models), "--out", str(out))
    assert done.exit_code == 0, done.output
    assert loopback.request_count > 0
    return out


def test_a_run_with_a_real_agent_names_its_roles_instead_of_claiming_no_real_call(
        real_agent_run: Path, loopback: LoopbackServer) -> None:
    summary = json.loads((real_agent_run / "summary.json").read_text())
    roles = summary["roles"]
    agent = roles["agent"]
    assert agent["offline"] is False and agent["real_models"] == ["openai:loop-agent"]
    # Every real call is counted and priced: one request per agent call here.
    assert agent["calls"] == loopback.request_count and agent["cost_usd"] > 0
    assert agent["cost_usd"] == pytest.approx(summary["usage"]["by_role"]["agent"]["cost_usd"])
    assert roles["simulator"]["offline_models"] == ["mock:simulator"]
    assert roles["judge"]["offline"] is True
    notice = summary["notice"]
    assert "no real model was called" not in notice
    assert notice.startswith("OFFLINE roles: simulator (mock:simulator), judge (mock:judge); "
                             f"REAL roles: agent (openai:loop-agent, {agent['calls']} calls, "
                             f"${agent['cost_usd']:.4f})")
    assert summary["offline"] is True  # the per-sample flag keeps its meaning: any mock role
    lines = [json.loads(x) for x in (real_agent_run / "samples.jsonl").read_text().splitlines()]
    assert all(x["offline"] is True for x in lines)
    assert all(x["models"] == {"agent": ["openai:loop-agent"], "simulator": ["mock:simulator"],
                               "judge": ["mock:judge"]} for x in lines)

    # The same words in every output made from this run.
    report = " ".join(harness("report", str(real_agent_run)).stdout.split())
    assert "REAL roles: agent (openai:loop-agent" in report
    assert "no real model was called" not in report
    stats = json.loads(harness("stats", str(real_agent_run / "samples.jsonl"), "--json",
                               "--bootstrap-resamples", "0").stdout)
    assert stats["notice"] == notice and stats["roles"] == roles
    compared = json.loads(harness("compare", str(real_agent_run), str(real_agent_run),
                                  "--json").stdout)
    assert compared["notice"] == notice
    assert compared["roles"] == {"baseline": roles, "candidate": roles}


def test_the_notice_of_every_mix() -> None:
    def notice(**roles: tuple[list[str], dict[str, float]]) -> str | None:
        collector = RoleCollector()
        for role, (models, usage) in roles.items():
            collector.add(role, models, usage)
        return roles_notice(collector.roles())

    free: dict[str, float] = {"calls": 4}
    assert notice(agent=(["openai:gpt-4.1"], free), judge=(["anthropic:claude"], free)) is None
    everything = notice(agent=(["mock:agent"], free), simulator=(["mock:simulator"], free))
    assert everything is not None
    assert everything.startswith("OFFLINE: these numbers come from mock: models only (agent "
                                 "(mock:agent), simulator (mock:simulator)); no real model was "
                                 "called")
    # A judge panel with a mock and a real judge: the role is in both lists, its calls are
    # the role's (mock calls included), and it is not offline.
    panel = RoleCollector()
    panel.add("judge", ["mock:judge", "openai:gpt-4.1"],
              {"calls": 6, "cached_calls": 2, "cost_usd": 0.5, "unpriced_calls": 1})
    assert panel.roles()["judge"].offline is False
    assert roles_notice(panel.roles()) == (
        "OFFLINE roles: judge (mock:judge); REAL roles: judge (openai:gpt-4.1, 6 calls (2 "
        "cached) in all, mock calls included, $0.5000 + 1 unpriced call(s)). Figures that "
        "depend on an offline role come from a mock model, not a real one.")
    # A Python agent is the user's own code, neither offline nor a model the harness called.
    python = notice(agent=(["python:bots:answer"], {}), judge=(["mock:judge"], free))
    assert python is not None
    assert python.startswith("OFFLINE roles: judge (mock:judge); no real model was called by "
                             "the harness; Python callable: agent python:bots:answer")


def test_stats_notice_for_old_samples_files(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps({"scenario_id": s, "epoch": e, "score": 1.0,
                                        "offline": True}) + "\n"
                            for s in ("a", "b") for e in range(2)))
    data = json.loads(harness("stats", str(path), "--json", "--bootstrap-resamples", "0").stdout)
    # The lines say only "offline", not which role: the notice must not claim that no real
    # model was called (a real agent with a mock judge marks every sample offline too).
    assert data["notice"].startswith("OFFLINE:") and "no real model was called" not in (
        data["notice"])
    assert "some roles may have been real models" in data["notice"]
    assert data["roles"] == {}


async def test_a_calibration_with_a_mock_and_a_real_judge_names_both(
        loopback: LoopbackServer, make_hub: Any, tmp_path: Path) -> None:
    loopback.set_responder(lambda request: Reply.json({
        name: {"reasoning": "Scripted.", "evidence": [], "score": 4}
        for name in ("correctness", "completeness", "clarity", "tone")}))
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"i{n}", "input": "Capital of France?",
                                         "text": "Paris.", "human": 4}) + "\n"
                             for n in range(3)))
    report = await run_calibration(items, ["mock:judge", "openai:loop-judge"],
                                   "final_response_quality", out_dir=tmp_path / "study",
                                   options=AnalysisOptions(n_resamples=0), hub=make_hub())
    [notice] = [n for n in report.notes if n.startswith("OFFLINE")]
    assert "no model service was called" not in notice
    assert notice.startswith("OFFLINE roles: judge (mock:judge); REAL roles: judge "
                             "(openai:loop-judge, 6 calls in all, mock calls included, $")
    assert loopback.request_count == 3
