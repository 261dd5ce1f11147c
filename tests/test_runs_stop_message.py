"""The line a run stopped by a signal stores and prints (summary.json's ``stopped.message``):
what stopped it, how many samples this session finished, and that samples in flight were
abandoned (so the user knows a resume will run them)."""

from __future__ import annotations

from harness.runs.api import _stop_message
from harness.runs.engine import RunState


def test_a_terminated_run_names_sigterm_and_the_samples_finished() -> None:
    assert _stop_message("terminated", RunState(planned=10, finished=3)) == (
        "terminated by SIGTERM after 3 samples finished in this session; samples in flight "
        "were abandoned")


def test_an_interrupted_run_names_the_interrupt_and_one_sample() -> None:
    assert _stop_message("interrupted", RunState(planned=10, finished=1)) == (
        "interrupted by an interrupt (Ctrl-C or a cancelled task) after 1 sample finished in "
        "this session; samples in flight were abandoned")
