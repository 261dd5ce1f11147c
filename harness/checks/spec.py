"""What a scenario expects of the agent, as used by the deterministic checks.

These models are the ``expectations`` block of a scenario file (and the input of
``harness score-transcripts``), so they forbid unknown keys: a misspelt key is an error.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ArgMode = Literal["exact", "subset", "superset", "ignore"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ArgOverride(_Strict):
    """How one argument is compared, overriding the call's mode for that key."""

    ignore: bool = False
    tolerance: float | None = Field(default=None, ge=0, description="absolute numeric tolerance")
    case_insensitive: bool = False
    matcher: str | None = Field(
        default=None,
        description="'package.module:function' called as f(expected, actual) -> bool",
    )


class ArgMatching(_Strict):
    """How a call's arguments are compared with the reference call's.

    - ``exact``: the same keys and values (JSON equality);
    - ``subset``: every reference argument is present with that value (extra actual
      arguments allowed);
    - ``superset``: every actual argument is in the reference with that value (the reference
      may list more);
    - ``ignore``: names only.
    """

    mode: ArgMode = "exact"
    overrides: dict[str, ArgOverride] = Field(default_factory=dict)


class ExpectedToolCall(_Strict):
    """A reference tool call. ``turn`` (0-based user turn) is needed only for per-turn scores."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    turn: int | None = Field(default=None, ge=0)
    match: ArgMatching | None = None


class TurnAnswer(_Strict):
    """A reference answer for one user turn (ADK's per-invocation ``final_response``);
    ``turn`` is 0-based, as in :class:`ExpectedToolCall`. ``thought`` is the reference's
    thinking text (the ``thought: true`` parts of an ADK ``final_response``): google-adk
    2.13's ``response_match_score`` reads it as part of the reference, so ours does on ADK
    scenarios; the judges and ``response_match_score_referenced`` read ``answer`` alone."""

    turn: int = Field(ge=0)
    answer: str
    thought: str | None = None


class ParameterValidator(_Strict):
    """Constraints on one parameter's value, for partial-credit parameter accuracy."""

    type: Literal["string", "number", "integer", "boolean", "array", "object"] | None = None
    pattern: str | None = None
    one_of: list[Any] | None = None
    minimum: float | None = None
    maximum: float | None = None


class ParameterExpectation(_Strict):
    """Parameter accuracy for every call of ``tool``: required values, forbidden parameters
    and validators, each worth one point of partial credit."""

    tool: str
    required: dict[str, Any] = Field(default_factory=dict)
    forbidden: list[str] = Field(default_factory=list)
    validators: dict[str, ParameterValidator] = Field(default_factory=dict)
    wrong_value_credit: float = Field(
        default=0.0, ge=0, le=1,
        description="points a required parameter earns when present with a wrong value "
        "(default 0: only the right value earns its point; a missing one always earns 0)",
    )


class Expectations(_Strict):
    """Everything the deterministic checks compare against. Each check runs only when its
    expectation is given."""

    tool_calls: list[ExpectedToolCall] | None = Field(
        default=None, description="the reference trajectory"
    )
    arg_matching: ArgMatching = Field(default_factory=ArgMatching)
    tool_order: list[str] | None = Field(
        default=None, description="tool names in the order they should first be called"
    )
    single_tool_use: list[str] = Field(
        default_factory=list, description="tools whose use is checked on their own"
    )
    parameters: list[ParameterExpectation] = Field(default_factory=list)
    forbidden_tools: list[str] = Field(default_factory=list)
    no_tool_calls: bool = Field(default=False, description="the agent should call no tool")
    max_tool_calls: int | None = Field(default=None, ge=0)
    reference_answer: str | None = Field(
        default=None, description="compared with the agent's last message that has text"
    )
    reference_answers: list[TurnAnswer] | None = Field(
        default=None,
        description="per-turn reference answers, each compared with the agent's last message "
        "with text in that turn (not with reference_answer)",
    )
    required_phrases: list[str] = Field(default_factory=list)
    response_matches: str | None = Field(
        default=None,
        description="a Python regular expression searched for in the final answer (anchor "
        "it with ^ and $, or \\A and \\Z, to match the whole answer)",
    )
    response_json_schema: dict[str, Any] | None = Field(
        default=None,
        description="a JSON Schema the final answer must validate against once parsed as "
        "JSON (an answer that is one ```json fenced block is read inside the fence)",
    )
    response_max_chars: int | None = Field(
        default=None, ge=0, description="the final answer has at most this many characters"
    )
    latency_budget_s: float | None = Field(default=None, gt=0)
    final_state: dict[str, Any] | None = None
    final_state_mode: Literal["equals", "contains"] = "contains"
    adk_trajectory_match: Literal["EXACT", "IN_ORDER", "ANY_ORDER"] = Field(
        default="EXACT", description="ADK's match type for tool_trajectory_avg_score"
    )
    response_match_threshold: float | None = Field(
        default=0.8, ge=0, le=1,
        description="response_match_score passes at or above this; null: reported only "
        "(neither in the score nor in the pass verdict)",
    )
    trajectory_threshold: float | None = Field(
        default=1.0, ge=0, le=1,
        description="tool_trajectory_avg_score passes at or above this; null: reported only",
    )
    adk_invocations: int | None = Field(
        default=None, ge=1,
        description="set on scenarios made from an ADK eval case: its number of invocations "
        "(recorded turns). Then tool_trajectory_avg_score and response_match_score are "
        "google-adk 2.13's, invocation by invocation, and the harness's own definitions are "
        "reported beside them as tool_trajectory_avg_score_strict and "
        "response_match_score_referenced",
    )

    @model_validator(mode="after")
    def _one_kind_of_reference_answer(self) -> Expectations:
        if self.reference_answer is not None and self.reference_answers is not None:
            raise ValueError("give reference_answer (the last message) or reference_answers "
                             "(per turn), not both")
        turns = [a.turn for a in self.reference_answers or []]
        repeated = sorted({t for t in turns if turns.count(t) > 1})
        if repeated:
            raise ValueError(f"reference_answers: turn {repeated[0]} has more than one answer")
        if self.adk_invocations is not None:
            self._within_the_invocations(self.adk_invocations)
        return self

    def _within_the_invocations(self, invocations: int) -> None:
        """With ``adk_invocations``, every reference names a turn among the invocations."""
        for i, call in enumerate(self.tool_calls or []):
            if call.turn is None or call.turn >= invocations:
                raise ValueError(f"tool_calls[{i}].turn: a turn below adk_invocations "
                                 f"({invocations}) is needed on every reference call")
        for item in self.reference_answers or []:
            if item.turn >= invocations:
                raise ValueError(f"reference_answers: turn {item.turn} is not below "
                                 f"adk_invocations ({invocations})")


class CheckSpec(_Strict):
    """One check to run: a function ``f(transcript, expectations, **args) -> CheckResult |
    list[CheckResult] | float | bool``, named under a scenario's ``checks`` or expanded from
    its ``expectations`` (the built-ins, see :mod:`harness.checks.builtins`)."""

    use: str = Field(
        description="'package.module:function', or a registered name: a built-in check's "
        "(trajectory, max_tool_calls, ...) or one given to @harness.checks.check"
    )
    name: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:-]*$",
        description="the metric's name (default: the registered name or the function's name)",
    )
    gating: bool = Field(
        default=True,
        description="counts in the sample's score and pass verdict; false: reported only",
    )
    threshold: float = Field(
        default=1.0, ge=0, le=1,
        description="a value at or above this passes (when the check does not say itself)",
    )
    args: dict[str, Any] = Field(
        default_factory=dict, description="keyword arguments given to the function"
    )
