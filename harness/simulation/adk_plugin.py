"""The ADK plugin through which the harness sits inside an ADK agent run in place.

ADK runs the agent's model and tools itself, so the harness cannot wrap them as it wraps a
model of its own. A plugin's callbacks are where ADK lets an outsider in, before and after
every model call and every tool call, for the root agent and its sub-agents alike:

- ``before_tool_callback`` answers each call from the episode's mocked tools (or lets a
  tool listed in ``agent.real_tools`` run, recording it afterwards);
- ``before_model_callback`` checks the run's budgets before each model call, so
  ``--max-calls`` and ``--max-cost`` stop an ADK agent where they stop a model agent;
- ``after_model_callback`` and ``on_model_error_callback`` record each call in the run's
  :class:`~harness.models.usage.UsageLedger` (role ``agent``, under the model's name, priced
  at the run's prices), as the model layer records its own calls.

ADK wraps an exception raised in a callback in a ``RuntimeError`` (and logs it with its
traceback), so the callbacks leave what stopped them on the turn's :class:`AdkTurn`, and the
agent raises or reports that.

Imported only when an ADK agent runs: ``google.adk`` is loaded here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin

from harness.errors import BudgetExceededError
from harness.models.gemini_provider import usage_tokens
from harness.models.prices import PriceTable
from harness.models.types import Role, ToolCall, Usage
from harness.models.usage import UsageLedger
from harness.tools.toolbox import Toolbox

ROLE: Role = "agent"


class UnmockedToolError(Exception):
    """The ADK agent called a tool the scenario neither mocks nor lets run."""


@dataclass
class AdkTurn:
    """What the plugin needs while one user turn runs: the toolbox, the turn, the model
    step the calls belong to, an unmocked tool's name once one was called, a budget stop
    once one was reached, and when each agent's model call in flight started."""

    toolbox: Toolbox
    turn: int = 0
    step: int = 0
    max_calls: int = 10
    calls_begun: int = 0
    unmocked: str | None = None
    budget: BudgetExceededError | None = None
    real_started: dict[str, float] = field(default_factory=dict)
    model_started: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Priced:
    """One model reply's tokens, cost (``None`` with no price) and prompt-cache saving."""

    usage: Usage
    cost_usd: float | None
    cache_saved_usd: float


def priced(response: Any, label: str, prices: PriceTable) -> Priced:
    """The tokens of an ADK ``LlmResponse`` (or event) as the Gemini provider reads them from
    ``usage_metadata``, at ``label``'s price in ``prices``."""
    usage = usage_tokens(response)
    price = prices.lookup(label)
    if price is None:
        return Priced(usage, None, 0.0)
    return Priced(usage, price.cost(usage.input_tokens, usage.output_tokens,
                                    usage.cache_read_tokens, usage.cache_write_tokens),
                  price.cache_saving(usage.cache_read_tokens, usage.cache_write_tokens))


def model_label(root: Any, agent_name: str, response: Any = None) -> str:
    """``provider:model`` for the model of the agent called ``agent_name`` under ``root``
    (see :func:`agent_model_label`), with the version ``response`` names, if any."""
    found = root.find_agent(agent_name) if hasattr(root, "find_agent") else None
    return agent_model_label(found or root, getattr(response, "model_version", None))


def agent_model_label(agent: Any, version: str | None = None) -> str:
    """``provider:model`` for ``agent``'s model (its own, else the one ADK takes from its
    ancestors): ``gemini:`` and ``version`` (else the model's name) for ADK's Gemini models;
    ``provider:model`` from a LiteLLM model's ``provider/model`` name."""
    try:
        model = agent.canonical_model
    except (ValueError, ImportError):  # a name ADK's registry cannot build: the name as is
        model = getattr(agent, "model", "")
    name = model if isinstance(model, str) else str(getattr(model, "model", model))
    if type(model).__name__ == "LiteLlm" and "/" in name:
        provider, _, litellm_name = name.partition("/")
        return f"{provider}:{version or litellm_name}"
    return f"gemini:{version or name or 'unknown'}"


