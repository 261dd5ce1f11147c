"""The model of a run's ``summary.json``, the one description of it: the writer
(:func:`harness.runs.summary.summarise`) builds a :class:`RunSummary` and writes it, and every
reader (``harness report``, the terminal report, the gate, the HTML report,
:attr:`harness.runs.api.RunResult.summary`) validates the file into the same model. A field
added here appears in the file and in every reader at once; no reader can drift from the
writer. The ``score`` section is :class:`~harness.stats.summary.SuiteSummary`, which
``harness stats --json`` writes too.

Version 1 grows only by optional fields: a field added after version 1 was first written has
a default that means "not recorded" (``roles``, ``counts.scenarios_loaded``,
``score.design_for_target``, ...), so every earlier version-1 file still reads. Removing,
renaming or changing the meaning of a field needs ``schema_version`` 2.

Unknown keys are refused, at every depth (``extra="forbid"``, as in the models reused here:
the run configuration, the gate, the statistics): a key this harness does not know was
written by a newer harness or by hand, and reading past it would drop it from ``harness
report --json`` and from the report without a word. The error names the file, the key and
the harness version that wrote the file (docs/design.md, "One model of a run's results").
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from harness.checks.failures import FailureAnalysis
from harness.errors import InputError
from harness.models.provenance import RoleModels
from harness.runs.attribution_figures import AttributionFigures
from harness.runs.config import ErrorPolicy, RunConfig
from harness.runs.gate import GateResult
from harness.runs.judge_record import JudgeRecord
from harness.runs.latency import RunLatency
from harness.runs.shards import ShardCoverage
from harness.runs.simulator_figures import SimulatorFigures
from harness.runs.tool_figures import ToolFigures
from harness.stats.adaptive import AdaptiveSavings, StopReason
from harness.stats.estimate import Estimate
from harness.stats.summary import SuiteSummary
from harness.transcript import ErrorInfo, UsageTotals

SUMMARY_SCHEMA = "agent-eval-harness/run-summary"
SUMMARY_SCHEMA_VERSION = 1
MAX_LISTED_PROBLEMS = 3

StopCause = Literal["budget", "model_configuration", "interrupted", "terminated",
                    "worker_lost"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunCounts(_Part):
    """How many scenarios and samples the run has, by status, stop reason and error kind.
    ``scenarios`` counts those with at least one stored sample, ``scenarios_loaded`` those
    in the scenario files; ``samples_planned`` is scenarios x epochs (``None`` for adaptive
    sampling, and in summaries written before these two were recorded)."""

    scenarios: int
    scenarios_loaded: int | None = None
    samples_planned: int | None = None
    samples: int
    scored: int
    errored: int
    unscored: int
    stop_reasons: dict[str, int]
    errors_by_kind: dict[str, int]


class ErrorPolicyNote(_Part):
    """How errored samples entered the figures, in words, and how many there were."""

    policy: ErrorPolicy
    meaning: str
    errored_samples: int


class MetricSummary(Estimate):
    """One metric: the mean of scenario means with its clustered interval."""

    n_scenarios: int


class TagFigures(_Part):
    """One scenario tag's figures: the suite's mean score and pass rate, computed by the
    same functions on the tag's scenarios alone (so they equal the suite figures of a run of
    only those scenarios). ``scenarios`` and ``samples`` count what is stored for the tag;
    ``mean`` and ``pass_rate`` are ``None`` when none of its samples was scored."""

    scenarios: int
    samples: int
    scored: int
    mean: Estimate | None
    pass_rate: Estimate | None


class SampleError(ErrorInfo):
    """An errored sample: which one, and its error."""

    model_config = ConfigDict(frozen=True)

    scenario_id: str
    epoch: int


class RunUsage(_Part):
    """Model calls, tokens and cost per role; ``unpriced_calls`` are not in the cost."""

    by_role: dict[str, UsageTotals]
    total_cost_usd: float
    unpriced_calls: int


class RunStop(_Part):
    """Why a run stopped before its plan was done."""

    reason: StopCause
    message: str


class AdaptiveRound(_Part):
    """One round of adaptive sampling: the planner's reason, the epochs it gave each
    scenario, the interval width before and the width projected after."""

    reason: StopReason
    allocations: dict[str, int]
    current_width: float | None
    projected_width: float | None


class RunSavings(AdaptiveSavings):
    """The samples (and about how many model calls) adaptive sampling saved."""

    model_calls_per_sample: float | None
    saved_model_calls: int | None


class AdaptiveReport(_Part):
    """What adaptive sampling did. ``stopped`` says why no round could be planned (then the
    fields after ``target_width`` that need a plan are ``None``); ``savings`` needs at least
    two scenarios."""

    target_width: float
    pilot_epochs: int | None = None
    final_reason: StopReason | None = None
    final_width: float | None = None
    samples_used: int | None = None
    rounds: list[AdaptiveRound]
    method: str | None = None
    savings: RunSavings | None = None
    stopped: str | None = None


class _Event(_Part):
    at: float = Field(description="seconds since the epoch")
    kind: str
    shard: str | None = Field(
        default=None, description="in a merged run, the shard (i/n) whose run logged it")

    @model_serializer(mode="wrap")
    def _shard_only_when_merged(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("shard") is None:
            data.pop("shard", None)
        return data


class StopEvent(RunStop, _Event):
    kind: Literal["stopped"]


class ResumeEvent(_Event):
    kind: Literal["resumed"]
    retry_errors: bool
    overrides: dict[str, int | float | str | dict[str, dict[str, int | None]]] = Field(
        description="the settings changed on resuming (concurrency, workers, executor, Ray "
        "address, budgets, timeout, rate limits per provider)")


class InterruptEvent(_Event):
    kind: Literal["interrupted", "terminated"]
    finished_this_session: int


class AdaptiveRoundEvent(AdaptiveRound, _Event):
    kind: Literal["adaptive_round"]


class RerunEvent(_Event):
    kind: Literal["rerun_simulator_faults"]
    samples: int = Field(description="samples attributed to the simulator, run again")


RunEvent = Annotated[StopEvent | ResumeEvent | InterruptEvent | AdaptiveRoundEvent | RerunEvent,
                     Field(discriminator="kind")]

# Written only when asked for (absent otherwise, as docs/reports.md documents).
_ASKED_FOR = ("adaptive", "gate", "shards")


class RunSummary(_Part):
    """A run's ``summary.json`` (docs/reports.md, "Run outputs", says what each part means).

    Read attributes as the JSON keys are named: ``summary.score.pass_rate.value``,
    ``summary.counts.errored``. ``score`` is ``None`` when no sample was scored (``notes``
    says why)."""

    model_config = ConfigDict(serialize_by_alias=True)

    schema_: Literal["agent-eval-harness/run-summary"] = Field(alias="schema")
    schema_version: Literal[1]
    harness_version: str
    offline: bool
    notice: str | None
    roles: dict[str, RoleModels] = Field(default_factory=dict)
    config: RunConfig
    counts: RunCounts
    error_policy: ErrorPolicyNote
    score: SuiteSummary | None
    metrics: dict[str, MetricSummary]
    errors: list[SampleError]
    failure_analysis: FailureAnalysis
    usage: RunUsage
    events: list[RunEvent]
    notes: list[str]
    adaptive: AdaptiveReport | None = None
    stopped: RunStop | None
    gate: GateResult | None = None
    tags: dict[str, TagFigures] = Field(
        default_factory=dict, description="per scenario tag (empty when no scenario has one)")
    # None in summaries written before these were summarised (latency: also when nothing
    # was timed)
    latency: RunLatency | None = None
    tools: dict[str, ToolFigures] | None = None
    shards: ShardCoverage | None = None
    judge: JudgeRecord | None = Field(
        default=None, description="what defines the run's judge (None: not recorded, a run "
        "written before judges were)")
    simulator: SimulatorFigures | None = Field(
        default=None, description="the simulated user's findings, apart from the agent's "
        "figures (None: no sample was checked, or a run written before they were)")
    attribution: AttributionFigures | None = Field(
        default=None, description="the party each failed or errored sample is attributed to, "
        "and the agent's figures without the samples attributed to the simulator (None: no "
        "sample failed)")

    @model_validator(mode="after")
    def _offline_runs_carry_their_notice(self) -> RunSummary:
        if self.offline and not self.notice:
            raise ValueError("an offline summary must carry its notice")
        return self

    @model_serializer(mode="wrap")
    def _without_what_was_not_asked_for(
            self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items()
                if not (key in _ASKED_FOR and value is None)}


def _field(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def check_summary(data: Any, source: str) -> RunSummary:
    """``data`` (a parsed ``summary.json``) as a :class:`RunSummary`.

    Raises :class:`InputError` naming ``source`` and the field: not a JSON object, not a
    run summary (``schema``), another ``schema_version`` (with the harness version that wrote
    it), or fields missing, of the wrong type or unknown (up to three listed).
    """
    if not isinstance(data, dict):
        raise InputError(source, None, f"expected a JSON object (a run summary), got "
                         f"{type(data).__name__}")
    if data.get("schema") != SUMMARY_SCHEMA:
        raise InputError(source, "schema", f"expected {SUMMARY_SCHEMA!r}: not a harness run "
                         f"summary (got {data.get('schema')!r})")
    wrote = data.get("harness_version")
    by = f" (written by harness {wrote})" if isinstance(wrote, str) else ""
    version = data.get("schema_version")
    if version != SUMMARY_SCHEMA_VERSION or isinstance(version, bool):
        raise InputError(
            source, "schema_version",
            f"expected {SUMMARY_SCHEMA_VERSION}, got {version!r}{by}; read it with the "
            "harness version that wrote it, or re-create it from the run's store with that "
            "version; nothing was changed",
        )
    try:
        return RunSummary.model_validate(data)
    except ValidationError as err:
        problems = err.errors()
        shown = [f"{_field(p['loc'])}: {p['msg'].lower()}" for p in problems[:MAX_LISTED_PROBLEMS]]
        more = len(problems) - len(shown)
        raise InputError(
            source, None,
            f"malformed run summary{by} (not the schema_version 1 shape): " + "; ".join(shown)
            + (f"; and {more} more" if more > 0 else "") + "; nothing was changed",
        ) from None
