"""One episode: the simulated (or scripted) user and the agent under test take turns, the
agent calls mocked tools, until the conversation ends. The result is a :class:`Transcript`
that always says why it stopped.

Turn order, for user turn ``t`` (0-based):

1. The user's message: the script's turn ``t`` (when the script runs out: ``script_finished``);
   the opening message (or the final user message of ``user.history``) at ``t = 0``;
   otherwise the simulator's move. A simulator that ends the
   conversation gives the stop reason (goal met, gave up, transfer, off topic). At
   ``t = max_user_turns`` the simulator is still asked, so a conversation whose goal was met on
   the last turn ends as ``goal_met``; if it wants to go on, the stop is ``turn_limit``.
2. The agent's turn (tool loop, Python callable, HTTP endpoint or ADK agent). An agent
   error, too many steps or too many tool calls end the episode there.

A scenario's ``user.history`` comes before turn 0: the agent and the simulator receive it as
the conversation so far, the transcript keeps it apart as ``history``, and its tool calls are
not run again (the mocked tools start from the scenario's ``state``).

Model failures never raise: they end the episode as ``agent_error``/``simulator_error`` with
the error recorded, and everything that happened before is kept. So does a wall-clock limit
(``limits.max_seconds`` or the run's episode timeout), a safety stop against a hung agent: it
ends the episode as ``time_limit``, keeping every finished turn and every tool call made.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from harness.errors import ModelConfigError, ModelError
from harness.models.base import ChatModel
from harness.models.mock import bind_offline
from harness.models.types import ChatResponse, Message, Role, StructuredResponse
from harness.scenarios.schema import Scenario
from harness.simulation.agent import Agent
from harness.simulation.agent_factory import agent_for
from harness.simulation.simulator import UserSimulator
from harness.tools.toolbox import Toolbox
from harness.transcript import (
    ErrorInfo,
    StepRecord,
    StopReason,
    Transcript,
    UsageTotals,
)

if TYPE_CHECKING:
    from harness.mcp import ToolServer
    from harness.models.remote import ModelServices
    from harness.simulation.http_agent import HttpEndpoints


class _Accounts:
    """Steps and usage per role, in call order."""

    def __init__(self) -> None:
        self.steps: list[StepRecord] = []
        self.usage: dict[Role, UsageTotals] = {}

    def add(
        self,
        role: Role,
        turn: int,
        step: int,
        response: ChatResponse | StructuredResponse[Any],
    ) -> None:
        self.usage.setdefault(role, UsageTotals()).add(response)
        self.steps.append(
            StepRecord(
                role=role,
                turn=turn,
                step=step,
                model=response.model,
                latency_s=response.latency_s,
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                cost_usd=response.cost_usd,
                cached=response.cached,
            )
        )


_Stop = tuple[StopReason, str | None, ErrorInfo | None]  # reason, detail, error


class _Conversation:
    """The turns of one episode; what happened so far stays readable if it is cut short."""

    def __init__(
        self,
        scenario: Scenario,
        agent: Agent,
        simulator: UserSimulator | None,
        toolbox: Toolbox,
    ) -> None:
        self.scenario, self.agent, self.simulator, self.toolbox = (
            scenario, agent, simulator, toolbox,
        )
        self.accounts = _Accounts()
        self.history = scenario.user.history_messages()
        self.opening = scenario.user.opening_message or scenario.user.history_opening()
        self.messages: list[Message] = []
        self.turn = 0
        self.waiting_on: Role = "simulator"

    async def play(self) -> _Stop:
        user, limits = self.scenario.user, self.scenario.limits
        while True:
            turn = self.turn
            # 1. the user's move
            self.waiting_on = "simulator"
            if user.script is not None:
                if turn >= len(user.script):
                    return "script_finished", None, None
                user_text = user.script[turn]
            elif turn == 0 and self.opening is not None:
                user_text = self.opening
            else:
                assert self.simulator is not None
                try:
                    response = await self.simulator.next_turn(
                        [*self.history, *self.messages], turn=turn
                    )
                except ModelError as err:
                    return "simulator_error", None, ErrorInfo(
                        kind=type(err).__name__, message=str(err), role="simulator"
                    )
                self.accounts.add("simulator", turn, 0, response)
                move = response.value
                if move.done:
                    assert move.stop_reason is not None  # SimulatorTurn guarantees it
                    return move.stop_reason, move.message.strip() or None, None
                user_text = move.message
            if turn >= limits.max_user_turns:
                detail = f"{limits.max_user_turns} user turns (limits.max_user_turns)"
                return "turn_limit", detail, None
            self.messages.append(Message(role="user", content=user_text))

            # 2. the agent's turn
            self.waiting_on = "agent"
            outcome = await self.agent.respond(
                [*self.history, *self.messages], self.toolbox, turn=turn
            )
            self.messages.extend(outcome.messages)
            for step, chat_response in outcome.responses:
                self.accounts.add("agent", turn, step, chat_response)
            for step, latency in outcome.callable_steps:
                self.accounts.steps.append(StepRecord(
                    role="agent", turn=turn, step=step, model=self.agent.label, latency_s=latency,
                    includes_tool_time=outcome.steps_include_tool_time,
                ))
            if outcome.stop_reason is not None:
                return outcome.stop_reason, outcome.stop_detail, outcome.error
            self.turn += 1

    def time_limit(self, limit: float, source: str) -> _Stop:
        detail = f"{limit:g} s ({source})"
        message = (
            f"the episode ran past {limit:g} s, waiting on the {self.waiting_on} "
            f"at user turn {self.turn}"
        )
        return "time_limit", detail, ErrorInfo(
            kind="EpisodeTimeout", message=message, role=self.waiting_on
        )


async def run_episode(
    scenario: Scenario,
    *,
    agent_model: ChatModel | None,
    simulator_model: ChatModel | None,
    epoch: int = 0,
    time_limit_s: float | None = None,
    tool_server: ToolServer | None = None,
    http_endpoints: HttpEndpoints | None = None,
    services: ModelServices | None = None,
) -> Transcript:
    """Run one episode of ``scenario`` and return its transcript.

    ``agent_model`` may be None only when the scenario's agent is a Python callable or an
    HTTP endpoint;
    ``simulator_model`` only when the user is fully scripted. ``epoch`` is the sample index of
    every model call (epochs differ; a repeated epoch replays from the cache). The episode's
    wall-clock time is bounded by the scenario's ``limits.max_seconds``, else by
    ``time_limit_s`` (else unbounded). An HTTP agent sends on ``http_endpoints`` (the run's
    shared pool and bounds), else on a pool of the episode's own. An ADK agent, which calls
    its models itself, counts them in ``services``' ledger (the run's, so its budgets hold)
    at its prices.

    An agent that reaches its tools over MCP (``agent.needs_tool_server``) gets the episode's
    toolbox served at a URL of its own (``agent.mcp_url``, set before the first turn) on
    ``tool_server``, or on a :class:`~harness.mcp.ToolServer` started for this episode alone
    when none is given; serving stops when the episode ends.

    Raises :class:`~harness.errors.ModelConfigError` when a needed model is missing,
    :class:`~harness.errors.InputError` when the scenario's Python code does not import, and
    :class:`~harness.errors.BudgetExceededError` when a run budget stops a model call.
    Failures of the models or the agent during the episode never raise: the transcript ends
    with ``agent_error``, ``simulator_error`` or ``time_limit`` and carries the error.
    """
    user = scenario.user
    if simulator_model is None and not user.scripted:
        raise ModelConfigError(
            f"scenario {scenario.id!r} has a simulated user but no simulator model was given"
        )
    started = time.perf_counter()
    toolbox = Toolbox.for_scenario(scenario, started_at=started)
    own_http = None
    if http_endpoints is None and scenario.agent.http is not None:
        from harness.simulation.http_agent import HttpEndpoints

        own_http = HttpEndpoints()
    if agent_model is not None:
        # A mock: agent plays this scenario's reference; any other model is left as it is.
        agent_model = bind_offline(agent_model, scenario)
    agent = agent_for(scenario, agent_model, sample_index=epoch,
                      http_endpoints=http_endpoints or own_http, services=services)
    simulator = (
        UserSimulator(simulator_model, user, scenario_id=scenario.id, sample_index=epoch)
        if simulator_model is not None and not user.scripted
        else None
    )
    conversation = _Conversation(scenario, agent, simulator, toolbox)
    limit = scenario.limits.max_seconds or time_limit_s
    try:
        async with _tools_served(agent, toolbox, tool_server):
            try:
                async with asyncio.timeout(limit) as clock:
                    stop_reason, stop_detail, error = await conversation.play()
            except TimeoutError:
                if not clock.expired():
                    raise
                assert limit is not None
                source = ("limits.max_seconds" if scenario.limits.max_seconds
                          else "--episode-timeout")
                stop_reason, stop_detail, error = conversation.time_limit(limit, source)
    finally:
        if own_http is not None:
            await own_http.aclose()

    models: dict[Role, str] = {"agent": agent.label}
    specs = []
    if agent_model is not None and scenario.agent.is_model:
        specs.append(agent_model.spec)
    if simulator is not None:
        models["simulator"] = str(simulator.model.spec)
        specs.append(simulator.model.spec)
    return Transcript(
        scenario_id=scenario.id,
        epoch=epoch,
        system_prompt=scenario.agent.system_prompt or None,
        tools=toolbox.specs,
        history=conversation.history,
        messages=conversation.messages,
        tool_calls=list(toolbox.records),
        steps=conversation.accounts.steps,
        usage=conversation.accounts.usage,
        stop_reason=stop_reason,
        stop_detail=stop_detail,
        error=error,
        initial_state=toolbox.initial_state,
        final_state=copy.deepcopy(toolbox.state),
        models=models,
        offline=any(spec.is_offline for spec in specs),
        duration_s=time.perf_counter() - started,
    )


@contextlib.asynccontextmanager
async def _tools_served(
    agent: Agent, toolbox: Toolbox, tool_server: ToolServer | None
) -> AsyncIterator[None]:
    """Inside, an agent that needs a tool server has its episode's toolbox served over MCP at
    ``agent.mcp_url`` (on ``tool_server``, else on one of its own); other agents get nothing."""
    if not agent.needs_tool_server:
        yield
        return
    async with contextlib.AsyncExitStack() as stack:
        if tool_server is None:
            from harness.mcp import ToolServer  # here: only agents that use MCP load the SDK

            tool_server = await stack.enter_async_context(ToolServer())
        agent.mcp_url = await stack.enter_async_context(tool_server.episode(toolbox))
        yield
