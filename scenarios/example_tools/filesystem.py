"""Mock file-system tools over the scenario state ``{"files": {path: content}}``.

Paths contain dots and slashes, which the YAML state paths (dot-separated) cannot address, so
these handlers do the lookups in Python. Each is ``f(state, args) -> result``; raising
``ToolError`` answers the agent with an error.
"""

from __future__ import annotations

from typing import Any

from harness.tools import ToolError


def list_files(state: dict[str, Any], args: dict[str, Any]) -> list[str]:
    """Names of the files directly inside ``args["path"]``."""
    directory = args["path"].rstrip("/") + "/"
    names = sorted(
        path[len(directory) :]
        for path in state["files"]
        if path.startswith(directory) and "/" not in path[len(directory) :]
    )
    if not names:
        raise ToolError(f"no such directory: {args['path']}")
    return names


def read_file(state: dict[str, Any], args: dict[str, Any]) -> str:
    """The content of ``args["path"]``."""
    try:
        return str(state["files"][args["path"]])
    except KeyError:
        raise ToolError(f"no such file: {args['path']}") from None


def write_file(state: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """Create or replace ``args["path"]`` with ``args["content"]``."""
    directory = args["path"].rsplit("/", 1)[0] + "/"
    if not any(path.startswith(directory) for path in state["files"]):
        raise ToolError(f"no such directory: {directory}")
    state["files"][args["path"]] = args["content"]
    return {"path": args["path"], "bytes_written": len(args["content"].encode())}
