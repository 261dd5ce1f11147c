"""The mocked tools of one episode: validate each call's arguments, answer it from the
scenario's declarations, keep the episode's state, and record every call in order with timing.
Nothing real is executed (Python handlers are the scenario author's own mock logic).
"""

from __future__ import annotations

import copy
import itertools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from harness.errors import InputError
from harness.models.types import ToolCall, ToolSpec
from harness.scenarios.expressions import (
    UnresolvedReference,
    append_path,
    get_path,
    mapping_matches,
    render,
    render_string,
    set_path,
    value_matches,
)
from harness.scenarios.schema import Rule, Scenario, ToolDef, _AnswerFields
from harness.transcript import ToolCallRecord
from harness.user_code import ImportPathError, resolve_callable

ToolErrorKind = str
"""Why a call failed: ``unknown_tool``, ``invalid_arguments``, ``injected`` (the scenario
said so), ``sequence_exhausted``, ``unresolved_reference``, ``handler_error``,
``tool_call_limit``."""


class ToolError(Exception):
    """Raise from a Python tool handler to answer the call with an error message (recorded as
    an ``injected`` error, like a scenario's ``error:`` answer)."""


@dataclass(frozen=True)
class ToolResult:
    """The answer to one call as the agent receives it.

    ``value`` is the JSON result (for an error: ``{"error": message}``); ``error`` names the
    kind of failure (see :data:`ToolErrorKind`) or is None.
    """

    call_id: str
    name: str
    value: Any
    is_error: bool = False
    error: ToolErrorKind | None = None

    @property
    def content(self) -> str:
        """The result as text for a model: strings as they are, anything else as JSON."""
        if isinstance(self.value, str):
            return self.value
        return json.dumps(self.value, ensure_ascii=False)

    @property
    def error_message(self) -> str | None:
        if not self.is_error or not isinstance(self.value, dict):
            return None
        return str(self.value.get("error"))


class _Refusal(Exception):
    """Internal: the call is answered with an error of this kind."""

    def __init__(self, kind: ToolErrorKind, message: str) -> None:
        self.kind = kind
        self.message = message
        super().__init__(message)


