"""Pre-built personas (``user.persona_preset: NOVICE | EXPERT``): the simulator's prompt holds
the preset's description and behaviours, then the scenario's own persona; the fidelity judge
sees the same text; an unknown preset is one line naming the field and the presets; the
offline simulator behaves visibly differently."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

from harness.choices import PersonaPresetName
from harness.errors import InputError
from harness.models.hub import ModelHub
from harness.scenarios.judge_context import context_for_scenario
from harness.scenarios.loading import parse_scenario
from harness.scenarios.personas import PERSONA_PRESETS, persona_text
from harness.simulation.episode import run_episode
from harness.simulation.offline import EXPERT_SIGN_OFF, NOVICE_QUESTION, SIGN_OFF
from harness.simulation.simulator import simulator_messages
from tests.helpers.cli import run_cli

OWN = "A retired teacher in Lyon who types slowly."


def scenario(preset: str | None = None, **user: Any) -> Any:
    data: dict[str, Any] = {
        "id": "weather",
        "user": {"goal": "Know the weather in Paris.", "persona": OWN,
                 "opening_message": "What's the weather in Paris?", **user},
        "agent": {"model": "mock:agent", "system_prompt": "You are a weather assistant."},
        "tools": [{"name": "get_weather", "description": "Current weather.",
                   "parameters": {"type": "object",
                                  "properties": {"city": {"type": "string"}}},
                   "returns": {"city": "Paris", "temperature_c": 18}}],
        "expectations": {"tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}],
                         "reference_answer": "It is 18 °C in Paris."},
    }
    if preset is not None:
        data["user"]["persona_preset"] = preset
    return parse_scenario(data)


def test_the_presets_are_the_schemas_choices() -> None:
    assert set(PERSONA_PRESETS) == set(typing.get_args(PersonaPresetName)) == {
        "NOVICE", "EXPERT", "EVALUATOR"}


@pytest.mark.parametrize("preset", ["NOVICE", "EXPERT", "EVALUATOR"])
def test_the_simulator_prompt_holds_the_preset_then_the_scenarios_own_text(preset: str) -> None:
    system = simulator_messages(scenario(preset).user, [])[0].content
    chosen = PERSONA_PRESETS[preset]
    at = [system.index(chosen.description),
          *(system.index(f"- {b}") for b in chosen.behaviours), system.index(OWN)]
    assert at == sorted(at)  # description, behaviours, then the scenario's persona
    for other in PERSONA_PRESETS.values():
        assert other is chosen or other.description not in system


def test_without_a_preset_the_prompt_is_the_scenarios_text_alone() -> None:
    system = simulator_messages(scenario().user, [])[0].content
    assert f"Who you are: {OWN}\n" in system
    assert persona_text(None, "  ") == "" and persona_text("EXPERT", "").startswith(
        PERSONA_PRESETS["EXPERT"].description)


def test_the_fidelity_judge_sees_the_same_persona() -> None:
    ctx = context_for_scenario(scenario("NOVICE"))
    assert ctx.persona == persona_text("NOVICE", OWN)
    assert ctx.persona is not None and PERSONA_PRESETS["NOVICE"].behaviours[1] in ctx.persona


def test_an_unknown_preset_names_the_field_and_lists_the_presets(tmp_path: Path) -> None:
    with pytest.raises(InputError,
                       match=r"user\.persona_preset: .*'NOVICE', 'EXPERT' or 'EVALUATOR'"):
        scenario("GURU")
    path = tmp_path / "s.yaml"
    path.write_text("id: x\nuser:\n  goal: g\n  persona_preset: novice\n"
                    "agent: {model: 'mock:agent', system_prompt: s}\n", encoding="utf-8")
    done = run_cli("validate", path)
    assert done.returncode == 2
    assert (f"{path}:4: user.persona_preset: Input should be 'NOVICE', 'EXPERT' or 'EVALUATOR' "
            "(got 'novice')") in done.stderr


def test_a_scripted_user_takes_no_preset() -> None:
    with pytest.raises(InputError, match="persona_preset"):
        parse_scenario({"id": "s", "user": {"goal": "g", "script": ["Hi"],
                                            "persona_preset": "EXPERT"},
                        "agent": {"model": "mock:agent", "system_prompt": "s"}})


async def _episode(preset: str | None) -> Any:
    async with ModelHub(environ={}) as hub:
        return await run_episode(scenario(preset), agent_model=hub.get("mock:agent"),
                                 simulator_model=hub.get("mock:simulator"))


@pytest.mark.parametrize(("preset", "clarifies", "sign_off"), [
    (None, False, SIGN_OFF), ("NOVICE", True, SIGN_OFF), ("EXPERT", False, EXPERT_SIGN_OFF)])
async def test_the_offline_simulator_shows_the_preset(preset: str | None, clarifies: bool,
                                                      sign_off: str) -> None:
    transcript = await _episode(preset)
    said = [m.content for m in transcript.messages if m.role == "user"]
    assert said[0] == "What's the weather in Paris?"
    assert (NOVICE_QUESTION in said) is clarifies
    if clarifies:  # asked once, after the agent's first answer, and answered
        assert said == ["What's the weather in Paris?", NOVICE_QUESTION]
        assert transcript.messages[-1].role == "assistant"
    assert (transcript.stop_reason, transcript.stop_detail) == ("goal_met", sign_off)
