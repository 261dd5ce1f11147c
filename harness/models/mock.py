"""Offline ``mock:<name>`` models: deterministic behaviours with the same accounting as real
providers (token counts estimated from text length, cost 0, latency measured), so the whole
pipeline runs with no keys and no network. ``ModelSpec.is_offline`` is true for them, and
every response's ``model`` starts with ``mock:``, so outputs can say plainly that their numbers
come from offline models.

Names resolve through a registry of factories. A factory is a callable, or a
``"module:attribute"`` string imported lazily on first use (so components can supply their
behaviours without import cycles). It is called with the text after ``mock:`` and returns a
:class:`~harness.models.base.MockBehaviour`. Lookup tries the whole name, then the part before
the first ``-``: ``mock:agent-flaky`` uses the ``agent-flaky`` entry if there is one, else the
``agent`` factory, which receives ``"agent-flaky"`` and can choose its variant from it.

A behaviour reads what it needs from the :class:`~harness.models.request.ModelRequest` (its
messages, tools, parameters, sample index). Context that is not in the messages reaches it
only through :func:`bind_offline`, which the calling layer uses for the scenario, rubric
judgment or pair a call is about: for a ``mock:`` model it binds the behaviour
(:meth:`MockBehaviour.bind`); any other model comes back as it was, so no real call computes or
carries anything for mocks.

Mock models bypass the response cache: they are deterministic and free.
"""

from __future__ import annotations

import copy
import importlib
import json
import time
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from harness.errors import ModelConfigError, ModelError
from harness.models.base import ChatModel, MockBehaviour, ModelSpec
from harness.models.request import ModelRequest
from harness.models.schema_example import example_from_schema
from harness.models.types import (
    ChatResponse,
    Message,
    Role,
    StructuredResponse,
    T,
    ToolCall,
    Usage,
)
from harness.models.usage import UsageLedger

MockFactory = Callable[[str], MockBehaviour]

_BUILTIN: dict[str, str | MockFactory] = {
    "agent": "harness.simulation.offline:MockAgent",
    "simulator": "harness.simulation.offline:MockSimulator",
    "judge": "harness.judging.offline:MockJudge",
    "drafter": "harness.formats.persona_offline:MockDrafter",
    "echo": "harness.models.mock:EchoBehaviour",
}
_registry: dict[str, str | MockFactory] = dict(_BUILTIN)


def register_mock(name: str, factory: str | MockFactory) -> None:
    """Make ``mock:<name>`` (and ``mock:<name>-<variant>``) resolve to ``factory``: a
    callable taking the name after ``mock:``, or a lazily imported ``"module:attribute"``.
    Replaces an existing entry of that name."""
    if not name or ":" in name:
        raise ValueError(f"mock model name {name!r} must be non-empty and contain no ':'")
    if isinstance(factory, str) and factory.count(":") != 1:
        raise ValueError(f"mock factory {factory!r} must be 'module:attribute'")
    _registry[name] = factory


def unregister_mock(name: str) -> None:
    """Remove a registered name (built-in names return to their built-in factory)."""
    if name in _BUILTIN:
        _registry[name] = _BUILTIN[name]
    else:
        _registry.pop(name, None)


def _load(entry: str | MockFactory) -> Any:
    """The factory of a registry entry, importing a ``"module:attribute"`` one. Raises
    ImportError or AttributeError when it cannot be imported."""
    if not isinstance(entry, str):
        return entry
    module_name, _, attribute = entry.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def known_mocks() -> list[str]:
    """Every mock model name that resolves, variants included (``mock:agent``,
    ``mock:agent-flaky``, ...), sorted. A factory that does not import is listed by its
    registered name alone."""
    names = []
    for name, entry in _registry.items():
        try:
            variants = getattr(_load(entry), "VARIANTS", ())
        except (ImportError, AttributeError):
            variants = ()
        names += [f"mock:{name}", *(f"mock:{name}-{v}" for v in variants)]
    return sorted(set(names))


def resolve_mock(name: str) -> MockBehaviour:
    """The behaviour for ``mock:<name>``. Raises :class:`ModelConfigError` listing every known
    name when the name is unknown or its factory cannot be imported or built."""
    entry = _registry.get(name)
    if entry is None and "-" in name:
        entry = _registry.get(name.split("-", 1)[0])
    if entry is None:
        raise ModelConfigError(
            f"unknown mock model {name!r}; known mock models: {', '.join(known_mocks())}",
            model=f"mock:{name}")
    try:
        factory = _load(entry)
    except (ImportError, AttributeError) as err:
        raise ModelConfigError(
            f"mock model {name!r} could not be loaded from {entry} ({err}); "
            f"known mock models: {', '.join(known_mocks())}",
            model=f"mock:{name}",
        ) from None
    behaviour = factory(name)
    if not isinstance(behaviour, MockBehaviour):
        raise ModelConfigError(
            f"mock factory for {name!r} returned {type(behaviour).__name__}, not a MockBehaviour",
            model=f"mock:{name}",
        )
    return behaviour


def estimate_tokens(text: str) -> int:
    """About four characters a token; at least one for any non-empty text."""
    return (len(text) + 3) // 4


def _message_text(message: Message) -> str:
    parts = [message.content]
    parts.extend(json.dumps(c.arguments) for c in message.tool_calls)
    return "".join(parts)


