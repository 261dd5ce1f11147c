"""An ADK agent (``root_agent`` in the user's package) run in place, with ADK's own Runner.

One in-memory runner and one session per episode (created on the first turn with the
scenario's ``state``, which an ADK import fills from ``session_input.state``); each user turn
is one ``run_async(new_message=...)``. A plugin's ``before_tool_callback`` answers every tool
call from the episode's :class:`Toolbox` before the agent's real function could run, so the
scenario's mocks are what the agent sees. A tool the scenario does not mock ends the episode
as an ``agent_error`` naming it, unless ``agent.real_tools`` lets the real function run (its
call and result are then recorded as a mock's are).

``google.adk`` is imported only when an ADK agent is built: the CLI starts without it.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.models.prices import PriceTable
from harness.models.types import ChatResponse, Message, ToolCall, Usage
from harness.simulation.agent import Agent, AgentTurn, tool_message
from harness.tools.toolbox import Toolbox
from harness.transcript import ErrorInfo
from harness.user_code import ImportPathError, resolve_adk_agent

_USER_ID = "harness"
_PRICES = PriceTable()


class UnmockedToolError(Exception):
    """The ADK agent called a tool the scenario neither mocks nor lets run."""


def load_adk_agent(path: str, *, base_dir: Path | None = None) -> Any:
    """Import ``package.module:root_agent`` (see :mod:`harness.user_code`) and return the ADK
    agent it names. Raises :class:`InputError` (field ``agent.adk``) when the adk extra is
    missing, the path does not import, or it names something that is not an ADK agent."""
    try:
        return resolve_adk_agent(path, base_dir=base_dir)
    except ImportPathError as err:
        raise InputError(base_dir or "<scenario>", "agent.adk", str(err)) from None


@dataclass
class _Turn:
    """What the plugin needs while one user turn runs: the toolbox, the turn, the model
    step the calls belong to, and an unmocked tool's name once one was called."""

    toolbox: Toolbox
    turn: int = 0
    step: int = 0
    unmocked: str | None = None
    real_started: dict[str, float] = field(default_factory=dict)


