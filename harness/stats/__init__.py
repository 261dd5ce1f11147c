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
- :mod:`~harness.stats.corrected`: figures corrected by random human labels (PPI++ clustered
  by scenario), the labels they are worth and the labels a width needs.
- :mod:`~harness.stats.user_turn_features` and :mod:`~harness.stats.realism`: what a user's
  side of a conversation looks like in numbers, and how far simulated users are from real
  ones (``harness simulator-realism``).
- :mod:`~harness.stats.jsonl` and :mod:`~harness.stats.summary`: contract 2's input and output.
"""

import lazy_loader

# Exports are imported on first use (names in __init__.pyi), so that importing one light
# module of this package (e.g. for a command's --help) does not import them all.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
