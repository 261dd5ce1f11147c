"""The example scenarios, run offline, judged under every rubric they list: the judge sees
the scenario's context, and every offline judgment is well formed and marked offline."""

from __future__ import annotations

from pathlib import Path

from harness.judging import (
    JudgeSettings,
    build_judge_prompt,
    judge_transcript,
    load_rubrics,
)
from harness.models.hub import ModelHub
from harness.scenarios.judge_context import context_for_scenario
from harness.scenarios.loading import load_scenarios
from harness.simulation.episode import run_episode

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
RUBRICS = load_rubrics()


def test_context_for_scenario_carries_the_user_profile_and_expectations() -> None:
    scenarios = {s.id: s for s in load_scenarios([SCENARIOS], known_rubrics=set(RUBRICS))}
    scenario = scenarios["support-cancel-pending-order"]
    ctx = context_for_scenario(scenario)
    assert ctx.goal == scenario.user.goal and ctx.scenario_id == scenario.id
    assert ctx.user_facts == scenario.user.known_facts
    assert ctx.user_unknowns == scenario.user.unknown_facts
    assert ctx.persona == (scenario.user.persona or None)
    assert ctx.expected_tool_calls == scenario.expectations.tool_calls
    assert ctx.reference_answer == scenario.expectations.reference_answer


async def test_example_scenarios_are_judged_offline_under_their_rubrics() -> None:
    scenarios = load_scenarios([SCENARIOS], known_rubrics=set(RUBRICS))
    assert any("simulator_fidelity" in s.rubrics for s in scenarios)
    async with ModelHub(environ={}) as hub:
        agent, simulator = hub.get("mock:agent"), hub.get("mock:simulator")
        judge = hub.get("mock:judge")
        for scenario in scenarios:
            transcript = await run_episode(scenario, agent_model=agent,
                                           simulator_model=simulator)
            context = context_for_scenario(scenario)
            for rubric_id in scenario.rubrics:
                rubric = RUBRICS[rubric_id]
                result = await judge_transcript(judge, rubric, transcript, context,
                                                settings=JudgeSettings(samples=2))
                assert result.status == "scored", (scenario.id, rubric_id, result.error)
                assert result.offline and result.n_failed == 0
                if rubric.target == "simulator_fidelity":
                    text = build_judge_prompt(rubric, transcript, context).messages[1].content
                    assert scenario.user.goal in text
                    for key in scenario.user.known_facts:
                        assert f"- {key}: " in text
