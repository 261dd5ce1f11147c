"""A check of a user's own, named in a scenario as ``tests.helpers.user_checks:NAME``: a check
module must be importable under one name, and a test file is not (pytest imports it by its
base name, so naming it again as ``tests.test_x`` would load it twice)."""

from __future__ import annotations

from harness.checks import CheckResult
from harness.checks.spec import Expectations
from harness.transcript import Transcript


def two_metrics(transcript: Transcript, expectations: Expectations) -> list[CheckResult]:
    """One metric that gates and one that does not."""
    return [CheckResult(name="polite", value=1.0, passed=True),
            CheckResult(name="words", value=0.5, passed=False, gating=False)]