class MockChatModel(ChatModel):
    """A :class:`MockBehaviour` wrapped as a model, with usage accounting (cost 0)."""

    def __init__(self, spec: ModelSpec, behaviour: MockBehaviour, ledger: UsageLedger) -> None:
        self.spec = spec
        self.behaviour = behaviour
        self.ledger = ledger
        self.label = str(spec)

    def __repr__(self) -> str:
        return f"MockChatModel({self.label!r}, {type(self.behaviour).__name__})"

    def _account_error(self, role: Role, started: float) -> None:
        self.ledger.record_error(role, self.label, time.perf_counter() - started)

    def bound(self, context: object) -> MockChatModel:
        """This model with its behaviour bound to ``context`` (:meth:`MockBehaviour.bind`);
        the same ledger and name. ``self`` when the behaviour ignores the context."""
        behaviour = self.behaviour.bind(context)
        if behaviour is self.behaviour:
            return self
        model = copy.copy(self)
        model.behaviour = behaviour
        return model

    async def chat(self, request: ModelRequest) -> ChatResponse:
        started = time.perf_counter()
        self.ledger.begin_call()
        try:
            message = await self.behaviour.chat(request)
        except ModelError:
            self._account_error(request.role, started)
            raise
        usage = Usage(input_tokens=_input_tokens(request),
                      output_tokens=estimate_tokens(_message_text(message)))
        latency = time.perf_counter() - started
        self.ledger.record_request(request.role, self.label, usage.input_tokens,
                                   usage.output_tokens, 0.0)
        self.ledger.record_call(request.role, self.label, latency)
        finish = "tool_calls" if message.tool_calls else "stop"
        return ChatResponse(message=message, finish_reason=finish, usage=usage,
                            model=self.label, latency_s=latency, cost_usd=0.0)

    async def structured(
        self, request: ModelRequest, response_model: type[T]
    ) -> StructuredResponse[T]:
        started = time.perf_counter()
        self.ledger.begin_call()
        try:
            value = await self.behaviour.structured(request, response_model)
        except ModelError:
            self._account_error(request.role, started)
            raise
        if not isinstance(value, response_model):
            self._account_error(request.role, started)
            raise ModelConfigError(
                f"mock behaviour {type(self.behaviour).__name__} returned "
                f"{type(value).__name__}, not {response_model.__name__}",
                model=self.label,
            )
        usage = Usage(input_tokens=_input_tokens(request),
                      output_tokens=estimate_tokens(value.model_dump_json()))
        latency = time.perf_counter() - started
        self.ledger.record_request(request.role, self.label, usage.input_tokens,
                                   usage.output_tokens, 0.0)
        self.ledger.record_call(request.role, self.label, latency)
        return StructuredResponse[response_model](  # type: ignore[valid-type]
            value=value, usage=usage, model=self.label, latency_s=latency, cost_usd=0.0,
        )


def _input_tokens(request: ModelRequest) -> int:
    return sum(estimate_tokens(_message_text(m)) for m in request.messages)


def bind_offline(model: ChatModel, context: object) -> ChatModel:
    """For an offline ``mock:`` model, the model with its behaviour bound to ``context`` (the
    scenario an episode plays, the rubric judgment or pair a judge is asked about); any other
    model exactly as it is, with nothing computed. This is the one door through which
    structured context that is not in the messages reaches a mock (see
    :meth:`MockBehaviour.bind`)."""
    if isinstance(model, MockChatModel):
        return model.bound(context)
    return model


def minimal_instance(response_model: type[T]) -> T:
    """An instance of ``response_model`` from its defaults and the smallest valid values of
    its required fields. Raises :class:`ModelConfigError` when the schema's constraints cannot
    be met that way (e.g. a custom validator)."""
    schema = response_model.model_json_schema()
    data = example_from_schema(schema)
    try:
        return response_model.model_validate(data)
    except ValidationError as err:
        raise ModelConfigError(
            f"mock:echo cannot build a valid {response_model.__name__} from its schema: "
            f"{err.errors()[0]['msg']}",
            model="mock:echo",
        ) from None


class EchoBehaviour(MockBehaviour):
    """``mock:echo``: replies with the last user message's text. When the call forces a tool
    (``tool_choice`` ``required`` or a tool name) it calls that tool (or the first) with
    schema-valid arguments instead. Structured answers are built from the response model's
    defaults and minimal valid values."""

    def __init__(self, name: str = "echo") -> None:
        if name != "echo":
            raise ModelConfigError(f"mock:echo has no variant {name!r}", model=f"mock:{name}")

    async def chat(self, request: ModelRequest) -> Message:
        messages, tools, tool_choice = request.messages, request.tools, request.tool_choice
        sample_index = request.sample_index
        if tools and tool_choice not in ("auto", "none"):
            tool = next((t for t in tools if t.name == tool_choice), tools[0])
            arguments = example_from_schema(tool.parameters)
            call = ToolCall(id=f"echo_call_{sample_index}_{len(messages)}", name=tool.name,
                            arguments=arguments if isinstance(arguments, dict) else {})
            return Message(role="assistant", tool_calls=(call,))
        last_user = next((m.content for m in reversed(messages) if m.role == "user"), "")
        return Message(role="assistant", content=last_user)

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        return minimal_instance(response_model)
