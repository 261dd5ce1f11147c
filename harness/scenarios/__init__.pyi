# The names this package exports, read by type checkers and, at run time, by
# lazy_loader.attach_stub (see __init__.py): each is imported on first use.
from .loading import (
    ValidationReport,
    load_scenarios,
    parse_scenario,
    validate_paths,
)
from .schema import (
    AgentSpec,
    Answer,
    Limits,
    RubricOptions,
    Rule,
    Scenario,
    ToolDef,
    UserSpec,
)
from .selectors import Selection, parse_selection, select
from .validation import Problem, scenario_problems
