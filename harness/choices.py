"""The named choices a user makes on the command line and in settings files, one ``Literal``
each. They live apart from the code that acts on them so that a command can declare its
options (and print its ``--help``) without importing that code and the libraries under it."""

from __future__ import annotations

from typing import Literal

AggregationMethod = Literal["mean", "majority"]
"""How repeated judge samples of one transcript are combined."""

CacheMode = Literal["read-write", "refresh", "off", "replay"]
"""How the response cache is used (see :class:`~harness.models.config.CacheConfig`)."""

ExecutorName = Literal["local", "ray"]
"""What runs a run's episodes: this machine's processes, or Ray actors (``--executor``)."""

ReaskMode = Literal["live", "batch"]
"""Where a re-ask of a batched judge answer that failed validation goes: a live request (the
sample is not held up by a second batch), or the next batch (half the price)."""

GateBasis = Literal["mean", "lower-bound"]
"""Whether the CI gate compares the figure itself or the lower end of its interval."""

RunGateBasis = Literal["mean", "lower-bound", "corrected-lower-bound"]
""":data:`GateBasis`, or (``harness run``, ``harness merge``) the lower end of the interval
of the figure corrected by the run's random human labels."""

PersonaPresetName = Literal["NOVICE", "EXPERT", "EVALUATOR"]
"""A pre-built simulated-user persona (``user.persona_preset``; see
:mod:`harness.scenarios.personas`)."""

PairedTest = Literal["t", "permutation"]
"""The test behind a paired comparison's verdict."""

McpTransport = Literal["http", "stdio"]
"""How ``harness serve-tools`` serves a scenario's mocked tools over MCP."""
