"""Deterministic checks: exact, free, and computed from the transcript alone.

Entry points (imported from their modules, so that reading ``harness.checks.spec`` stays
cheap; this package itself imports only the light :func:`check` and :class:`CheckResult`):

- :func:`harness.checks.run.run_checks` ``(transcript, expectations) -> CheckReport``;
- :func:`harness.checks.failures.analyse_failures` ``(reports, judge_failures) ->
  FailureAnalysis``;
- :func:`harness.formats.transcript_file.load_transcript_file` and
  :func:`~harness.formats.transcript_file.score_records` for contract-4 JSONL files.

A check of one's own is registered with :func:`check` (``@harness.checks.check("name")``)
and returns a :class:`~harness.checks.result.CheckResult`, a number or a bool.

Module map: ``spec`` (the expectations block), ``args`` (argument matching), ``trajectory``
(Vertex AI and ADK trajectory metrics, tool order), ``parameters`` (partial credit),
``response`` (ROUGE-1, required phrases), ``response_format`` (regex, JSON Schema, length of
the final answer), ``custom`` (checks of one's own), ``state`` (final-state diff),
``result`` (the pydantic results), ``run`` (the entry point), ``failures`` (failure
analysis).
"""

from harness.checks.registry import check
from harness.checks.result import CheckResult

__all__ = ["CheckResult", "check"]
