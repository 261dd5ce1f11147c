"""Checks that span fields of a scenario (pydantic checks each field alone): tool names that
other fields reference, templates, limits against the script, Python paths that must import,
and rubric ids. Each problem carries the field path it is about, so the loader can name the
file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.checks.args import CheckConfigError
from harness.checks.builtins import (
    BUILTIN_CHECK_NAMES,
    builtin_spec_name,
    clashing_field,
    expand_expectations,
)
from harness.checks.response_format import compile_response_checks
from harness.checks.run import check_name, compile_check
from harness.scenarios.expressions import template_problems
from harness.scenarios.schema import Scenario, ToolDef, _AnswerFields
from harness.user_code import (
    AGENT_KEYWORDS,
    ImportPathError,
    resolve_adk_agent,
    resolve_callable,
)

FieldPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a scenario: where (a field path) and what was expected."""

    path: FieldPath
    expected: str


def scenario_problems(
    scenario: Scenario,
    *,
    base_dir: Path | None = None,
    known_rubrics: Collection[str] | None = None,
    check_imports: bool = True,
) -> list[Problem]:
    """Everything wrong with an already-parsed scenario that pydantic cannot see alone.

    ``base_dir`` is where ``package.module:function`` paths are resolved first (default: the
    scenario's source directory). ``known_rubrics``, when given, is the set of rubric ids the
    ``rubrics`` list may use. ``check_imports`` imports the Python agent and tool handlers.
    """
    base = base_dir if base_dir is not None else scenario.base_dir
    problems: list[Problem] = []
    problems.extend(_tool_problems(scenario))
    problems.extend(_reference_problems(scenario))
    problems.extend(_limit_problems(scenario))
    if check_imports:
        problems.extend(_import_problems(scenario, base))
    problems.extend(_rubric_use_problems(scenario, known_rubrics))
    problems.extend(_check_problems(scenario))
    if known_rubrics is not None:
        known = set(known_rubrics) | {r.id for r in scenario.inline_rubrics}
        for i, rubric in enumerate(scenario.rubrics):
            if rubric not in known:
                problems.append(
                    Problem(
                        ("rubrics", i),
                        f"unknown rubric {rubric!r}; known rubrics: "
                        f"{', '.join(sorted(known)) or 'none'}",
                    )
                )
    return problems


def _rubric_use_problems(
    scenario: Scenario, known_rubrics: Collection[str] | None
) -> Iterator[Problem]:
    """Options for rubrics the scenario does not list; inline rubrics that are unused, defined
    twice, or that would hide a loaded rubric of the same id."""
    for rubric_id in scenario.rubric_options:
        if rubric_id not in scenario.rubrics:
            yield Problem(("rubric_options", rubric_id),
                          f"options for rubric {rubric_id!r}, which rubrics does not list")
    seen: set[str] = set()
    for i, rubric in enumerate(scenario.inline_rubrics):
        if rubric.id in seen:
            yield Problem(("inline_rubrics", i, "id"), f"rubric {rubric.id!r} is defined twice")
        seen.add(rubric.id)
        if known_rubrics is not None and rubric.id in known_rubrics:
            yield Problem(("inline_rubrics", i, "id"),
                          f"rubric {rubric.id!r} is already defined (a built-in or --rubrics "
                          "file); give the inline rubric its own id")
        if rubric.id not in scenario.rubrics:
            yield Problem(("inline_rubrics", i, "id"),
                          f"inline rubric {rubric.id!r} is not listed under rubrics")


