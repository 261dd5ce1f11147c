"""ADK eval cases to scenarios (as the mappings a scenario file holds), with the criteria of a
``test_config.json`` mapped onto checks and rubrics.

A static ``conversation`` becomes a scripted user (one turn per invocation's user text), the
reference tool calls of each turn (``turn`` set), a reference answer per turn (each
invocation's ``final_response``), and mocked tools that answer the recorded arguments with the
recorded results. A ``conversation_scenario`` becomes a simulated user whose opening message
is the starting prompt and whose plan is the conversation plan. ``session_input.state``
becomes the scenario's state. Fields with no home in the scenario format are kept under
``metadata.adk`` so an export writes them back; :func:`not_carried` names them.

Criteria (see docs/adk-vertex.md, "ADK eval sets", for the table): ``tool_trajectory_avg_score`` and
``response_match_score`` become the thresholds of those checks (a check the config does not
name is kept as information only: ``null`` threshold); judged criteria become rubric ids with
``rubric_options`` (threshold, samples, aggregation); inline ADK rubrics become an inline
rubric with one yes/no criterion per ADK rubric.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.formats.adk import EVALSET_SUFFIX, TEST_SUFFIX
from harness.formats.adk.criteria import (
    RUBRIC_TYPES,
    CoherenceCriterion,
    EvalConfig,
    HallucinationsCriterion,
    JudgeCriterion,
    RubricsCriterion,
    TrajectoryCriterion,
    criterion_json,
)
from harness.formats.adk.custom_metrics import custom_metric_check
from harness.formats.adk.evalset import (
    Content,
    EvalCase,
    EvalSet,
    FunctionCall,
    FunctionResponse,
    Invocation,
)

# Rubric ids the judged criteria map to. final_response_match and hallucinations are made by
# the judges section of issue 13; the intermediate variant's spelling is theirs to settle.
FINAL_RESPONSE_MATCH = "final_response_match"
HALLUCINATIONS = "hallucinations"
HALLUCINATIONS_INTERMEDIATE = "hallucinations_intermediate"
SAFETY = "safety"
# Inline rubrics made from ADK's inline rubrics, by criterion. ADK judges the first two per
# invocation (each against the criterion's, the case's and that invocation's rubrics), so
# they are agent_turn rubrics; the multi-turn one judges the conversation once.
INLINE_RUBRIC_IDS = {
    "rubric_based_final_response_quality_v1": ("adk_final_response_quality", "agent_turn"),
    "rubric_based_tool_use_quality_v1": ("adk_tool_use_quality", "agent_turn"),
    "rubric_based_multi_turn_trajectory_quality_v1": ("adk_trajectory_quality",
                                                      "conversation"),
}
# The built-in rubric each of ADK's judged criteria without rubrics of their own maps to.
# response_evaluation_score's threshold is on a 1-5 scale (see COHERENCE_SCALE).
BUILTIN_FOR = {
    "response_evaluation_score": "response_coherence",
    "multi_turn_task_success_v1": "task_completion",
    "multi_turn_trajectory_quality_v1": "trajectory_quality",
    "multi_turn_tool_use_quality_v1": "tool_use_quality",
    "per_turn_user_simulator_quality_v1": "simulator_turns",
}
COHERENCE_SCALE = (1.0, 5.0)  # response_evaluation_score's, normalised to [0, 1] here
# What a test_config.json holds that a run does not use, kept to be written back.
KEPT_CONFIG = ("user_simulator_config", "live_model_config", "custom_metrics",
               "custom_criteria")

# Under an invocation's metadata: the google-genai fields of its tool calls and results that
# describe streaming (read from ADK's full dumps, not carried, not written back).
STREAMING_FIELDS = "streaming_fields_not_carried"

_ID_BAD = re.compile(r"[^A-Za-z0-9_.:-]")
_CRITERION_BAD = re.compile(r"[^a-z0-9_]")


def scenario_id(eval_id: str) -> str:
    """A scenario id from an eval id: characters ids may not hold become ``_``."""
    cleaned = _ID_BAD.sub("_", eval_id)
    return cleaned if re.match(r"^[A-Za-z0-9]", cleaned) else f"case_{cleaned}"


def criterion_id(rubric_id: str) -> str:
    """A rubric criterion id (``[a-z][a-z0-9_]*``) from an ADK rubric id."""
    cleaned = _CRITERION_BAD.sub("_", rubric_id.lower())[:60]
    return cleaned if re.match(r"^[a-z]", cleaned) else f"r_{cleaned}"[:64]


def escape_templates(value: Any) -> Any:
    """Recorded values with ``${`` written as ``$${`` so mocked tools return them verbatim
    (``${...}`` is a template in a tool's answer)."""
    if isinstance(value, str):
        return value.replace("${", "$${")
    if isinstance(value, list):
        return [escape_templates(v) for v in value]
    if isinstance(value, dict):
        return {k: escape_templates(v) for k, v in value.items()}
    return value


def unescape_templates(value: Any) -> Any:
    """The inverse of :func:`escape_templates`."""
    if isinstance(value, str):
        return value.replace("$${", "${")
    if isinstance(value, list):
        return [unescape_templates(v) for v in value]
    if isinstance(value, dict):
        return {k: unescape_templates(v) for k, v in value.items()}
    return value


# --- tools ---------------------------------------------------------------------------------


_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
               (list, "array"), (dict, "object"), (type(None), "null"))


def _json_type(value: Any) -> str:
    return next(name for kind, name in _JSON_TYPES if isinstance(value, kind))


def infer_parameters(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments inferred from the argument objects seen: every
    argument seen is a property typed by the JSON types of its values (integer and number
    together are number), required when every call gave it; other arguments are allowed."""
    types: dict[str, set[str]] = defaultdict(set)
    for args in calls:
        for key, value in args.items():
            types[key].add(_json_type(value))
    properties: dict[str, Any] = {}
    for key, seen in types.items():
        if {"integer", "number"} <= seen:
            seen = seen - {"integer"}
        properties[key] = {"type": next(iter(seen)) if len(seen) == 1 else sorted(seen)}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [k for k in properties if all(k in args for args in calls)]
    if required:
        schema["required"] = required
    return schema


def _pair_responses(
    uses: list[FunctionCall], responses: list[FunctionResponse]
) -> list[FunctionResponse | None]:
    """Each call's recorded response: by id when both have one, else the k-th response of
    that tool name for its k-th call."""
    by_id = {r.id: r for r in responses if r.id}
    queues: dict[str, list[FunctionResponse]] = defaultdict(list)
    for r in responses:
        if not (r.id and any(u.id == r.id for u in uses)):
            queues[r.name].append(r)
    paired: list[FunctionResponse | None] = []
    for use in uses:
        if use.id and use.id in by_id:
            paired.append(by_id[use.id])
        else:
            queue = queues[use.name]
            paired.append(queue.pop(0) if queue else None)
    return paired


def mocked_tools(case: EvalCase) -> list[dict[str, Any]]:
    """The mocked tools of a static conversation: one per tool name called, in order of first
    call; one rule per distinct argument object (exact match) answering the recorded
    responses in turn (a sequence when a call was repeated with other results); a call whose
    response was not recorded answers null; other arguments get an error."""
    recorded: dict[str, dict[str, list[Any]]] = {}
    args_seen: dict[str, list[dict[str, Any]]] = defaultdict(list)
    arg_keys: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for invocation in case.conversation or []:
        uses = invocation.tool_uses()
        for use, response in zip(uses, _pair_responses(uses, invocation.tool_responses()),
                                 strict=True):
            key = _canonical(use.args)
            args_seen[use.name].append(use.args)
            arg_keys[use.name].setdefault(key, use.args)
            recorded.setdefault(use.name, {}).setdefault(key, []).append(
                None if response is None else response.response)
    tools = []
    for name, by_args in recorded.items():
        rules = []
        for key, answers in by_args.items():
            rule: dict[str, Any] = {"when": arg_keys[name][key], "match": "exact"}
            if len(answers) == 1 or all(a == answers[0] for a in answers):
                rule["returns"] = escape_templates(answers[0])
            else:
                rule["sequence"] = [{"returns": escape_templates(a)} for a in answers]
            rules.append(rule)
        tools.append({
            "name": name,
            "description": f"{name} (answers with the responses recorded in the ADK eval set)",
            "parameters": infer_parameters(args_seen[name]),
            "rules": rules,
            "default": {"error": f"no response was recorded for {name} with these arguments"},
        })
    return tools


def _canonical(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=False)


# --- criteria ------------------------------------------------------------------------------


def _rubric_parts(
    config: EvalConfig, case: EvalCase, *, has_reference: bool
) -> tuple[list[str], dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """``(rubrics, rubric_options, inline_rubrics, rubric_details)`` for the judged criteria.
    Criteria that compare with a reference answer apply only when the case has one; the
    simulated user's judge only to a simulated conversation. Raises :class:`ValueError` for
    a rubric-based criterion with no rubric in it, the case or an invocation."""
    rubrics: list[str] = []
    options: dict[str, Any] = {}
    inline: list[dict[str, Any]] = []
    details: dict[str, Any] = {}
    for name, criterion in config.criteria.items():
        if name == "final_response_match_v2" and has_reference:
            assert isinstance(criterion, JudgeCriterion)
            rubrics.append(FINAL_RESPONSE_MATCH)
            options[FINAL_RESPONSE_MATCH] = _judge_options(criterion, "majority")
        elif name == "hallucinations_v1":
            assert isinstance(criterion, HallucinationsCriterion)
            rid = HALLUCINATIONS_INTERMEDIATE if criterion.evaluate_intermediate_nl_responses \
                else HALLUCINATIONS
            rubrics.append(rid)
            options[rid] = _judge_options(criterion, "mean")
        elif name == "safety_v1":
            rubrics.append(SAFETY)
            options[SAFETY] = {"threshold": criterion.threshold}
        elif name in INLINE_RUBRIC_IDS:
            assert isinstance(criterion, RubricsCriterion)
            rid, target = INLINE_RUBRIC_IDS[name]
            rubrics.append(rid)
            options[rid] = {k: v for k, v in _judge_options(criterion, "mean").items()
                            if k != "threshold"}
            combined = _with_case_rubrics(name, criterion, case)
            turns = _rubric_turns(name, criterion, case) if target == "agent_turn" else {}
            inline.append(_inline_rubric(rid, target, combined, details, turns,
                                         invocations=len(case.conversation or [])))
            for rubric in combined.rubrics[len(criterion.rubrics):]:
                # written back with the case, not into the criterion (ADK refuses an id twice)
                details.setdefault(rid, {}).setdefault(criterion_id(rubric.rubric_id),
                                                       {})["from_case"] = True
        elif name in BUILTIN_FOR:
            if name == "per_turn_user_simulator_quality_v1" and case.conversation_scenario \
                    is None:
                continue  # a recorded conversation has no simulated user to judge
            rid = BUILTIN_FOR[name]
            rubrics.append(rid)
            if isinstance(criterion, CoherenceCriterion):
                low, high = COHERENCE_SCALE
                options[rid] = {"threshold": (criterion.threshold - low) / (high - low)}
            else:
                assert isinstance(criterion, JudgeCriterion)
                options[rid] = _judge_options(criterion, "mean")
    return rubrics, options, inline, details


def _with_case_rubrics(name: str, criterion: RubricsCriterion,
                       case: EvalCase) -> RubricsCriterion:
    """``criterion`` with the case's and its invocations' rubrics of the criterion's type
    added after its own, as ADK's rubric-based evaluators take them (a rubric id given
    twice is an error there, and here)."""
    kind = RUBRIC_TYPES[name]
    found = [r for r in case.rubrics or [] if r.type == kind]
    for inv in case.conversation or []:
        found += [r for r in inv.rubrics or [] if r.type == kind]
    combined = [*criterion.rubrics]
    for rubric in found:
        if any(r.rubric_id == rubric.rubric_id for r in combined):
            if rubric in combined:
                continue  # the same rubric on several invocations
            raise ValueError(f"rubric id {rubric.rubric_id!r} is given twice, with different "
                             f"content, for {name}")
        combined.append(rubric)
    if not combined:
        raise ValueError(f"{name} has no rubrics: give them in the criterion (rubrics), or in "
                         f"the eval case or an invocation with type {kind!r}")
    return criterion.model_copy(update={"rubrics": combined})


def _rubric_turns(name: str, criterion: RubricsCriterion,
                  case: EvalCase) -> dict[str, list[int]]:
    """The turns of each rubric that only invocations hold (by rubric id): ADK judges an
    invocation's own rubrics on that invocation alone. The criterion's own rubrics and the
    case's apply to every turn and are not listed."""
    kind = RUBRIC_TYPES[name]
    everywhere = {r.rubric_id for r in criterion.rubrics} | {
        r.rubric_id for r in case.rubrics or [] if r.type == kind}
    turns: dict[str, list[int]] = {}
    for turn, inv in enumerate(case.conversation or []):
        for rubric in inv.rubrics or []:
            if rubric.type == kind and rubric.rubric_id not in everywhere \
                    and turn not in turns.get(rubric.rubric_id, []):
                turns.setdefault(rubric.rubric_id, []).append(turn)
    return turns


def _judge_options(criterion: JudgeCriterion, aggregation: str) -> dict[str, Any]:
    return {"threshold": criterion.threshold,
            "samples": criterion.judge_model_options.num_samples, "aggregation": aggregation}


def _inline_rubric(
    rid: str, target: str, criterion: RubricsCriterion, details: dict[str, Any],
    turns: Mapping[str, list[int]], *, invocations: int,
) -> dict[str, Any]:
    """One yes/no criterion per ADK rubric; the score is the share of rubrics met, as ADK
    scores them. A rubric only some invocations hold is judged on their ``turns`` alone;
    then each criterion weighs its number of turns (``invocations`` for one that applies to
    every turn), so the score is the share over every (rubric, invocation) verdict, ADK's
    pooled mean. What a criterion cannot hold (the original id when it had to change, the
    description, the type) goes to ``details``."""
    criteria = []
    for rubric in criterion.rubrics:
        cid = criterion_id(rubric.rubric_id)
        item: dict[str, Any] = {"id": cid, "question": rubric.rubric_content.text_property
                                or rubric.rubric_id, "scale": "binary"}
        own = turns.get(rubric.rubric_id)
        if own is not None:
            item["turns"] = own
        if turns and len(own or range(invocations)) != 1:
            item["weight"] = len(own or range(invocations))
        criteria.append(item)
        extra = {k: v for k, v in (("rubric_id", rubric.rubric_id if cid != rubric.rubric_id
                                    else None),
                                   ("description", rubric.description), ("type", rubric.type),
                                   ("text_property_missing",
                                    True if rubric.rubric_content.text_property is None
                                    else None))
                 if v is not None}
        if extra:
            details.setdefault(rid, {})[cid] = extra
    return {"id": rid, "description": f"ADK's inline rubrics ({rid})", "target": target,
            "threshold": criterion.threshold, "criteria": criteria}


_CARRIED = {"threshold", "match_type", "ignore_args", "rubrics",
            "evaluate_intermediate_nl_responses"}


def criteria_extras(config: EvalConfig) -> dict[str, Any]:
    """What the criteria hold beyond what the scenario carries (judge model names and
    settings, ``include_intermediate_responses_in_final``), by criterion, to write back."""
    extras: dict[str, Any] = {}
    for name, criterion in config.criteria.items():
        data = criterion_json(criterion)
        if not isinstance(data, dict):
            continue
        rest = {k: v for k, v in data.items() if k not in _CARRIED}
        options = dict(rest.pop("judge_model_options", {}))
        options.pop("num_samples", None)
        if options:
            rest["judge_model_options"] = options
        if rest:
            extras[name] = rest
    return extras


# --- cases ---------------------------------------------------------------------------------


def case_to_scenario(eval_set: EvalSet, case: EvalCase, config: EvalConfig) -> dict[str, Any]:
    """One eval case as a scenario mapping (see the module docstring)."""
    meta: dict[str, Any] = {"eval_set_id": eval_set.eval_set_id, "eval_id": case.eval_id}
    for key in ("name", "description"):
        if getattr(eval_set, key) is not None:
            meta[f"eval_set_{key}"] = getattr(eval_set, key)
    if eval_set.creation_timestamp:
        meta["eval_set_creation_timestamp"] = eval_set.creation_timestamp
    if case.creation_timestamp:
        meta["creation_timestamp"] = case.creation_timestamp
    scenario: dict[str, Any] = {"id": scenario_id(case.eval_id)}
    if case.conversation is not None:
        _static(scenario, meta, case, config)
    else:
        _simulated(scenario, meta, case, config)
    if case.session_input is not None:
        session = case.session_input.model_dump(mode="json", exclude={"state"},
                                                exclude_none=True)
        meta["session_input"] = session
        scenario["state"] = case.session_input.state
    if case.rubrics:
        meta["rubrics"] = [r.model_dump(mode="json", exclude_none=True) for r in case.rubrics]
    if case.final_session_state:
        meta["final_session_state"] = case.final_session_state
    if case.model_extra:
        meta["case_extra"] = dict(case.model_extra)
    extras = criteria_extras(config)
    if extras:
        meta["criteria_extra"] = extras
    checks = _custom_metric_checks(case, config)
    if checks:
        scenario["checks"] = checks
    for key in KEPT_CONFIG:  # kept to be written back, not used by a run
        if getattr(config, key):
            meta[key] = getattr(config, key)
    scenario["metadata"] = {"adk": meta}
    return scenario


def _custom_metric_checks(case: EvalCase, config: EvalConfig) -> list[dict[str, Any]]:
    """A check per criterion a custom metric defines, which runs the metric's function on the
    sample as ADK would (:mod:`harness.formats.adk.custom_metrics`), given the case's
    recorded invocations (or its conversation scenario) as ADK gives them."""
    metrics = config.custom_metrics or {}
    expected = None if case.conversation is None else [
        inv.model_dump(mode="json", exclude_none=True) for inv in case.conversation]
    scenario = None if case.conversation_scenario is None else \
        case.conversation_scenario.model_dump(mode="json", exclude_none=True)
    return [custom_metric_check(name, criterion, metrics[name], config_file=config.source,
                                expected=expected, scenario=scenario)
            for name, criterion in config.custom_criteria.items() if name in metrics]


def _static(scenario: dict[str, Any], meta: dict[str, Any], case: EvalCase,
            config: EvalConfig) -> None:
    invocations = case.conversation or []
    script = [inv.user_content.text for inv in invocations]
    calls, answers, inv_meta = [], [], []
    most_calls = 0
    for turn, inv in enumerate(invocations):
        uses = inv.tool_uses()
        most_calls = max(most_calls, len(uses))
        calls += [{"name": u.name, "args": u.args, "turn": turn} for u in uses]
        answer = reference_answer(turn, inv.final_response)
        if answer is not None:
            answers.append(answer)
        inv_meta.append(_invocation_meta(inv, answer))
    scenario["user"] = {"goal": f"replay the {len(script)} recorded turn(s) of ADK eval case "
                        f"{case.eval_id!r}", "script": script}
    scenario["agent"] = {}
    scenario["tools"] = mocked_tools(case)
    limits: dict[str, Any] = {}
    if len(script) > 10:
        limits["max_user_turns"] = len(script)
    if most_calls + 1 > 10:
        limits["max_agent_steps"] = most_calls + 1
    if len(calls) > 50:
        limits["max_tool_calls"] = len(calls)
    if limits:
        scenario["limits"] = limits
    # ADK's criteria are computed as ADK computes them, over every invocation
    expectations: dict[str, Any] = {"tool_calls": calls, "adk_invocations": len(invocations)}
    trajectory = config.criteria.get("tool_trajectory_avg_score")
    if isinstance(trajectory, TrajectoryCriterion):
        expectations["adk_trajectory_match"] = trajectory.match_type
        expectations["trajectory_threshold"] = trajectory.threshold
        if trajectory.ignore_args:
            expectations["arg_matching"] = {"mode": "ignore"}
    else:
        expectations["trajectory_threshold"] = None
    match = config.criteria.get("response_match_score")
    if answers or match is not None:  # ADK scores a case without final responses 0
        expectations["reference_answers"] = answers
        expectations["response_match_threshold"] = None if match is None else match.threshold
    scenario["expectations"] = expectations
    has_reference = any(a["answer"].strip() for a in answers)
    rubrics, options, inline, details = _rubric_parts(config, case,
                                                      has_reference=has_reference)
    _set_rubrics(scenario, rubrics, options, inline)
    if details:
        meta["rubric_details"] = details
    meta["invocations"] = inv_meta


def reference_answer(turn: int, content: Content | None) -> dict[str, Any] | None:
    """A turn's reference answer (``turn``, ``answer``, and ``thought`` when the
    ``final_response`` has thinking text), or ``None`` when it has no text at all."""
    if content is None:
        return None
    thought = "\n".join(p.text for p in content.parts if p.text and p.thought)
    if not (content.text.strip() or thought.strip()):
        return None
    return {"turn": turn, "answer": content.text, **({"thought": thought} if thought else {})}


def rebuilt_final_response(answer: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``final_response`` an export writes for a reference answer when none is kept:
    the thinking text as a thought part, then the answer as a text part."""
    if answer is None:
        return None
    parts = [{"text": answer["thought"], "thought": True}] if answer.get("thought") else []
    if answer.get("answer"):
        parts.append({"text": answer["answer"]})
    return {"role": "model", "parts": parts}


def _invocation_meta(inv: Invocation, answer: Mapping[str, Any] | None) -> dict[str, Any]:
    """What an invocation holds beyond the user's text, the tool calls and results and the
    final answer's text: among it the whole ``final_response`` when the reference answer
    alone would not write it back as it was (a part with no text, media, several parts)."""
    data = inv.model_dump(mode="json", exclude_none=True, exclude_defaults=True,
                          exclude={"user_content", "final_response", "intermediate_data"})
    ids = [u.id for u in inv.tool_uses()]
    if any(ids):
        data["tool_use_ids"] = ids
    texts = inv.intermediate_texts()
    if texts:
        data["intermediate_responses"] = [list(t) for t in texts]
    streamed = sorted({f"{kind}.{name}" for kind, items, names in (
        ("tool_uses", inv.tool_uses(), ("partial_args", "will_continue")),
        ("tool_responses", inv.tool_responses(), ("parts", "scheduling", "will_continue")))
        for item in items for name in names if getattr(item, name) is not None})
    if streamed:  # named by import's "not carried", never written back: no bearing on scores
        data[STREAMING_FIELDS] = streamed
    if inv.user_content.uncarried_parts:
        data["user_content_uncarried"] = inv.user_content.model_dump(mode="json",
                                                                     exclude_none=True)
    final = None if inv.final_response is None else inv.final_response.model_dump(
        mode="json", exclude_none=True)
    if final != rebuilt_final_response(answer):
        data["final_response_uncarried"] = final
    return data


def _simulated(scenario: dict[str, Any], meta: dict[str, Any], case: EvalCase,
               config: EvalConfig) -> None:
    sc = case.conversation_scenario
    assert sc is not None
    user: dict[str, Any] = {"goal": sc.conversation_plan.strip().splitlines()[0]
                            if sc.conversation_plan.strip() else sc.starting_prompt,
                            "opening_message": sc.starting_prompt,
                            "plan": sc.conversation_plan}
    persona = sc.user_persona
    if isinstance(persona, str):
        user["persona_preset"] = persona
    elif persona is not None:
        meta["user_persona"] = persona.model_dump(mode="json")
        user["persona"] = "\n".join([persona.description, *(
            f"- {b.name}: {b.description} " + " ".join(b.behavior_instructions)
            for b in persona.behaviors)]).strip()
    scenario["user"] = user
    scenario["agent"] = {}
    rubrics, options, inline, details = _rubric_parts(config, case, has_reference=False)
    _set_rubrics(scenario, rubrics, options, inline)
    if details:
        meta["rubric_details"] = details


def _set_rubrics(scenario: dict[str, Any], rubrics: list[str], options: dict[str, Any],
                 inline: list[dict[str, Any]]) -> None:
    if rubrics:
        scenario["rubrics"] = rubrics
    options = {k: v for k, v in options.items() if v}
    if options:
        scenario["rubric_options"] = options
    if inline:
        scenario["inline_rubrics"] = inline


def eval_set_to_scenarios(
    eval_set: EvalSet, config: EvalConfig, source: str | Path = "<eval set>"
) -> list[dict[str, Any]]:
    """Every case of an eval set as a scenario mapping, in file order. Raises
    :class:`InputError` naming ``source`` for a recorded user turn with no text (a scripted
    turn must say something), or a rubric-based criterion with no rubric for a case."""
    for i, case in enumerate(eval_set.eval_cases):
        for j, invocation in enumerate(case.conversation or []):
            if not invocation.user_content.text.strip():
                raise InputError(source, f"eval_cases[{i}].conversation[{j}].user_content",
                                 "the user's turn has no text")
    mappings = []
    for i, case in enumerate(eval_set.eval_cases):
        try:
            mappings.append(case_to_scenario(eval_set, case, config))
        except ValueError as err:
            raise InputError(source, f"eval_cases[{i}].rubrics", str(err)) from None
    return mappings


def not_carried(scenario: dict[str, Any]) -> list[str]:
    """The ADK fields of a converted scenario kept only under ``metadata.adk`` (no other home
    here): written back on export, not used by a run."""
    meta = scenario.get("metadata", {}).get("adk", {})
    names = []
    for key, value in meta.items():
        if key in ("eval_set_id", "eval_id"):
            continue
        inner: set[str] = set()
        if key == "invocations":
            inner = {k for item in value for k in item}
        elif key in ("session_input", "case_extra", "criteria_extra"):
            inner = set(value)
        names.append(f"{key} ({', '.join(sorted(inner))})" if inner else key)
    return sorted(names)


def source_name(path: Path) -> str:
    """The file name without its ADK suffix."""
    return path.name.removesuffix(EVALSET_SUFFIX).removesuffix(TEST_SUFFIX)

