"""The record of one episode: every message, tool call and result, timing, usage per role, why
the conversation stopped, and any error. Pydantic, so it round-trips through JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.errors import InputError
from harness.json_values import load_json
from harness.models.formats import from_anthropic_messages, from_openai_messages
from harness.models.types import (
    ChatResponse,
    Message,
    OutsideText,
    Role,
    StructuredResponse,
    ToolSpec,
)

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
    with a known price; ``unpriced_calls`` counts the others so a cost is never silently 0.
    ``prompt_cache_read_tokens`` and ``prompt_cache_write_tokens`` are the parts of
    ``input_tokens`` the providers' prompt caches served and stored, and
    ``prompt_cache_saved_usd`` what that took off the cost; ``batched_calls`` the calls
    answered through a provider's batch API, and ``batch_saved_usd`` what its discount took
    off."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    prompt_cache_read_tokens: int = 0
    prompt_cache_write_tokens: int = 0
    prompt_cache_saved_usd: float = 0.0
    batched_calls: int = 0
    batch_saved_usd: float = 0.0

    def add(self, response: ChatResponse | StructuredResponse[Any]) -> None:
        self.calls += 1
        self.cached_calls += int(response.cached)
        self.input_tokens += response.usage.input_tokens
        self.output_tokens += response.usage.output_tokens
        self.prompt_cache_read_tokens += response.usage.cache_read_tokens
        self.prompt_cache_write_tokens += response.usage.cache_write_tokens
        self.prompt_cache_saved_usd += response.prompt_cache_saved_usd
        if isinstance(response, StructuredResponse) and response.batched_requests:
            self.batched_calls += 1
            self.batch_saved_usd += response.batch_saved_usd
        self.latency_s += response.latency_s
        if response.cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += response.cost_usd

    def merge(self, other: UsageTotals) -> None:
        for name in UsageTotals.model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class ToolCallRecord(OutsideText):
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
    includes_tool_time: bool = Field(
        default=False,
        description="the agent's tool calls ran inside this step's time (a Python agent's "
        "call, an HTTP agent's request that reached its tools over MCP), so per-turn latency "
        "does not add them again",
    )


class ErrorInfo(OutsideText):
    model_config = ConfigDict(extra="forbid")

    kind: str
    message: str
    role: Role | None = None


class Transcript(BaseModel):
    """Everything that happened in one episode.

    ``history`` is the conversation the scenario gave before the first live turn
    (``user.history``): the agent saw it, but it is not the agent's work, so
    ``messages``, ``tool_calls``, the turn numbers, ``final_response``, the checks and the
    usage hold the live conversation only. Transcripts written before it existed read with an
    empty history.
    """

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    epoch: int = 0
    system_prompt: str | None = None
    tools: list[ToolSpec] = Field(default_factory=list)
    history: list[Message] = Field(default_factory=list)
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

    def turn_latencies(self) -> dict[int, float]:
        """Seconds each user turn took the agent: its model calls (or Python agent calls, or
        HTTP requests) plus the tool calls it made between them, by turn number, for the turns
        with any of them. Tool calls made inside a step's time (``includes_tool_time``) are
        not added twice. The ``latency_budget`` check and the run's latency figures both read
        this."""
        per_turn: dict[int, float] = {}
        inside: set[int] = set()
        for s in self.steps:
            if s.role == "agent":
                per_turn[s.turn] = per_turn.get(s.turn, 0.0) + s.latency_s
                if s.includes_tool_time:
                    inside.add(s.turn)
        for c in self.tool_calls:
            if c.turn not in inside:
                per_turn[c.turn] = per_turn.get(c.turn, 0.0) + c.latency_s
        return per_turn

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
                        result = load_json(result_msg.content, "a tool result")
                    except (ValueError, InputError):
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


class ToolDefinitionError(ValueError):
    """A tool definition of no shape we read. ``field`` is its path (e.g. ``[1].function``),
    ``expected`` says what was expected there."""

    def __init__(self, field: str, expected: str) -> None:
        super().__init__(f"{field}: {expected}")
        self.field = field
        self.expected = expected


TOOL_DEFINITION_SHAPES = (
    '{"name", "description", "parameters"} (ours), '
    '{"type": "function", "function": {"name", "description", "parameters"}} (OpenAI) '
    'or {"name", "description", "input_schema"} (Anthropic)'
)

# Keys each shape may carry beside the ones we read. OpenAI's `strict` and Anthropic's
# `cache_control` change how the provider serves the tool, not what the tool is.
_OURS = frozenset({"name", "description", "parameters"})
_OPENAI_OUTER = frozenset({"type", "function"})
_OPENAI_FUNCTION = frozenset({"name", "description", "parameters", "strict"})
_ANTHROPIC = frozenset({"type", "name", "description", "input_schema", "cache_control"})


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _tool_fields(where: str, data: dict[str, Any], allowed: frozenset[str], schema_key: str,
                 shape: str) -> ToolSpec:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ToolDefinitionError(_at(where, unknown[0]), f"not a key of {shape} tool "
                                  f"definitions (allowed: {', '.join(sorted(allowed))})")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ToolDefinitionError(_at(where, "name"), "a non-empty string: the tool's name")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ToolDefinitionError(_at(where, "description"), "a string")
    schema = data.get(schema_key, {"type": "object", "properties": {}})
    if not isinstance(schema, dict):
        raise ToolDefinitionError(_at(where, schema_key),
                                  "an object: the JSON Schema of the tool's arguments")
    return ToolSpec(name=name, description=description, parameters=schema)


def tool_spec_from_definition(definition: Any, where: str = "") -> ToolSpec:
    """One tool definition in any of :data:`TOOL_DEFINITION_SHAPES` as a :class:`ToolSpec`.

    The shape is told by its keys: ``function`` (OpenAI), ``input_schema`` (Anthropic), else
    ours. Unknown keys are errors, not ignored. Raises :class:`ToolDefinitionError` naming
    the field below ``where``.
    """
    if not isinstance(definition, dict):
        raise ToolDefinitionError(where or "tool", f"an object: {TOOL_DEFINITION_SHAPES}")
    if "function" in definition:
        if definition.get("type", "function") != "function":
            raise ToolDefinitionError(_at(where, "type"), '"function" for an OpenAI tool')
        unknown = sorted(set(definition) - _OPENAI_OUTER)
        if unknown:
            raise ToolDefinitionError(_at(where, unknown[0]),
                                      'not a key of OpenAI tool definitions (allowed: '
                                      '"type", "function")')
        function = definition["function"]
        if not isinstance(function, dict):
            raise ToolDefinitionError(_at(where, "function"),
                                      'an object with "name", "description", "parameters"')
        return _tool_fields(_at(where, "function"), function, _OPENAI_FUNCTION, "parameters",
                            "OpenAI function")
    if "input_schema" in definition:
        if definition.get("type", "custom") != "custom":
            raise ToolDefinitionError(_at(where, "type"), '"custom" (or absent) for an '
                                      "Anthropic tool with an input_schema")
        return _tool_fields(where, definition, _ANTHROPIC, "input_schema", "Anthropic")
    if "type" in definition:
        raise ToolDefinitionError(_at(where, "type"), "only in OpenAI or Anthropic tool "
                                  f"definitions with their schema; {TOOL_DEFINITION_SHAPES} "
                                  f"(got type {definition['type']!r})")
    return _tool_fields(where, definition, _OURS, "parameters", "our")


def tool_specs_from_definitions(definitions: Iterable[Any]) -> list[ToolSpec]:
    """Several tool definitions (shapes may be mixed) as :class:`ToolSpec` s, in order.
    Raises :class:`ToolDefinitionError` naming ``[index]`` and the field, also for a name
    defined twice."""
    specs: list[ToolSpec] = []
    first_index: dict[str, int] = {}
    for i, definition in enumerate(definitions):
        spec = tool_spec_from_definition(definition, f"[{i}]")
        if spec.name in first_index:
            raise ToolDefinitionError(f"[{i}].name", f"a unique tool name ({spec.name!r} is "
                                      f"also defined at [{first_index[spec.name]}])")
        first_index[spec.name] = i
        specs.append(spec)
    return specs


def _imported(scenario_id: str, messages: list[Message], *, tools: Iterable[ToolSpec] = (),
              system_prompt: str | None = None) -> Transcript:
    system = next((m.content for m in messages if m.role == "system"), None)
    if system is not None and system_prompt is not None:
        raise ValueError("the system prompt is given twice: as a system message and apart")
    convo = [m for m in messages if m.role != "system"]
    return Transcript(
        scenario_id=scenario_id,
        system_prompt=system if system is not None else system_prompt,
        tools=list(tools),
        messages=convo,
        tool_calls=_records_from_messages(convo),
        stop_reason="imported",
    )


def transcript_from_openai(
    scenario_id: str, messages: Iterable[dict[str, Any]], *,
    tools: Iterable[ToolSpec] = (), system_prompt: str | None = None,
) -> Transcript:
    """Build a transcript from an OpenAI chat-format message list (tool calls included), so an
    existing conversation can be scored without re-running it. ``tools`` (see
    :func:`tool_specs_from_definitions`) and ``system_prompt`` are what the agent was given,
    shown to tool-use judges. Raises ``ValueError`` on a message with an unknown role, or
    when ``system_prompt`` is given and the messages also have a system message."""
    return _imported(scenario_id, from_openai_messages(messages), tools=tools,
                     system_prompt=system_prompt)


def transcript_from_anthropic(
    scenario_id: str, messages: Iterable[dict[str, Any]], *, system: str | list[Any] | None = None,
    tools: Iterable[ToolSpec] = (),
) -> Transcript:
    """Build a transcript from an Anthropic-format message list (``tool_use`` and
    ``tool_result`` blocks included), with the agent's ``system`` prompt and ``tools``."""
    return _imported(scenario_id, from_anthropic_messages(messages, system=system), tools=tools)