def _tool_problems(scenario: Scenario) -> Iterator[Problem]:
    seen: dict[str, int] = {}
    has_state = scenario.state is not None
    for i, tool in enumerate(scenario.tools):
        if tool.name in seen:
            yield Problem(
                ("tools", i, "name"),
                f"duplicate tool name {tool.name!r} (also tools[{seen[tool.name]}])",
            )
        seen.setdefault(tool.name, i)
        for path, answer in _answers(tool, ("tools", i)):
            yield from _answer_problems(answer, path, tool, has_state)
        for j, rule in enumerate(tool.rules):
            if rule.when_state and not has_state:
                yield Problem(
                    ("tools", i, "rules", j, "when_state"),
                    "when_state needs a top-level 'state' in the scenario",
                )
            for message in template_problems(
                list(rule.when_state), argument_names=tool.argument_names, has_state=has_state
            ):
                yield Problem(("tools", i, "rules", j, "when_state"), message)
            unknown = _undeclared(set(rule.when), tool)
            if unknown:
                yield Problem(
                    ("tools", i, "rules", j, "when"),
                    f"matches argument(s) {', '.join(sorted(unknown))} that the tool's "
                    "parameters do not declare",
                )


def _answers(
    tool: ToolDef, path: tuple[str | int, ...]
) -> Iterator[tuple[FieldPath, _AnswerFields]]:
    """Every answer block of a tool (inline, rules, default, sequence items), with its path."""
    yield from _answer_tree(tool, path)
    for j, rule in enumerate(tool.rules):
        yield from _answer_tree(rule, (*path, "rules", j))
    if tool.default is not None:
        yield from _answer_tree(tool.default, (*path, "default"))


def _answer_tree(
    answer: _AnswerFields, path: FieldPath
) -> Iterator[tuple[FieldPath, _AnswerFields]]:
    yield path, answer
    for k, item in enumerate(answer.sequence or []):
        yield from _answer_tree(item, (*path, "sequence", k))


def _answer_problems(
    answer: _AnswerFields, path: FieldPath, tool: ToolDef, has_state: bool
) -> Iterator[Problem]:
    names = tool.argument_names
    for field in ("returns", "error", "set_state", "append_state"):
        value = getattr(answer, field)
        if field in ("set_state", "append_state") and value and not has_state:
            yield Problem((*path, field), f"{field} needs a top-level 'state' in the scenario")
            continue
        for message in template_problems(value, argument_names=names, has_state=has_state):
            yield Problem((*path, field), message)


def _undeclared(names: set[str], tool: ToolDef) -> set[str]:
    declared = tool.argument_names
    return set() if declared is None else names - declared


def _reference_problems(scenario: Scenario) -> Iterator[Problem]:
    """Tool names used by the agent block and the expectations must be declared tools the
    agent can see."""
    declared = [t.name for t in scenario.tools]
    visible = set(scenario.agent.tools) if scenario.agent.tools is not None else set(declared)

    def check(name: str, path: FieldPath, *, must_be_visible: bool = True) -> Iterator[Problem]:
        if name not in declared:
            yield Problem(
                path, f"unknown tool {name!r}; declared tools: {', '.join(declared) or 'none'}"
            )
        elif must_be_visible and name not in visible:
            yield Problem(path, f"tool {name!r} is not offered to the agent (see agent.tools)")

    for i, name in enumerate(scenario.agent.tools or []):
        yield from check(name, ("agent", "tools", i), must_be_visible=False)
    exp = scenario.expectations
    for i, call in enumerate(exp.tool_calls or []):
        yield from check(call.name, ("expectations", "tool_calls", i, "name"))
        tool = scenario.tool(call.name)
        if tool is not None:
            unknown = _undeclared(set(call.args), tool)
            if unknown:
                yield Problem(
                    ("expectations", "tool_calls", i, "args"),
                    f"argument(s) {', '.join(sorted(unknown))} are not declared by "
                    f"tool {call.name!r}",
                )
    for i, name in enumerate(exp.tool_order or []):
        yield from check(name, ("expectations", "tool_order", i))
    for i, name in enumerate(exp.single_tool_use):
        yield from check(name, ("expectations", "single_tool_use", i))
    for i, param in enumerate(exp.parameters):
        yield from check(param.tool, ("expectations", "parameters", i, "tool"))
    # A misspelt forbidden tool would be "avoided" by every agent, so it must be declared too.
    for i, name in enumerate(exp.forbidden_tools):
        yield from check(name, ("expectations", "forbidden_tools", i), must_be_visible=False)
    if exp.final_state is not None and scenario.state is None:
        yield Problem(
            ("expectations", "final_state"), "final_state needs a top-level 'state' in the scenario"
        )


