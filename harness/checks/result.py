"""What the deterministic checks return: one :class:`CheckResult` per check, gathered in a
:class:`CheckReport` per transcript. Pydantic, so reports are stored as JSON and read back.

A check of one's own that raised or returned an invalid value has ``error`` set instead.

A check that cannot be computed from the transcript (e.g. a latency budget on an imported
conversation with no timings) is *unscored*: ``value`` and ``passed`` are ``None`` and
``unscored_reason`` says why. It is never a silent zero.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

FindingKind = Literal[
    "wrong_tool",  # a different tool was called where a reference call was expected
    "missing_tool",  # a reference call had no counterpart at all
    "parameter_error",  # the right tool with wrong, missing or forbidden arguments
    "malformed_arguments",  # arguments that were not a JSON object
    "unexpected_call",  # a call to a tool the reference does not use
    "over_calling",  # repeats of an expected tool, or more calls than the budget allows
    "forbidden_tool",  # a tool the scenario forbids
    "wrong_order",  # expected tools called out of order
    "missing_phrase",  # a required phrase absent from the final answer
    "response_mismatch",  # low overlap with the reference answer
    "wrong_final_state",  # the tools' final state differs from the expected one
    "over_latency",  # a turn took longer than the latency budget
    "response_format",  # the final answer misses its regex, JSON Schema or length limit
    "custom_check",  # a check failed and said nothing more (e.g. a bare False of one's own)
    "judge_failed_criterion",  # a judge scored a rubric criterion as failed
]


class Finding(BaseModel):
    """One concrete thing that went wrong, as evidence for the failure analysis.

    ``tool`` is the tool the agent called (or should have called, for ``missing_tool``);
    ``expected_tool`` is set for ``wrong_tool``; ``parameters`` names the arguments at fault;
    ``subject`` names what else is at fault (a phrase, a state path, ``rubric/criterion``).
    """

    model_config = ConfigDict(extra="forbid")

    kind: FindingKind
    tool: str | None = None
    expected_tool: str | None = None
    parameters: list[str] = Field(default_factory=list)
    subject: str | None = None
    message: str


# The descriptive trajectory views do not gate. Stored JSON leaves ``gating`` out where it is
# what these names imply (or where there is no verdict for it to matter), so the JSON of the
# built-ins reads as it always did, and stores written before ``gating`` read the same.
_DESCRIPTIVE_VIEWS = frozenset({
    "trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
    "trajectory_precision", "trajectory_recall", "trajectory_f1",
})


def _implied_gating(name: object) -> bool:
    return name not in _DESCRIPTIVE_VIEWS


class CheckResult(BaseModel):
    """The outcome of one check, built-in or one's own alike.

    ``value`` is normalised to [0, 1] (1 is best); ``passed`` says whether it met its bar.
    Both are ``None`` when the check could not be computed (``unscored_reason`` says why).
    ``gating`` says whether it counts in the sample's score and pass verdict (a descriptive
    view, or a check made informational, is reported only). ``details`` hold what matched
    and what was missing, for a human reading the report.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    value: float | None
    passed: bool | None
    gating: bool = Field(
        default=True,
        description="counts in the sample's score and pass verdict (when it has a verdict); "
        "false: reported only",
    )
    details: dict[str, Any] = Field(default_factory=dict)
    findings: list[Finding] = Field(default_factory=list)
    unscored_reason: str | None = None
    error: str | None = Field(
        default=None,
        description="a check of one's own that raised or returned no valid value: the "
        "message (value and passed are None, and the sample is errored)",
    )

    warnings: list[str] = Field(
        default_factory=list,
        description="problems with the input met while checking (e.g. a matcher that "
        "raised); the run moves them to the report's warnings",
    )

    @model_validator(mode="before")
    @classmethod
    def _implied_by_the_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and "gating" not in data:
            return {**data, "gating": _implied_gating(data.get("name"))}
        return data

    @model_serializer(mode="wrap")
    def _without_empty_extras(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # an error, warnings and an unusual ``gating`` are the exceptions: the stored JSON
        # carries them only when they apply, so a built-in's JSON is as it always was
        data: dict[str, Any] = handler(self)
        if self.passed is None or self.gating == _implied_gating(self.name):
            data.pop("gating", None)
        if data.get("error", "") is None:
            del data["error"]
        if data.get("warnings") == []:
            del data["warnings"]
        return data

    @classmethod
    def unscored(cls, name: str, reason: str, **details: Any) -> CheckResult:
        """A result that could not be computed, with the reason."""
        return cls(name=name, value=None, passed=None, details=details, unscored_reason=reason)


class CheckReport(BaseModel):
    """Every check run on one transcript, plus warnings about the input (e.g. malformed
    tool-call arguments, which are scored as non-matching rather than crashing)."""

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    epoch: int = 0
    results: list[CheckResult] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    error: str | None = Field(
        default=None,
        description="set when the sample errored: no check is scored, it is reported apart",
    )

    def metrics(self) -> dict[str, float | None]:
        """Check name -> value (``None`` when unscored), in the order the checks ran."""
        return {r.name: r.value for r in self.results}

    def get(self, name: str) -> CheckResult:
        """The result of the check called ``name``. Raises ``KeyError`` when it did not run."""
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(name)

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    @property
    def passed(self) -> bool | None:
        """True when no scored check failed (unscored checks neither pass nor fail); ``None``
        for an errored sample, which has no scores."""
        if self.error is not None:
            return None
        return all(r.passed is not False for r in self.results)
