# The names this package exports, read by type checkers and, at run time, by
# lazy_loader.attach_stub (see __init__.py): each is imported on first use.
from .adaptive import (
    AdaptiveConfig,
    AdaptiveDecision,
    AdaptiveSavings,
    FixedDesignEstimate,
    adaptive_savings,
    fixed_epochs_for_width,
    interval_width,
    plan_next_round,
)
from .columns import ScoreColumns
from .compare import (
    McNemarResult,
    PairedComparison,
    ScenarioDifference,
    TestResult,
    compare_runs,
    mcnemar_test,
)
from .corrected import CorrectedEstimate, LabelsNeeded, corrected_figure
from .estimate import (
    Estimate,
    InsufficientDataError,
    clustered_stderr,
    mean_of_cluster_means,
    t_interval,
)
from .jsonl import SampleTable, parse_sample_lines, read_sample_scores
from .power import (
    DesignRequirement,
    PowerAnalysis,
    TargetDesign,
    design_for_target,
    epochs_for_target,
    minimum_detectable_difference,
    scenarios_for_target,
)
from .sampling import (
    ScenarioStats,
    default_passed,
    pass_at_k,
    pass_hat_k,
    scenario_stats,
    wilson_interval,
)
from .suite import (
    BootstrapInterval,
    SuiteStats,
    cluster_bootstrap_interval,
    suite_stats,
    suite_stats_from_columns,
)
from .summary import StatsReport, SuiteFigures, SuiteSummary, design_power, stats_summary
from .variance import (
    NestedVarianceComponents,
    VarianceComponents,
    nested_variance_components,
    variance_components,
)
