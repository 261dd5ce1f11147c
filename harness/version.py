"""The package's version, written once here (pyproject.toml reads it; ``harness version``
prints it). A module of the base layer, so the store, the summary and the report can record
it without importing the package's front door."""

__version__ = "0.1.0"
