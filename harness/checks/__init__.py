"""Deterministic checks: exact, free, and computed from the transcript alone."""
