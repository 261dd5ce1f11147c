"""Deterministic checks: exact, free, and computed from the transcript alone.

Entry points (imported from their modules, so that reading ``harness.checks.spec`` stays
cheap):

- :func:`harness.checks.run.run_checks` ``(transcript, expectations) -> CheckReport``;
- :func:`harness.checks.failures.analyse_failures` ``(reports, judge_failures) ->
  FailureAnalysis``;
- :func:`harness.checks.transcript_file.load_transcript_file` and
  :func:`~harness.checks.transcript_file.score_records` for contract-4 JSONL files.

Module map: ``spec`` (the expectations block), ``args`` (argument matching), ``trajectory``
(Vertex AI and ADK trajectory metrics, tool order), ``parameters`` (partial credit),
``response`` (ROUGE-1, required phrases), ``state`` (final-state diff), ``result`` (the
pydantic results), ``run`` (the entry point), ``failures`` (failure analysis).
"""
