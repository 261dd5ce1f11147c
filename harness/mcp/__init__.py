"""A scenario's mocked tools served over the Model Context Protocol (the official ``mcp``
SDK): :class:`ToolServer` serves many episodes at once in a run; ``harness serve-tools``
serves one scenario by itself. Importing this package imports the SDK, so nothing on the
CLI's start-up path imports it."""

from harness.mcp.server import ToolServer

__all__ = ["ToolServer"]
