"""ADK's custom metrics (``custom_metrics`` in ``test_config.json`` / ``eval_config.json``)
run as checks of a scenario made from an ADK eval case, as ADK runs them.

A custom metric is a Python function named by ``code_config.name`` (``pkg.module.function``),
called as ADK's ``_CustomMetricEvaluator`` calls it: ``f(eval_metric, actual_invocations,
expected_invocations, conversation_scenario)``, returning ADK's ``EvaluationResult`` (or an
awaitable of one). Here:

- ``eval_metric`` is the one ADK makes of the config (``get_eval_metrics_from_config``) with
  its ``threshold`` cleared, as ADK clears it before the call;
- ``actual_invocations`` are the sample's user turns as ADK's ``Invocation`` objects
  (:func:`actual_invocations`: the user's text, every agent reply and tool call and result as
  an invocation event, the turn's last reply without calls as the final response);
- ``expected_invocations`` are the eval case's recorded conversation as the file has it
  (``None`` for a simulated conversation), and ``conversation_scenario`` its scenario.

The metric's ``overall_score`` is compared with the criterion's threshold, as ADK's
``AgentEvaluator`` compares it (at or above passes), and reported normalised to [0, 1] over
the metric's value range (``metric_info.metric_value_info.interval``, else ADK's [0, 1]);
the raw score, the threshold and the status the function gave are in the details. A
metric whose function does not import is a load error naming the metric, the import path and
the criteria file; one that raises, or returns no score, is an errored or unscored check with
the reason, never a 0.

Nothing here imports ``google.adk`` until a metric runs or is resolved.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.checks.args import CheckConfigError
from harness.checks.registry import check
from harness.checks.result import CheckResult
from harness.checks.spec import Expectations
from harness.models.types import Message
from harness.transcript import Transcript
from harness.user_code import ImportPathError, resolve_object

CHECK_USE = "harness.formats.adk.custom_metrics:adk_custom_metric"
"""The ``use`` of the check a custom metric becomes (an import path: a scenario file written
by ``harness import adk`` runs it without importing this module first)."""

AUTHOR = "agent"
"""The author of the agent's events in the actual invocations (the transcript does not keep
the ADK agent's own name)."""


def custom_metric_check(name: str, criterion: Any, metric_config: dict[str, Any], *,
                        config_file: str | None, expected: list[dict[str, Any]] | None,
                        scenario: dict[str, Any] | None) -> dict[str, Any]:
    """The check spec (a scenario's ``checks`` entry) for the custom metric ``name``: its
    criterion as the config gives it (a threshold or an object with ``threshold``), its
    ``custom_metrics`` entry, the file they came from, and the case's recorded invocations
    (``expected``) or conversation scenario, as ADK's JSON."""
    return {"use": CHECK_USE, "name": name, "args": {
        "metric": name, "criterion": criterion, "metric_config": metric_config,
        "config_file": config_file, "expected_invocations": expected,
        "conversation_scenario": scenario}}


def _prepare(args: dict[str, Any]) -> dict[str, Any]:
    """Resolve the metric's function once, when the scenario loads (the folder of the config
    naming it, then the scenario's folder, then ``sys.path``), so a function that does not
    import stops the load."""
    metric = str(args.get("metric"))
    metric_config = args.get("metric_config")
    where = f" in {args['config_file']}" if args.get("config_file") else ""
    field = f"custom_metrics.{metric}.code_config.name{where}"
    code = (metric_config.get("code_config", metric_config.get("codeConfig"))
            if isinstance(metric_config, dict) else None)
    path = (code or {}).get("name") if isinstance(code, dict) else None
    if not isinstance(path, str) or "." not in path.strip("."):
        raise CheckConfigError("metric_config", f"{field} to name the function of custom "
                               f"metric {metric!r} as 'package.module.function', got {path!r}")
    named = f"the function of custom metric {metric!r}, {path!r} ({field}),"
    module, _, attribute = path.rpartition(".")
    # The folder of the ADK config that names the metric is searched first, as the scenario's
    # own folder is: a scenario written by `harness import adk` elsewhere still finds it.
    config_dir = Path(str(args["config_file"])).parent if args.get("config_file") else None
    try:
        function = resolve_object(f"{module}:{attribute}",
                                  base_dir=config_dir if config_dir and config_dir.is_dir()
                                  else None)
    except ImportPathError as err:
        raise CheckConfigError("metric_config", f"{named} to import: {err}") from None
    if not callable(function):
        raise CheckConfigError("metric_config", f"{named} to be a function, got "
                               f"{type(function).__name__}")
    assert isinstance(metric_config, dict)  # it named a function above
    return {**args, "function": function, "low_high": _interval(metric_config),
            "eval_metric": _checked_eval_metric(metric, args.get("criterion"), metric_config,
                                                where)}


