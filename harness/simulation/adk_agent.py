"""An ADK agent (``root_agent`` in the user's package) run in place, with ADK's own Runner.

One in-memory runner and one session per episode (created on the first turn with the
scenario's ``state``, which an ADK import fills from ``session_input.state``, and the
scenario's ``user.history`` appended to it as ADK events); each user turn is one
``run_async(new_message=...)``. The harness's plugin (:mod:`.adk_plugin`) answers every tool
call from the episode's :class:`Toolbox` before the agent's real function could run, so the
scenario's mocks are what the agent sees, and counts every model call in the run's usage
ledger and budgets. A tool the scenario does not mock ends the episode as an
``agent_error`` naming it, unless ``agent.real_tools`` lets the real function run (its call
and result are then recorded as a mock's are). A budget reached before a model call raises
:class:`~harness.errors.BudgetExceededError`, as a model of the harness's own does, so the
run stops there and the sample is run again on ``--resume``.

``google.adk`` is imported only when an ADK agent is built: the CLI starts without it.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError
from harness.models.prices import PriceTable
from harness.models.types import ChatResponse, Message, ToolCall
from harness.models.usage import UsageLedger
from harness.simulation.agent import Agent, AgentTurn, tool_message
from harness.tools.toolbox import Toolbox
from harness.transcript import ErrorInfo
from harness.user_code import ImportPathError, resolve_adk_agent

if TYPE_CHECKING:
    from harness.simulation.adk_plugin import AdkTurn

_USER_ID = "harness"
_APP = "harness"


def load_adk_agent(path: str, *, base_dir: Path | None = None) -> Any:
    """Import ``package.module:root_agent`` (see :mod:`harness.user_code`) and return the ADK
    agent it names. Raises :class:`InputError` (field ``agent.adk``) when the adk extra is
    missing, the path does not import, or it names something that is not an ADK agent."""
    try:
        return resolve_adk_agent(path, base_dir=base_dir)
    except ImportPathError as err:
        raise InputError(base_dir or "<scenario>", "agent.adk", str(err)) from None


class AdkAgent(Agent):
    """Runs ``agent`` (an ADK ``BaseAgent``) with ADK's ``InMemoryRunner``, one session per
    episode starting from ``state``; ``real_tools`` are the agent's tools whose real function
    may run. At most ``max_steps`` model calls per turn (ADK's ``max_llm_calls``). Every model
    call is counted in ``ledger`` (the run's, whose budgets then hold; else one of its own)
    and priced at ``prices``."""

    def __init__(self, agent: Any, *, label: str, state: dict[str, Any] | None = None,
                 real_tools: list[str] | None = None, max_steps: int = 10,
                 ledger: UsageLedger | None = None, prices: PriceTable | None = None) -> None:
        self.agent = agent
        self.label = label
        self.state = dict(state or {})
        self.real_tools = set(real_tools or ())
        self.max_steps = max_steps
        self.ledger = ledger if ledger is not None else UsageLedger()
        self.prices = prices if prices is not None else PriceTable()
        self._runner: Any = None
        self._session_id: str | None = None
        self._turn: AdkTurn | None = None

    @classmethod
    def from_path(cls, path: str, *, base_dir: Path | None = None,
                  state: dict[str, Any] | None = None, real_tools: list[str] | None = None,
                  max_steps: int = 10, ledger: UsageLedger | None = None,
                  prices: PriceTable | None = None) -> AdkAgent:
        """:func:`load_adk_agent`, then the agent; raises :class:`InputError` as it does."""
        return cls(load_adk_agent(path, base_dir=base_dir), label=f"adk:{path}", state=state,
                   real_tools=real_tools, max_steps=max_steps, ledger=ledger, prices=prices)

    async def respond(
        self, conversation: list[Message], toolbox: Toolbox, *, turn: int
    ) -> AgentTurn:
        from google.adk.agents.run_config import RunConfig
        from google.genai import types

        from harness.simulation.adk_plugin import AdkTurn, UnmockedToolError

        out = AgentTurn()
        self._turn = state = AdkTurn(toolbox, turn=turn, max_calls=self.max_steps)
        toolbox.turn, toolbox.step = turn, 0
        text = conversation[-1].content if conversation else ""
        message = types.Content(role="user", parts=[types.Part(text=text)])
        try:
            # The conversation before the first turn is the scenario's history.
            session_id = await self._session(conversation[:-1])
            started = time.perf_counter()
            # Closed on the way out, an early stop included, so ADK finishes its invocation.
            async with contextlib.aclosing(self._runner.run_async(
                user_id=_USER_ID, session_id=session_id, new_message=message,
                run_config=RunConfig(max_llm_calls=self.max_steps),
            )) as events:
                async for event in events:
                    if state.budget is not None:
                        break  # the plugin's stand-in reply: no model call was made
                    started = self._take(event, out, state, started)
                    if state.unmocked is not None:
                        break
        except UnmockedToolError:
            pass
        except Exception as err:  # the agent under test failed: recorded, the run goes on
            if state.budget is not None:
                # ADK wrapped it; the run stops on its budget as for a model of our own.
                raise state.budget from None
            return self._failed(out, err, turn)
        if state.budget is not None:
            raise state.budget
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

    def _failed(self, out: AgentTurn, err: Exception, turn: int) -> AgentTurn:
        """The turn ended by ``err``: past ADK's call limit, or the agent failed."""
        if type(err).__name__ == "LlmCallsLimitExceededError":
            out.stop_reason = "agent_step_limit"
            out.stop_detail = (f"more than {self.max_steps} model calls in turn {turn} "
                               "(limits.max_agent_steps)")
            return out
        out.stop_reason = "agent_error"
        out.error = ErrorInfo(kind=type(err).__name__, message=str(err), role="agent")
        return out

    async def _session(self, history: list[Message]) -> str:
        """The episode's session, made on the first turn (with the runner and plugin), with
        ``history`` appended as the events ADK would have recorded for it."""
        if self._session_id is None:
            from google.adk.apps import App
            from google.adk.runners import InMemoryRunner

            from harness.simulation.adk_plugin import HarnessPlugin

            plugin = HarnessPlugin(current=lambda: self._turn, root=self.agent,
                                   real_tools=self.real_tools, ledger=self.ledger,
                                   prices=self.prices)
            app = App(name=_APP, root_agent=self.agent, plugins=[plugin])
            self._runner = InMemoryRunner(app=app)
            service = self._runner.session_service
            session = await service.create_session(
                app_name=_APP, user_id=_USER_ID, state=dict(self.state))
            for event in history_events(history, agent_name=self.agent.name):
                await service.append_event(session, event)
            self._session_id = session.id
        return self._session_id

    def _take(self, event: Any, out: AgentTurn, state: AdkTurn, started: float) -> float:
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
        """The step's response, with the tokens and cost the plugin counted for its call."""
        from harness.simulation.adk_plugin import model_label, priced

        model = model_label(self.agent, event.author, event)
        cost = priced(event, model, self.prices)
        return ChatResponse(
            message=message, usage=cost.usage, model=model,
            latency_s=time.perf_counter() - started, cost_usd=cost.cost_usd,
            prompt_cache_saved_usd=cost.cache_saved_usd,
            finish_reason=str(event.finish_reason.name).lower() if event.finish_reason else None,
        )


def history_events(history: list[Message], *, agent_name: str) -> list[Any]:
    """``history`` as the ADK events a live run would have left in the session: a user
    message is the user's event; an assistant message (its text and tool calls) and a tool
    result are the agent's (ADK authors a function's response by the agent that called it),
    the result's value given as the live run gives a mock's (:func:`tool_result_value`).
    System messages are left out: the ADK agent's own instruction is its system prompt."""
    from google.adk.events.event import Event
    from google.genai import types

    events: list[Event] = []
    names = {c.id: c.name for m in history for c in m.tool_calls}  # a result may not say
    for m in history:
        if m.role == "user":
            content = types.Content(role="user", parts=[types.Part(text=m.content)])
        elif m.role == "assistant":
            parts = [types.Part(text=m.content)] if m.content else []
            parts += [types.Part(function_call=types.FunctionCall(
                id=_client_id(c.id), name=c.name, args=dict(c.arguments)))
                       for c in m.tool_calls]
            content = types.Content(role="model", parts=parts or [types.Part(text="")])
        elif m.role == "tool":
            content = types.Content(role="user", parts=[types.Part(
                function_response=types.FunctionResponse(
                    id=_client_id(m.tool_call_id),
                    name=m.name or names.get(m.tool_call_id or "", ""),
                    response=tool_result_value(m)))])
        else:
            continue
        author = "user" if m.role == "user" else agent_name
        events.append(Event(invocation_id=f"history-{len(events)}", author=author,
                            content=content))
    return events


def _client_id(call_id: str | None) -> str | None:
    """A history call's id as ADK's own client-side ids are written (``adk-`` first), so ADK
    treats it as it treats the ids it gives a live call: kept to pair a result with its call,
    left out of the request for models that do not pair by id (Gemini)."""
    if not call_id:
        return None
    return call_id if call_id.startswith("adk-") else f"adk-{call_id}"


def tool_result_value(m: Message) -> dict[str, Any]:
    """A tool message's result as the object an ADK function response holds: a JSON object as
    it is, another value as ``{"result": ...}`` (as ADK wraps a function's non-dict return and
    the live run wraps a mock's), a failed call's as ``{"error": ...}``."""
    try:
        value: Any = json.loads(m.content) if m.content else ""
    except ValueError:
        value = m.content
    if m.is_error:
        return {"error": value}
    return value if isinstance(value, dict) else {"result": value}


def _text(parts: list[Any]) -> str:
    return "".join(p.text for p in parts if p.text and not p.thought)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
