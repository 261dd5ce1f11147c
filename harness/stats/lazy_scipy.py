"""``scipy.stats``, imported on first use.

Importing ``scipy.stats`` takes about half a second, and every process that loads the run
engine would pay it: a worker process (``--workers``) never computes a summary, so it never
needs it. The statistics modules import this module as ``sps`` and use it as they would
``scipy.stats``; the first attribute read imports the real module.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    from scipy import stats

    return getattr(stats, name)
