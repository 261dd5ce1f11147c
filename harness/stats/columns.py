"""Samples grouped by scenario as flat numpy arrays: the form every suite figure is computed
from, so that a million samples cost a few arrays rather than a million Python objects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# A score counts as a pass when no ``passed`` flag is given and it reaches the top of the
# score range, allowing for float rounding (contract 2: ``score >= 1 - 1e-6`` on [0, 1]).
PASS_TOLERANCE = 1e-6
UNIT_RANGE = (0.0, 1.0)


def default_passed(score: float) -> bool:
    """The pass rule used when a sample has no ``passed`` flag: ``score >= 1 - 1e-6``."""
    return score >= 1.0 - PASS_TOLERANCE


def pass_threshold(score_range: tuple[float, float] = UNIT_RANGE) -> float:
    """The score a sample without a ``passed`` flag needs to pass: the top of the range less
    ``1e-6`` of its width (``1 - 1e-6`` on [0, 1])."""
    low, high = score_range
    return high - PASS_TOLERANCE * (high - low)


@dataclass(frozen=True)
class ScoreColumns:
    """Scenario ``ids[i]`` owns samples ``offsets[i]:offsets[i + 1]`` of ``scores`` and
    ``passed`` (in epoch order when read from a file). Every scenario has at least one
    sample; ``offsets`` starts at 0 and ends at the number of samples."""

    ids: list[str]
    offsets: np.ndarray
    scores: np.ndarray
    passed: np.ndarray

    @property
    def n_epochs(self) -> np.ndarray:
        """Samples per scenario."""
        return np.diff(self.offsets)

    @classmethod
    def from_mapping(
        cls,
        scores: Mapping[str, Sequence[float]],
        passed: Mapping[str, Sequence[bool]] | None = None,
        *,
        score_range: tuple[float, float] = UNIT_RANGE,
    ) -> ScoreColumns:
        """Columns from scenario id -> per-epoch scores (and pass flags; by default a score
        passes at :func:`pass_threshold`).

        Raises ``ValueError`` on a scenario with no epochs, a non-finite score, or pass
        flags whose scenarios or lengths differ from the scores'.
        """
        if passed is not None and set(passed) != set(scores):
            raise ValueError("passed must have the same scenarios as scores")
        ids = list(scores)
        counts = np.fromiter((len(scores[s]) for s in ids), dtype=np.int64, count=len(ids))
        for sid, n in zip(ids, counts, strict=True):
            if n == 0:
                raise ValueError(f"scenario {sid!r} has no epochs")
            if passed is not None and len(passed[sid]) != n:
                raise ValueError(f"scenario {sid!r}: {len(passed[sid])} passed flags for {n} "
                                 "scores")
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        total = int(offsets[-1])
        x = np.fromiter((v for s in ids for v in scores[s]), dtype=float, count=total)
        if not np.all(np.isfinite(x)):
            bad = ids[int(np.searchsorted(offsets, np.flatnonzero(~np.isfinite(x))[0],
                                          side="right")) - 1]
            raise ValueError(f"scenario {bad!r} has a non-finite score")
        flags = (x >= pass_threshold(score_range) if passed is None else
                 np.fromiter((bool(f) for s in ids for f in passed[s]), dtype=bool,
                             count=total))
        return cls(ids=ids, offsets=offsets, scores=x, passed=flags)

    def scenario_scores(self) -> dict[str, list[float]]:
        """Scenario id -> its scores, as plain lists."""
        return {sid: self.scores[a:b].tolist()
                for sid, a, b in zip(self.ids, self.offsets[:-1], self.offsets[1:], strict=True)}

    def scenario_passed(self) -> dict[str, list[bool]]:
        """Scenario id -> its pass flags, as plain lists."""
        return {sid: self.passed[a:b].tolist()
                for sid, a, b in zip(self.ids, self.offsets[:-1], self.offsets[1:], strict=True)}
