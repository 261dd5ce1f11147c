"""Google ADK eval set files as pydantic models, and reading them with one-line errors.

Two shapes are read:

- the ``EvalSet`` object (``*.evalset.json``, also ``*.test.json``): ``eval_set_id``,
  ``eval_cases`` (each a static ``conversation`` of invocations or a
  ``conversation_scenario`` for a simulated user), ``session_input`` and timestamps;
- the older list form of ``*.test.json``: a list of turns ``{query, expected_tool_use:
  [{tool_name, tool_input}], expected_intermediate_agent_responses: [{author, text}],
  reference}``. As ADK migrates it, the whole file is one eval case (here its id is the file
  name without ``.test.json``, where ADK draws a random one);
- the older list of named cases, ``[{name, data: [turns as above], initial_session: {state,
  app_name, user_id}}]``, which ADK's ``load_eval_set_from_file`` (what ``adk eval`` reads)
  converts: one eval case per item, the set's id the file name without its suffix.

Keys are accepted in snake_case or camelCase, as ADK's own models accept them. Unknown keys
follow ADK where ADK keeps them (an eval case's and a session input's extra keys are kept
and carried over) and are errors elsewhere, including at the top level of an eval set and in
the list form, where ADK silently drops them: a misspelt key must not vanish. Google GenAI's
``Part`` has many media fields; the ones other than text and function calls and responses
are kept as read and reported as not carried.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, TypeVar, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from harness.choices import PersonaPresetName
from harness.errors import InputError, field_path
from harness.files import read_text
from harness.formats.adk import EVALSET_SUFFIX, TEST_SUFFIX
from harness.json_values import load_json

PERSONA_PRESETS: tuple[str, ...] = get_args(PersonaPresetName)  # ADK's pre-built ids
M = TypeVar("M", bound=BaseModel)


class _Adk(BaseModel):
    """snake_case or camelCase keys; errors name the snake_case field; unknown keys refused,
    except those set to ``null``: ADK's own dumps (``model_dump_json()``, the migration)
    write every field of google-genai's types, newer ones included, and ``null`` says the
    field is unset, which is what leaving it out says."""

    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
        loc_by_alias=False, extra="forbid",
    )

    @model_validator(mode="before")
    @classmethod
    def _unset_keys_dropped(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = {n for name, f in cls.model_fields.items() for n in (name, f.alias) if n}
        return {k: v for k, v in data.items() if v is not None or k in known}


class FunctionCall(_Adk):
    """A tool call (GenAI ``FunctionCall``). ``partial_args`` and ``will_continue`` describe
    a call streamed in pieces; ADK's evaluators compare ``name`` and ``args`` only, and so do
    we (they are read, and not carried)."""

    id: str | None = None
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    partial_args: list[Any] | None = None
    will_continue: bool | None = None


class FunctionResponse(_Adk):
    """A tool result (GenAI ``FunctionResponse``). ``parts`` (media returned with it),
    ``scheduling`` and ``will_continue`` (how a streamed result reaches the model) do not
    bear on evaluation: read, and not carried."""

    id: str | None = None
    name: str
    response: dict[str, Any] = Field(default_factory=dict)
    parts: list[Any] | None = None
    scheduling: str | None = None
    will_continue: bool | None = None


class Part(_Adk):
    """One part of a message (GenAI ``Part``); media fields are kept but not carried."""

    model_config = ConfigDict(extra="allow")

    text: str | None = None
    thought: bool | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None


class Content(_Adk):
    """A message (GenAI ``Content``): a role and its parts."""

    role: str | None = None
    parts: list[Part] = Field(default_factory=list)

    @property
    def text(self) -> str:
        """The text parts (thoughts excluded) joined by newlines, as ADK's evaluators read
        them."""
        return "\n".join(p.text for p in self.parts if p.text and not p.thought)

    @property
    def uncarried_parts(self) -> list[str]:
        """Names of the part fields (images, files, code ...) set here that have no home in a
        scenario (a field written as ``null`` is unset, and not named)."""
        return sorted({k for p in self.parts for k, v in (p.model_extra or {}).items()
                       if v is not None})


class IntermediateData(_Adk):
    """What the agent did before its final answer: tool calls, their results, and the
    intermediate answers of sub-agents as ``[author, parts]`` pairs."""

    tool_uses: list[FunctionCall] = Field(default_factory=list)
    tool_responses: list[FunctionResponse] = Field(default_factory=list)
    intermediate_responses: list[tuple[str, list[Part]]] = Field(default_factory=list)


class InvocationEvent(_Adk):
    """One event of an invocation (the newer ``invocation_events`` form); ADK ignores extra
    keys here (the web editor writes UI indices), and so do we."""

    model_config = ConfigDict(extra="ignore")

    author: str
    content: Content | None = None


class InvocationEvents(_Adk):
    """The newer form of intermediate data: the invocation's events in order."""

    invocation_events: list[InvocationEvent] = Field(default_factory=list)