def _checked_eval_metric(metric: str, criterion: Any, metric_config: dict[str, Any],
                         where: str) -> Any:
    """:func:`_eval_metric`, its problems as one :class:`CheckConfigError` line each."""
    try:
        return _eval_metric(metric, criterion, metric_config)
    except ImportError:
        raise CheckConfigError("metric_config", "google-adk, to run the custom metric "
                               f"{metric!r}: pip install 'agent-eval-harness[adk]'") from None
    except ValidationError as err:
        first = err.errors()[0]
        place = ".".join(str(p) for p in first["loc"])
        raise CheckConfigError("metric_config", f"{place}{where}: {first['msg']} (as ADK's "
                               "EvalConfig reads it)") from None


def _interval(metric_config: dict[str, Any]) -> tuple[float, float]:
    """The metric's value range from its ``metric_info``, else ADK's default [0, 1]."""
    info = metric_config.get("metric_info") or metric_config.get("metricInfo") or {}
    value_info = info.get("metric_value_info") or info.get("metricValueInfo") or {}
    interval = value_info.get("interval") or {}
    low = interval.get("min_value", interval.get("minValue", 0.0))
    high = interval.get("max_value", interval.get("maxValue", 1.0))
    return float(low), float(high)


@check("adk_custom_metric", prepare=_prepare)
def adk_custom_metric(transcript: Transcript, expectations: Expectations, *, metric: str,
                      criterion: Any, metric_config: dict[str, Any], config_file: str | None,
                      expected_invocations: list[dict[str, Any]] | None,
                      conversation_scenario: dict[str, Any] | None,
                      function: Callable[..., Any] | None = None,
                      low_high: tuple[float, float] = (0.0, 1.0),
                      eval_metric: Any = None) -> CheckResult:
    """ADK's custom metric ``metric`` on the transcript (see the module docstring);
    ``function``, ``low_high`` and ``eval_metric`` are what :func:`_prepare` made."""
    if function is None or eval_metric is None:  # compiled without its prepare
        prepared = _prepare({"metric": metric, "criterion": criterion,
                             "metric_config": metric_config, "config_file": config_file})
        function, low_high = prepared["function"], prepared["low_high"]
        eval_metric = prepared["eval_metric"]
    threshold = _threshold(criterion)
    actual = actual_invocations(transcript)
    expected, scenario = _expected(expected_invocations, conversation_scenario)
    # a copy per call: the metric may change what it is given
    result = _call(function, eval_metric.model_copy(deep=True), actual, expected, scenario)
    return _result(metric, result, threshold, low_high)


def _eval_metric(metric: str, criterion: Any, metric_config: dict[str, Any]) -> Any:
    """The ``EvalMetric`` ADK makes of the config for this metric, threshold cleared."""
    from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config

    config = EvalConfig.model_validate({"criteria": {metric: criterion},
                                        "custom_metrics": {metric: metric_config}})
    made = next(m for m in get_eval_metrics_from_config(config) if m.metric_name == metric)
    made = made.model_copy(deep=True)
    made.threshold = None
    return made


def _threshold(criterion: Any) -> float:
    if isinstance(criterion, dict):
        return float(criterion["threshold"])
    return float(criterion)


