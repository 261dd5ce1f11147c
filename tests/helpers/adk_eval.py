"""ADK's own evaluation, as the oracle of the parity tests: an agent run on an eval set by
``LocalEvalService`` (the service ``adk eval`` and ``AgentEvaluator`` run on) and scored by
the evaluators an ``EvalConfig`` names, custom metrics included.

It needs the ``adk-eval`` extra (google-adk and google-cloud-aiplatform without its
``evaluation`` extra; docs/adk-vertex.md says why not ``google-adk[eval]``). Without it
:func:`require_adk_eval` skips, unless ``HARNESS_REQUIRE_ADK_EVAL=1`` (set by ``.ci/run``)
makes that a failure."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from harness.testing.hub import loopback_environ
from harness.testing.replies import RecordedRequest, Reply
from harness.testing.server import LoopbackServer

Script = Mapping[str, tuple[list[tuple[str, dict[str, Any]]], str]]
"""The agent model's replies by the user's last words: the tool calls it makes, then (once
their results came back) its answer."""


def scripted_gemini(script: Script) -> Callable[[RecordedRequest], Reply]:
    """A loopback responder playing the ADK agent's Gemini model from ``script``."""

    def reply(request: RecordedRequest) -> Reply:
        contents = request.messages
        texts = [p["text"] for c in contents if c["role"] == "user"
                 for p in c.get("parts", []) if "text" in p]
        calls, answer = script[texts[-1]]
        answered = any("functionResponse" in p for p in contents[-1].get("parts", []))
        return Reply.text_reply(answer) if answered else Reply.calls(*calls)

    return reply


def point_adk_agent_at(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch,
                       script: Script, example: Path) -> LoopbackServer:
    """The environment pointing ADK's model at ``loopback`` answering from ``script``, with
    the example agent's folder on ``sys.path``."""
    for name, value in loopback_environ(loopback).items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(example))
    loopback.set_responder(scripted_gemini(script))
    return loopback


def require_adk_eval() -> None:
    """Skip (or fail, under ``HARNESS_REQUIRE_ADK_EVAL=1``) when ADK's evaluation does not
    import; called at a test module's top, it skips the whole module."""
    try:
        import google.adk.evaluation.local_eval_service  # noqa: F401
    except ImportError as err:
        why = (f"ADK's evaluation does not import ({err}); "
               "python -m pip install -e '.[test,adk,adk-eval]' installs what it needs")
        if os.environ.get("HARNESS_REQUIRE_ADK_EVAL"):
            pytest.fail(why + "; HARNESS_REQUIRE_ADK_EVAL forbids skipping")
        pytest.skip(why, allow_module_level=True)


async def adk_eval_scores(agent: Any, eval_set_path: Path, config_path: Path, *,
                          app_name: str) -> dict[str, dict[str, float | None]]:
    """Each eval case's overall score per metric, as ADK's evaluation gives it for one run of
    ``agent`` on the eval set with the config's criteria and custom metrics."""
    from google.adk.evaluation.base_eval_service import (
        EvaluateConfig,
        EvaluateRequest,
        InferenceConfig,
        InferenceRequest,
    )
    from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
    from google.adk.evaluation.local_eval_service import LocalEvalService
    from google.adk.evaluation.metric_evaluator_registry import (
        DEFAULT_METRIC_EVALUATOR_REGISTRY,
        register_custom_metrics_from_config,
    )

    config = EvalConfig.model_validate_json(config_path.read_text())
    eval_set = EvalSet.model_validate_json(eval_set_path.read_text())
    sets = InMemoryEvalSetsManager()
    sets.create_eval_set(app_name=app_name, eval_set_id=eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        sets.add_eval_case(app_name=app_name, eval_set_id=eval_set.eval_set_id, eval_case=case)
    service = LocalEvalService(
        root_agent=agent, eval_sets_manager=sets,
        # a fork, as AgentEvaluator does: the config's custom metrics belong to this run only
        metric_evaluator_registry=register_custom_metrics_from_config(
            config, DEFAULT_METRIC_EVALUATOR_REGISTRY.fork()))
    request = InferenceRequest(app_name=app_name, eval_set_id=eval_set.eval_set_id,
                               inference_config=InferenceConfig(parallelism=1))
    inferences = [result async for result in service.perform_inference(request)]
    evaluate = EvaluateRequest(inference_results=inferences, evaluate_config=EvaluateConfig(
        eval_metrics=get_eval_metrics_from_config(config), parallelism=1))
    return {result.eval_id: {r.metric_name: r.score for r in result.overall_eval_metric_results}
            async for result in service.evaluate(evaluate)}
