"""From a conversation to a scenario ("save as scenario"): a stored transcript and the
scenario it was played from become a new scenario that replays it.

- the user's turns are scripted (no simulator needed), in the order they were sent;
- the agent's tool calls become the reference trajectory (``expectations.tool_calls``, each
  with its turn), its last answer the reference answer;
- each tool the agent called answers with what it answered then: one fixed answer, or a
  sequence in call order when the answers differed (an injected error stays an error); tools
  it did not call keep their definition;
- the agent, rubrics, scoring, custom checks, state and tags are the original's; limits are
  raised where the conversation needs more.

Calls the harness itself refused (an unknown tool, invalid arguments, past the tool-call
limit) are not part of the reference: the tool never answered them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.errors import InputError
from harness.scenarios.loading import parse_scenario
from harness.scenarios.schema import Scenario
from harness.transcript import ToolCallRecord, Transcript

_REFUSED_BY_HARNESS = frozenset({"unknown_tool", "invalid_arguments", "tool_call_limit"})
_USER_KEPT = ("persona", "goal", "known_facts", "unknown_facts", "history")


def _answer(call: ToolCallRecord) -> dict[str, Any]:
    """The fixed answer that gives the agent what ``call`` gave it."""
    if call.is_error:
        result = call.result
        text = result.get("error") if isinstance(result, dict) else result
        return {"error": str(text if text is not None else call.error or "error")}
    return {"returns": call.result}


def _tool(definition: dict[str, Any], calls: list[ToolCallRecord]) -> dict[str, Any]:
    kept: dict[str, Any] = {k: definition[k] for k in ("name", "description", "parameters")
                            if k in definition}
    answers = [_answer(c) for c in calls]
    if all(a == answers[0] for a in answers):
        return {**kept, **answers[0]}
    return {**kept, "sequence": answers, "after_sequence": "repeat_last"}


class _ScenarioDumper(yaml.SafeDumper):
    """YAML as a person writes it: text of several lines as a literal block."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and value == value.strip(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ScenarioDumper.add_representer(str, _text)


def scenario_data(transcript: Transcript, original: Scenario, *, new_id: str | None = None,
                  origin: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The new scenario as the mapping its YAML file holds (see the module docstring).
    ``new_id`` defaults to ``<original id>-epoch-<epoch>``; ``origin`` (e.g. the run
    directory) is kept under ``metadata.saved_from`` with the sample's id and epoch. Raises
    :class:`InputError` when the transcript holds no user turn to script, or its scenario's
    history opens the conversation (a user message last, which a script cannot follow)."""
    where = f"{transcript.scenario_id} epoch {transcript.epoch}"
    if original.user.history_opening() is not None:
        raise InputError(where, "user.history", "the scenario's history ends with the user's "
                         "message, which a scripted user cannot follow; end it with the agent's "
                         "message to save its conversations as scenarios")
    turns = [m.content for m in transcript.messages if m.role == "user" and m.content.strip()]
    if not turns:
        raise InputError(where, "transcript", "holds no user message to script")
    base = original.model_dump(mode="json", exclude_unset=True)
    answered = [c for c in transcript.tool_calls if c.error not in _REFUSED_BY_HARNESS]
    tools = []
    for definition in base.get("tools", []):
        calls = [c for c in answered if c.name == definition["name"]]
        tools.append(_tool(definition, calls) if calls else definition)
    final = next((m.content for m in reversed(transcript.messages)
                  if m.role == "assistant" and m.content.strip()), None)
    expectations: dict[str, Any] = {
        "tool_calls": [{"name": c.name, "args": c.arguments, "turn": c.turn} for c in answered]}
    if "arg_matching" in base.get("expectations", {}):
        expectations["arg_matching"] = base["expectations"]["arg_matching"]
    if final is not None:
        expectations["reference_answer"] = final
    limits = dict(base.get("limits", {}))
    limits["max_user_turns"] = max(original.limits.max_user_turns, len(turns))
    limits["max_tool_calls"] = max(original.limits.max_tool_calls, len(transcript.tool_calls))
    data: dict[str, Any] = {
        "id": new_id or f"{original.id}-epoch-{transcript.epoch}",
        "description": (f"Saved from {original.id} epoch {transcript.epoch}"
                        + (f": {original.description}" if original.description else "")),
        "tags": list(original.tags),
        "user": {**{k: base["user"][k] for k in _USER_KEPT if k in base["user"]},
                 "script": turns},
        "agent": base["agent"],
        "tools": tools,
        "limits": limits,
        "expectations": expectations,
        "metadata": {"saved_from": {**(origin or {}), "scenario_id": transcript.scenario_id,
                                    "epoch": transcript.epoch}},
    }
    for key in ("state", "checks", "scoring", "rubrics", "rubric_options", "inline_rubrics"):
        if key in base:
            data[key] = base[key]
    return data


def scenario_from_transcript(transcript: Transcript, original: Scenario, *,
                             new_id: str | None = None,
                             origin: Mapping[str, Any] | None = None,
                             known_rubrics: Collection[str] | None = None) -> Scenario:
    """The new scenario (:func:`scenario_data`), validated as a scenario file is: raises
    :class:`InputError`/:class:`~harness.errors.InputErrors` naming the field when it is not
    a valid scenario (e.g. a rubric not in ``known_rubrics``)."""
    data = scenario_data(transcript, original, new_id=new_id, origin=origin)
    return parse_scenario(data, source=f"the scenario saved from {original.id}",
                          base_dir=original.base_dir, known_rubrics=known_rubrics)


def write_scenario_yaml(scenario: Scenario, path: Path, *,
                        known_rubrics: Collection[str] | None = None) -> Path:
    """Write ``scenario`` as one YAML scenario file at ``path`` (its folder must exist) and
    return the path. It is validated first as the file will be read, from its folder (a
    Python agent or tool handler must be importable from there), and a file is never
    replaced: raises :class:`InputError`/:class:`~harness.errors.InputErrors` naming the
    file when it would not load, exists already or cannot be written."""
    data = scenario.model_dump(mode="json", exclude_unset=True)
    if path.exists() or path.is_symlink():
        raise InputError(path, None, "exists already; choose another file name (a saved "
                         "scenario never replaces a file)")
    parse_scenario(data, source=path, base_dir=path.parent, known_rubrics=known_rubrics)
    saved = data.get("metadata", {}).get("saved_from", {})
    header = (f"# Saved from a conversation of {saved.get('scenario_id', '?')} (epoch "
              f"{saved.get('epoch', '?')}).\n# The user's turns are scripted, the agent's tool "
              "calls are the reference trajectory,\n# its last answer the reference answer; "
              "the tools it called answer as they did.\n")
    # Each tool reads name first, as people write them.
    data["tools"] = [{**{k: t[k] for k in ("name", "description", "parameters") if k in t},
                      **t} for t in data.get("tools", [])]
    text = header + yaml.dump(data, Dumper=_ScenarioDumper, sort_keys=False,
                              allow_unicode=True, width=88)
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise InputError(path, None, "exists already; choose another file name (a saved "
                         "scenario never replaces a file)") from None
    except OSError as err:
        raise InputError(path, None, f"cannot be written ({err.strerror or err}); expected a "
                         "new scenario file in an existing folder") from None
    return path
