"""Scenarios to an ADK eval set and its ``test_config.json`` (the inverse of
:mod:`harness.formats.adk.convert`).

A scripted user becomes a static ``conversation``: one invocation per scripted turn, with
that turn's reference answer as ``final_response``, its reference tool calls as
``tool_uses`` and, for each call, the response a mocked tool's rule records for exactly those
arguments (``match: exact``). A simulated user becomes a ``conversation_scenario``. Fields
kept under ``metadata.adk`` on import are written back. The criteria are read off the
scenarios' thresholds and rubrics; what ADK cannot express (a rubric other than the ones the
criteria map to, a check ADK has no criterion for) is listed by :func:`export_eval_set` as not
carried.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from harness.checks.run import check_name
from harness.errors import InputError
from harness.formats.adk.convert import (
    BUILTIN_FOR,
    COHERENCE_SCALE,
    FINAL_RESPONSE_MATCH,
    HALLUCINATIONS,
    HALLUCINATIONS_INTERMEDIATE,
    INLINE_RUBRIC_IDS,
    SAFETY,
    STREAMING_FIELDS,
    rebuilt_final_response,
    reference_answer,
    unescape_templates,
)
from harness.formats.adk.custom_metrics import CHECK_USE as CUSTOM_METRIC_USE
from harness.formats.adk.evalset import Content
from harness.json_values import json_equal
from harness.scenarios.schema import Scenario

_INLINE_CRITERIA = {rid: name for name, (rid, _) in INLINE_RUBRIC_IDS.items()}
_JUDGED = {FINAL_RESPONSE_MATCH: "final_response_match_v2", HALLUCINATIONS: "hallucinations_v1",
           HALLUCINATIONS_INTERMEDIATE: "hallucinations_v1", SAFETY: "safety_v1",
           **{rid: name for name, rid in BUILTIN_FOR.items()}}
_CHECK_FIELDS = ("tool_order", "single_tool_use", "parameters", "forbidden_tools",
                 "no_tool_calls", "max_tool_calls", "reference_answer", "required_phrases",
                 "latency_budget_s", "final_state", "response_matches", "response_json_schema",
                 "response_max_chars")


@dataclass
class Export:
    """An eval set and its ``test_config.json`` as JSON-ready mappings, and what the scenarios
    hold that ADK's format cannot (one line each, naming the scenario)."""

    eval_set: dict[str, Any]
    test_config: dict[str, Any]
    not_carried: list[str] = field(default_factory=list)


def _adk(scenario: Scenario) -> dict[str, Any]:
    meta = scenario.metadata.get("adk")
    return meta if isinstance(meta, dict) else {}


