"""A rubric for the calibration study tests: one criterion on a 1-5 scale, as YAML text."""

from __future__ import annotations

HELPFUL_RUBRIC = """\
id: helpful
version: 1
target: final_response
threshold: 0.75
criteria:
  - id: quality
    question: How helpful is the answer?
    scale: ordinal_1_5
"""
