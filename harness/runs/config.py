"""What a run is asked to do, in two parts: its design (:class:`RunDesign`: scenarios, models,
epochs, judging and policies, what a sample and a figure are) and its execution
(:class:`RunExecution`: worker processes, executor, concurrency, budgets, timeout and cache,
how this invocation gets there). :class:`RunConfig` holds both.

Both are stored in the run directory, in one flat mapping (as before the split, so older run
directories load as they are). ``--resume`` continues the same design and may change only
:data:`RESUMABLE_FIELDS`; ``harness merge`` refuses shards whose designs differ (the shard
aside). Where each setting comes from when it can be given in more than one place is
:func:`harness.runs.settings.resolve_settings`. The configuration never holds an API key:
keys are read from the environment (or the models config file) when the run starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from harness.choices import AggregationMethod, CacheMode, ExecutorName, ReaskMode
from harness.models.config import RateLimitProvider, RateLimits
from harness.runs.shards import Shard
from harness.scenarios.selectors import ScenarioFilter

OFFLINE_AGENT = "mock:agent"
OFFLINE_SIMULATOR = "mock:simulator"
OFFLINE_JUDGE = "mock:judge"

ErrorPolicy = Literal["exclude", "as_failures"]


class AdaptiveSettings(BaseModel):
    """``--target-ci-width``: sample until the suite interval is narrower than
    ``target_width`` (full width, high - low), after ``pilot_epochs`` per scenario."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_width: float = Field(gt=0, lt=1)
    pilot_epochs: int = Field(default=3, ge=2)
    max_epochs_per_scenario: int = Field(default=50, ge=2)


ADK_AGENT_PREFIX = "adk:"
"""``--agent adk:package.module:root_agent``: an ADK agent in place of every model agent."""


class RunDesign(BaseModel):
    """What a run computes: which samples exist and what their scores and figures mean.
    Stored with the run; the same for every ``--resume`` and every shard of one run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_paths: list[str] = Field(min_length=1)
    select: ScenarioFilter = Field(
        default_factory=ScenarioFilter,
        description="--tag, --exclude-tag and -k: which of the scenarios found run")
    rubric_paths: list[str] = Field(
        default_factory=list, description="extra rubric files or folders beside the built-ins"
    )
    agent: str | None = Field(
        default=None, description="overrides every model agent's model; adk:package.module:"
        "root_agent makes every model agent that ADK agent, run in place")
    agent_base_url: str | None = None
    simulator: str | None = Field(default=None, description="overrides each user's model")
    judges: list[str] = Field(default_factory=list, description="several = a panel")
    judge_samples: int | None = Field(
        default=None, ge=1, le=100,
        description="judge samples per transcript; None: each rubric's own (else 1)")
    judge_temperature: float | None = Field(default=None, ge=0, le=2)
    judge_aggregation: AggregationMethod | None = Field(
        default=None, description="None: each rubric's own aggregation (else mean)")
    no_judge: bool = Field(default=False, description="skip rubric judging on purpose")
    offline: bool = False
    epochs: int = Field(default=5, ge=1, le=10_000)
    error_policy: ErrorPolicy = "exclude"
    confidence: float = Field(default=0.95, gt=0, lt=1)
    seed: int = 0
    bootstrap_resamples: int = Field(default=2000, ge=0)
    adaptive: AdaptiveSettings | None = None
    shard: Shard | None = Field(
        default=None, description="--shard i/n: run only this shard of the scenario x epoch grid")
    models_config: str | None = Field(default=None, description="a models YAML file")

    @model_validator(mode="after")
    def _judging_is_explicit(self) -> RunDesign:
        if self.no_judge and self.judges:
            raise ValueError("give --judge or --no-judge, not both")
        return self

    @model_validator(mode="after")
    def _shards_need_a_fixed_design(self) -> RunDesign:
        if self.shard is not None and self.adaptive is not None:
            raise ValueError("--shard cannot be combined with --target-ci-width: adaptive "
                             "sampling's rounds need every scenario's scores")
        return self

    @property
    def adk_agent(self) -> str | None:
        """The ``package.module:root_agent`` of ``--agent adk:...``, else None."""
        if self.agent is not None and self.agent.startswith(ADK_AGENT_PREFIX):
            return self.agent.removeprefix(ADK_AGENT_PREFIX)
        return None

    def resolved(self) -> RunDesign:
        """The design with ``--offline`` applied: every model not named explicitly becomes
        its offline ``mock:`` counterpart; paths are made absolute so a resumed run finds the
        same files from any working directory."""
        update: dict[str, object] = {
            "scenario_paths": [str(Path(p).resolve()) for p in self.scenario_paths],
            "rubric_paths": [str(Path(p).resolve()) for p in self.rubric_paths],
        }
        if self.models_config is not None:
            update["models_config"] = str(Path(self.models_config).resolve())
        if self.offline:
            update["agent"] = self.agent or OFFLINE_AGENT
            update["simulator"] = self.simulator or OFFLINE_SIMULATOR
            if not self.no_judge:
                update["judges"] = self.judges or [OFFLINE_JUDGE]
        return self.model_copy(update=update)


class RunExecution(BaseModel):
    """How one invocation runs the design: never what a sample or a figure is, so it may
    differ between the shards of a run, and (but for the cache) on ``--resume``.

    ``None`` means not given: the cache and the budgets then come from the models YAML, else
    their defaults (:func:`harness.runs.settings.resolve_settings`); a run stores what it
    resolved to. No cache is ``cache_mode="off"``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    concurrency: int = Field(default=8, ge=1, le=10_000)
    workers: Annotated[int, Field(ge=1, le=1024)] | Literal["auto"] = Field(
        default=1, description="worker processes (auto: one per usable core); changes how "
        "fast a run goes, never its results, so --resume may change it")
    executor: ExecutorName = Field(
        default="local", description="what runs the episodes: this machine's processes, or "
        "Ray actors (--executor ray); never changes results, so --resume may change it")
    ray_address: str | None = Field(
        default=None, description="with executor ray: an existing cluster (auto, ray://...); "
        "None starts a local Ray instance for the run")
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_calls: int | None = Field(default=None, ge=0)
    episode_timeout_s: float | None = Field(
        default=None, gt=0,
        description="wall-clock seconds per episode for scenarios without limits.max_seconds",
    )
    cache_path: str | None = Field(
        default=None, description="the response cache file; None: the models YAML's "
        "cache.path, else .harness/cache.sqlite")
    cache_mode: CacheMode | None = Field(
        default=None, description="None: the models YAML's cache.mode, else read-write")
    judge_batch: bool = Field(
        default=False, description="send the judges' requests through their providers' batch "
        "APIs (half the price; each sample is scored when its batch has finished)")
    judge_batch_reask: ReaskMode = Field(
        default="live", description="with judge_batch: where a re-ask of an answer that "
        "failed validation goes, a live request or the next batch")
    rate_limits: dict[RateLimitProvider, RateLimits] = Field(
        default_factory=dict, description="--rate-limit: per provider, requests and tokens "
        "per minute in place of the models YAML's (a limit not given keeps the YAML's); "
        "split over worker processes like each provider's concurrency")


