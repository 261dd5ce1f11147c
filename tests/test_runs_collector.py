"""The runner's garbage-collector tuning applies inside a run only and is always undone."""

from __future__ import annotations

import gc

import pytest

from harness.runs.engine import RUN_GC_THRESHOLD, collector_tuned_for_run


def test_tuned_inside_and_restored_after_errors_too() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), collector_tuned_for_run():
        assert gc.get_threshold()[0] == max(before[0], RUN_GC_THRESHOLD)
        assert gc.get_threshold()[1:] == before[1:]
        assert gc.get_freeze_count() > 0  # what existed at the start is left out of passes
        raise RuntimeError("a run that fails")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_garbage_made_inside_is_still_collected() -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    with collector_tuned_for_run():
        Node()  # an unreachable cycle
        assert gc.collect() >= 1