class AdkRubricContent(_Adk):
    """What an ADK rubric tests, as a sentence."""

    text_property: str | None = None


class AdkRubric(_Adk):
    """An ADK rubric: one yes/no property the judge checks."""

    rubric_id: str
    rubric_content: AdkRubricContent
    description: str | None = None
    type: str | None = None


class Invocation(_Adk):
    """One user turn with the agent's recorded answer and tool use."""

    invocation_id: str = ""
    user_content: Content
    final_response: Content | None = None
    intermediate_data: IntermediateData | InvocationEvents | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[AdkRubric] | None = None
    app_details: dict[str, Any] | None = None

    @field_validator("intermediate_data", mode="before")
    @classmethod
    def _pick_form(cls, value: Any) -> Any:
        # Discriminate by key, so an error names the form the file meant.
        if isinstance(value, dict) and {"invocation_events", "invocationEvents"} & set(value):
            return InvocationEvents.model_validate(value)
        if isinstance(value, dict):
            return IntermediateData.model_validate(value)
        return value

    def tool_uses(self) -> list[FunctionCall]:
        """The recorded tool calls in order, from either form of intermediate data."""
        return self._recorded("tool_uses", "function_call")

    def tool_responses(self) -> list[FunctionResponse]:
        """The recorded tool results in order, from either form of intermediate data."""
        return self._recorded("tool_responses", "function_response")

    def _recorded(self, listed: str, part: str) -> list[Any]:
        """``intermediate_data.<listed>``, or every event part's ``<part>`` in order."""
        data = self.intermediate_data
        if isinstance(data, IntermediateData):
            return list(getattr(data, listed))
        if isinstance(data, InvocationEvents):
            return [getattr(p, part) for e in data.invocation_events if e.content
                    for p in e.content.parts if getattr(p, part) is not None]
        return []

    def intermediate_texts(self) -> list[tuple[str, str]]:
        """``(author, text)`` of the agent's answers before its final one."""
        data = self.intermediate_data
        if isinstance(data, IntermediateData):
            return [(author, "\n".join(p.text for p in parts if p.text))
                    for author, parts in data.intermediate_responses]
        if isinstance(data, InvocationEvents):
            return [(e.author, e.content.text) for e in data.invocation_events
                    if e.content is not None and e.content.text and e.author != "user"]
        return []


class UserBehavior(_Adk):
    """One behaviour of a custom simulated-user persona."""

    name: str
    description: str
    behavior_instructions: list[str] = Field(default_factory=list)
    violation_rubrics: list[str] = Field(default_factory=list)


class UserPersona(_Adk):
    """A custom persona for the simulated user."""

    id: str
    description: str
    behaviors: list[UserBehavior] = Field(default_factory=list)


class ConversationScenario(_Adk):
    """A simulated user: a fixed first message and a plan to follow; optionally a persona,
    either the id of one of ADK's pre-built personas or a custom one."""

    starting_prompt: str
    conversation_plan: str
    user_persona: str | UserPersona | None = None

    @field_validator("user_persona")
    @classmethod
    def _known_preset(cls, value: str | UserPersona | None) -> str | UserPersona | None:
        if isinstance(value, str) and value not in PERSONA_PRESETS:
            raise ValueError(f"unknown pre-built persona {value!r}; expected one of "
                             f"{', '.join(PERSONA_PRESETS)}, or a persona object (id, "
                             "description, behaviors)")
        return value


