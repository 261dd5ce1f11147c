"""Mocked tools at run time: argument validation, answers from the scenario's declarations,
per-episode state, and a record of every call."""

from harness.tools.toolbox import Toolbox, ToolError, ToolResult

__all__ = ["ToolError", "ToolResult", "Toolbox"]
