"""One episode: the simulated (or scripted) user and the agent under test take turns, the
agent calls mocked tools, until the conversation ends. The result is a :class:`Transcript`
that always says why it stopped.

Turn order, for user turn ``t`` (0-based):

1. The user's message: the script's turn ``t`` (when the script runs out: ``script_finished``);
   the opening message at ``t = 0``; otherwise the simulator's move. A simulator that ends the
   conversation gives the stop reason (goal met, gave up, transfer, off topic). At
   ``t = max_user_turns`` the simulator is still asked, so a conversation whose goal was met on
   the last turn ends as ``goal_met``; if it wants to go on, the stop is ``turn_limit``.
2. The agent's turn (tool loop or Python callable). An agent error, too many steps or too many
   tool calls end the episode there.

Model failures never raise: they end the episode as ``agent_error``/``simulator_error`` with
the error recorded, and everything that happened before is kept.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from harness.errors import ModelConfigError, ModelError
from harness.models.base import ChatModel
from harness.models.types import ChatResponse, Message, Role, StructuredResponse
from harness.scenarios.schema import Scenario
from harness.simulation.agent import AgentTurn, agent_for
from harness.simulation.simulator import UserSimulator
from harness.tools.toolbox import Toolbox
from harness.transcript import (
    ErrorInfo,
    StepRecord,
    StopReason,
    Transcript,
    UsageTotals,
)


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


def agent_hints(scenario: Scenario) -> dict[str, Any]:
    """Structured context for an offline ``mock:`` agent (real models ignore it): the scenario
    id and its expectations (the reference tool calls and answer)."""
    return {
        "scenario_id": scenario.id,
        "expectations": scenario.expectations.model_dump(mode="json"),
    }


async def run_episode(
    scenario: Scenario,
    *,
    agent_model: ChatModel | None,
    simulator_model: ChatModel | None,
    epoch: int = 0,
) -> Transcript:
    """Run one episode of ``scenario`` and return its transcript.

    ``agent_model`` may be None only when the scenario's agent is a Python callable;
    ``simulator_model`` only when the user is fully scripted. ``epoch`` is the sample index of
    every model call (epochs differ; a repeated epoch replays from the cache).

    Raises :class:`~harness.errors.ModelConfigError` when a needed model is missing and
    :class:`~harness.errors.InputError` when the scenario's Python code does not import.
    Failures of the models or the agent during the episode never raise: the transcript ends
    with ``agent_error`` or ``simulator_error`` and carries the error.
    """
    user = scenario.user
    if simulator_model is None and not user.scripted:
        raise ModelConfigError(
            f"scenario {scenario.id!r} has a simulated user but no simulator model was given"
        )
    started = time.perf_counter()
    toolbox = Toolbox.for_scenario(scenario, started_at=started)
    agent = agent_for(scenario, agent_model, sample_index=epoch, hints=agent_hints(scenario))
    simulator = (
        UserSimulator(simulator_model, user, scenario_id=scenario.id, sample_index=epoch)
        if simulator_model is not None and not user.scripted
        else None
    )
    accounts = _Accounts()
    messages: list[Message] = []
    stop_reason: StopReason | None = None
    stop_detail: str | None = None
    error: ErrorInfo | None = None

    turn = 0
    while stop_reason is None:
        # 1. the user's move
        user_text: str | None = None
        if user.script is not None:
            if turn >= len(user.script):
                stop_reason = "script_finished"
                break
            user_text = user.script[turn]
        elif turn == 0 and user.opening_message is not None:
            user_text = user.opening_message
        else:
            assert simulator is not None
            try:
                response = await simulator.next_turn(messages, turn=turn)
            except ModelError as err:
                stop_reason = "simulator_error"
                error = ErrorInfo(kind=type(err).__name__, message=str(err), role="simulator")
                break
            accounts.add("simulator", turn, 0, response)
            move = response.value
            if move.done:
                assert move.stop_reason is not None  # SimulatorTurn guarantees it
                stop_reason = move.stop_reason
                stop_detail = move.message.strip() or None
                break
            user_text = move.message
        if turn >= scenario.limits.max_user_turns:
            stop_reason = "turn_limit"
            stop_detail = f"{scenario.limits.max_user_turns} user turns (limits.max_user_turns)"
            break
        messages.append(Message(role="user", content=user_text))

        # 2. the agent's turn
        outcome: AgentTurn = await agent.respond(list(messages), toolbox, turn=turn)
        messages.extend(outcome.messages)
        for step, chat_response in outcome.responses:
            accounts.add("agent", turn, step, chat_response)
        for step, latency in outcome.callable_steps:
            accounts.steps.append(
                StepRecord(role="agent", turn=turn, step=step, model=agent.label, latency_s=latency)
            )
        if outcome.stop_reason is not None:
            stop_reason, stop_detail, error = (
                outcome.stop_reason,
                outcome.stop_detail,
                outcome.error,
            )
            break
        turn += 1

    assert stop_reason is not None
    models: dict[Role, str] = {"agent": agent.label}
    specs = []
    if agent_model is not None and scenario.agent.callable is None:
        specs.append(agent_model.spec)
    if simulator is not None:
        models["simulator"] = str(simulator.model.spec)
        specs.append(simulator.model.spec)
    return Transcript(
        scenario_id=scenario.id,
        epoch=epoch,
        system_prompt=scenario.agent.system_prompt or None,
        tools=toolbox.specs,
        messages=messages,
        tool_calls=list(toolbox.records),
        steps=accounts.steps,
        usage=accounts.usage,
        stop_reason=stop_reason,
        stop_detail=stop_detail,
        error=error,
        initial_state=toolbox.initial_state,
        final_state=copy.deepcopy(toolbox.state),
        models=models,
        offline=any(spec.is_offline for spec in specs),
        duration_s=time.perf_counter() - started,
    )
