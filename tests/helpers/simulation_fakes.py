"""A small in-process ChatModel for the conversation tests: answers from a queue of scripted
replies (or an offline MockBehaviour) and records every request, so tests can check exactly
what the agent and the simulator were sent (its own test: test_simulation_fake_model.py). The
tests through the real SDKs and the loopback server live in test_episode_loopback.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from harness.models.base import ChatModel, MockBehaviour, ModelSpec
from harness.models.request import ModelRequest
from harness.models.types import (
    ChatResponse,
    Message,
    Role,
    StructuredResponse,
    T,
    ToolCall,
    ToolSpec,
    Usage,
)


@dataclass
class Request:
    kind: str  # "chat" or "structured"
    messages: list[Message]
    role: Role
    tools: list[ToolSpec] = field(default_factory=list)
    sample_index: int = 0
    request: ModelRequest | None = None


def text(content: str) -> Message:
    return Message(role="assistant", content=content)


def calls(*pairs: tuple[str, dict[str, Any]] | ToolCall) -> Message:
    """An assistant message calling tools: ``calls(("get_weather", {"city": "Paris"}))``."""
    tool_calls = tuple(
        p if isinstance(p, ToolCall) else ToolCall(id=f"c{i}", name=p[0], arguments=p[1])
        for i, p in enumerate(pairs)
    )
    return Message(role="assistant", tool_calls=tool_calls)


class FakeModel(ChatModel):
    """Replies come from ``replies`` in order (a Message for chat, a dict or BaseModel for
    structured, an Exception to raise), or from ``behaviour`` when given. Every reply costs
    10 input and 5 output tokens and 0.01 s, so usage sums are checkable."""

    def __init__(
        self,
        name: str = "mock:fake",
        replies: Sequence[Any] = (),
        *,
        behaviour: MockBehaviour | None = None,
        endless: Any = None,
    ) -> None:
        self.spec = ModelSpec.parse(name)
        self.replies = list(replies)
        self.behaviour = behaviour
        self.endless = endless
        self.requests: list[Request] = []

    def _next(self) -> Any:
        if self.replies:
            reply = self.replies.pop(0)
        elif self.endless is not None:
            reply = self.endless
        else:
            raise AssertionError(f"{self.spec}: no scripted reply left")
        if isinstance(reply, Exception):
            raise reply
        return reply

    async def chat(self, request: ModelRequest) -> ChatResponse:
        self.requests.append(Request("chat", list(request.messages), request.role,
                                     list(request.tools), request.sample_index, request))
        if self.behaviour is not None:
            message = await self.behaviour.chat(request)
        else:
            message = self._next()
        return ChatResponse(
            message=message,
            usage=Usage(input_tokens=10, output_tokens=5),
            model=str(self.spec),
            latency_s=0.01,
            cost_usd=0.001,
        )

    async def structured(
        self, request: ModelRequest, response_model: type[T]
    ) -> StructuredResponse[T]:
        self.requests.append(Request("structured", list(request.messages), request.role, [],
                                     request.sample_index, request))
        if self.behaviour is not None:
            value = await self.behaviour.structured(request, response_model)
        else:
            reply = self._next()
            value = reply if isinstance(reply, BaseModel) else response_model.model_validate(reply)
        return StructuredResponse(
            value=value,
            usage=Usage(input_tokens=10, output_tokens=5),
            model=str(self.spec),
            latency_s=0.01,
            cost_usd=None,
        )
