"""The shape of ``summary.json`` that readers rely on (``harness report``, the gate).

A summary is checked before anything reads it, so a file from another harness version, an
edited or truncated one, or a JSON file that is not a summary is one clear error naming the
file and the field, never a ``KeyError`` half-way through a table. Only the fields that are
read are described; the summary holds more (configuration, methods, events), and those are
passed through unchecked. Fields added to a version-1 summary after it was first written
(``design_for_target``, the per-scenario mean interval) are optional here, so older version-1
files still read.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.errors import InputError
from harness.runs.gate import GateResult

SUMMARY_SCHEMA = "agent-eval-harness/run-summary"
SUMMARY_SCHEMA_VERSION = 1
MAX_LISTED_PROBLEMS = 3


class _Read(BaseModel):
    # Fields not described here are passed through: this checks what is read, it does not
    # define the file (the writer, harness.runs.summary, does).
    model_config = ConfigDict(extra="ignore")


class _Figure(_Read):
    value: float
    ci_low: float | None
    ci_high: float | None
    n: int


class _Bootstrap(_Read):
    ci_low: float
    ci_high: float
    n_resamples: int
    seed: int


class _Power(_Read):
    minimum_detectable_difference: float | None
    floor_with_unlimited_epochs: float | None
    power: float
    alpha: float


class _Requirement(_Read):
    achievable: bool
    epochs: int | None
    n_scenarios: int


class _Design(_Read):
    target_difference: float
    target_source: str
    epochs_with_current_scenarios: _Requirement
    scenarios_with_current_epochs: _Requirement


class _Variance(_Read):
    between: float
    within: float
    suite_variance_between: float
    suite_variance_within: float


class _JudgeVariance(_Read):
    epoch: float
    judge: float
    suite_variance_epoch: float
    suite_variance_judge: float


class _Scenario(_Read):
    scenario_id: str
    n_epochs: int
    mean: float
    sd: float | None
    mean_ci_low: float | None = None
    mean_ci_high: float | None = None
    pass_rate: float
    pass_rate_ci_low: float
    pass_rate_ci_high: float
    pass_hat_k: Annotated[dict[int, float], Field(min_length=1)]
    flaky: bool


class _Score(_Read):
    confidence: float
    n_scenarios: int
    n_samples: int
    mean: float
    ci_low: float | None
    ci_high: float | None
    bootstrap: _Bootstrap | None = None
    pass_rate: _Figure
    pass_at_k_detail: dict[int, _Figure]
    pass_hat_k_detail: dict[int, _Figure]
    variance_components: _Variance | None = None
    judge_variance_components: _JudgeVariance | None = None
    power: _Power | None = None
    design_for_target: _Design | None = None
    scenarios: list[_Scenario]
    notes: list[str] = Field(default_factory=list)


class _Counts(_Read):
    scenarios: int
    scenarios_loaded: int | None = None
    samples_planned: int | None = None
    samples: int
    scored: int
    errored: int
    unscored: int


class _ErrorPolicy(_Read):
    meaning: str
    errored_samples: int


class _Metric(_Read):
    value: float
    ci_low: float | None
    ci_high: float | None
    n_scenarios: int
    n: int


class _Error(_Read):
    scenario_id: str
    epoch: int
    kind: str
    message: str


class _FailureGroup(_Read):
    kind: str
    key: str
    samples: int
    scenarios: list[str]
    recommendation: str


class _Failures(_Read):
    n_samples: int
    n_failed_samples: int
    groups: list[_FailureGroup] = Field(default_factory=list)


class _RoleUsage(_Read):
    calls: int
    cached_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class _Usage(_Read):
    by_role: dict[str, _RoleUsage]
    unpriced_calls: int = 0


class _Stopped(_Read):
    reason: str
    message: str


class _Adaptive(_Read):
    target_width: float
    final_width: float | None = None


class SummaryShape(_Read):
    """What ``harness report`` and the gate read from ``summary.json`` (version 1)."""

    schema_: Literal["agent-eval-harness/run-summary"] = Field(alias="schema")
    schema_version: Literal[1]
    offline: bool
    notice: str | None
    counts: _Counts
    error_policy: _ErrorPolicy
    score: _Score | None
    metrics: dict[str, _Metric]
    errors: list[_Error]
    failure_analysis: _Failures
    usage: _Usage
    stopped: _Stopped | None = None
    adaptive: _Adaptive | None = None
    gate: GateResult | None = None
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _offline_runs_carry_their_notice(self) -> SummaryShape:
        if self.offline and not self.notice:
            raise ValueError("an offline summary must carry its notice")
        return self


def _field(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def check_summary(data: Any, source: str) -> dict[str, Any]:
    """Return ``data`` unchanged if it is a run summary this harness can read.

    Raises :class:`InputError` naming ``source`` and the field: not a JSON object, not a
    run summary (``schema``), another ``schema_version`` (with the harness version that wrote
    it), or a field missing or of the wrong type (up to three listed).
    """
    if not isinstance(data, dict):
        raise InputError(source, None, f"expected a JSON object (a run summary), got "
                         f"{type(data).__name__}")
    if data.get("schema") != SUMMARY_SCHEMA:
        raise InputError(source, "schema", f"expected {SUMMARY_SCHEMA!r}: not a harness run "
                         f"summary (got {data.get('schema')!r})")
    version = data.get("schema_version")
    if version != SUMMARY_SCHEMA_VERSION or isinstance(version, bool):
        wrote = data.get("harness_version")
        by = f" (written by harness {wrote})" if isinstance(wrote, str) else ""
        raise InputError(
            source, "schema_version",
            f"expected {SUMMARY_SCHEMA_VERSION}, got {version!r}{by}; read it with the "
            "harness version that wrote it, or re-create it from the run's store with that "
            "version; nothing was changed",
        )
    try:
        SummaryShape.model_validate(data)
    except ValidationError as err:
        problems = err.errors()
        shown = [f"{_field(p['loc'])}: {p['msg'].lower()}" for p in problems[:MAX_LISTED_PROBLEMS]]
        more = len(problems) - len(shown)
        raise InputError(
            source, None,
            "malformed run summary (not the schema_version 1 shape): " + "; ".join(shown)
            + (f"; and {more} more" if more > 0 else "") + "; nothing was changed",
        ) from None
    return data