class SessionInput(_Adk):
    """How ADK starts the agent's session; extra keys are kept, as ADK keeps them."""

    model_config = ConfigDict(extra="allow")

    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class EvalCase(_Adk):
    """One eval case: a static conversation or a conversation scenario, never both. Extra
    keys are kept, as ADK keeps them."""

    model_config = ConfigDict(extra="allow")

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[AdkRubric] | None = None
    final_session_state: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> EvalCase:
        if (self.conversation is None) == (self.conversation_scenario is None):
            raise ValueError("give exactly one of conversation (recorded turns) and "
                             "conversation_scenario (a simulated user)")
        return self


class EvalSet(_Adk):
    """An ADK eval set."""

    eval_set_id: str = Field(min_length=1)
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0


class LegacyToolUse(_Adk):
    """A tool call of the older list form; ``mock_tool_output`` (older ADK fixtures) is its
    recorded result."""

    tool_name: str
    tool_input: dict[str, Any] = Field(default_factory=dict)
    mock_tool_output: Any = None


class LegacyResponse(_Adk):
    """An intermediate answer of the older list form."""

    author: str
    text: str


class LegacyTurn(_Adk):
    """One turn of the older ``*.test.json`` list form."""

    query: str
    expected_tool_use: list[LegacyToolUse] = Field(default_factory=list)
    expected_intermediate_agent_responses: list[LegacyResponse] = Field(default_factory=list)
    reference: str = ""


class LegacyCase(_Adk):
    """One case of the older list of named cases (``[{name, data, initial_session}]``, what
    ADK's ``load_eval_set_from_file`` converts): its turns and the session it starts from."""

    name: str = Field(min_length=1)
    data: list[LegacyTurn]
    initial_session: dict[str, Any] | None = None


def _text_content(text: str, role: str) -> Content:
    return Content(role=role, parts=[Part(text=text)])


def from_legacy(turns: list[LegacyTurn], case_id: str) -> EvalSet:
    """The eval set ADK's migration makes of the older list form: one case whose id (and the
    set's) is ``case_id``; each turn one invocation."""
    return EvalSet(eval_set_id=case_id, name=case_id,
                   eval_cases=[EvalCase(eval_id=case_id, conversation=_invocations(turns))])


def from_legacy_cases(cases: list[LegacyCase], set_id: str) -> EvalSet:
    """The eval set ADK's ``load_eval_set_from_file`` makes of a list of named cases: one
    case per item, its ``name`` the case id, a non-empty ``initial_session`` its session
    input (``app_name``, ``user_id`` and ``state``, as ADK reads them)."""
    eval_cases = []
    for case in cases:
        session = None
        if case.initial_session:
            raw = case.initial_session
            session = SessionInput(app_name=str(raw.get("app_name", "")),
                                   user_id=str(raw.get("user_id", "")),
                                   state=dict(raw.get("state") or {}))
        eval_cases.append(EvalCase(eval_id=case.name, conversation=_invocations(case.data),
                                   session_input=session))
    return EvalSet(eval_set_id=set_id, name=set_id, eval_cases=eval_cases)


def _invocations(turns: list[LegacyTurn]) -> list[Invocation]:
    """One invocation per turn of the older forms; a tool use's ``mock_tool_output`` becomes
    its recorded response."""
    invocations = []
    for turn in turns:
        responses = [
            FunctionResponse(name=u.tool_name, response=u.mock_tool_output
                             if isinstance(u.mock_tool_output, dict)
                             else {"result": u.mock_tool_output})
            for u in turn.expected_tool_use if u.mock_tool_output is not None
        ]
        invocations.append(Invocation(
            user_content=_text_content(turn.query, "user"),
            final_response=_text_content(turn.reference, "model"),
            intermediate_data=IntermediateData(
                tool_uses=[FunctionCall(name=u.tool_name, args=u.tool_input)
                           for u in turn.expected_tool_use],
                tool_responses=responses,
                intermediate_responses=[(r.author, [Part(text=r.text)])
                                        for r in turn.expected_intermediate_agent_responses],
            ),
        ))
    return invocations


