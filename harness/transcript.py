"""The record of one episode: every message, tool call and result, timing, usage per role, why
the conversation stopped, and any error. Pydantic, so it round-trips through JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.models.formats import from_anthropic_messages, from_openai_messages
from harness.models.types import ChatResponse, Message, Role, StructuredResponse, ToolSpec

StopReason = Literal[
    "goal_met",  # the simulated user says their goal was reached
    "user_gave_up",  # the simulated user stopped without reaching the goal
    "transfer_requested",  # the agent handed the user to a human or another agent
    "off_topic",  # the conversation drifted away from the goal
    "script_finished",  # scripted user turns ran out
    "turn_limit",  # max user turns reached
    "agent_step_limit",  # the agent exceeded its steps for one turn
    "tool_call_limit",  # the agent exceeded the scenario's max tool calls
    "agent_error",  # the agent's model call (or Python agent) failed
    "simulator_error",  # the simulator's model call failed
    "time_limit",  # the episode ran past its wall-clock limit (limits.max_seconds)
    "imported",  # an existing conversation brought in for scoring
]

# An episode that ends for one of these reasons is an errored sample: stored with its reason,
# reported apart and never scored (the time limit is a safety stop against a hung agent).
ERROR_STOP_REASONS: frozenset[str] = frozenset({"agent_error", "simulator_error", "time_limit"})


class UsageTotals(BaseModel):
    """Model calls, tokens, latency and cost summed over calls. ``cost_usd`` sums only calls
    with a known price; ``unpriced_calls`` counts the others so a cost is never silently 0."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    unpriced_calls: int = 0

    def add(self, response: ChatResponse | StructuredResponse[Any]) -> None:
        self.calls += 1
        self.cached_calls += int(response.cached)
        self.input_tokens += response.usage.input_tokens
        self.output_tokens += response.usage.output_tokens
        self.latency_s += response.latency_s
        if response.cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += response.cost_usd

    def merge(self, other: UsageTotals) -> None:
        for name in UsageTotals.model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class ToolCallRecord(BaseModel):
    """One tool call the agent made and what the mock answered, in call order.

    ``error`` names why a call failed (``unknown_tool``, ``invalid_arguments``, ``injected``,
    ``tool_call_limit``); the agent received ``result`` either way.
    """

    model_config = ConfigDict(extra="forbid")

    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    turn: int = 0
    step: int = 0
    result: Any = None
    is_error: bool = False
    error: str | None = None
    started_s: float = 0.0
    latency_s: float = 0.0


class StepRecord(BaseModel):
    """One model call made during the episode (an agent step or a simulator turn)."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    turn: int
    step: int = 0
    model: str
    latency_s: float
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    cached: bool = False


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    message: str
    role: Role | None = None


class Transcript(BaseModel):
    """Everything that happened in one episode."""

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    epoch: int = 0
    system_prompt: str | None = None
    tools: list[ToolSpec] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    steps: list[StepRecord] = Field(default_factory=list)
    usage: dict[Role, UsageTotals] = Field(default_factory=dict)
    stop_reason: StopReason
    stop_detail: str | None = None
    error: ErrorInfo | None = None
    initial_state: dict[str, Any] | None = None
    final_state: dict[str, Any] | None = None
    models: dict[Role, str] = Field(default_factory=dict)
    offline: bool = False
    duration_s: float = 0.0

    @property
    def final_response(self) -> str:
        """The text of the agent's last message with text ('' if it never spoke)."""
        for m in reversed(self.messages):
            if m.role == "assistant" and m.content.strip():
                return m.content
        return ""

    @property
    def user_turns(self) -> int:
        return sum(1 for m in self.messages if m.role == "user")

    @property
    def errored(self) -> bool:
        return self.error is not None or self.stop_reason in ERROR_STOP_REASONS

    def turn_of_messages(self) -> list[int]:
        """The user-turn index (0-based) of each message; messages before the first user
        message are turn 0."""
        turn, out = -1, []
        for m in self.messages:
            if m.role == "user":
                turn += 1
            out.append(max(turn, 0))
        return out


def _records_from_messages(messages: list[Message]) -> list[ToolCallRecord]:
    """Pair each assistant tool call with its tool result (by id) into ordered records."""
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    records: list[ToolCallRecord] = []
    turn, step = -1, 0
    for m in messages:
        if m.role == "user":
            turn, step = turn + 1, 0
        elif m.role == "assistant":
            for call in m.tool_calls:
                result_msg = results.get(call.id)
                result: Any = None
                if result_msg is not None:
                    try:
                        result = json.loads(result_msg.content)
                    except ValueError:
                        result = result_msg.content
                records.append(
                    ToolCallRecord(
                        call_id=call.id,
                        name=call.name,
                        arguments=call.arguments,
                        raw_arguments=call.raw_arguments,
                        turn=max(turn, 0),
                        step=step,
                        result=result,
                        is_error=bool(result_msg and result_msg.is_error),
                    )
                )
            step += 1
    return records


def _imported(scenario_id: str, messages: list[Message]) -> Transcript:
    system = next((m.content for m in messages if m.role == "system"), None)
    convo = [m for m in messages if m.role != "system"]
    return Transcript(
        scenario_id=scenario_id,
        system_prompt=system,
        messages=convo,
        tool_calls=_records_from_messages(convo),
        stop_reason="imported",
    )


def transcript_from_openai(
    scenario_id: str, messages: Iterable[dict[str, Any]]
) -> Transcript:
    """Build a transcript from an OpenAI chat-format message list (tool calls included), so an
    existing conversation can be scored without re-running it. Raises ``ValueError`` on a
    message with an unknown role."""
    return _imported(scenario_id, from_openai_messages(messages))


def transcript_from_anthropic(
    scenario_id: str, messages: Iterable[dict[str, Any]], *, system: str | None = None
) -> Transcript:
    """Build a transcript from an Anthropic-format message list (``tool_use`` and
    ``tool_result`` blocks included)."""
    return _imported(scenario_id, from_anthropic_messages(messages, system=system))
