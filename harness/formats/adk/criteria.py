"""ADK's ``test_config.json``: the criteria (metric name -> threshold or options) that decide
whether an eval case passes, read into typed models.

A criterion is a number (its threshold) or an object with ``threshold`` and the options of
its kind. ADK decides a case passes when each criterion's overall score is >= its threshold.
Without a config file ADK's defaults apply: ``tool_trajectory_avg_score`` 1.0 and
``response_match_score`` 0.8. A criterion we do not know, a ``match_type`` we do not know, or
a misspelt key is an error naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from harness.errors import InputError
from harness.formats.adk.evalset import AdkRubric, read_json, validation_error

CONFIG_NAME = "test_config.json"
# The names of a criteria file beside an eval set: AgentEvaluator's, and the newer samples'.
CONFIG_NAMES = (CONFIG_NAME, "eval_config.json")

MatchType = Literal["EXACT", "IN_ORDER", "ANY_ORDER"]


class _Adk(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
        loc_by_alias=False, extra="forbid",
    )


class JudgeModelOptions(_Adk):
    """ADK's judge options. ``judge_model`` names a Gemini model: the harness judges with
    ``--judge`` instead, and keeps the name only to write it back on export."""

    judge_model: str = "gemini-2.5-flash"
    judge_model_config: dict[str, Any] | None = None
    num_samples: int = Field(default=5, ge=1, le=100)
    parallelism_limit: int = Field(default=1, ge=1)


class Criterion(_Adk):
    """A threshold and nothing else (``response_match_score``, ``safety_v1``)."""

    threshold: float = Field(ge=0, le=1)
    include_intermediate_responses_in_final: bool = False


class TrajectoryCriterion(Criterion):
    """``tool_trajectory_avg_score``: match type and whether arguments are compared."""

    match_type: MatchType = "EXACT"
    ignore_args: bool = False

    @field_validator("match_type", mode="before")
    @classmethod
    def _match_type(cls, value: Any) -> Any:
        # ADK accepts its enum's names in any case with - or space for _, and its values.
        names = ("EXACT", "IN_ORDER", "ANY_ORDER")
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 3:
            return names[value]
        if isinstance(value, str):
            normal = value.strip().upper().replace("-", "_").replace(" ", "_")
            if normal in names:
                return normal
        raise ValueError(f"unknown match_type {value!r}; expected one of {', '.join(names)}")


class JudgeCriterion(Criterion):
    """A judged criterion (``final_response_match_v2``)."""

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)


class RubricsCriterion(JudgeCriterion):
    """A rubric-based criterion with its inline rubrics. Rubrics may instead (or as well)
    come from the eval case or its invocations, those whose ``type`` is the criterion's
    (:data:`RUBRIC_TYPES`), as ADK takes them; a case with none anywhere is an error when it
    is converted."""

    rubrics: list[AdkRubric] = Field(default_factory=list)


class CoherenceCriterion(Criterion):
    """``response_evaluation_score``: the coherence of the answer, on ADK's (Vertex AI's)
    1-5 scale; its threshold is on that scale."""

    threshold: float = Field(ge=1, le=5)


class SimulatorQualityCriterion(JudgeCriterion):
    """``per_turn_user_simulator_quality_v1``: the simulated user judged turn by turn;
    ``stop_signal`` is what ADK's simulator says when it is done (the harness's simulator
    ends a conversation its own way: kept to be written back)."""

    stop_signal: str = "</finished>"


class HallucinationsCriterion(JudgeCriterion):
    """``hallucinations_v1``: whether intermediate answers are judged too."""

    evaluate_intermediate_nl_responses: bool = False


CRITERION_MODELS: dict[str, type[Criterion]] = {
    "tool_trajectory_avg_score": TrajectoryCriterion,
    "response_match_score": Criterion,
    "final_response_match_v2": JudgeCriterion,
    "rubric_based_final_response_quality_v1": RubricsCriterion,
    "rubric_based_tool_use_quality_v1": RubricsCriterion,
    "hallucinations_v1": HallucinationsCriterion,
    "safety_v1": Criterion,
    "response_evaluation_score": CoherenceCriterion,
    "per_turn_user_simulator_quality_v1": SimulatorQualityCriterion,
    "multi_turn_task_success_v1": JudgeCriterion,
    "multi_turn_trajectory_quality_v1": JudgeCriterion,
    "multi_turn_tool_use_quality_v1": JudgeCriterion,
    "rubric_based_multi_turn_trajectory_quality_v1": RubricsCriterion,
}
# The ``type`` of the case and invocation rubrics each rubric-based criterion takes, as ADK's
# evaluators filter them.
RUBRIC_TYPES = {"rubric_based_final_response_quality_v1": "FINAL_RESPONSE_QUALITY",
                "rubric_based_tool_use_quality_v1": "TOOL_USE_QUALITY",
                "rubric_based_multi_turn_trajectory_quality_v1": "TRAJECTORY_QUALITY"}
KNOWN_CRITERIA = tuple(CRITERION_MODELS)

DEFAULT_CRITERIA: dict[str, Criterion] = {
    "tool_trajectory_avg_score": TrajectoryCriterion(threshold=1.0),
    "response_match_score": Criterion(threshold=0.8),
}


class EvalConfig(BaseModel):
    """A ``test_config.json``: the criteria; the custom metrics (``custom_metrics``, Python
    functions over ADK's own invocation objects) and the criteria they define
    (``custom_criteria``), which run as checks (:mod:`harness.formats.adk.custom_metrics`)
    and are written back; and what is kept to be written back but not used: ADK's
    user-simulator settings (the harness's simulator is ``--simulator``) and its live-model
    settings (ADK's runner for audio and video models)."""

    model_config = ConfigDict(extra="forbid")

    criteria: dict[str, Criterion] = Field(default_factory=dict)
    user_simulator_config: dict[str, Any] | None = None
    live_model_config: dict[str, Any] | None = None
    custom_metrics: dict[str, Any] | None = None
    custom_criteria: dict[str, Any] = Field(default_factory=dict)
    source: str | None = Field(default=None, exclude=True)


def default_config() -> EvalConfig:
    """ADK's criteria when there is no ``test_config.json``."""
    return EvalConfig(criteria=dict(DEFAULT_CRITERIA))


_TOP_KEYS = {"criteria": "criteria", "user_simulator_config": "user_simulator_config",
             "userSimulatorConfig": "user_simulator_config",
             "live_model_config": "live_model_config", "liveModelConfig": "live_model_config",
             "custom_metrics": "custom_metrics", "customMetrics": "custom_metrics"}
# Kept to be written back (EvalConfig's docstring says which of them a run uses).
_KEPT_OBJECTS = ("user_simulator_config", "live_model_config", "custom_metrics")


def parse_config(data: Any, path: Path) -> EvalConfig:
    """Validate parsed JSON as a ``test_config.json``. Raises :class:`InputError` naming
    ``path`` and the field (``criteria.NAME.FIELD``)."""
    if not isinstance(data, dict):
        raise InputError(path, None, "expected an object with 'criteria', got "
                         f"{type(data).__name__}")
    for key in data:
        if key not in _TOP_KEYS:
            raise InputError(path, str(key), "unknown key; expected criteria, "
                             "user_simulator_config, live_model_config or custom_metrics")
    kept: dict[str, Any] = {}
    for key, value in data.items():
        name = _TOP_KEYS[key]
        if name in _KEPT_OBJECTS and value is not None:
            if not isinstance(value, dict):
                raise InputError(path, name, f"expected an object, got {type(value).__name__}")
            kept[name] = value
    custom = kept.get("custom_metrics") or {}
    raw = data.get("criteria") or {}
    if not isinstance(raw, dict):
        raise InputError(path, "criteria", "expected an object: criterion name -> threshold "
                         f"or options, got {type(raw).__name__}")
    criteria: dict[str, Criterion] = {}
    custom_criteria: dict[str, Any] = {}
    for name, value in custom.items():
        _check_custom_metric(path, name, value)
    for name, value in raw.items():
        model = CRITERION_MODELS.get(name)
        if model is None and name in custom:
            custom_criteria[name] = _custom_criterion(path, name, value)
            continue
        if model is None:
            raise InputError(path, f"criteria.{name}", f"unknown criterion {name!r}; known "
                             f"criteria: {', '.join(KNOWN_CRITERIA)}, or one of "
                             "custom_metrics")
        given = {"threshold": value} if isinstance(value, int | float) \
            and not isinstance(value, bool) else value
        try:
            criteria[name] = model.model_validate(given)
        except ValidationError as err:
            inner = validation_error(path, err)
            field = f"criteria.{name}" + (f".{inner.field}" if inner.field else "")
            raise InputError(path, field, inner.expected) from None
    return EvalConfig(criteria=criteria, custom_criteria=custom_criteria, source=str(path),
                      **kept)


def _check_custom_metric(path: Path, name: str, value: Any) -> None:
    """A ``custom_metrics`` entry must name its function (ADK's ``code_config.name``)."""
    code = (value.get("code_config", value.get("codeConfig"))
            if isinstance(value, dict) else None)
    function = code.get("name") if isinstance(code, dict) else None
    if not isinstance(function, str) or "." not in function.strip("."):
        raise InputError(path, f"custom_metrics.{name}.code_config.name",
                         f"the custom metric's function as 'package.module.function', got "
                         f"{function!r}")


def _custom_criterion(path: Path, name: str, value: Any) -> Any:
    """A custom metric's criterion: a threshold, or an object with a number ``threshold``
    (ADK's ``BaseCriterion``; its other keys go to the metric as they are)."""
    threshold = value.get("threshold") if isinstance(value, dict) else value
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise InputError(path, f"criteria.{name}", "a threshold (a number) or an object with "
                         f"a number 'threshold', for the custom metric {name!r}")
    return value


def read_config(path: Path) -> EvalConfig:
    """Read a ``test_config.json``. Raises :class:`InputError`."""
    return parse_config(read_json(path, f"an ADK criteria file ({path.name})"), path)


def config_for(eval_set_path: Path) -> EvalConfig:
    """The criteria file beside an eval set file (``test_config.json``, which ADK's
    ``AgentEvaluator`` reads, or ``eval_config.json``, the name ADK's newer samples use),
    else (none there) ADK's defaults. Raises :class:`InputError` when both are there (which
    one counts would be a guess), or one is there but cannot be read: a directory, a symbolic
    link that loops or leads nowhere (rather than applying the defaults in silence)."""
    found = [eval_set_path.parent / name for name in CONFIG_NAMES
             if (eval_set_path.parent / name).exists()
             or (eval_set_path.parent / name).is_symlink()]
    if not found:
        return default_config()
    if len(found) > 1:
        raise InputError(found[1], None, f"{found[0].name} is beside it too; keep one "
                         "criteria file per folder (ADK reads one)")
    beside = found[0]
    if beside.is_symlink() and not beside.exists():
        raise InputError(beside, None, f"a symbolic link that loops or leads nowhere; expected "
                         f"an ADK {beside.name} (remove it to use ADK's default criteria)")
    return read_config(beside)


def criterion_json(criterion: Criterion) -> float | dict[str, Any]:
    """A criterion as written in ``test_config.json``: a bare threshold when it has no
    options set, else its object (snake_case keys, defaults left out)."""
    data = criterion.model_dump(mode="json", exclude_defaults=True)
    return criterion.threshold if set(data) <= {"threshold"} else data