def _content(text: str, role: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


def _recorded_response(scenario: Scenario, name: str, args: dict[str, Any],
                       occurrence: int) -> Any:
    """The response a tool's exact-match rule records for ``args`` at its ``occurrence``-th
    call with them (0-based), or None."""
    tool = scenario.tool(name)
    if tool is None:
        return None
    for rule in tool.rules:
        if rule.match != "exact" or not json_equal(rule.when, args):
            continue
        if rule.sequence:
            step = rule.sequence[min(occurrence, len(rule.sequence) - 1)]
            return unescape_templates(step.returns) if "returns" in step.model_fields_set \
                else None
        return unescape_templates(rule.returns) if "returns" in rule.model_fields_set else None
    return None


def _conversation(scenario: Scenario) -> list[dict[str, Any]]:
    meta = _adk(scenario)
    stored = meta.get("invocations") or []
    exp = scenario.expectations
    answers = {a.turn: a.model_dump(exclude_none=True) for a in exp.reference_answers or []}
    script = scenario.user.script or []
    if exp.reference_answer is not None and script:
        answers.setdefault(len(script) - 1, {"turn": len(script) - 1,
                                             "answer": exp.reference_answer})
    seen: Counter[str] = Counter()
    invocations = []
    for turn, text in enumerate(script):
        extra = dict(stored[turn]) if turn < len(stored) and isinstance(stored[turn], dict) \
            else {}
        extra.pop(STREAMING_FIELDS, None)  # named on import, no bearing on a score
        ids = extra.pop("tool_use_ids", None) or []
        intermediate = extra.pop("intermediate_responses", [])
        user_content = extra.pop("user_content_uncarried", None) or _content(text, "user")
        final = _final_response(extra.pop("final_response_uncarried", None),
                                answers.get(turn), turn)
        calls = [c for c in exp.tool_calls or [] if (c.turn or 0) == turn]
        uses, responses = [], []
        for k, call in enumerate(calls):
            use: dict[str, Any] = {"name": call.name, "args": call.args}
            call_id = ids[k] if k < len(ids) else None
            if call_id:
                use = {"id": call_id, **use}
            uses.append(use)
            key = f"{call.name}:{json.dumps(call.args, sort_keys=True)}"
            response = _recorded_response(scenario, call.name, call.args, seen[key])
            seen[key] += 1
            if response is not None:
                responses.append({**({"id": call_id} if call_id else {}), "name": call.name,
                                  "response": response})
        invocation: dict[str, Any] = {
            "invocation_id": extra.pop("invocation_id", ""),
            "user_content": user_content,
        }
        if final is not None:
            invocation["final_response"] = final
        invocation["intermediate_data"] = {
            "tool_uses": uses, "tool_responses": responses,
            "intermediate_responses": [[author, [{"text": text}]]
                                       for author, text in intermediate],
        }
        invocation.update(extra)
        invocations.append(invocation)
    return invocations


def _final_response(kept: Any, answer: dict[str, Any] | None, turn: int) -> Any:
    """The ``final_response`` kept on import when it still holds the scenario's reference
    answer for ``turn`` (text and thinking text), else one made from the answer."""
    if isinstance(kept, dict):
        try:
            held = reference_answer(turn, Content.model_validate(kept))
        except ValidationError:
            held = None
        if held == answer:
            return kept
    return rebuilt_final_response(answer)


def _conversation_scenario(scenario: Scenario) -> dict[str, Any]:
    meta = _adk(scenario)
    user = scenario.user
    out: dict[str, Any] = {"starting_prompt": user.opening_message or user.goal,
                           "conversation_plan": user.plan or user.goal}
    if user.persona_preset:
        out["user_persona"] = user.persona_preset
    elif meta.get("user_persona"):
        out["user_persona"] = meta["user_persona"]
    elif user.persona:
        out["user_persona"] = {"id": "CUSTOM", "description": user.persona, "behaviors": []}
    return out


def _case(scenario: Scenario, notes: list[str]) -> dict[str, Any]:
    meta = _adk(scenario)
    case: dict[str, Any] = {"eval_id": meta.get("eval_id", scenario.id)}
    if scenario.user.scripted:
        case["conversation"] = _conversation(scenario)
    else:
        case["conversation_scenario"] = _conversation_scenario(scenario)
    if "session_input" in meta or scenario.state is not None:
        session = dict(meta.get("session_input") or {"app_name": meta.get(
            "eval_set_id", "harness"), "user_id": "user"})
        session["state"] = scenario.state or {}
        case["session_input"] = session
    for key in ("creation_timestamp", "rubrics", "final_session_state"):
        if key in meta:
            case[key] = meta[key]
    case.update(meta.get("case_extra") or {})
    exp = scenario.expectations
    lost = [name for name in _CHECK_FIELDS
            if getattr(exp, name) not in (None, [], False)
            and not (name == "reference_answer" and scenario.user.scripted)]
    lost += [f"rubric {r}" for r in scenario.rubrics
             if r not in _JUDGED and r not in _INLINE_CRITERIA]
    # a custom metric's check is written back as its custom_metrics entry and criterion
    lost += [f"check {check_name(c)}" for c in scenario.checks if c.use != CUSTOM_METRIC_USE]
    if scenario.scoring.weights:
        lost.append("scoring.weights")
    agent = scenario.agent
    if agent.system_prompt or agent.model or agent.callable or agent.http:
        lost.append("agent")
    if lost:
        notes.append(f"{scenario.id}: not carried (ADK has no field for it): "
                     f"{', '.join(lost)}")
    return case


def _criteria(scenario: Scenario, thresholds: Mapping[str, float]) -> dict[str, Any]:
    """The criteria one scenario's thresholds and rubrics stand for (JSON-ready);
    ``thresholds`` are the loaded rubrics' own, for rubrics the scenario sets none for."""
    exp = scenario.expectations
    out: dict[str, Any] = {}
    if exp.tool_calls is not None and exp.trajectory_threshold is not None:
        trajectory: dict[str, Any] = {"threshold": exp.trajectory_threshold}
        if exp.adk_trajectory_match != "EXACT":
            trajectory["match_type"] = exp.adk_trajectory_match
        if exp.arg_matching.mode == "ignore":
            trajectory["ignore_args"] = True
        out["tool_trajectory_avg_score"] = trajectory
    if exp.reference_answers is not None and exp.response_match_threshold is not None:
        out["response_match_score"] = exp.response_match_threshold
    details = _adk(scenario).get("rubric_details") or {}
    for rid in scenario.rubrics:
        options = scenario.rubric_options.get(rid)
        samples = {"judge_model_options": {"num_samples": options.samples}} \
            if options is not None and options.samples is not None else {}
        threshold = options.threshold if options is not None else None
        if rid in _JUDGED:
            name = _JUDGED[rid]
            entry: dict[str, Any] = {"threshold": thresholds.get(rid, 0.5)
                                     if threshold is None else threshold}
            if name == "response_evaluation_score":  # back on its 1-5 scale
                low, high = COHERENCE_SCALE
                entry["threshold"] = low + entry["threshold"] * (high - low)
            elif name != "safety_v1":
                entry.update(samples)
            if rid == HALLUCINATIONS_INTERMEDIATE:
                entry["evaluate_intermediate_nl_responses"] = True
            out[name] = entry
        elif rid in _INLINE_CRITERIA:
            rubric = scenario.inline_rubric(rid)
            if rubric is None:
                continue
            rubrics = []
            for crit in rubric.criteria:
                extra = dict((details.get(rid) or {}).get(crit.id) or {})
                if extra.pop("from_case", False):
                    continue  # the eval case or an invocation holds it, written back there
                item: dict[str, Any] = {"rubric_id": extra.pop("rubric_id", crit.id)}
                item["rubric_content"] = {} if extra.pop("text_property_missing", False) \
                    else {"text_property": crit.question}
                item.update(extra)
                rubrics.append(item)
            out[_INLINE_CRITERIA[rid]] = {"threshold": rubric.threshold, **samples,
                                          **({"rubrics": rubrics} if rubrics else {})}
    for name, extra in (_adk(scenario).get("criteria_extra") or {}).items():
        if name in out and isinstance(out[name], dict):
            for key, value in extra.items():
                if isinstance(value, dict) and isinstance(out[name].get(key), dict):
                    out[name][key] = {**value, **out[name][key]}
                else:
                    out[name].setdefault(key, value)
    return {k: v["threshold"] if isinstance(v, dict) and set(v) == {"threshold"} else v
            for k, v in out.items()}


def export_eval_set(
    scenarios: list[Scenario], default_id: str, thresholds: Mapping[str, float] | None = None
) -> Export:
    """Scenarios as one ADK eval set and its ``test_config.json``. ``default_id`` is the eval
    set id when the scenarios do not carry one (e.g. the output file's name); ``thresholds``
    the loaded rubrics' thresholds by id (a judged criterion needs one). Raises
    :class:`InputError` when two scenarios ask for one criterion with different settings
    (``test_config.json`` holds one per eval set)."""
    if not scenarios:
        raise InputError("<scenarios>", None, "nothing to export: no scenario selected")
    notes: list[str] = []
    first = _adk(scenarios[0])
    eval_set: dict[str, Any] = {"eval_set_id": first.get("eval_set_id", default_id)}
    for key in ("name", "description"):
        if f"eval_set_{key}" in first:
            eval_set[key] = first[f"eval_set_{key}"]
    eval_set["eval_cases"] = [_case(s, notes) for s in scenarios]
    if "eval_set_creation_timestamp" in first:
        eval_set["creation_timestamp"] = first["eval_set_creation_timestamp"]
    criteria: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for scenario in scenarios:
        for name, value in _criteria(scenario, thresholds or {}).items():
            if name in criteria and criteria[name] != value:
                raise InputError(scenario.source or scenario.id, None,
                                 f"criterion {name} is {value!r} here but {criteria[name]!r} "
                                 f"in scenario {owner[name]!r}; a test_config.json holds one "
                                 "setting per eval set: export them separately")
            criteria[name], owner[name] = value, scenario.id
    criteria.update(first.get("custom_criteria") or {})
    config: dict[str, Any] = {"criteria": criteria}
    for key in ("user_simulator_config", "live_model_config", "custom_metrics"):
        if first.get(key) is not None:
            config[key] = first[key]
    return Export(eval_set=eval_set, test_config=config, not_carried=notes)
