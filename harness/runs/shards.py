"""Shards: a deterministic part of a run's scenario x epoch grid, for CI fan-out.

``harness run --shard i/n`` runs the samples of shard ``i``. The split is a pure function of
the scenario id, the epoch and ``n``: each scenario's epochs are dealt round-robin over the
shards, starting at a shard the SHA-256 of the scenario id picks::

    shard_of(scenario_id, epoch, n) =
        (int.from_bytes(sha256(scenario_id.encode()).digest()[:8], "big") + epoch) % n + 1

(epochs counted from 0, as ``samples.jsonl`` has them). It is the same on every machine and
in every process (Python's ``hash()`` is salted per process, so it is not used). A sample
never changes shard when scenarios or epochs are added, so each CI job's response cache stays
warm; and the shards are balanced as far as a stable split allows: every scenario gives each
shard ``epochs // n`` samples, and only the ``epochs % n`` left over land on shards its hash
picks (docs/design.md, "Shards deal each scenario's epochs round-robin from a hashed start",
compares this with a hash of each sample and with a round-robin over the whole grid).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

# Thirty digits are far more than any grid has samples (the count is bounded by them once
# the scenarios are loaded); longer numbers are refused as they are read, without echoing them.
_SHARD_TEXT = re.compile(r"(\d{1,30})/(\d{1,30})")
_SHOWN_CHARS = 40


def shard_of(scenario_id: str, epoch: int, count: int) -> int:
    """The shard (1 ... ``count``) that the sample ``(scenario_id, epoch)`` belongs to (see
    the module docstring for the formula)."""
    start = int.from_bytes(hashlib.sha256(scenario_id.encode()).digest()[:8], "big")
    return (start + epoch) % count + 1


class Shard(BaseModel):
    """Shard ``index`` of ``count`` (1-based), written ``"i/n"`` in the run's configuration
    and on the command line. Raises a validation error for anything but ``1 <= i <= n``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=1)
    count: int = Field(ge=1)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            match = _SHARD_TEXT.fullmatch(value.strip())
            if match is None:
                raise ValueError(f"expected i/n with 1 <= i <= n (e.g. 1/4), got {value!r}")
            return {"index": int(match[1]), "count": int(match[2])}
        return value

    @model_validator(mode="after")
    def _index_within_count(self) -> Shard:
        if self.index > self.count:
            raise ValueError(f"expected i/n with 1 <= i <= n (e.g. 1/4), got {self}")
        return self

    @model_serializer
    def _as_text(self) -> str:
        return str(self)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, scenario_id: str, epoch: int) -> bool:
        """Whether the sample ``(scenario_id, epoch)`` is in this shard."""
        return shard_of(scenario_id, epoch, self.count) == self.index


def parse_shard(text: str) -> Shard:
    """``"i/n"`` as a :class:`Shard`. Raises :class:`~harness.errors.InputError` naming
    ``--shard`` and what was expected (``0/2``, ``3/2`` and ``a/b`` are refused)."""
    from pydantic import ValidationError

    from harness.errors import InputError

    try:
        return Shard.model_validate(text)
    except ValidationError:
        shown = text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}..."
        raise InputError("command line", "--shard", "expected i/n with 1 <= i <= n (e.g. "
                         f"--shard 1/4), got {shown!r}") from None


def check_fits_grid(shard: Shard | None, scenarios: int, epochs: int) -> None:
    """Refuse a split into more shards than the grid ``scenarios`` x ``epochs`` has samples
    (some shards would hold nothing by construction, and a count without a bound would let
    the bookkeeping of shards grow with it). Raises :class:`~harness.errors.InputError`
    naming ``--shard`` and both numbers; ``None`` (not sharded) always fits."""
    from harness.errors import InputError

    samples = scenarios * epochs
    if shard is not None and shard.count > samples:
        raise InputError("command line", "--shard", (
            f"{shard} splits the grid into {shard.count} shards, more than its {samples} "
            f"sample(s) ({scenarios} scenario(s) x {epochs} epoch(s)); use at most "
            f"{max(samples, 1)} shards"))


def in_shard(keys: Iterable[tuple[str, int]], shard: Shard | None) -> list[tuple[str, int]]:
    """The samples of ``keys`` that ``shard`` holds, in their order (all of them when
    ``shard`` is ``None``: the run is not sharded)."""
    return [key for key in keys if shard is None or shard.holds(*key)]


def shard_sizes(scenario_ids: Sequence[str], epochs: int, count: int) -> dict[int, int]:
    """How many samples of the grid ``scenario_ids`` x ``epochs`` each of ``count`` shards
    holds (a shard missing from the mapping holds none: its size stays proportional to the
    grid, whatever ``count`` is)."""
    return dict(Counter(shard_of(sid, epoch, count)
                        for sid in scenario_ids for epoch in range(epochs)))


class ShardCoverage(BaseModel):
    """Which shards of the scenario x epoch grid a run holds (``summary.json``'s
    ``shards``): its own for a shard's run (``harness run --shard i/n``), the merged ones for
    ``harness merge``. ``grid_samples`` is the whole grid's size (scenarios x epochs) and
    ``held_samples`` the part of it in the shards held; both ``None`` when a merged store
    did not record its grid."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int
    held: list[int]
    missing: list[int]
    grid_samples: int | None
    held_samples: int | None

    def label(self, shards: Iterable[int]) -> str:
        """``"1/3, 2/3"``: the shards given, as ``--shard`` writes them."""
        return ", ".join(f"{i}/{self.count}" for i in shards)


def coverage(count: int, held: Iterable[int], scenario_ids: Sequence[str] | None,
             epochs: int) -> ShardCoverage:
    """The :class:`ShardCoverage` of a run holding the shards ``held`` of ``count``, over
    the grid ``scenario_ids`` x ``epochs`` (``None``: not known)."""
    held = sorted(set(held))
    sizes = None if scenario_ids is None else shard_sizes(scenario_ids, epochs, count)
    return ShardCoverage(
        count=count, held=held, missing=[i for i in range(1, count + 1) if i not in held],
        grid_samples=None if sizes is None else sum(sizes.values()),
        held_samples=None if sizes is None else sum(sizes.get(i, 0) for i in held),
    )