def _expected(invocations: list[dict[str, Any]] | None,
              scenario: dict[str, Any] | None) -> tuple[Any, Any]:
    from google.adk.evaluation.conversation_scenarios import ConversationScenario
    from google.adk.evaluation.eval_case import Invocation

    expected = (None if invocations is None
                else [Invocation.model_validate(i) for i in invocations])
    return expected, (None if scenario is None else ConversationScenario.model_validate(scenario))


def _call(function: Callable[..., Any], *args: Any) -> Any:
    """Call the metric; an awaitable it returns is run to its end in a thread of its own
    (checks run inside the run's event loop, which cannot be re-entered)."""
    returned = function(*args)
    if not inspect.isawaitable(returned):
        return returned

    async def finish() -> Any:
        return await returned

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, finish()).result()


def _result(metric: str, result: Any, threshold: float,
            low_high: tuple[float, float]) -> CheckResult:
    from google.adk.evaluation.evaluator import EvaluationResult

    if not isinstance(result, EvaluationResult):
        raise TypeError(f"custom metric {metric!r} returned {type(result).__name__}, not "
                        "ADK's EvaluationResult")
    status = result.overall_eval_status.name
    per_invocation = [r.score for r in result.per_invocation_results]
    details: dict[str, Any] = {"adk_score": result.overall_score, "threshold": threshold,
                               "adk_status": status, "per_invocation": per_invocation}
    score = result.overall_score
    if score is None:
        return CheckResult(name=metric, value=None, passed=None, details=details,
                           unscored_reason=f"custom metric {metric!r} gave no overall score "
                           f"(status {status})")
    low, high = low_high
    value = (score - low) / (high - low) if high > low else float(score >= threshold)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"custom metric {metric!r} scored {score}, outside its range "
                         f"[{low:g}, {high:g}] (metric_info.metric_value_info.interval)")
    return CheckResult(name=metric, value=value, passed=score >= threshold, details=details)


# --- the transcript as ADK's invocations ---------------------------------------------------


def actual_invocations(transcript: Transcript) -> list[Any]:
    """The transcript's user turns as ADK ``Invocation`` objects, in the form ADK's
    evaluation makes of a live run (``InvocationEvents``): every agent reply and tool result
    is an event; the turn's last reply without tool calls is the final response, and its
    event keeps no content (ADK leaves it out there, so it is not counted twice)."""
    from google.adk.evaluation.eval_case import Invocation, InvocationEvent, InvocationEvents
    from google.genai import types

    invocations = []
    for turn, (user, replies) in enumerate(_turns(transcript.messages)):
        events: list[Any] = []
        final: Any = None
        final_index: int | None = None
        for m in replies:
            content = _content(m, types)
            if content is None:
                continue
            events.append(InvocationEvent(author=AUTHOR, content=content))
            if m.role == "assistant" and not m.tool_calls:
                final, final_index = content, len(events) - 1
        if final_index is not None:
            events[final_index] = InvocationEvent(author=AUTHOR, content=None)
        invocations.append(Invocation(
            invocation_id=f"turn-{turn}",
            user_content=types.Content(role="user", parts=[types.Part(text=user.content)]),
            final_response=final, intermediate_data=InvocationEvents(invocation_events=events)))
    return invocations


def _turns(messages: list[Message]) -> list[tuple[Message, list[Message]]]:
    """The conversation cut at each user message: (the user's message, what followed)."""
    turns: list[tuple[Message, list[Message]]] = []
    for m in messages:
        if m.role == "user":
            turns.append((m, []))
        elif turns:
            turns[-1][1].append(m)
    return turns


def _content(m: Message, types: Any) -> Any:
    """One agent reply (its text and tool calls) or tool result as a GenAI ``Content``."""
    from harness.simulation.adk_agent import tool_result_value

    if m.role == "assistant":
        parts = [types.Part(text=m.content)] if m.content else []
        parts += [types.Part(function_call=types.FunctionCall(
            id=c.id or None, name=c.name, args=dict(c.arguments))) for c in m.tool_calls]
        return types.Content(role="model", parts=parts) if parts else None
    if m.role == "tool":
        return types.Content(role="user", parts=[types.Part(
            function_response=types.FunctionResponse(
                id=m.tool_call_id or None, name=m.name or "", response=tool_result_value(m)))])
    return None
