"""An evaluation harness for LLM agents: simulated users, mocked tools, rubric judges, repeated
sampling with confidence intervals, and judge calibration against human labels."""

from harness.version import __version__

__all__ = ["__version__"]