class AdkAgent(Agent):
    """Runs ``agent`` (an ADK ``BaseAgent``) with ADK's ``InMemoryRunner``, one session per
    episode starting from ``state``; ``real_tools`` are the agent's tools whose real function
    may run. At most ``max_steps`` model calls per turn (ADK's ``max_llm_calls``)."""

    def __init__(self, agent: Any, *, label: str, state: dict[str, Any] | None = None,
                 real_tools: list[str] | None = None, max_steps: int = 10) -> None:
        self.agent = agent
        self.label = label
        self.state = dict(state or {})
        self.real_tools = set(real_tools or ())
        self.max_steps = max_steps
        self._runner: Any = None
        self._session_id: str | None = None
        self._turn: _Turn | None = None

    @classmethod
    def from_path(cls, path: str, *, base_dir: Path | None = None,
                  state: dict[str, Any] | None = None, real_tools: list[str] | None = None,
                  max_steps: int = 10) -> AdkAgent:
        """:func:`load_adk_agent`, then the agent; raises :class:`InputError` as it does."""
        return cls(load_adk_agent(path, base_dir=base_dir), label=f"adk:{path}", state=state,
                   real_tools=real_tools, max_steps=max_steps)

    async def respond(
        self, conversation: list[Message], toolbox: Toolbox, *, turn: int
    ) -> AgentTurn:
        from google.adk.agents.run_config import RunConfig
        from google.genai import types

        out = AgentTurn()
        self._turn = state = _Turn(toolbox, turn=turn)
        toolbox.turn, toolbox.step = turn, 0
        if self._session_id is None and len(conversation) > 1:
            # The session starts empty: a history the agent never saw would be scored as if
            # it had, so refuse rather than drop it.
            out.stop_reason = "agent_error"
            out.error = ErrorInfo(kind="UnsupportedHistory", role="agent", message=(
                "an ADK agent run in place does not replay user.history into its session "
                "yet: drop the history, or give the earlier turns as a script"))
            return out
        text = conversation[-1].content if conversation else ""
        message = types.Content(role="user", parts=[types.Part(text=text)])
        try:
            session_id = await self._session()
            started = time.perf_counter()
            # Closed on the way out, an early stop included, so ADK finishes its invocation.
            async with contextlib.aclosing(self._runner.run_async(
                user_id=_USER_ID, session_id=session_id, new_message=message,
                run_config=RunConfig(max_llm_calls=self.max_steps),
            )) as events:
                async for event in events:
                    started = self._take(event, out, state, started)
                    if state.unmocked is not None:
                        break
        except UnmockedToolError:
            pass
        except Exception as err:  # the agent under test failed: recorded, the run goes on
            if type(err).__name__ == "LlmCallsLimitExceededError":
                out.stop_reason = "agent_step_limit"
                out.stop_detail = (f"more than {self.max_steps} model calls in turn {turn} "
                                   "(limits.max_agent_steps)")
                return out
            out.stop_reason = "agent_error"
            out.error = ErrorInfo(kind=type(err).__name__, message=str(err), role="agent")
            return out
        if state.unmocked is not None:
            out.stop_reason = "agent_error"
            out.error = ErrorInfo(kind="UnmockedTool", role="agent", message=(
                f"the ADK agent called its tool {state.unmocked!r}, which the scenario does "
                f"not mock: add a tool named {state.unmocked!r} to the scenario's tools, or "
                f"let the real one run with agent.real_tools: [{state.unmocked}]"))
        elif toolbox.limit_reached:
            out.stop_reason = "tool_call_limit"
            out.stop_detail = f"more than {toolbox.max_calls} tool calls"
        return out

    async def _session(self) -> str:
        """The episode's session, made on the first turn (with the runner and plugin)."""
        if self._session_id is None:
            from google.adk.apps import App
            from google.adk.runners import InMemoryRunner

            app = App(name="harness", root_agent=self.agent, plugins=[_mock_plugin(self)])
            self._runner = InMemoryRunner(app=app)
            session = await self._runner.session_service.create_session(
                app_name="harness", user_id=_USER_ID, state=dict(self.state))
            self._session_id = session.id
        return self._session_id

    def _take(self, event: Any, out: AgentTurn, state: _Turn, started: float) -> float:
        """One ADK event into the turn: a model response (usage, text and tool calls) is one
        step; a tool response event gives one tool message per result. Returns when the next
        model step started."""
        if event.partial:
            return started
        parts = event.content.parts if event.content and event.content.parts else []
        calls = [p.function_call for p in parts if p.function_call is not None]
        results = [p.function_response for p in parts if p.function_response is not None]
        if results:
            for result in results:
                record = next((r for r in reversed(state.toolbox.records)
                               if r.call_id == result.id), None)
                is_error = record.is_error if record is not None else False
                content = (Toolbox.result_of(record).content if record is not None
                           else _json(result.response))
                call = ToolCall(id=result.id or "", name=result.name or "")
                out.messages.append(tool_message(call, content, is_error=is_error))
            return time.perf_counter()
        if event.author == "user" or (not calls and not _text(parts)
                                      and event.usage_metadata is None):
            return started
        message = Message(role="assistant", content=_text(parts), tool_calls=tuple(
            ToolCall(id=c.id or "", name=c.name or "", arguments=dict(c.args or {}))
            for c in calls))
        out.messages.append(message)
        out.responses.append((state.step, self._response(event, message, started)))
        state.step += 1
        state.toolbox.step = state.step
        return time.perf_counter()

    def _response(self, event: Any, message: Message, started: float) -> ChatResponse:
        usage = event.usage_metadata
        prompt = (usage.prompt_token_count or 0) + (usage.tool_use_prompt_token_count or 0) \
            if usage is not None else 0
        output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0) \
            if usage is not None else 0
        model = f"gemini:{_model_name(self.agent, event)}"
        return ChatResponse(
            message=message, usage=Usage(input_tokens=prompt, output_tokens=output),
            model=model, latency_s=time.perf_counter() - started,
            cost_usd=_PRICES.cost(model, prompt, output),
            finish_reason=str(event.finish_reason.name).lower() if event.finish_reason else None,
        )


def _mock_plugin(owner: AdkAgent) -> Any:
    """An ADK plugin answering the owner's tool calls from the episode's toolbox."""
    from google.adk.plugins.base_plugin import BasePlugin

    class MockedTools(BasePlugin):
        async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any],
                                       tool_context: Any) -> dict[str, Any] | None:
            turn = owner._turn
            assert turn is not None
            toolbox = turn.toolbox
            call = ToolCall(id=tool_context.function_call_id or "", name=tool.name,
                            arguments=dict(tool_args))
            if tool.name in {s.name for s in toolbox.specs}:
                result = toolbox.execute(call, turn=turn.turn, step=max(turn.step - 1, 0))
                value = result.value
                return value if isinstance(value, dict) else {"result": value}
            if tool.name in owner.real_tools:
                turn.real_started[call.id] = toolbox.clock()
                return None
            turn.unmocked = tool.name
            raise UnmockedToolError(tool.name)

        async def after_tool_callback(self, *, tool: Any, tool_args: dict[str, Any],
                                      tool_context: Any, result: Any) -> dict[str, Any] | None:
            turn = owner._turn
            assert turn is not None
            call_id = tool_context.function_call_id or ""
            started = turn.real_started.pop(call_id, None)
            if started is not None:
                turn.toolbox.record_real(
                    ToolCall(id=call_id, name=tool.name, arguments=dict(tool_args)), result,
                    turn=turn.turn, step=max(turn.step - 1, 0), started=started)
            return None

    return MockedTools(name="harness_mocked_tools")


def _text(parts: list[Any]) -> str:
    return "".join(p.text for p in parts if p.text and not p.thought)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _model_name(agent: Any, event: Any) -> str:
    """The model the event's agent used (the event's ``model_version``, else its agent's
    model name)."""
    if getattr(event, "model_version", None):
        return str(event.model_version)
    found = agent.find_agent(event.author) if hasattr(agent, "find_agent") else None
    model = getattr(found or agent, "model", "")
    return model if isinstance(model, str) else str(getattr(model, "model", model))