def _limit_problems(scenario: Scenario) -> Iterator[Problem]:
    limits = scenario.limits
    script = scenario.user.script
    if script is not None and len(script) > limits.max_user_turns:
        yield Problem(
            ("user", "script"),
            f"{len(script)} scripted turns, but limits.max_user_turns is {limits.max_user_turns}",
        )
    turns = len(script) if script is not None else limits.max_user_turns
    for i, call in enumerate(scenario.expectations.tool_calls or []):
        if call.turn is not None and call.turn >= turns:
            yield Problem(
                ("expectations", "tool_calls", i, "turn"),
                f"turn {call.turn} cannot happen: at most {turns} user turns (turns count from 0)",
            )


def _import_problems(scenario: Scenario, base_dir: Path | None) -> Iterator[Problem]:
    if scenario.agent.callable is not None:
        try:
            resolve_callable(scenario.agent.callable, base_dir=base_dir, positional_args=2,
                             optional_keywords=AGENT_KEYWORDS)
        except ImportPathError as err:
            yield Problem(("agent", "callable"), f"a Python agent f(messages, toolbox): {err}")
    if scenario.agent.adk is not None:
        try:
            resolve_adk_agent(scenario.agent.adk, base_dir=base_dir)
        except ImportPathError as err:
            yield Problem(("agent", "adk"), str(err))
    for i, tool in enumerate(scenario.tools):
        for path, answer in _answers(tool, ("tools", i)):
            if answer.handler is not None:
                try:
                    resolve_callable(answer.handler, base_dir=base_dir, positional_args=2)
                except ImportPathError as err:
                    yield Problem((*path, "handler"), f"a tool handler f(state, args): {err}")
    for i, spec in enumerate(scenario.checks):
        try:
            compile_check(spec, base_dir=base_dir)
        except ImportPathError as err:
            yield Problem(("checks", i, "use"),
                          f"a check f(transcript, expectations, **args): {err}")
        except CheckConfigError as err:
            yield Problem(("checks", i, "args", err.field), f"expected {err.expected}")
    # the built-ins the expectations stand for (their matchers import here); the response
    # checks' patterns are checked below, imports or not
    for spec in expand_expectations(scenario.expectations):
        try:
            compile_check(spec)
        except CheckConfigError as err:
            if not err.field.startswith(("response_matches", "response_json_schema")):
                yield Problem(("expectations", err.field), f"expected {err.expected}")


def _check_problems(scenario: Scenario) -> Iterator[Problem]:
    """Names of the scenario's own checks, response-format patterns and schemas, and the
    score's weights."""
    seen: set[str] = set()
    for i, spec in enumerate(scenario.checks):
        name = check_name(spec)
        field = ("checks", i, "name" if spec.name is not None else "use")
        reserved = name.startswith(("rubric:", "trajectory_single_tool_use:"))
        clash = clashing_field(spec.use, scenario.expectations)
        if clash is not None:
            yield Problem(("checks", i, "use"),
                          f"the built-in check {spec.use!r} already runs from "
                          f"expectations.{clash} and would report the same metrics; name it "
                          "in one place")
        elif reserved or (name in BUILTIN_CHECK_NAMES and name != builtin_spec_name(spec.use)):
            yield Problem(field, f"check name {name!r} is taken by a built-in metric; "
                          "give the check another name")
        elif name in seen:
            yield Problem(field, f"check name {name!r} is used twice; give each its own name")
        seen.add(name)
    exp = scenario.expectations
    try:
        compile_response_checks(exp.response_matches, exp.response_json_schema)
    except CheckConfigError as err:
        yield Problem(("expectations", err.field), f"expected {err.expected}")
    components = {"checks", *scenario.rubrics}
    for key in scenario.scoring.weights:
        if key not in components:
            yield Problem(("scoring", "weights", key),
                          f"{key!r} is not a component of this scenario's score; expected "
                          f"'checks' or a rubric it lists: {', '.join(sorted(components))}")
