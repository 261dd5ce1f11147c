"""An evaluation harness for LLM agents: simulated users, mocked tools, rubric judges, repeated
sampling with confidence intervals, and judge calibration against human labels."""

__version__ = "0.1.0"
