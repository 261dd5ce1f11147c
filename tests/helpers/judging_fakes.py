"""Small fakes for the judging tests: a scripted ChatModel that validates replies like
instructor does (re-asking on a validation error), and a ChatModel around a MockBehaviour."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.errors import StructuredOutputError
from harness.models.base import ChatModel, MockBehaviour, ModelSpec
from harness.models.types import (
    ChatResponse,
    GenerationParams,
    Message,
    Role,
    StructuredResponse,
    T,
    ToolChoice,
    ToolSpec,
    Usage,
)
from harness.transcript import Transcript, transcript_from_openai

Reply = Any  # a dict (the JSON the model "sent"), an Exception to raise, or a callable


@dataclass
class Call:
    messages: list[Message]
    response_model: type[BaseModel]
    role: Role
    params: GenerationParams | None
    sample_index: int
    max_reasks: int
    hints: Mapping[str, Any] | None
    attempts: int = 0


@dataclass
class ScriptedJudge(ChatModel):
    """Answers structured calls from ``script(call) -> list of replies`` (one per attempt)
    or from a shared queue. Each reply is validated against the response model; an invalid
    one is re-asked (the next reply is used) up to ``max_reasks`` times, then
    StructuredOutputError, as the real model layer does through instructor."""

    name: str = "fake:judge"
    queue: list[Reply] = field(default_factory=list)
    script: Callable[[Call], Reply] | None = None
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        provider, _, model = self.name.partition(":")
        self.spec = ModelSpec(provider="openai" if provider == "fake" else provider,
                              name=model)  # type: ignore[arg-type]

    async def chat(self, messages: Sequence[Message], *, role: Role,
                   tools: Sequence[ToolSpec] = (), tool_choice: ToolChoice = "auto",
                   params: GenerationParams | None = None, sample_index: int = 0,
                   hints: Mapping[str, Any] | None = None) -> ChatResponse:
        raise AssertionError("judges must not call chat()")

    def _next(self, call: Call) -> Reply:
        if self.script is not None:
            return self.script(call)
        if not self.queue:
            raise AssertionError("the scripted judge ran out of replies")
        return self.queue.pop(0)

    async def structured(self, messages: Sequence[Message], response_model: type[T], *,
                         role: Role, params: GenerationParams | None = None,
                         sample_index: int = 0, max_reasks: int = 2,
                         hints: Mapping[str, Any] | None = None) -> StructuredResponse[T]:
        call = Call(list(messages), response_model, role, params, sample_index, max_reasks,
                    hints)
        self.calls.append(call)
        last_error: Exception | None = None
        for attempt in range(1, max_reasks + 2):
            call.attempts = attempt
            reply = self._next(call)
            if isinstance(reply, Exception):
                raise reply
            try:
                value = response_model.model_validate(reply)
            except ValidationError as err:
                last_error = err
                continue
            return StructuredResponse[T](value=value, model=str(self.spec),
                                         usage=Usage(input_tokens=100, output_tokens=20),
                                         attempts=attempt, cost_usd=0.001)
        raise StructuredOutputError(f"invalid after {max_reasks} re-asks: {last_error}",
                                    model=str(self.spec))


class BehaviourModel(ChatModel):
    """A ChatModel around a MockBehaviour, standing in for the model layer's mock wrapper."""

    def __init__(self, behaviour: MockBehaviour, name: str) -> None:
        self.behaviour = behaviour
        self.spec = ModelSpec(provider="mock", name=name)

    async def chat(self, messages: Sequence[Message], *, role: Role,
                   tools: Sequence[ToolSpec] = (), tool_choice: ToolChoice = "auto",
                   params: GenerationParams | None = None, sample_index: int = 0,
                   hints: Mapping[str, Any] | None = None) -> ChatResponse:
        message = await self.behaviour.chat(
            messages, tools=tools, tool_choice=tool_choice, params=params or GenerationParams(),
            sample_index=sample_index, hints=hints or {})
        return ChatResponse(message=message, model=str(self.spec))

    async def structured(self, messages: Sequence[Message], response_model: type[T], *,
                         role: Role, params: GenerationParams | None = None,
                         sample_index: int = 0, max_reasks: int = 2,
                         hints: Mapping[str, Any] | None = None) -> StructuredResponse[T]:
        value = await self.behaviour.structured(
            messages, response_model, params=params or GenerationParams(),
            sample_index=sample_index, hints=hints or {})
        return StructuredResponse[T](value=value, model=str(self.spec), cost_usd=0.0)


def criterion_reply(score: Any, reasoning: str = "Because.", evidence: list[str] | None = None
                    ) -> dict[str, Any]:
    return {"reasoning": reasoning, "evidence": evidence or [], "score": score}


def weather_transcript(*, final: str = "It is 21.5°C and sunny in Paris.",
                       tool_error: bool = False) -> Transcript:
    """A small episode: the user asks for the weather, the agent calls a tool and answers."""
    result = ('{"error": "city not found"}' if tool_error
              else '{"city": "Paris", "temp_c": 21.5, "sky": "sunny"}')
    transcript = transcript_from_openai("weather", [
        {"role": "system", "content": "You are a weather assistant. Never guess."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
        {"role": "assistant", "content": final},
    ])
    if tool_error:
        records = [r.model_copy(update={"is_error": True, "error": "injected"})
                   for r in transcript.tool_calls]
        transcript = transcript.model_copy(update={"tool_calls": records})
    return transcript