# What ``--resume`` may change: the execution but for the cache (a resumed run looks its
# answers up where its finished samples did).
RESUMABLE_FIELDS = frozenset(RunExecution.model_fields) - {"cache_path", "cache_mode"}


# The order of the stored mapping: that of the single model before the split, so summary.json
# and run.sqlite read as they did (fields added since follow).
_STORED_ORDER = (
    "scenario_paths", "select", "rubric_paths", "agent", "agent_base_url", "simulator",
    "judges", "judge_samples", "judge_temperature", "judge_aggregation", "no_judge", "offline",
    "epochs", "concurrency", "workers", "executor", "ray_address", "error_policy",
    "confidence", "seed", "bootstrap_resamples", "adaptive", "shard", "max_cost_usd",
    "max_calls", "episode_timeout_s", "models_config", "cache_path", "cache_mode",
)


# Fields added since that are stored only when they differ from their default, so a run stored
# before them reads back exactly as it was stored (and its report's config is unchanged).
_LEFT_OUT_AT_DEFAULT: dict[str, Any] = {"judge_batch": False, "judge_batch_reask": "live",
                                        "rate_limits": {}}


class RunConfig(BaseModel):
    """A run's design and its execution (stored with the run, as one flat mapping).

    Built from the two parts, ``RunConfig(design=RunDesign(...), execution=RunExecution(...))``,
    or validated from the flat mapping a run directory stores
    (``RunConfig.model_validate({"scenario_paths": [...], "epochs": 3, "concurrency": 4})``:
    each key goes to the part that has it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    design: RunDesign
    execution: RunExecution = Field(default_factory=RunExecution)

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        """The stored form: one mapping of both parts' fields (every run directory has it)."""
        if not isinstance(data, dict) or "design" in data:
            return data
        execution = {k: v for k, v in data.items() if k in RunExecution.model_fields}
        design = {k: v for k, v in data.items() if k not in RunExecution.model_fields}
        return {"design": design, "execution": execution}

    @model_serializer(mode="wrap")
    def _to_flat(self, handler: SerializerFunctionWrapHandler,
                 info: SerializationInfo) -> dict[str, Any]:
        nested = handler(self)
        flat = {**nested["design"], **nested["execution"]}
        for name, default in _LEFT_OUT_AT_DEFAULT.items():
            if flat.get(name) == default:
                del flat[name]
        first = {name: flat[name] for name in _STORED_ORDER if name in flat}
        return {**first, **flat}  # a field added later goes last

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """The stored (flat) form's schema: both parts' fields in one object."""
        parts = [handler.resolve_ref_schema(handler(part.__pydantic_core_schema__))
                 for part in (RunDesign, RunExecution)]
        return {
            "title": cls.__name__, "description": cls.__doc__ and cls.__doc__.split("\n")[0],
            "type": "object", "additionalProperties": False,
            "properties": {k: v for part in parts for k, v in part["properties"].items()},
            "required": [k for part in parts for k in part.get("required", [])],
        }

    def model_copy(self, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> RunConfig:
        """A copy with ``update`` applied; a key may also name a field of the design or of the
        execution (as in the stored form), which is then validated. Any other key is a
        :class:`ValueError` (pydantic's own copy would keep it as a stray attribute)."""
        update = dict(update or {})
        design = {k: update.pop(k) for k in list(update) if k in RunDesign.model_fields}
        execution = {k: update.pop(k) for k in list(update) if k in RunExecution.model_fields}
        unknown = set(update) - set(type(self).model_fields)
        if unknown:
            raise ValueError(f"RunConfig has no field {sorted(unknown)[0]!r}")
        copy = super().model_copy(update=update, deep=deep)
        if design:
            copy = copy.with_design(**design)
        if execution:
            copy = copy.with_execution(**execution)
        return copy

    def with_design(self, **update: Any) -> RunConfig:
        """This configuration with some design fields changed (validated)."""
        design = RunDesign.model_validate({**self.design.model_dump(), **update})
        return super().model_copy(update={"design": design})

    def with_execution(self, **update: Any) -> RunConfig:
        """This configuration with some execution fields changed (validated)."""
        execution = RunExecution.model_validate({**self.execution.model_dump(), **update})
        return super().model_copy(update={"execution": execution})
