"""Pre-built user personas for the simulator (``user.persona_preset`` in a scenario): who the
simulated user is and how they behave, put before the scenario's own ``user.persona`` text.

- ``NOVICE``: new to the subject; needs things explained, asks what unfamiliar terms mean,
  and checks they understood before moving on.
- ``EXPERT``: knows the subject; terse and precise, gives details up front, wants answers
  without explanation, and is impatient with filler.
- ``EVALUATOR``: tests whether the agent reaches the plan's goals; gives details up front,
  answers only what is relevant, and does not correct or coach the agent (ADK's third
  pre-built persona).

The offline simulator (``mock:simulator``) shows the difference plainly: a novice asks one
clarifying question after the agent's first answer; an expert signs off with one word.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.choices import PersonaPresetName


@dataclass(frozen=True)
class PersonaPreset:
    """A pre-built persona: a description and the behaviours the simulator follows."""

    name: PersonaPresetName
    description: str
    behaviours: tuple[str, ...]


PERSONA_PRESETS: dict[str, PersonaPreset] = {
    "NOVICE": PersonaPreset(
        name="NOVICE",
        description="Someone new to the subject, unsure of the vocabulary and of what the "
                    "assistant can do.",
        behaviours=(
            "Describe what you want in everyday words, not technical terms; leave out "
            "details you would not think of as a beginner until you are asked for them.",
            "When the assistant uses a term or a step you would not know, ask what it means "
            "or ask for it more simply before going on.",
            "Check you understood the answer (\"So I should ...?\") before you accept it.",
            "Be polite and a little unsure; thank the assistant when it helped.",
        ),
    ),
    "EXPERT": PersonaPreset(
        name="EXPERT",
        description="Someone who knows the subject well and wants results, not explanations.",
        behaviours=(
            "Write short, precise messages using the correct terms; give the details the "
            "task needs up front when you know them.",
            "Do not ask for explanations of things an expert knows; ask only for what you "
            "need.",
            "Point out an answer that is wrong, vague or padded, briefly.",
            "End as soon as you have what you came for, without pleasantries.",
        ),
    ),
    "EVALUATOR": PersonaPreset(
        name="EVALUATOR",
        description="Someone testing whether the assistant can reach the goals of the plan "
                    "on its own.",
        behaviours=(
            "Give the details the plan gives you up front, in plain conversational words.",
            "Answer only what is relevant to the plan; do not volunteer more.",
            "Do not correct, hint at or coach the assistant when it goes wrong: let it "
            "succeed or fail by itself.",
        ),
    ),
}


def persona_text(preset: str | None, persona: str) -> str:
    """The simulated user's persona as the simulator (and the fidelity judge) sees it: the
    preset's description and behaviours, then the scenario's own text. ``''`` when neither
    is given. Raises ``KeyError`` for a preset name not in :data:`PERSONA_PRESETS` (the
    scenario schema rejects those first)."""
    parts: list[str] = []
    if preset is not None:
        chosen = PERSONA_PRESETS[preset]
        parts.append(chosen.description)
        parts.append("How you behave:\n" + "\n".join(f"- {b}" for b in chosen.behaviours))
    if persona.strip():
        parts.append(persona.strip())
    return "\n".join(parts)