class Toolbox:
    """The mocked tools for one episode (state is deep-copied, so episodes never share it).

    The model agent calls :meth:`execute` with the model's :class:`ToolCall`; a Python agent
    calls :meth:`call` with a name and arguments. Either way the result comes back as a
    :class:`ToolResult` (errors included: they never raise) and a
    :class:`~harness.transcript.ToolCallRecord` is appended to :attr:`records`.
    """

    def __init__(
        self,
        tools: Sequence[ToolDef],
        *,
        state: Mapping[str, Any] | None = None,
        visible: Sequence[str] | None = None,
        max_calls: int | None = None,
        base_dir: Path | None = None,
        clock: Callable[[], float] = time.perf_counter,
        started_at: float | None = None,
    ) -> None:
        """``visible`` names the tools the agent sees (default: all); calls to others are
        ``unknown_tool``. ``max_calls`` bounds the calls of the episode. ``base_dir`` is where
        handler paths are resolved first. Raises :class:`InputError` when a handler does not
        import (normally caught when the scenario is loaded)."""
        names = list(visible) if visible is not None else [t.name for t in tools]
        by_name = {t.name: t for t in tools}
        self._tools = {n: by_name[n] for n in names if n in by_name}
        self._validators = {n: _validator(t) for n, t in self._tools.items()}
        self._handlers = _resolve_handlers(self._tools.values(), base_dir)
        self._state: dict[str, Any] | None = (
            copy.deepcopy(dict(state)) if state is not None else None
        )
        self._initial_state = copy.deepcopy(self._state)
        self._max_calls = max_calls
        self._clock = clock
        self._started_at = clock() if started_at is None else started_at
        self._sequence_positions: dict[int, int] = {}
        self._ids = itertools.count(1)
        self.records: list[ToolCallRecord] = []
        self.turn = 0
        self.step = 0
        self.limit_reached = False

    @classmethod
    def for_scenario(
        cls,
        scenario: Scenario,
        *,
        clock: Callable[[], float] = time.perf_counter,
        started_at: float | None = None,
    ) -> Toolbox:
        """The toolbox a scenario's agent gets: its visible tools, a fresh copy of its state,
        its tool-call limit."""
        return cls(
            scenario.tools,
            state=scenario.state,
            visible=[t.name for t in scenario.agent_tools()],
            max_calls=scenario.limits.max_tool_calls,
            base_dir=scenario.base_dir,
            clock=clock,
            started_at=started_at,
        )

    # --- what the agent sees -----------------------------------------------------------

    @property
    def specs(self) -> list[ToolSpec]:
        """The tools offered to the agent (name, description, JSON Schema of the arguments)."""
        return [t.spec() for t in self._tools.values()]

    @property
    def state(self) -> dict[str, Any] | None:
        """The episode's live state (None when the scenario declares none)."""
        return self._state

    @property
    def max_calls(self) -> int | None:
        return self._max_calls

    @property
    def has_handlers(self) -> bool:
        """Whether a call may run a Python handler (the scenario author's code, which may
        block or take its time) rather than be answered from the scenario alone."""
        return bool(self._handlers)

    @property
    def initial_state(self) -> dict[str, Any] | None:
        return copy.deepcopy(self._initial_state)

    # --- calls -------------------------------------------------------------------------

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> ToolResult:
        """Call a mocked tool from a Python agent: ``toolbox.call("get_weather", city="Paris")``
        or ``toolbox.call("get_weather", {"city": "Paris"})``. Never raises for a bad call:
        check ``result.is_error``."""
        args = {**(dict(arguments) if arguments is not None else {}), **kwargs}
        call = ToolCall(id=f"call_{next(self._ids)}", name=name, arguments=args)
        result = self.execute(call)
        self.step += 1
        return result

    def execute(
        self, call: ToolCall, *, turn: int | None = None, step: int | None = None
    ) -> ToolResult:
        """Answer one call the agent's model made, record it, and return the result.
        ``turn``/``step`` default to :attr:`turn`/:attr:`step`."""
        started = self._clock()
        try:
            value = self._answer(call)
            result = ToolResult(call.id, call.name, value)
        except _Refusal as refusal:
            result = ToolResult(
                call.id, call.name, {"error": refusal.message}, is_error=True, error=refusal.kind
            )
        finished = self._clock()
        self.records.append(
            ToolCallRecord(
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                raw_arguments=call.raw_arguments,
                turn=self.turn if turn is None else turn,
                step=self.step if step is None else step,
                result=result.value,
                is_error=result.is_error,
                error=result.error,
                started_s=started - self._started_at,
                latency_s=finished - started,
            )
        )
        return result

    def record_real(
        self, call: ToolCall, value: Any, *, turn: int, step: int, started: float,
        is_error: bool = False,
    ) -> None:
        """Record a call the agent's own (real) tool answered, not a mock: an ADK agent's tool
        the scenario lets run (``agent.real_tools``). ``started`` is on this toolbox's clock;
        the state is not touched."""
        finished = self._clock()
        self.records.append(ToolCallRecord(
            call_id=call.id, name=call.name, arguments=call.arguments, turn=turn, step=step,
            result=value, is_error=is_error, error="real_tool_error" if is_error else None,
            started_s=started - self._started_at, latency_s=finished - started,
        ))

    def clock(self) -> float:
        """The toolbox's clock (what :meth:`record_real`'s ``started`` is read from)."""
        return self._clock()

    @staticmethod
    def result_of(record: ToolCallRecord) -> ToolResult:
        """The :class:`ToolResult` a recorded call returned."""
        return ToolResult(
            record.call_id, record.name, record.result, is_error=record.is_error, error=record.error
        )

    def _answer(self, call: ToolCall) -> Any:
        made = sum(1 for r in self.records if r.error != "tool_call_limit")
        if self._max_calls is not None and made >= self._max_calls:
            self.limit_reached = True
            raise _Refusal(
                "tool_call_limit",
                f"tool call limit reached ({self._max_calls} calls in this episode)",
            )
        tool = self._tools.get(call.name)
        if tool is None:
            offered = ", ".join(self._tools) or "none"
            raise _Refusal(
                "unknown_tool", f"unknown tool {call.name!r}; available tools: {offered}"
            )
        if not call.arguments_valid:
            raise _Refusal(
                "invalid_arguments", f"arguments are not a JSON object: {call.raw_arguments!r}"
            )
        problems = sorted(
            self._validators[tool.name].iter_errors(call.arguments),
            key=lambda e: list(e.absolute_path),
        )
        if problems:
            raise _Refusal(
                "invalid_arguments",
                "invalid arguments: " + "; ".join(_schema_error_text(e) for e in problems),
            )
        return self._answer_tool(tool, call.arguments)

    def _answer_tool(self, tool: ToolDef, args: dict[str, Any]) -> Any:
        scope = {"args": args, "state": self._state}
        if not tool.rules:
            return self._give(tool, args, scope)
        for rule in tool.rules:
            if self._rule_matches(rule, args, scope):
                return self._give(rule, args, scope)
        assert tool.default is not None  # the schema requires a default with rules
        return self._give(tool.default, args, scope)

    def _rule_matches(self, rule: Rule, args: dict[str, Any], scope: Mapping[str, Any]) -> bool:
        if not mapping_matches(rule.when, args, exact=rule.match == "exact"):
            return False
        for path_template, matcher in rule.when_state.items():
            try:
                path = str(render_string(path_template, scope))
            except UnresolvedReference:
                return False
            try:
                actual, present = get_path(self._state, path), True
            except KeyError:
                actual, present = None, False
            if not value_matches(matcher, actual, present=present):
                return False
        return True

    def _give(self, answer: _AnswerFields, args: dict[str, Any], scope: Mapping[str, Any]) -> Any:
        """Produce the answer of one answer block (following sequences), applying its state
        updates. Raises :class:`_Refusal` for error answers."""
        try:
            if answer.sequence is not None:
                return self._give(self._next_in_sequence(answer), args, scope)
            if answer.error is not None:
                raise _Refusal("injected", str(render_string(answer.error, scope)))
            if answer.handler is not None:
                return self._run_handler(answer.handler, args)
            value = render(answer.returns, scope)
            if answer.set_state or answer.append_state:
                self._update_state(answer, scope)
            return value
        except UnresolvedReference as err:
            raise _Refusal(
                "unresolved_reference", f"the mock could not answer: {err} for these arguments"
            ) from None

    def _next_in_sequence(self, answer: _AnswerFields) -> _AnswerFields:
        items = answer.sequence or []
        position = self._sequence_positions.get(id(answer), 0)
        self._sequence_positions[id(answer)] = position + 1
        if position < len(items):
            return items[position]
        if answer.after_sequence == "cycle":
            return items[position % len(items)]
        if answer.after_sequence == "error":
            raise _Refusal(
                "sequence_exhausted", f"no more answers: this tool answers {len(items)} call(s)"
            )
        return items[-1]

    def _update_state(self, answer: _AnswerFields, scope: Mapping[str, Any]) -> None:
        assert self._state is not None  # validation requires a state for updates
        # Render every path and value before changing anything, so a failure leaves the
        # state untouched.
        sets = [
            (str(render_string(p, scope)), render(v, scope)) for p, v in answer.set_state.items()
        ]
        appends = [
            (str(render_string(p, scope)), render(v, scope)) for p, v in answer.append_state.items()
        ]
        updated = copy.deepcopy(self._state)
        try:
            for path, value in sets:
                set_path(updated, path, value)
            for path, value in appends:
                append_path(updated, path, value)
        except KeyError as err:
            raise _Refusal(
                "unresolved_reference", f"the mock could not update the state at {err.args[0]!r}"
            ) from None
        self._state.clear()
        self._state.update(updated)

    def _run_handler(self, path: str, args: dict[str, Any]) -> Any:
        handler = self._handlers[path]
        if self._state is None:
            self._state = {}
        snapshot = copy.deepcopy(self._state)
        try:
            value = handler(self._state, copy.deepcopy(args))
        except ToolError as err:
            self._restore(snapshot)
            raise _Refusal("injected", str(err)) from None
        except Exception as err:  # the author's mock code failed: the agent sees a tool error
            self._restore(snapshot)
            raise _Refusal(
                "handler_error", f"tool handler {path} failed: {type(err).__name__}: {err}"
            ) from None
        try:
            json.dumps(value)
        except (TypeError, ValueError) as err:
            self._restore(snapshot)
            raise _Refusal(
                "handler_error", f"tool handler {path} returned a value that is not JSON: {err}"
            ) from None
        return copy.deepcopy(value)

    def _restore(self, snapshot: dict[str, Any]) -> None:
        assert self._state is not None
        self._state.clear()
        self._state.update(snapshot)


def _validator(tool: ToolDef) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(tool.parameters, jsonschema.Draft202012Validator)
    return cls(tool.parameters, format_checker=cls.FORMAT_CHECKER)


def _schema_error_text(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def _handler_paths(tool: ToolDef) -> list[str]:
    blocks: list[_AnswerFields] = [tool, *tool.rules]
    if tool.default is not None:
        blocks.append(tool.default)
    paths: list[str] = []
    while blocks:
        block = blocks.pop()
        if block.handler is not None:
            paths.append(block.handler)
        blocks.extend(block.sequence or [])
    return paths


def _resolve_handlers(tools: Any, base_dir: Path | None) -> dict[str, Callable[..., Any]]:
    handlers: dict[str, Callable[..., Any]] = {}
    for tool in tools:
        for path in _handler_paths(tool):
            if path in handlers:
                continue
            try:
                handlers[path] = resolve_callable(path, base_dir=base_dir, positional_args=2)
            except ImportPathError as err:
                raise InputError(
                    base_dir or "<scenario>",
                    f"tools.{tool.name}.handler",
                    f"a tool handler f(state, args): {err}",
                ) from None
    return handlers
