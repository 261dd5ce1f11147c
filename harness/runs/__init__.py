"""Runs: the suite runner, its store, and what it writes to a run directory."""
