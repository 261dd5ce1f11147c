"""Deterministic checks: exact, free, and computed from the transcript alone.

Entry points (imported from their modules, so that reading ``harness.checks.spec`` stays
cheap; this package itself imports only the light :func:`check` and :class:`CheckResult`):

- :func:`harness.checks.run.run_checks` ``(transcript, expectations) -> CheckReport``, a loop
  over the scenario's check specs (:func:`harness.checks.run.prepare_expectations` binds
  them once: the built-ins its expectations expand into, then its own);
- :func:`harness.checks.failures.analyse_failures` ``(reports, judge_failures) ->
  FailureAnalysis``;
- :func:`harness.formats.transcript_file.load_transcript_file` and
  :func:`~harness.formats.transcript_file.score_records` for contract-4 JSONL files.

A check of one's own is registered with :func:`check` (``@harness.checks.check("name")``)
and returns a :class:`~harness.checks.result.CheckResult`, a number or a bool.

Module map: ``spec`` (the expectations block and check specs), ``registry`` (the one
registry, :func:`check`), ``builtins`` (the built-in checks, registered there, and the
expansion of expectations into their specs), ``args`` (argument matching), ``trajectory``
(Vertex AI and ADK trajectory metrics, tool order), ``parameters`` (partial credit),
``response`` (ROUGE-1, required phrases), ``response_format`` (regex, JSON Schema, length of
the final answer), ``state`` (final-state diff), ``result`` (the pydantic results), ``run``
(binding specs and running them), ``failures`` (failure analysis).
"""

from harness.checks.registry import check
from harness.checks.result import CheckResult

__all__ = ["CheckResult", "check"]
