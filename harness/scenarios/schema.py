"""The scenario file format as pydantic models. Unknown keys are errors (``extra="forbid"``).

A scenario file holds one scenario (a mapping) or several (a list of mappings); within a file,
YAML anchors and aliases share blocks such as tools between scenarios. Checks that need more
than one field (tool names referenced elsewhere, rubric ids, imports) live in
:mod:`harness.scenarios.validation`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator
from pydantic_core import PydanticCustomError

from harness.checks.spec import CheckSpec, Expectations
from harness.choices import AggregationMethod, PersonaPresetName
from harness.errors import ModelConfigError
from harness.judging.rubric import Rubric
from harness.models.base import ModelSpec
from harness.models.types import GenerationParams, Message, ToolSpec
from harness.scenarios.expressions import (
    TemplateError,
    matcher_problems,
    parse_template,
    template_references,
)
from harness.scenarios.history import HistoryError, parse_history, split_opening
from harness.user_code import check_path_syntax

SequenceEnd = Literal["repeat_last", "cycle", "error"]
ArgsMatchMode = Literal["subset", "exact"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _check_model_name(value: str | None) -> str | None:
    if value is not None:
        try:
            ModelSpec.parse(value)
        except ModelConfigError as err:
            raise ValueError(str(err)) from None
    return value


# --- mocked tools --------------------------------------------------------------------------

_ANSWER_MODES = ("returns", "error", "sequence", "handler")


class _AnswerFields(_Strict):
    """The ways a mocked tool can answer one call; exactly one is used."""

    returns: Any = Field(
        default=None,
        description="the result (any JSON value); strings may use ${args.X} / ${state.PATH}",
    )
    error: str | None = Field(
        default=None, description="an injected error: the agent receives it as a tool error"
    )
    sequence: list[Answer] | None = Field(
        default=None, description="answers given in turn on successive calls", min_length=1
    )
    after_sequence: SequenceEnd = Field(
        default="repeat_last",
        description="when the sequence is used up: repeat its last answer, start again, or "
        "answer with an error",
    )
    handler: str | None = Field(
        default=None,
        description="'package.module:function' called as f(state, args) -> result, for logic "
        "YAML cannot express; raise harness.tools.ToolError to answer with an error",
    )
    set_state: dict[str, Any] = Field(
        default_factory=dict,
        description="state paths to set after answering with 'returns' (templates allowed)",
    )
    append_state: dict[str, Any] = Field(
        default_factory=dict,
        description="state paths of lists to append to after answering with 'returns'",
    )

    def answer_modes(self) -> list[str]:
        """The answer modes this block uses (``returns`` counts when written, even as null)."""
        return [m for m in _ANSWER_MODES if m in self.model_fields_set]

    @field_validator("handler")
    @classmethod
    def _handler_path(cls, value: str | None) -> str | None:
        return None if value is None else check_path_syntax(value)

    @field_validator("set_state", "append_state", "error")
    @classmethod
    def _templates_parse(cls, value: Any) -> Any:
        for text in [value] if isinstance(value, str) else list(value or {}):
            parse_template(text)
        return value

    def _check_answer(self, *, required: bool) -> None:
        modes = self.answer_modes()
        if len(modes) > 1:
            raise ValueError(
                f"use only one of {', '.join(_ANSWER_MODES)} (found {', '.join(modes)})"
            )
        if required and not modes:
            raise ValueError(f"expected one of {', '.join(_ANSWER_MODES)}")
        if "after_sequence" in self.model_fields_set and modes != ["sequence"]:
            raise ValueError("after_sequence applies only with a sequence")
        if (self.set_state or self.append_state) and modes != ["returns"]:
            raise ValueError(
                "set_state/append_state apply only with 'returns' (a handler changes the state "
                "itself; sequence items carry their own)"
            )


class Answer(_AnswerFields):
    """One way of answering: a value, an error, a sequence or a Python handler."""

    @model_validator(mode="after")
    def _one_mode(self) -> Answer:
        self._check_answer(required=True)
        return self


class Rule(_AnswerFields):
    """An answer used when the call's arguments (and optionally the state) match. Rules are
    tried in order; the first match answers."""

    when: dict[str, Any] = Field(
        default_factory=dict,
        description="argument matchers: values, or operators $regex $in $exists $gt $gte $lt "
        "$lte $not",
    )
    match: ArgsMatchMode = Field(
        default="subset",
        description="subset: the listed arguments match (others are ignored); exact: the call "
        "has exactly these arguments",
    )
    when_state: dict[str, Any] = Field(
        default_factory=dict,
        description="state path (templates allowed, e.g. orders.${args.order_id}.status) -> "
        "matcher",
    )

    @field_validator("when", "when_state")
    @classmethod
    def _matchers_valid(cls, value: dict[str, Any]) -> dict[str, Any]:
        problems = matcher_problems(value)
        if problems:
            raise ValueError("; ".join(problems))
        return value

    @field_validator("when_state")
    @classmethod
    def _state_paths_parse(cls, value: dict[str, Any]) -> dict[str, Any]:
        for path in value:
            parse_template(path)
        return value

    @model_validator(mode="after")
    def _one_mode(self) -> Rule:
        self._check_answer(required=True)
        return self


class ToolDef(_AnswerFields):
    """A mocked tool: what the agent sees (name, description, JSON Schema of the arguments) and
    how it answers: inline (returns / error / sequence / handler) or by ``rules`` with a
    ``default``."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9_-]{1,64}$",
        description="the tool name the agent calls (letters, digits, _ and -; at most 64)",
    )
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the arguments (an object schema)",
    )
    rules: list[Rule] = Field(default_factory=list, description="first match answers")
    default: Answer | None = Field(
        default=None, description="the answer when no rule matches (required with rules)"
    )

    @field_validator("parameters")
    @classmethod
    def _valid_json_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        validator_class = jsonschema.validators.validator_for(
            value, jsonschema.Draft202012Validator
        )
        try:
            validator_class.check_schema(value)
        except jsonschema.SchemaError as err:
            where = "/".join(str(p) for p in err.absolute_path) or "top level"
            raise ValueError(f"not a valid JSON Schema (at {where}): {err.message}") from None
        if value.get("type") != "object":
            raise ValueError("the arguments schema must have type: object")
        return value

    @model_validator(mode="after")
    def _answers(self) -> ToolDef:
        if self.rules:
            if self.answer_modes():
                raise ValueError(
                    "a tool with rules answers through them; put the fallback under 'default'"
                )
            if self.default is None:
                raise ValueError(
                    "a tool with rules needs a 'default' answer for calls no rule matches"
                )
            self._check_answer(required=False)
        else:
            if self.default is not None:
                raise ValueError("'default' applies only with rules")
            self._check_answer(required=True)
        return self

    @property
    def argument_names(self) -> set[str] | None:
        """The declared argument names, or None when the schema lists no properties."""
        properties = self.parameters.get("properties")
        return set(properties) if isinstance(properties, dict) and properties else None

    def spec(self) -> ToolSpec:
        """What the agent's model is shown."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)


# --- the user, the agent, limits -----------------------------------------------------------


class UserSpec(_Strict):
    """The simulated user. Either a simulator plays them (persona, goal, facts, an optional
    opening message and plan) or their turns are fully scripted."""

    persona: str = Field(default="", description="who they are and how they talk")
    persona_preset: PersonaPresetName | None = Field(
        default=None,
        description="a pre-built persona, NOVICE or EXPERT, whose description and behaviours "
        "come before `persona`",
    )
    goal: str = Field(min_length=1, description="what they want from the conversation")
    known_facts: dict[str, Any] = Field(
        default_factory=dict, description="facts they know and reveal only when asked"
    )
    unknown_facts: list[str] = Field(
        default_factory=list, description="things they do not know (they say so if asked)"
    )
    opening_message: str | None = Field(
        default=None, min_length=1, description="their first message, sent verbatim"
    )
    plan: str | None = Field(
        default=None, description="how the conversation should go (one step per line)"
    )
    script: list[str] | None = Field(
        default=None,
        min_length=1,
        description="fully scripted user turns, replayed exactly (no simulator model)",
    )
    sees_tool_calls: bool = Field(
        default=False, description="show the simulator the agent's tool calls and results"
    )
    history: list[dict[str, Any]] | None = Field(
        default=None,
        description="the conversation before the first live turn (messages, tool calls and "
        "results in our transcript form, or an OpenAI or Anthropic message list): given to "
        "the agent and the simulator, shown to judges as history, never scored. A final user "
        "message opens the live conversation",
    )
    model: str | None = Field(default=None, description="default simulator model (provider:model)")
    params: GenerationParams | None = None

    @field_validator("model")
    @classmethod
    def _model_name(cls, value: str | None) -> str | None:
        return _check_model_name(value)

    @field_validator("history")
    @classmethod
    def _history_reads(cls, value: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if value is not None:
            try:
                parse_history(value)
            except HistoryError as err:
                # The loader appends `at` to this field's path, to name the message's field.
                raise PydanticCustomError(
                    "value_error_at", "{expected}", {"expected": err.expected, "at": err.path}
                ) from None
        return value

    @field_validator("script")
    @classmethod
    def _turns_not_empty(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            for i, text in enumerate(value):
                if not text.strip():
                    raise ValueError(f"scripted turn {i} is empty")
        return value

    @model_validator(mode="after")
    def _script_or_simulated(self) -> UserSpec:
        if self.script is not None:
            clash = [k for k in ("opening_message", "plan", "model", "persona_preset")
                     if getattr(self, k)]
            if clash:
                raise ValueError(
                    f"a scripted user has no {' / '.join(clash)} (the script's first turn is "
                    "the opening message)"
                )
        if self.history_opening() is not None:
            clash = [k for k in ("opening_message", "script") if getattr(self, k) is not None]
            if clash:
                raise ValueError(
                    f"the history ends with a user message, which opens the live conversation; "
                    f"drop {' / '.join(clash)} or end the history with the agent's message"
                )
        return self

    @property
    def scripted(self) -> bool:
        return self.script is not None

    def history_messages(self) -> list[Message]:
        """The given history as our messages, without a final user message (see
        :meth:`history_opening`); empty without a history."""
        return split_opening(parse_history(self.history))[0] if self.history else []

    def history_opening(self) -> str | None:
        """The text of the history's final user message, which is the first live user turn
        (the agent answers it as turn 0); None when the history ends otherwise."""
        return split_opening(parse_history(self.history))[1] if self.history else None


# --- an agent behind HTTP (issue 15; docs/http-agents.md) ---------------------------------

HttpProtocol = Literal["json", "openai_chat"]
SessionMode = Literal["stateful", "stateless"]
HttpToolsMode = Literal["mcp", "client", "none"]

HTTP_PLACEHOLDERS: tuple[str, ...] = (
    "message", "messages", "session_id", "mcp_url", "scenario_id", "epoch",
)
"""What ``${...}`` may name in an HTTP agent's url, headers and request, besides
``${env:NAME}``."""

_ENV_PLACEHOLDER = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)")
_NESTED = "<nested>"
_DOTTED_PATH = re.compile(r"^[^.\s]+(\.[^.\s]+)*$")

FieldPath = tuple[str | int, ...]


def _at(path: FieldPath, expected: str) -> PydanticCustomError:
    """An error about a place inside the validated model (the loader appends ``path``)."""
    return PydanticCustomError("value_error_at", "{expected}", {"expected": expected, "at": path})


DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""The largest answer an HTTP agent may send (``max_response_bytes``), decompressed."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


def http_origin(url: str, *, strict: bool = False) -> str:
    """The origin of an http(s) ``url``, written ``scheme://host:port`` (the port always
    given, the host in lower case), so two spellings of one origin compare equal. With
    ``strict``, ``url`` must be an origin and nothing more (no path, query, user or
    fragment). Raises ``ValueError`` saying what was expected."""
    expected = f"an origin such as https://agent.example.com:8443, got {url!r}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError(expected) from None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(expected)
    if strict and (parts.path not in ("", "/") or parts.query or parts.fragment
                   or parts.username is not None):
        raise ValueError(expected)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{port or _DEFAULT_PORTS[parts.scheme]}"


class HttpAgentSpec(_Strict):
    """The agent under test as an HTTP endpoint: an OpenAI-compatible chat endpoint that is
    itself an agent (``openai_chat``), or any JSON API through a request template and the path
    of the reply in its answer (``json``). ``url``, ``headers`` and ``request`` may use the
    placeholders ``${message}``, ``${messages}``, ``${session_id}``, ``${mcp_url}``,
    ``${scenario_id}``, ``${epoch}`` and ``${env:NAME}``."""

    url: str = Field(
        min_length=1,
        description="the endpoint, http:// or https:// (placeholders allowed, e.g. "
        "${env:AGENT_URL})",
    )
    protocol: HttpProtocol = Field(
        description="openai_chat: an OpenAI-compatible chat completions endpoint (messages in, "
        "choices[0].message out); json: any JSON API, through request and reply_path",
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="sent with every request, e.g. 'Authorization: Bearer ${env:MY_TOKEN}'; "
        "values read from ${env:...} never reach the run's files, logs or messages",
    )
    session: SessionMode = Field(
        default="stateless",
        description="stateless: the whole conversation is sent on every turn; stateful: the "
        "agent keeps its own memory under ${session_id} (one per episode) and is sent only "
        "the messages it has not seen (the latest user message)",
    )
    tools: HttpToolsMode = Field(
        default="none",
        description="none: the agent uses no mocked tools; mcp: it calls the scenario's mocks "
        "served over MCP at ${mcp_url}; client (openai_chat only): it returns tool calls and "
        "the harness answers them from the mocks, up to limits.max_agent_steps requests a turn",
    )
    model: str | None = Field(
        default=None, min_length=1,
        description="openai_chat: the 'model' field of each request (default: the field is "
        "left out)",
    )
    request: Any = Field(
        default=None,
        description="json (required): the request body, any JSON value with placeholders; a "
        "string that is exactly one placeholder becomes its JSON value, one inside a longer "
        "string its text",
    )
    reply_path: str | None = Field(
        default=None,
        description="json (required): dotted path of the reply text in the answer (e.g. "
        "output.text; a number indexes a list: choices.0.text)",
    )
    tool_calls_path: str | None = Field(
        default=None,
        description="json: dotted path of a list of the tool calls the agent reports having "
        "made ({name, arguments, result}, or OpenAI's {id, function: {name, arguments}}), "
        "recorded in the transcript so tool checks apply",
    )
    timeout_s: float = Field(
        default=120.0, gt=0,
        description="seconds per request at most, from sending it to the answer's last byte "
        "(redirects included)")
    max_response_bytes: int = Field(
        default=DEFAULT_MAX_RESPONSE_BYTES, ge=1,
        description="the largest answer read, in bytes after decompression; a larger one is "
        "the fault agent_response_too_large")
    redirect_origins: list[str] = Field(
        default_factory=list,
        description="other origins (scheme://host[:port]) a redirect may lead to; the "
        "scenario's headers are never sent there. A redirect within the url's own origin is "
        "followed with them; one to any other origin is the fault agent_redirect_refused")
    max_concurrency: int = Field(
        default=16, ge=1, le=4096,
        description="requests in flight to this url at most, across the run (scenarios naming "
        "the same url share the smallest bound)",
    )

    def placeholders(self) -> list[tuple[FieldPath, str]]:
        """Every placeholder used, with the field it is in: ``(("headers", "X-Id"),
        "session_id")``; a placeholder inside another comes back as ``<nested>``."""
        fields: list[tuple[FieldPath, Any]] = [(("url",), self.url)]
        fields += [(("headers", name), {name: value}) for name, value in self.headers.items()]
        fields.append((("request",), self.request))
        out: list[tuple[FieldPath, str]] = []
        for path, value in fields:
            try:
                references = template_references(value)
            except TemplateError as err:
                raise _at(path, str(err)) from None
            for ref in references:
                head = ref.parts[0]
                nested = len(ref.parts) != 1 or not isinstance(head, str)
                out.append((path, _NESTED if nested else str(head)))
        return out

    def env_variables(self) -> list[tuple[FieldPath, str]]:
        """The environment variables ``${env:NAME}`` reads, with the field each is in."""
        out = []
        for path, name in self.placeholders():
            match = _ENV_PLACEHOLDER.fullmatch(name)
            if match:
                out.append((path, match.group(1)))
        return out

    def uses(self, name: str) -> bool:
        return any(used == name for _, used in self.placeholders())

    @field_validator("redirect_origins")
    @classmethod
    def _origins(cls, values: list[str]) -> list[str]:
        return [http_origin(value, strict=True) for value in values]

    @field_validator("reply_path", "tool_calls_path")
    @classmethod
    def _dotted(cls, value: str | None) -> str | None:
        if value is not None and not _DOTTED_PATH.match(value):
            raise ValueError(f"a dotted path such as output.text, got {value!r}")
        return value

    @model_validator(mode="after")
    def _coherent(self) -> HttpAgentSpec:
        for path, name in self.placeholders():
            if name == _NESTED:
                raise _at(path, "a placeholder cannot hold another (${...${...}...})")
            if name not in HTTP_PLACEHOLDERS and not _ENV_PLACEHOLDER.fullmatch(name):
                raise _at(path, f"unknown placeholder ${{{name}}}; expected one of "
                          + ", ".join(f"${{{p}}}" for p in HTTP_PLACEHOLDERS)
                          + " or ${env:NAME}")
            if name == "mcp_url" and self.tools != "mcp":
                raise _at(path, "${mcp_url} is the address of the MCP-served mocks: it needs "
                          "tools: mcp")
        if not self.url.startswith(("http://", "https://", "${")):
            raise _at(("url",), f"an http:// or https:// URL, got {self.url!r}")
        if self.protocol == "openai_chat":
            for name in ("request", "reply_path", "tool_calls_path"):
                if getattr(self, name) is not None:
                    raise _at((name,), "applies only to protocol: json (openai_chat sends the "
                              "messages and reads choices[0].message)")
        else:
            for name in ("request", "reply_path"):
                if getattr(self, name) is None:
                    raise _at((name,), "required with protocol: json")
            if self.model is not None:
                raise _at(("model",), "applies only to protocol: openai_chat (put the model "
                          "in request)")
            if self.tools == "client":
                raise _at(("tools",), "client tools need protocol: openai_chat (a json agent "
                          "runs its own tools; report them with tool_calls_path)")
            if self.session == "stateless" and not self.uses("messages"):
                raise _at(("request",), "a stateless agent is sent the whole conversation: use "
                          "${messages} in request, or set session: stateful")
        if self.tool_calls_path is not None and self.tools == "mcp":
            raise _at(("tool_calls_path",), "calls over MCP are recorded as they arrive; "
                      "reporting them too would record each twice")
        if self.session == "stateful" and not self.uses("session_id"):
            raise _at(("session",), "a stateful agent tells episodes apart by ${session_id}: "
                      "use it in url, headers or request")
        return self


class AgentSpec(_Strict):
    """The agent under test: a model with a system prompt and the tools it sees, a Python
    callable ``f(messages, toolbox)`` (sync or async) returning its reply, an HTTP endpoint
    (``http``), or an ADK agent run in place (``adk``, its tool calls answered by the
    scenario's mocked tools except those ``real_tools`` names). With none of them, the run
    must name the model (``--agent``, or ``--offline`` for ``mock:agent``), as for an
    imported ADK eval set, which names no model."""

    model: str | None = Field(
        default=None,
        description="provider:model, e.g. anthropic:claude-sonnet-4-5 (unset: the run's --agent)",
    )
    callable: str | None = Field(
        default=None,
        description="'package.module:function' resolved from the scenario file's directory, "
        "then sys.path",
    )
    system_prompt: str = ""
    tools: list[str] | None = Field(
        default=None, description="names of the scenario's tools the agent sees (default: all)"
    )
    params: GenerationParams | None = None
    http: HttpAgentSpec | None = Field(
        default=None, description="the agent is an HTTP endpoint (docs/http-agents.md)"
    )
    adk: str | None = Field(
        default=None,
        description="'package.module:root_agent', an ADK agent run in place with ADK's Runner "
        "(the adk extra; docs/adk-vertex.md)",
    )
    real_tools: list[str] = Field(
        default_factory=list,
        description="with adk: tools the scenario does not mock whose real function may run",
    )

    @field_validator("model")
    @classmethod
    def _model_name(cls, value: str | None) -> str | None:
        return _check_model_name(value)

    @field_validator("callable", "adk")
    @classmethod
    def _callable_path(cls, value: str | None) -> str | None:
        return None if value is None else check_path_syntax(value)

    @property
    def is_model(self) -> bool:
        """Whether the agent is a model in the harness's tool loop (the run's ``--agent``
        MODEL, else ``model``), not code or an endpoint of the user's."""
        return self.callable is None and self.http is None and self.adk is None

    @model_validator(mode="after")
    def _model_or_callable(self) -> AgentSpec:
        given = [k for k in ("model", "callable", "http", "adk")
                 if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(
                "give one of 'model' (a model agent), 'callable' (a Python agent), 'http' "
                f"(an HTTP agent) or 'adk' (an ADK agent), not {' and '.join(given)} together "
                "(with none, the run's --agent is the model)"
            )
        if self.real_tools and self.adk is None:
            raise ValueError("'real_tools' applies only to an ADK agent (adk)")
        if self.adk is not None and self.system_prompt:
            raise ValueError("an ADK agent has its own instruction: drop system_prompt")
        if self.adk is not None and self.tools is not None:
            raise ValueError("an ADK agent has its own tools: drop 'tools' (the scenario's "
                             "tools answer its calls by name)")
        if given and given != ["model"] and self.params is not None:
            raise ValueError("'params' applies only to a model agent")
        if self.http is not None and self.system_prompt:
            raise ValueError("an HTTP agent has its own system prompt: drop system_prompt")
        return self


class Limits(_Strict):
    """Hard stops for one episode."""

    max_user_turns: int = Field(default=10, ge=1, description="user messages at most")
    max_agent_steps: int = Field(
        default=10, ge=1, description="agent model calls per user turn at most"
    )
    max_tool_calls: int = Field(default=50, ge=0, description="tool calls per episode at most")
    max_seconds: float | None = Field(
        default=None,
        gt=0,
        description="wall-clock seconds per episode at most; past it the episode stops as an "
        "errored sample (stop reason time_limit). Unset: the run's --episode-timeout, if any",
    )


class RubricOptions(_Strict):
    """How one rubric the scenario lists is judged for this scenario, overriding the rubric's
    threshold, samples and aggregation (``--judge-samples`` and ``--judge-aggregation``, for
    every rubric, override these in turn: docs/running.md, "Where a setting comes from")."""

    threshold: float | None = Field(
        default=None, ge=0, le=1,
        description="pass when the rubric score >= this (normalised [0, 1] score)",
    )
    samples: int | None = Field(default=None, ge=1, le=100,
                                description="judge samples per judge (default: the rubric's)")
    aggregation: AggregationMethod | None = Field(
        default=None, description="mean or majority over the samples (default: the rubric's)"
    )


class ScoringOptions(_Strict):
    """How this scenario's sample score weighs its components (see docs/running.md, "How a
    sample is scored")."""

    weights: dict[str, float] = Field(
        default_factory=dict,
        description="weight of each component of the sample score: 'checks' (the mean of "
        "the gating checks) or a rubric id listed in rubrics; unnamed components weigh 1",
    )

    @field_validator("weights")
    @classmethod
    def _positive(cls, value: dict[str, float]) -> dict[str, float]:
        for key, weight in value.items():
            if not (math.isfinite(weight) and weight > 0):
                raise ValueError(f"weights.{key}: a finite number above 0, got {weight!r}")
        return value


def _json_mapping(value: dict[str, Any]) -> dict[str, Any]:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"must hold JSON values only ({err})") from None
    return value


