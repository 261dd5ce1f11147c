"""Rubric judges: rubrics (YAML), judge prompts, one judge call -> per-criterion verdicts,
repeated samples and panels, pairwise comparison in both orders, and the offline mock judge.

The flow: :func:`load_rubrics` -> :func:`judge_transcript` (``n`` samples per judge, one or
more judges) -> :class:`AggregatedJudgment` (score, pass verdict, disagreement, judge errors
apart). :func:`compare_pair` / :func:`summarise_pairwise` for pairwise comparisons.
"""

import lazy_loader

# Exports are imported on first use (names in __init__.pyi), so that importing one light
# module of this package (e.g. for a command's --help) does not import them all.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
