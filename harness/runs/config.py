"""What a run is asked to do: its scenarios, models, epochs, judging, budgets and policies.

The configuration is stored in the run directory, so ``--resume`` continues exactly the same
run. It never holds an API key: keys are read from the environment (or the models config
file) when the run starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.choices import AggregationMethod, CacheMode, ExecutorName
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


class RunConfig(BaseModel):
    """Everything that decides what a run computes (stored with the run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_paths: list[str] = Field(min_length=1)
    select: ScenarioFilter = Field(
        default_factory=ScenarioFilter,
        description="--tag, --exclude-tag and -k: which of the scenarios found run")
    rubric_paths: list[str] = Field(
        default_factory=list, description="extra rubric files or folders beside the built-ins"
    )
    agent: str | None = Field(default=None, description="overrides every model agent's model")
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
    error_policy: ErrorPolicy = "exclude"
    confidence: float = Field(default=0.95, gt=0, lt=1)
    seed: int = 0
    bootstrap_resamples: int = Field(default=2000, ge=0)
    adaptive: AdaptiveSettings | None = None
    shard: Shard | None = Field(
        default=None, description="--shard i/n: run only this shard of the scenario x epoch grid")
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_calls: int | None = Field(default=None, ge=0)
    episode_timeout_s: float | None = Field(
        default=None, gt=0,
        description="wall-clock seconds per episode for scenarios without limits.max_seconds",
    )
    models_config: str | None = Field(default=None, description="a models YAML file")
    cache_path: str | None = Field(default=".harness/cache.sqlite")
    cache_mode: CacheMode = "read-write"

    @model_validator(mode="after")
    def _judging_is_explicit(self) -> RunConfig:
        if self.no_judge and self.judges:
            raise ValueError("give --judge or --no-judge, not both")
        return self

    @model_validator(mode="after")
    def _shards_need_a_fixed_design(self) -> RunConfig:
        if self.shard is not None and self.adaptive is not None:
            raise ValueError("--shard cannot be combined with --target-ci-width: adaptive "
                             "sampling's rounds need every scenario's scores")
        return self

    def resolved(self) -> RunConfig:
        """The configuration with ``--offline`` applied: every model not named explicitly
        becomes its offline ``mock:`` counterpart; paths are made absolute so a resumed run
        finds the same files from any working directory."""
        update: dict[str, object] = {
            "scenario_paths": [str(Path(p).resolve()) for p in self.scenario_paths],
            "rubric_paths": [str(Path(p).resolve()) for p in self.rubric_paths],
        }
        if self.cache_path is not None:
            update["cache_path"] = str(Path(self.cache_path).resolve())
        if self.models_config is not None:
            update["models_config"] = str(Path(self.models_config).resolve())
        if self.offline:
            update["agent"] = self.agent or OFFLINE_AGENT
            update["simulator"] = self.simulator or OFFLINE_SIMULATOR
            if not self.no_judge:
                update["judges"] = self.judges or [OFFLINE_JUDGE]
        return self.model_copy(update=update)