class Scenario(_Strict):
    """One scenario: a simulated user, the agent under test, its mocked tools and state, limits,
    expectations for the checks, and the rubrics judges apply."""

    id: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$",
        description="unique across the suite (letters, digits, _ . : -)",
    )
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    user: UserSpec
    agent: AgentSpec
    tools: list[ToolDef] = Field(default_factory=list)
    state: dict[str, Any] | None = Field(
        default=None, description="a small JSON state the tools read and change"
    )
    limits: Limits = Field(default_factory=Limits)
    expectations: Expectations = Field(default_factory=Expectations)
    checks: list[CheckSpec] = Field(
        default_factory=list,
        description="checks of one's own: Python functions f(transcript, expectations, "
        "**args) -> CheckResult | float | bool",
    )
    scoring: ScoringOptions = Field(default_factory=ScoringOptions)
    rubrics: list[str] = Field(default_factory=list, description="rubric ids judges apply")
    rubric_options: dict[str, RubricOptions] = Field(
        default_factory=dict,
        description="per rubric id listed in rubrics: threshold, judge samples, aggregation",
    )
    inline_rubrics: list[Rubric] = Field(
        default_factory=list,
        description="rubrics defined in this scenario (same format as a rubric file); list "
        "their ids under rubrics",
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="free-form JSON kept with the scenario (e.g. fields of an imported ADK eval "
        "case that have no other home); not used by the run",
    )

    _source: Path | None = PrivateAttr(default=None)

    @field_validator("metadata")
    @classmethod
    def _metadata_is_json(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _json_mapping(value)

    @model_validator(mode="after")
    def _one_invocation_per_scripted_turn(self) -> Scenario:
        # ADK's criteria pair each scripted turn with one invocation of the eval case
        invocations = self.expectations.adk_invocations
        script = self.user.script
        if invocations is not None and script is not None and len(script) != invocations:
            raise ValueError(f"expectations.adk_invocations is {invocations} but user.script "
                             f"has {len(script)} turn(s): ADK's criteria pair one invocation "
                             "with each scripted turn")
        return self

    @property
    def source(self) -> Path | None:
        """The file the scenario was loaded from (None when built in code)."""
        return self._source

    @property
    def base_dir(self) -> Path | None:
        """Where ``package.module:function`` paths are resolved first."""
        return self._source.parent if self._source is not None else None

    def with_source(self, path: Path | None) -> Scenario:
        """Set the source file (for resolving Python paths); returns ``self``."""
        self._source = path
        return self

    def inline_rubric(self, rubric_id: str) -> Rubric | None:
        """The rubric this scenario defines under ``inline_rubrics`` with that id, or None."""
        return next((r for r in self.inline_rubrics if r.id == rubric_id), None)

    def tool(self, name: str) -> ToolDef | None:
        return next((t for t in self.tools if t.name == name), None)

    def agent_tools(self) -> list[ToolDef]:
        """The tools the agent sees, in the order ``agent.tools`` lists them (default: all)."""
        if self.agent.tools is None:
            return list(self.tools)
        by_name = {t.name: t for t in self.tools}
        return [by_name[n] for n in self.agent.tools if n in by_name]


_AnswerFields.model_rebuild()
Answer.model_rebuild()
Rule.model_rebuild()
ToolDef.model_rebuild()
