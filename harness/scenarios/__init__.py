"""Scenario files: the format (pydantic models), loading with errors that name file, line and
field, cross-field validation, and the JSON Schema export for editors."""

from harness.scenarios.loading import (
    ValidationReport,
    load_scenarios,
    parse_scenario,
    validate_paths,
)
from harness.scenarios.schema import (
    AgentSpec,
    Answer,
    Limits,
    Rule,
    Scenario,
    ToolDef,
    UserSpec,
)
from harness.scenarios.validation import Problem, scenario_problems

__all__ = [
    "AgentSpec",
    "Answer",
    "Limits",
    "Problem",
    "Rule",
    "Scenario",
    "ToolDef",
    "UserSpec",
    "ValidationReport",
    "load_scenarios",
    "parse_scenario",
    "scenario_problems",
    "validate_paths",
]
