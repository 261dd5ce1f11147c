"""Re-running the samples whose failure is attributed to the simulated user
(``--rerun-simulator-faults``): each once, with a new seed, keeping the first record.

A rerun travels through the executors (in process, worker processes, Ray) as an ordinary
sample key whose epoch is shifted by :data:`RERUN_STRIDE` per attempt, so every executor runs
it unchanged and every model call gets a sample index of its own (a new seed for the mocks,
a new cache key for real models: a rerun never replays the first attempt's answers). When it
comes back, :func:`as_rerun` puts it back at its own epoch and says what it replaced; the
store keeps the first record (:meth:`~harness.runs.store.RunStore.replace_sample`).
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.runs.sample import RerunInfo, SampleRecord

# Odd, so the first rerun of an epoch has the other parity: mock:simulator-faulty, which
# misbehaves in odd sample indexes, behaves in the rerun of an epoch it spoiled.
RERUN_STRIDE = 1_000_001


def rerun_key(scenario_id: str, epoch: int, attempt: int = 1) -> tuple[str, int]:
    """The sample key that runs ``attempt`` (1, 2, ...) of sample ``epoch`` again."""
    return scenario_id, epoch + attempt * RERUN_STRIDE


def split_epoch(epoch: int) -> tuple[int, int]:
    """``(epoch, attempt)`` of a key's epoch: attempt 0 for an ordinary sample."""
    attempt = epoch // RERUN_STRIDE
    return epoch - attempt * RERUN_STRIDE, attempt


def simulator_faults(records: Iterable[SampleRecord]) -> list[tuple[str, int]]:
    """The keys that re-run, once, each sample attributed to the simulator that is not a
    rerun already, in store order."""
    return [rerun_key(r.scenario_id, r.epoch) for r in records
            if r.rerun is None and r.attribution is not None
            and r.attribution.party == "simulator"]


def as_rerun(record: SampleRecord, replaced: SampleRecord | None) -> SampleRecord:
    """``record`` (run under a shifted epoch) put back at its own epoch, saying which attempt
    it is, its sample index and the attribution of the record it replaces."""
    epoch, attempt = split_epoch(record.epoch)
    info = RerunInfo(attempt=attempt, sample_index=record.epoch,
                     replaced=None if replaced is None else replaced.attribution)
    transcript = record.transcript.model_copy(update={"epoch": epoch})
    return record.model_copy(update={"epoch": epoch, "transcript": transcript, "rerun": info})
