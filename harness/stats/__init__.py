"""Statistics for runs: pure functions on per-scenario lists of scores and pass flags.

- :mod:`~harness.stats.columns`: samples grouped by scenario as flat arrays.
- :mod:`~harness.stats.sampling`: each scenario over its epochs (Wilson, pass@k, pass^k),
  one at a time or all at once.
- :mod:`~harness.stats.bounded`: intervals for figures in a known range (Wilson on the
  effective sample size, exact bounds when every scenario agrees, cutting at the range).
- :mod:`~harness.stats.suite`: the suite mean with a clustered interval and a cluster
  bootstrap, pass@k/pass^k over scenarios, variance components.
- :mod:`~harness.stats.variance`: between/within and scenario/epoch/judge components.
- :mod:`~harness.stats.compare`: paired comparison of two runs, McNemar.
- :mod:`~harness.stats.power`: minimum detectable difference, epochs/scenarios needed for a
  target difference (:func:`~harness.stats.power.design_for_target`).
- :mod:`~harness.stats.adaptive`: Neyman allocation planner for adaptive sampling.
- :mod:`~harness.stats.jsonl` and :mod:`~harness.stats.summary`: contract 2's input and output.
"""

from harness.stats.adaptive import (
    AdaptiveConfig,
    AdaptiveDecision,
    AdaptiveSavings,
    FixedDesignEstimate,
    adaptive_savings,
    fixed_epochs_for_width,
    interval_width,
    plan_next_round,
)
from harness.stats.columns import ScoreColumns
from harness.stats.compare import (
    McNemarResult,
    PairedComparison,
    ScenarioDifference,
    TestResult,
    compare_runs,
    mcnemar_test,
)
from harness.stats.estimate import (
    Estimate,
    InsufficientDataError,
    clustered_stderr,
    mean_of_cluster_means,
    t_interval,
)
from harness.stats.jsonl import SampleTable, parse_sample_lines, read_sample_scores
from harness.stats.power import (
    DesignRequirement,
    PowerAnalysis,
    TargetDesign,
    design_for_target,
    epochs_for_target,
    minimum_detectable_difference,
    scenarios_for_target,
)
from harness.stats.sampling import (
    ScenarioStats,
    default_passed,
    pass_at_k,
    pass_hat_k,
    scenario_stats,
    wilson_interval,
)
from harness.stats.suite import (
    BootstrapInterval,
    SuiteStats,
    cluster_bootstrap_interval,
    suite_stats,
    suite_stats_from_columns,
)
from harness.stats.summary import design_power, stats_summary
from harness.stats.variance import (
    NestedVarianceComponents,
    VarianceComponents,
    nested_variance_components,
    variance_components,
)

__all__ = [
    "AdaptiveConfig",
    "AdaptiveDecision",
    "AdaptiveSavings",
    "BootstrapInterval",
    "DesignRequirement",
    "Estimate",
    "FixedDesignEstimate",
    "InsufficientDataError",
    "McNemarResult",
    "NestedVarianceComponents",
    "PairedComparison",
    "PowerAnalysis",
    "SampleTable",
    "ScenarioDifference",
    "ScenarioStats",
    "ScoreColumns",
    "SuiteStats",
    "TargetDesign",
    "TestResult",
    "VarianceComponents",
    "adaptive_savings",
    "cluster_bootstrap_interval",
    "clustered_stderr",
    "compare_runs",
    "default_passed",
    "design_for_target",
    "design_power",
    "epochs_for_target",
    "fixed_epochs_for_width",
    "interval_width",
    "mcnemar_test",
    "mean_of_cluster_means",
    "minimum_detectable_difference",
    "nested_variance_components",
    "parse_sample_lines",
    "pass_at_k",
    "pass_hat_k",
    "plan_next_round",
    "read_sample_scores",
    "scenario_stats",
    "scenarios_for_target",
    "stats_summary",
    "suite_stats",
    "suite_stats_from_columns",
    "t_interval",
    "variance_components",
    "wilson_interval",
]