def validation_error(path: Path, err: ValidationError) -> InputError:
    """The first problem of a validation error as one line naming the file and the field. A
    misspelt key shows as an unknown key plus a missing one: the unknown one is reported,
    with the missing key it probably meant."""
    problems = err.errors()
    # an unknown key first (the likely cause of a missing one); a union's "not a string"
    # branch last (the file meant the object form)
    problems.sort(key=lambda e: (e["type"] != "extra_forbidden", "str" in e["loc"]))
    first = problems[0]
    loc = _user_loc(first["loc"])
    kind = first["type"]
    if kind == "extra_forbidden":
        missing = [str(_user_loc(e["loc"])[-1]) for e in problems if e["type"] == "missing"
                   and _user_loc(e["loc"])[:-1] == loc[:-1]]
        close = difflib.get_close_matches(_snake_case(str(loc[-1])), missing, n=1)
        expected = f"unknown key {loc[-1]!r}" + (
            f"; did you mean {close[0]!r}?" if close
            else " (misspelt? keys are ADK's, in snake_case or camelCase)")
    elif kind == "missing":
        expected = "required field is missing"
    else:
        expected = str(first["msg"]).removeprefix("Value error, ")
    if len(problems) > 1:
        expected += f" (and {len(problems) - 1} more problem(s))"
    return InputError(path, field_path(loc) or None, expected)


def _user_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    return tuple(p for p in loc if p not in _UNION_TAGS)


def _snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# pydantic names the union member a nested error came from; the user wrote no such key
_UNION_TAGS = frozenset({"str", "UserPersona", "IntermediateData", "InvocationEvents"})


def read_json(path: Path, what: str) -> Any:
    """Parse a JSON file; a syntax error is one line naming the file, line and column."""
    text = read_text(path, what)
    try:
        return load_json(text, path)
    except json.JSONDecodeError as err:
        raise InputError(path, None, f"not valid JSON: {err.msg} (line {err.lineno}, column "
                         f"{err.colno})", location=err.lineno) from None


def parse_eval_set(data: Any, path: Path) -> EvalSet:
    """Validate parsed JSON as an eval set in either shape (see the module docstring).
    Raises :class:`InputError` naming ``path`` and the field."""
    if isinstance(data, list):
        if not data:
            raise InputError(path, None, "an empty list; expected the turns of an ADK eval "
                             "case (the older .test.json form) or an EvalSet object")
        case_id = path.name.removesuffix(EVALSET_SUFFIX).removesuffix(TEST_SUFFIX) \
            .removesuffix(".json")
        if isinstance(data[0], dict) and "data" in data[0] and "query" not in data[0]:
            return from_legacy_cases(_list_items(data, path, LegacyCase, "a named case "
                                                 "object with name, data and initial_session"),
                                     case_id)
        return from_legacy(_list_items(data, path, LegacyTurn, "a turn object with query, "
                                       "expected_tool_use and reference"), case_id)
    if not isinstance(data, dict):
        raise InputError(path, None, "expected an ADK EvalSet object (eval_set_id, eval_cases) "
                         f"or the older list of turns, got {type(data).__name__}")
    try:
        return EvalSet.model_validate(data)
    except ValidationError as err:
        raise validation_error(path, err) from None


def _list_items(data: list[Any], path: Path, model: type[M], what: str) -> list[M]:
    """Each item of a list form validated as ``model``; the first problem is one line naming
    the item (``[i].field``)."""
    items = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise InputError(path, f"[{i}]", f"expected {what}, got {type(item).__name__}")
        try:
            items.append(model.model_validate(item))
        except ValidationError as err:
            inner = validation_error(path, err)
            raise InputError(path, f"[{i}]" + ("." + inner.field if inner.field else ""),
                             inner.expected) from None
    return items


def read_eval_set(path: Path) -> EvalSet:
    """Read an ADK eval set file (``*.evalset.json`` or ``*.test.json``, either shape).
    Raises :class:`InputError` (one line: file, field, what was expected)."""
    return parse_eval_set(read_json(path, "an ADK eval set (JSON)"), path)
