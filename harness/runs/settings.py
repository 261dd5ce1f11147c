"""Where a run's settings come from, decided in one place.

A setting that can be given in more than one place follows one precedence, highest first:
the command line (or the :class:`~harness.runs.config.RunConfig` handed to
:func:`~harness.runs.api.run_suite`, which stands where the command line does), the models
YAML (``--models-config``), the default. The cache (``cache: {path, mode}``) and the budgets
(``budget: {max_cost_usd, max_calls}``) are the settings both set. A flag that overrides a
value the YAML gives is not silent: the run's log names both. docs/running.md, "Where a
setting comes from", has the whole table (judge samples and aggregation, episode timeouts
and concurrency bounds included, which are resolved where they are used).

A run stores what its settings resolved to, so ``--resume`` continues with the same cache;
only the budgets a run was started without are looked up in the models YAML again (runs
stored before they were resolved here kept the YAML's budget that way).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from harness.models.config import BudgetConfig, CacheConfig, ModelsConfig, with_rate_limits
from harness.runs.config import RunConfig, RunExecution

log = logging.getLogger(__name__)

DEFAULT_CACHE_PATH = Path(".harness") / "cache.sqlite"
_DEFAULT_CACHE_MODE = CacheConfig.model_fields["mode"].default  # the model layer's own


@dataclass(frozen=True)
class _Setting:
    """One setting both the command line and the models YAML can give."""

    field: str  # the RunExecution field
    flag: str  # its command-line option
    yaml_key: tuple[str, str]  # its place in the models YAML


_CACHE_PATH = _Setting("cache_path", "--cache", ("cache", "path"))
_CACHE_MODE = _Setting("cache_mode", "--cache-mode", ("cache", "mode"))
_BUDGETS = (_Setting("max_cost_usd", "--max-cost", ("budget", "max_cost_usd")),
            _Setting("max_calls", "--max-calls", ("budget", "max_calls")))


def resolve_settings(config: RunConfig, *, resumed: bool = False) -> RunConfig:
    """``config`` as the run uses and stores it: the design resolved
    (:meth:`~harness.runs.config.RunDesign.resolved`; not again when ``resumed``) and every
    execution setting not given taken from the models YAML, else its default.

    Raises :class:`~harness.errors.InputError` for a models YAML that cannot be read."""
    design = config.design if resumed else config.design.resolved()
    path = design.models_config
    models = ModelsConfig.from_yaml(path) if path else None
    settings = _BUDGETS if resumed else (_CACHE_PATH, _CACHE_MODE, *_BUDGETS)
    update: dict[str, object] = {}
    for setting in settings:
        update[setting.field] = _resolve(setting, config.execution, models, path)
    if not resumed:
        # A cache that is off has no file (and, stored, says so plainly).
        if update["cache_mode"] == "off":
            update["cache_path"] = None
        elif update["cache_path"] is not None:
            update["cache_path"] = str(Path(str(update["cache_path"])).resolve())
    execution = config.execution.model_copy(update=update)
    return config.model_copy(update={"design": design, "execution": execution})


def _resolve(setting: _Setting, execution: RunExecution, models: ModelsConfig | None,
             models_path: str | None) -> object:
    given = getattr(execution, setting.field)
    block, key = setting.yaml_key
    in_yaml = models is not None and _set_in_yaml(models, block, key)
    from_yaml = getattr(getattr(models, block), key) if in_yaml else None
    if given is not None:
        if in_yaml and _comparable(from_yaml, key) != _comparable(given, key):
            log.info("%s %s (command line) overrides %s.%s: %s (%s)", setting.flag, given,
                     block, key, from_yaml, models_path)
        return given
    if in_yaml:
        return None if from_yaml is None else str(from_yaml) if key == "path" else from_yaml
    return _default(setting)


def _set_in_yaml(models: ModelsConfig, block: str, key: str) -> bool:
    """Whether the file wrote ``block.key`` (an absent key is not a value of the file's)."""
    return block in models.model_fields_set and key in getattr(models, block).model_fields_set


def _comparable(value: object, key: str) -> object:
    """Paths compare as the files they name."""
    return Path(str(value)).resolve() if key == "path" and value is not None else value


def _default(setting: _Setting) -> object:
    if setting is _CACHE_PATH:
        return str(DEFAULT_CACHE_PATH)
    if setting is _CACHE_MODE:
        return _DEFAULT_CACHE_MODE
    return None


def models_config_for(config: RunConfig) -> ModelsConfig:
    """The model layer's settings for a run whose settings are resolved
    (:func:`resolve_settings`): the models YAML (if any) with the run's cache and budgets in
    place of its own, and its rate limits (``--rate-limit``) over the YAML's. A cache with no
    path, or mode ``off``, is no cache."""
    path = config.design.models_config
    base = ModelsConfig.from_yaml(path) if path else ModelsConfig()
    execution = config.execution
    mode = execution.cache_mode or _DEFAULT_CACHE_MODE
    cache = CacheConfig(
        path=Path(execution.cache_path) if execution.cache_path and mode != "off" else None,
        mode=mode)
    budget = BudgetConfig(max_cost_usd=execution.max_cost_usd, max_calls=execution.max_calls)
    models = base.model_copy(update={"cache": cache, "budget": budget})
    return with_rate_limits(models, execution.rate_limits)