def agent_models(root: Any) -> list[str]:
    """The ``provider:model`` names of the models ``root`` and its sub-agents call (the agents
    that have one: ADK's workflow agents call none)."""
    found: set[str] = set()
    stack = [root]
    while stack:
        agent = stack.pop()
        if hasattr(agent, "canonical_model"):
            found.add(agent_model_label(agent))
        stack.extend(getattr(agent, "sub_agents", None) or [])
    return sorted(found)


class HarnessPlugin(BasePlugin):
    """See the module docstring. ``turn`` is read through ``current`` (the owner's turn of
    the moment), ``root`` is the ADK agent run, ``real_tools`` the tools that may run."""

    def __init__(self, *, current: Callable[[], AdkTurn | None], root: Any,
                 real_tools: set[str], ledger: UsageLedger, prices: PriceTable) -> None:
        super().__init__(name="harness")
        self._current = current
        self._root = root
        self._real_tools = real_tools
        self._ledger = ledger
        self._prices = prices

    def _turn(self) -> AdkTurn:
        turn = self._current()
        assert isinstance(turn, AdkTurn)  # callbacks run only inside a turn
        return turn

    # --- models -----------------------------------------------------------------------------

    async def before_model_callback(self, *, callback_context: Any,
                                    llm_request: Any) -> Any:
        turn = self._turn()
        if turn.calls_begun >= turn.max_calls:
            # ADK's own limit (max_llm_calls) refuses this call right after this callback:
            # counting it would charge the budget for a call never made.
            return None
        try:
            self._ledger.begin_call()
        except BudgetExceededError as err:
            turn.budget = err
            # A reply in place of the call ends the agent's invocation quietly (an exception
            # here would be logged by ADK with its traceback); the agent then raises ``err``.
            return LlmResponse(error_code="HARNESS_BUDGET", error_message=str(err))
        turn.calls_begun += 1
        turn.model_started[callback_context.agent_name] = time.perf_counter()
        return None

    async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> Any:
        if llm_response.partial:
            return None  # a streamed chunk: the call is recorded once, on its final reply
        turn = self._turn()
        agent_name = callback_context.agent_name
        started = turn.model_started.pop(agent_name, time.perf_counter())
        label = model_label(self._root, agent_name, llm_response)
        cost = priced(llm_response, label, self._prices)
        usage = cost.usage
        self._ledger.record_request(
            ROLE, label, usage.input_tokens, usage.output_tokens, cost.cost_usd,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens, cache_saved_usd=cost.cache_saved_usd)
        self._ledger.record_call(ROLE, label, time.perf_counter() - started)
        return None

    async def on_model_error_callback(self, *, callback_context: Any, llm_request: Any,
                                      error: Exception) -> Any:
        turn = self._turn()
        agent_name = callback_context.agent_name
        started = turn.model_started.pop(agent_name, time.perf_counter())
        label = model_label(self._root, agent_name)
        self._ledger.record_failed_request(ROLE, label)
        self._ledger.record_error(ROLE, label, time.perf_counter() - started)
        return None

    # --- tools ------------------------------------------------------------------------------

    async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any],
                                   tool_context: Any) -> dict[str, Any] | None:
        turn = self._turn()
        toolbox = turn.toolbox
        call = ToolCall(id=tool_context.function_call_id or "", name=tool.name,
                        arguments=dict(tool_args))
        if tool.name in {s.name for s in toolbox.specs}:
            result = toolbox.execute(call, turn=turn.turn, step=max(turn.step - 1, 0))
            value = result.value
            return value if isinstance(value, dict) else {"result": value}
        if tool.name in self._real_tools:
            turn.real_started[call.id] = toolbox.clock()
            return None
        turn.unmocked = tool.name
        raise UnmockedToolError(tool.name)

    async def after_tool_callback(self, *, tool: Any, tool_args: dict[str, Any],
                                  tool_context: Any, result: Any) -> dict[str, Any] | None:
        turn = self._turn()
        call_id = tool_context.function_call_id or ""
        started = turn.real_started.pop(call_id, None)
        if started is not None:
            turn.toolbox.record_real(
                ToolCall(id=call_id, name=tool.name, arguments=dict(tool_args)), result,
                turn=turn.turn, step=max(turn.step - 1, 0), started=started)
        return None
