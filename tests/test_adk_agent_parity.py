"""``harness run`` on the example ADK agent and its eval set gives the same per-case
``tool_trajectory_avg_score`` and ``response_match_score`` as ADK's own evaluation
(``LocalEvalService``, which ``adk eval`` and ``AgentEvaluator`` run on) on the same agent,
eval set and scripted model replies. The replies stray from the eval set on purpose (an
extra argument, other words) so the scores are not all 1.0.

ADK's side runs on ADK's public evaluation service (``LocalEvalService``, see
``tests/helpers/adk_eval.py``), which needs the ``adk-eval`` extra; ``.ci/run`` installs it
and sets ``HARNESS_REQUIRE_ADK_EVAL=1``, so a missing extra fails the test instead of
skipping it. (``google-adk[eval]`` itself cannot be installed beside this project: its
``google-cloud-aiplatform[evaluation]`` needs litellm, whose releases all need openai < 3,
and this project needs openai >= 3.3; docs/adk-vertex.md has the details.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harness.testing.server import LoopbackServer
from tests.helpers.adk_eval import adk_eval_scores, point_adk_agent_at, require_adk_eval
from tests.helpers.cli import run_cli

require_adk_eval()

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "adk_agent"
EVAL_SET = EXAMPLE / "dice.evalset.json"
METRICS = ("tool_trajectory_avg_score", "response_match_score")

# user text -> (the tool calls the model makes, its answer after their results)
SCRIPT: dict[str, tuple[list[tuple[str, dict[str, Any]]], str]] = {
    "Roll a six-sided die.": ([("roll_die", {"sides": 6})], "You rolled a 4 on the die."),
    "Roll a ten-sided die.": ([("roll_die", {"sides": 10})], "You rolled a 7."),
    "Is that number prime?": ([("check_prime", {"numbers": [7, 10]})], "7 is a prime number."),
}


@pytest.fixture
def adk_env(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> LoopbackServer:
    return point_adk_agent_at(loopback, monkeypatch, SCRIPT, EXAMPLE)


def harness_scores(run_dir: Path) -> dict[str, dict[str, float]]:
    result = run_cli("run", EVAL_SET, "--agent", "adk:dice_agent.agent:root_agent",
                     "--epochs", "1", "--no-judge", "--cache-mode", "off", "--out", run_dir)
    assert result.returncode in (0, 1), result.stderr
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert all(s["status"] != "errored" for s in samples), samples
    return {s["scenario_id"]: {m: s["metrics"][m] for m in METRICS} for s in samples}


async def adk_scores() -> dict[str, dict[str, float | None]]:
    from dice_agent.agent import root_agent  # type: ignore[import-not-found]

    return await adk_eval_scores(root_agent, EVAL_SET, EXAMPLE / "test_config.json",
                                 app_name="dice_agent")


def test_harness_run_and_adk_give_the_same_per_case_scores(adk_env: LoopbackServer,
                                                            tmp_path: Path) -> None:
    ours = harness_scores(tmp_path / "run")
    theirs = asyncio.run(adk_scores())
    assert sorted(ours) == sorted(theirs) == ["roll_a_die", "roll_then_check_prime"]
    for case in ours:
        for metric in METRICS:
            assert ours[case][metric] == pytest.approx(theirs[case][metric]), (case, metric)
    # the replies strayed: a wrong argument halves the second case's trajectory score
    assert ours["roll_then_check_prime"]["tool_trajectory_avg_score"] == pytest.approx(0.5)
    assert ours["roll_a_die"]["response_match_score"] < 1.0
