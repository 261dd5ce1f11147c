"""Which agent a scenario describes: its HTTP endpoint, its Python callable, its ADK agent
(run in place), or a model in a tool loop. Kept apart from :mod:`harness.simulation.agent`
(the agents' shared interface), which the HTTP agent builds on, so neither module imports
the other."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.errors import ModelConfigError
from harness.models.base import ChatModel
from harness.scenarios.schema import Scenario
from harness.simulation.agent import Agent, CallableAgent, ModelAgent
from harness.simulation.http_agent import HttpAgent, HttpEndpoints

if TYPE_CHECKING:
    from harness.models.remote import ModelServices


def agent_for(
    scenario: Scenario,
    model: ChatModel | None,
    *,
    sample_index: int,
    http_endpoints: HttpEndpoints | None = None,
    services: ModelServices | None = None,
) -> Agent:
    """The agent a scenario describes: its HTTP endpoint (sharing ``http_endpoints``, else a
    pool of its own), its Python callable, its ADK agent (whose model calls go into
    ``services``' ledger and budgets, at its prices: the run's, else a ledger of its own), or
    ``model`` in a tool loop. Raises
    :class:`~harness.errors.ModelConfigError` when a model agent gets no model and
    :class:`~harness.errors.InputError` when an ``${env:NAME}`` the HTTP agent reads is not
    set, or a Python or ADK agent does not import."""
    spec = scenario.agent
    if spec.http is not None:
        return HttpAgent(
            spec.http,
            endpoints=http_endpoints or HttpEndpoints(),
            scenario_id=scenario.id,
            epoch=sample_index,
            max_steps=scenario.limits.max_agent_steps,
            source=str(scenario.source or scenario.id),
        )
    if spec.callable is not None:
        return CallableAgent.from_path(
            spec.callable, base_dir=scenario.base_dir, system_prompt=spec.system_prompt
        )
    if spec.adk is not None:
        # Here, not at the top: runs without ADK agents never load google.adk.
        from harness.simulation.adk_agent import AdkAgent

        return AdkAgent.from_path(spec.adk, base_dir=scenario.base_dir, state=scenario.state,
                                  real_tools=spec.real_tools,
                                  max_steps=scenario.limits.max_agent_steps,
                                  ledger=services.ledger if services else None,
                                  prices=services.prices if services else None)
    if model is None:
        raise ModelConfigError(
            f"scenario {scenario.id!r} has a model agent ({spec.model}) but no agent model was "
            "given"
        )
    return ModelAgent(
        model,
        system_prompt=spec.system_prompt,
        params=spec.params,
        max_steps=scenario.limits.max_agent_steps,
        sample_index=sample_index,
    )
