"""Small fakes for the judging tests: a scripted ChatModel that validates replies like
instructor does (re-asking on a validation error), and a ChatModel around a MockBehaviour."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.errors import StructuredOutputError
from harness.models.base import ChatModel, MockBehaviour, ModelSpec
from harness.models.mock import MockChatModel
from harness.models.request import ModelRequest
from harness.models.types import (
    ChatResponse,
    GenerationParams,
    Message,
    Role,
    StructuredResponse,
    T,
    Usage,
)
from harness.models.usage import UsageLedger
from harness.transcript import Transcript, transcript_from_openai

Reply = Any  # a dict (the JSON the model "sent"), an Exception to raise, or a callable


@dataclass
class Call:
    request: ModelRequest
    response_model: type[BaseModel]
    attempts: int = 0

    @property
    def messages(self) -> list[Message]:
        return list(self.request.messages)

    @property
    def role(self) -> Role:
        return self.request.role

    @property
    def params(self) -> GenerationParams | None:
        return self.request.params

    @property
    def sample_index(self) -> int:
        return self.request.sample_index

    @property
    def max_reasks(self) -> int:
        return self.request.max_reasks


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

    async def chat(self, request: ModelRequest) -> ChatResponse:
        raise AssertionError("judges must not call chat()")

    def _next(self, call: Call) -> Reply:
        if self.script is not None:
            return self.script(call)
        if not self.queue:
            raise AssertionError("the scripted judge ran out of replies")
        return self.queue.pop(0)

    async def structured(self, request: ModelRequest, response_model: type[T]
                         ) -> StructuredResponse[T]:
        call = Call(request, response_model)
        self.calls.append(call)
        max_reasks = request.max_reasks
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


class BehaviourModel(MockChatModel):
    """A MockBehaviour wrapped as the model layer wraps it (bound like any ``mock:`` model),
    reporting no token counts."""

    def __init__(self, behaviour: MockBehaviour, name: str) -> None:
        super().__init__(ModelSpec(provider="mock", name=name), behaviour, UsageLedger())

    async def chat(self, request: ModelRequest) -> ChatResponse:
        message = await self.behaviour.chat(request)
        return ChatResponse(message=message, model=str(self.spec))

    async def structured(self, request: ModelRequest, response_model: type[T]
                         ) -> StructuredResponse[T]:
        value = await self.behaviour.structured(request, response_model)
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
