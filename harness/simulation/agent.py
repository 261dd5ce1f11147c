"""The agent under test, answering one user turn: a model in a tool loop, or a Python callable
(an HTTP endpoint is :mod:`harness.simulation.http_agent`, an ADK agent
:mod:`harness.simulation.adk_agent`).

Both produce the same shape of transcript: assistant messages with tool calls, a tool message
per result, then the assistant's reply; every call is recorded by the :class:`Toolbox`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import InputError, ModelError
from harness.models.base import ChatModel
from harness.models.request import ModelRequest
from harness.models.types import ChatResponse, GenerationParams, Message, ToolCall
from harness.tools.toolbox import Toolbox
from harness.transcript import ErrorInfo, StopReason
from harness.user_code import (
    AGENT_KEYWORDS,
    ImportPathError,
    resolve_callable,
    takes_keyword,
)


@dataclass
class AgentTurn:
    """What the agent did for one user turn.

    ``messages`` are the new messages (assistant and tool), ``responses`` the model responses
    with their step index (for accounting), ``callable_steps`` the (step, latency) of a Python
    agent's call or an HTTP agent's request; ``steps_include_tool_time`` says the agent's tool
    calls ran inside those steps (so their time is not added again). ``stop_reason`` is set
    when the episode must end here: ``agent_error``, ``agent_step_limit`` or
    ``tool_call_limit``.
    """

    messages: list[Message] = field(default_factory=list)
    responses: list[tuple[int, ChatResponse]] = field(default_factory=list)
    callable_steps: list[tuple[int, float]] = field(default_factory=list)
    steps_include_tool_time: bool = False
    stop_reason: StopReason | None = None
    stop_detail: str | None = None
    error: ErrorInfo | None = None


class Agent(ABC):
    """Answers one user turn given the conversation so far (which ends with the user's
    message) and the episode's toolbox. Never raises for failures of the agent under test:
    they come back as ``stop_reason="agent_error"``.

    An agent that reaches the mocked tools over MCP says so with ``needs_tool_server``: the
    episode then serves its toolbox (:class:`harness.mcp.ToolServer`) and sets ``mcp_url``
    before the first turn. Such an agent sets ``toolbox.turn = turn; toolbox.step = 0`` at
    the start of each turn, so the calls that arrive are recorded in the right turn."""

    label: str
    needs_tool_server: bool = False
    mcp_url: str | None = None

    @abstractmethod
    async def respond(
        self, conversation: list[Message], toolbox: Toolbox, *, turn: int
    ) -> AgentTurn: ...


def tool_message(call: ToolCall, content: str, *, is_error: bool) -> Message:
    return Message(
        role="tool", tool_call_id=call.id, name=call.name, content=content, is_error=is_error
    )


class ModelAgent(Agent):
    """A model with a system prompt and the toolbox's tools, in a tool loop: model -> tool
    calls -> mock results -> model ..., until it answers without calling a tool. Bounded by
    ``max_steps`` model calls per turn; the toolbox bounds tool calls per episode."""

    def __init__(
        self,
        model: ChatModel,
        *,
        system_prompt: str = "",
        params: GenerationParams | None = None,
        max_steps: int = 10,
        sample_index: int = 0,
    ) -> None:
        self.model = model
        self.system_prompt = system_prompt
        self.params = params
        self.max_steps = max_steps
        self.sample_index = sample_index
        self.label = str(model.spec)

    async def respond(
        self, conversation: list[Message], toolbox: Toolbox, *, turn: int
    ) -> AgentTurn:
        out = AgentTurn()
        system = [Message(role="system", content=self.system_prompt)] if self.system_prompt else []
        tools = toolbox.specs
        for step in range(self.max_steps):
            try:
                response = await self.model.chat(ModelRequest(
                    [*system, *conversation, *out.messages], "agent", tools=tools,
                    params=self.params, sample_index=self.sample_index,
                    # the next step's request, and the next turn's, begin with all of this
                    prompt_cache="conversation",
                ))
            except ModelError as err:
                out.stop_reason = "agent_error"
                out.error = ErrorInfo(kind=type(err).__name__, message=str(err), role="agent")
                return out
            out.responses.append((step, response))
            message = response.message
            out.messages.append(message)
            if not message.tool_calls:
                return out
            for call in message.tool_calls:
                result = toolbox.execute(call, turn=turn, step=step)
                out.messages.append(tool_message(call, result.content, is_error=result.is_error))
            if toolbox.limit_reached:
                out.stop_reason = "tool_call_limit"
                out.stop_detail = f"more than {toolbox.max_calls} tool calls"
                return out
        out.stop_reason = "agent_step_limit"
        out.stop_detail = (
            f"still calling tools after {self.max_steps} steps in turn {turn} "
            "(limits.max_agent_steps)"
        )
        return out


class CallableAgent(Agent):
    """A Python agent ``f(messages, toolbox) -> str | Message``, sync or async. It receives the
    conversation so far (user, assistant and tool messages) and calls mocked
    tools through ``toolbox.call(name, **args)``. Sync functions run in a thread of their own so
    they cannot stall other episodes. Any exception it raises is an ``agent_error``.

    A function with a keyword parameter ``mcp_url`` (``f(messages, toolbox, *, mcp_url)``)
    reaches the tools over MCP instead: it is called with the URL of the episode's MCP server
    (:attr:`Agent.mcp_url`), and the calls arriving there are recorded as ``toolbox.call``'s
    are."""

    def __init__(
        self, function: Callable[..., Any], *, label: str, system_prompt: str = ""
    ) -> None:
        self.function = function
        self.label = label
        self.system_prompt = system_prompt
        self.needs_tool_server = takes_keyword(function, "mcp_url")

    @classmethod
    def from_path(
        cls, path: str, *, base_dir: Path | None = None, system_prompt: str = ""
    ) -> CallableAgent:
        """Import ``package.module:function`` (see :mod:`harness.user_code`). Raises
        :class:`~harness.errors.InputError` when it does not import."""
        try:
            function = resolve_callable(path, base_dir=base_dir, positional_args=2,
                                        optional_keywords=AGENT_KEYWORDS)
        except ImportPathError as err:
            raise InputError(base_dir or "<scenario>", "agent.callable", str(err)) from None
        return cls(function, label=f"python:{path}", system_prompt=system_prompt)

    async def respond(
        self, conversation: list[Message], toolbox: Toolbox, *, turn: int
    ) -> AgentTurn:
        out = AgentTurn(steps_include_tool_time=True)
        first_record = len(toolbox.records)
        toolbox.turn, toolbox.step = turn, 0
        started = time.perf_counter()
        try:
            system = (
                [Message(role="system", content=self.system_prompt)] if self.system_prompt else []
            )
            reply = await self._call([*system, *conversation], toolbox)
            text = _reply_text(reply)
        except Exception as err:  # the agent under test failed: recorded, the run goes on
            out.stop_reason = "agent_error"
            out.error = ErrorInfo(kind=type(err).__name__, message=str(err), role="agent")
            text = None
        out.callable_steps.append((0, time.perf_counter() - started))
        # Its tool calls become assistant/tool message pairs, like a model agent's.
        for record in toolbox.records[first_record:]:
            call = ToolCall(id=record.call_id, name=record.name, arguments=record.arguments)
            result = toolbox.result_of(record)
            out.messages.append(Message(role="assistant", tool_calls=(call,)))
            out.messages.append(tool_message(call, result.content, is_error=result.is_error))
        if text is not None:
            out.messages.append(Message(role="assistant", content=text))
        if out.stop_reason is None and toolbox.limit_reached:
            out.stop_reason = "tool_call_limit"
            out.stop_detail = f"more than {toolbox.max_calls} tool calls"
        return out

    async def _call(self, conversation: list[Message], toolbox: Toolbox) -> Any:
        function = self.function
        if self.needs_tool_server:
            function = functools.partial(function, mcp_url=self.mcp_url)
        if _is_async(self.function):
            return await function(conversation, toolbox)
        result = await _in_daemon_thread(function, conversation, toolbox)
        if inspect.isawaitable(result):
            result = await result
        return result


async def _in_daemon_thread(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a thread of its own, awaited without blocking the event loop.

    Unlike :func:`asyncio.to_thread` the thread is a daemon outside the loop's executor: when
    the episode's time limit abandons a sync agent that never returns, the run still finishes
    and the process still exits (an executor thread would be waited for at shutdown)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if done.cancelled():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)

    def work() -> None:
        try:
            result, error = context.run(function, *args), None
        except BaseException as err:  # handed to the awaiting coroutine
            result, error = None, err
        # A closed loop means nobody waits for this answer any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name=f"agent:{getattr(function, '__name__', '?')}",
                     daemon=True).start()
    return await done


def _is_async(function: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004  (an object with async __call__)
    )


def _reply_text(reply: Any) -> str:
    if isinstance(reply, str):
        return reply
    if isinstance(reply, Message) and reply.role == "assistant" and not reply.tool_calls:
        return reply.content
    raise TypeError(
        "a Python agent must return its reply as a str (or an assistant Message without tool "
        f"calls; call tools through the toolbox), got {type(reply).__name__}"
    )
