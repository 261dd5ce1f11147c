"""The user simulator: a model plays the scenario's user, writes the next user message and
decides (structured output) whether the conversation is over and why.

The conversation is rendered as text inside one user message ("You said: … / The agent
said: …") rather than as role-flipped chat turns. Providers want the first turn to be a user
turn and roles to alternate, which the simulator's own first turn would break, and a single
rendered turn shows the model exactly what its user sees: the agent's text, its tool calls
only when the scenario says so, and never the agent's system prompt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.models.base import ChatModel
from harness.models.mock import bind_offline
from harness.models.request import ModelRequest
from harness.models.types import GenerationParams, Message, StructuredResponse
from harness.scenarios.personas import persona_text
from harness.scenarios.schema import UserSpec
from harness.simulation.offline import UserMoveCase

SimulatorStop = Literal["goal_met", "user_gave_up", "transfer_requested", "off_topic"]
SIMULATOR_STOPS: tuple[SimulatorStop, ...] = (
    "goal_met",
    "user_gave_up",
    "transfer_requested",
    "off_topic",
)


class SimulatorTurn(BaseModel):
    """The simulated user's next move: a message, or the end of the conversation and why."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(
        default="",
        description="Your next message to the assistant, in character. Empty when you end the "
        "conversation.",
    )
    done: bool = Field(description="True when the conversation should end now.")
    stop_reason: SimulatorStop | None = Field(
        default=None,
        description="Why it ends (only when done): goal_met (you got what you came for), "
        "user_gave_up (you will not get it), transfer_requested (the assistant handed you to "
        "a human or another agent), off_topic (the conversation left your goal).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> SimulatorTurn:
        if self.done and self.stop_reason is None:
            raise ValueError("done is true, so stop_reason must say why the conversation ends")
        if not self.done and not self.message.strip():
            raise ValueError("done is false, so message must hold your next message")
        return self


SYSTEM_TEMPLATE = """\
You are role-playing a user talking to an AI assistant, to test the assistant. Stay in \
character as the user at all times: you are not the assistant and you do not help it.

{profile}

How to behave:
- Write only what this user would type: short, natural messages, one at a time.
- Pursue your goal. Follow the plan if there is one, one step per message.
- Reveal a known fact only when the assistant asks for it (or it is clearly needed to answer \
what the assistant asked). Never invent facts beyond what is listed here.
- If asked about something you do not know, say you do not know.
- End the conversation (done = true) when your goal is met (goal_met), when it clearly will \
not be met and you would give up (user_gave_up), when the assistant transfers you to a human \
or another agent (transfer_requested), or when the conversation has left your goal for good \
(off_topic). Otherwise set done = false and write your next message."""


def render_profile(user: UserSpec) -> str:
    """The user's profile as prompt text: persona (a preset's description and behaviours,
    then the scenario's own text), goal, known and unknown facts, plan."""
    lines: list[str] = []
    persona = persona_text(user.persona_preset, user.persona)
    if persona:
        lines.append(f"Who you are: {persona}")
    lines.append(f"Your goal: {user.goal.strip()}")
    if user.known_facts:
        lines.append("Facts you know (reveal each only when asked):")
        lines.extend(f"- {key}: {_fact_text(value)}" for key, value in user.known_facts.items())
    if user.unknown_facts:
        lines.append("Things you do not know:")
        lines.extend(f"- {fact}" for fact in user.unknown_facts)
    if user.plan and user.plan.strip():
        lines.append("Your plan for the conversation:")
        lines.append(user.plan.strip())
    return "\n".join(lines)


def _fact_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def render_conversation(messages: Sequence[Message], *, show_tool_calls: bool) -> str:
    """The conversation as the user sees it: their messages and the assistant's text; tool
    calls and results only with ``show_tool_calls``. System messages are never shown."""
    lines: list[str] = []
    for message in messages:
        if message.role == "user":
            lines.append(f"You: {message.content}")
        elif message.role == "assistant":
            if show_tool_calls:
                lines.extend(
                    f"[assistant called {c.name} with "
                    f"{json.dumps(c.arguments, ensure_ascii=False)}]"
                    for c in message.tool_calls
                )
            if message.content.strip():
                lines.append(f"Assistant: {message.content}")
        elif message.role == "tool" and show_tool_calls:
            label = "tool error" if message.is_error else "tool result"
            lines.append(f"[{label} from {message.name or 'tool'}: {message.content}]")
    return "\n".join(lines)


def simulator_messages(user: UserSpec, conversation: Sequence[Message]) -> list[Message]:
    """The simulator's request: the system prompt with the user's profile, then one user turn
    holding the conversation so far and the instruction to write the next move."""
    transcript = render_conversation(conversation, show_tool_calls=user.sees_tool_calls)
    if transcript:
        body = (
            "The conversation so far:\n\n"
            f"{transcript}\n\n"
            "Write your next message as the user, or end the conversation."
        )
    else:
        body = "The conversation has not started. Write your opening message as the user."
    return [
        Message(role="system", content=SYSTEM_TEMPLATE.format(profile=render_profile(user))),
        Message(role="user", content=body),
    ]


class UserSimulator:
    """Plays one scenario's user with a model (``role="simulator"``). ``sample_index`` (the
    epoch) is passed on every call so epochs differ and a repeated epoch replays from cache."""

    def __init__(
        self,
        model: ChatModel,
        user: UserSpec,
        *,
        scenario_id: str,
        sample_index: int = 0,
        params: GenerationParams | None = None,
    ) -> None:
        self.model = model
        self.user = user
        self.scenario_id = scenario_id
        self.sample_index = sample_index
        self.params = params if params is not None else user.params

    async def next_turn(
        self, conversation: Sequence[Message], *, turn: int
    ) -> StructuredResponse[SimulatorTurn]:
        """Ask for the user's next move given the conversation so far (``turn`` is the index of
        the user message to write). Raises :class:`~harness.errors.ModelError` when the call
        fails after retries."""
        model = bind_offline(self.model, UserMoveCase(self.user, conversation))
        return await model.structured(
            ModelRequest(simulator_messages(self.user, conversation), "simulator",
                         params=self.params, sample_index=self.sample_index),
            SimulatorTurn,
        )
