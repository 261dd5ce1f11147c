"""Failure analysis over many samples: what went wrong, how often, where, and what to change.

:func:`analyse_failures` takes the per-sample :class:`CheckReport` s (their findings say what
went wrong, see :mod:`.trajectory` and :mod:`.run`) plus, generically, the rubric criteria
judges failed, and groups them by kind and subject: ``wrong_tool`` by (called, expected)
pair, tool-level kinds by tool, ``judge_failed_criterion`` by ``rubric/criterion``, and so
on. Each group lists its scenarios, counts the samples it touches (a sample counts once per
group however many times it shows the failure) and the occurrences, and recommends a
concrete change naming the tools or criteria involved. Errored samples are counted apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from harness.checks.result import CheckReport, Finding, FindingKind

_KIND_ORDER: tuple[FindingKind, ...] = (
    "wrong_tool", "missing_tool", "parameter_error", "malformed_arguments", "unexpected_call",
    "over_calling", "forbidden_tool", "wrong_order", "missing_phrase", "response_mismatch",
    "wrong_final_state", "over_latency", "response_format", "custom_check",
    "judge_failed_criterion",
)

# "$." and an identifier, or "$[" and a quoted key as repr() writes it
_TOP_LEVEL_KEY = re.compile(r"""\$(?:\.[^.\[]+|\[(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\])""")


class JudgeFailure(BaseModel):
    """A rubric criterion a judge scored as failed for one sample."""

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    rubric_id: str
    criterion_id: str
    epoch: int = 0
    reasoning: str | None = Field(default=None, description="the judge's reasoning, if kept")


class FailureGroup(BaseModel):
    """One kind of failure on one subject, across samples."""

    model_config = ConfigDict(extra="forbid")

    kind: FindingKind
    key: str
    tool: str | None = None
    expected_tool: str | None = None
    samples: int
    share_of_samples: float
    occurrences: int
    scenarios: list[str]
    parameters: dict[str, int] = Field(
        default_factory=dict, description="argument name -> occurrences, for parameter errors"
    )
    examples: list[str] = Field(default_factory=list)
    recommendation: str


class FailureAnalysis(BaseModel):
    """Groups sorted by the number of samples they touch, most first."""

    model_config = ConfigDict(extra="forbid")

    n_samples: int
    n_failed_samples: int
    n_errored_samples: int
    errored_scenarios: list[str]
    groups: list[FailureGroup]


@dataclass
class _Acc:
    kind: FindingKind
    key: str
    tool: str | None = None
    expected_tool: str | None = None
    samples: set[tuple[str, int]] = field(default_factory=set)
    occurrences: int = 0
    parameters: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)


def _group_key(f: Finding) -> str:
    if f.kind == "wrong_tool":
        return f"{f.tool} instead of {f.expected_tool}"
    if f.kind == "wrong_final_state" and f.subject:
        # group by the top-level state key: "$.orders[0].status" -> "$.orders",
        # "$['order id'].status" -> "$['order id']" (see harness.checks.state._path_key)
        top = _TOP_LEVEL_KEY.match(f.subject)
        return top.group(0) if top else f.subject
    if f.kind == "over_latency":
        return "latency budget"
    return f.tool or f.subject or f.kind


def _tools(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def recommend(kind: FindingKind, acc_tool: str | None, expected_tool: str | None, key: str,
              parameters: Sequence[str] = ()) -> str:
    """A concrete change to try for one failure group, naming the tools or criterion."""
    tool = f"`{acc_tool}`" if acc_tool else "the tool"
    if kind == "wrong_tool":
        return (f"The agent called {tool} where `{expected_tool}` was expected: disambiguate the "
                f"descriptions of {tool} and `{expected_tool}` (say what each is for and when "
                "not to use it, with an example request for each).")
    if kind == "missing_tool":
        return (f"The agent did not call {tool}: say in its description which requests need it, "
                "and check the system prompt does not tell the agent to answer from memory.")
    if kind == "parameter_error":
        names = _tools(parameters) or "its arguments"
        return (f"{tool} was called with wrong values for {names}: document their format and "
                "allowed values in the parameter schema (enum, pattern, units, an example), "
                "and say where in the conversation the value comes from.")
    if kind == "malformed_arguments":
        return (f"Arguments to {tool} were not valid JSON objects: enable strict/structured "
                "tool calling if the provider offers it, and simplify the parameter schema.")
    if kind == "unexpected_call":
        return (f"The agent called {tool} when the reference needs no such call: say in its "
                "description when it is not needed, or remove it from this agent's toolset.")
    if kind == "over_calling":
        return (f"The agent called {tool} more often than needed: say in the system prompt or "
                f"in {tool}'s description that its result can be reused within the "
                "conversation, and set max_tool_calls to catch regressions.")
    if kind == "forbidden_tool":
        return (f"The agent called forbidden tool {tool}: remove it from the toolset for this "
                "task, require a confirmation step, or state the rule in the system prompt.")
    if kind == "wrong_order":
        return (f"Tools were called out of the expected order ({key}): state the order in the "
                "system prompt, or say in the later tool's description which call must come "
                "first.")
    if kind == "missing_phrase":
        return (f"The final answer lacked {key!r}: tell the agent to include it (or the fact "
                "it stands for) in its answer, or check the tool result that provides it.")
    if kind == "response_mismatch":
        return ("Final answers overlap little with the reference answer: check whether the "
                "reference is too specific for ROUGE-1, or instruct the agent on the answer's "
                "content and wording.")
    if kind == "wrong_final_state":
        return (f"The tools' final state differs at {key}: check which calls should have "
                "changed it and whether the agent confirmed them before finishing.")
    if kind == "over_latency":
        return ("Turns exceeded the latency budget: reduce steps per turn (fewer or parallel "
                "tool calls), use a faster model, or shorten the prompt.")
    if kind == "response_format":
        return (f"Final answers broke the required format ({key}): state the format in the "
                "system prompt with an example, or use the provider's structured output.")
    if kind == "custom_check":
        return (f"Check `{key}` failed: read its details in these samples and address that "
                "behaviour in the system prompt or the tools.")
    rubric, _, criterion = key.partition("/")
    return (f"Judges failed criterion `{criterion}` of rubric `{rubric}`: read the judges' "
            "reasoning for these scenarios and address that behaviour in the system prompt; "
            "if the reasoning looks wrong, review the criterion's wording.")


def analyse_failures(
    reports: Sequence[CheckReport], judge_failures: Sequence[JudgeFailure] = ()
) -> FailureAnalysis:
    """Group the failures in ``reports`` (and ``judge_failures``) by kind and subject.

    Samples are identified by (scenario id, epoch). Errored reports are counted in
    ``n_errored_samples`` and contribute no failures. Returns a :class:`FailureAnalysis`
    whose groups are sorted by samples touched (descending), then kind, then key.
    """
    groups: dict[tuple[str, str], _Acc] = {}
    all_samples: set[tuple[str, int]] = set()
    failed: set[tuple[str, int]] = set()
    errored: set[tuple[str, int]] = set()

    def add(sample: tuple[str, int], f: Finding) -> None:
        key = _group_key(f)
        acc = groups.setdefault((f.kind, key), _Acc(kind=f.kind, key=key, tool=f.tool,
                                                    expected_tool=f.expected_tool))
        acc.samples.add(sample)
        acc.occurrences += 1
        for p in f.parameters:
            acc.parameters[p] = acc.parameters.get(p, 0) + 1
        if len(acc.examples) < 3:
            acc.examples.append(f"{sample[0]}#{sample[1]}: {f.message}")
        failed.add(sample)

    for report in reports:
        sample = (report.scenario_id, report.epoch)
        all_samples.add(sample)
        if report.error is not None:
            errored.add(sample)
            continue
        # Two checks can report the same failure (a tool never called is missing for both
        # the trajectory and the parameter check): per sample, take the most occurrences any
        # one check reports rather than their sum.
        most: dict[tuple[object, ...], list[Finding]] = {}
        for result in report.results:
            mine: dict[tuple[object, ...], list[Finding]] = {}
            for f in result.findings:
                ident = (f.kind, f.tool, f.expected_tool, f.subject, tuple(f.parameters))
                mine.setdefault(ident, []).append(f)
            for key, found in mine.items():
                if len(found) > len(most.get(key, [])):
                    most[key] = found
        # A wrong tool explains the expected tool's absence: don't report it missing too.
        replaced = {f.expected_tool for found in most.values() for f in found
                    if f.kind == "wrong_tool"}
        for found in most.values():
            for f in found:
                if not (f.kind == "missing_tool" and f.tool in replaced):
                    add(sample, f)
    for jf in judge_failures:
        sample = (jf.scenario_id, jf.epoch)
        all_samples.add(sample)
        subject = f"{jf.rubric_id}/{jf.criterion_id}"
        add(sample, Finding(kind="judge_failed_criterion", subject=subject,
                            message=f"{subject} failed"
                            + (f": {jf.reasoning}" if jf.reasoning else "")))

    n = len(all_samples)
    out = [
        FailureGroup(
            kind=acc.kind, key=acc.key, tool=acc.tool, expected_tool=acc.expected_tool,
            samples=len(acc.samples), share_of_samples=len(acc.samples) / n if n else 0.0,
            occurrences=acc.occurrences, scenarios=sorted({s for s, _ in acc.samples}),
            parameters=dict(sorted(acc.parameters.items())), examples=acc.examples,
            recommendation=recommend(acc.kind, acc.tool, acc.expected_tool, acc.key,
                                     sorted(acc.parameters)),
        )
        for acc in groups.values()
    ]
    out.sort(key=lambda g: (-g.samples, _KIND_ORDER.index(g.kind), g.key))
    return FailureAnalysis(
        n_samples=n, n_failed_samples=len(failed - errored), n_errored_samples=len(errored),
        errored_scenarios=sorted({s for s, _ in errored}), groups=out,
    )
