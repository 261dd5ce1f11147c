"""Resolving ``package.module:function`` paths named in scenario files.

A path is imported with the scenario file's directory first on ``sys.path``, then the usual
``sys.path``. So ``scenarios/weather.yaml`` can name ``example_agents.weather_bot:answer`` for
``scenarios/example_agents/weather_bot.py``, whatever the current directory, and an installed
package works as well. The directory stays on ``sys.path`` afterwards (modules may import
siblings lazily). Module names are global to the process: two scenario directories holding
different packages of the same name cannot both be used in one run, so give example packages
distinctive names.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

AGENT_KEYWORDS = ("mcp_url",)
"""Keyword arguments a Python agent ``f(messages, toolbox)`` is also given when it names them
(``mcp_url``: where its mocked tools are served over MCP)."""

_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_.]*$")


class ImportPathError(ValueError):
    """A ``package.module:function`` path that is malformed, does not import, or does not name
    a suitable callable. The message says which."""


def check_path_syntax(path: str) -> str:
    """Return ``path`` when it has the form ``package.module:function``; raise
    :class:`ImportPathError` otherwise."""
    if not _PATH.match(path):
        raise ImportPathError(f"{path!r} is not of the form 'package.module:function'")
    return path


def resolve_object(path: str, *, base_dir: Path | None = None) -> Any:
    """Import ``package.module:name`` (``base_dir`` first on ``sys.path``) and return what
    ``name`` is bound to, callable or not (an ADK agent is an object). Raises
    :class:`ImportPathError` saying what failed."""
    check_path_syntax(path)
    module_name, _, attribute = path.partition(":")
    if base_dir is not None:
        directory = str(Path(base_dir).resolve())
        if directory not in sys.path:
            sys.path.insert(0, directory)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        where = f" (searched {base_dir} and sys.path)" if base_dir is not None else ""
        raise ImportPathError(f"module {module_name!r} does not import{where}: {err}") from None
    except Exception as err:  # the module itself raised while importing: show why
        raise ImportPathError(
            f"module {module_name!r} raised {type(err).__name__} while importing: {err}"
        ) from None
    target: Any = module
    for name in attribute.split("."):
        try:
            target = getattr(target, name)
        except AttributeError:
            raise ImportPathError(
                f"module {module_name!r} has no attribute {attribute!r}"
            ) from None
    return target


ADK_MISSING = "ADK agents need the adk extra: pip install 'agent-eval-harness[adk]'"


def resolve_adk_agent(path: str, *, base_dir: Path | None = None) -> Any:
    """Import ``package.module:root_agent`` and return the ADK agent it names (a
    ``google.adk.agents.BaseAgent``). Raises :class:`ImportPathError` when the adk extra is
    missing, the path does not import, or it is not an ADK agent."""
    import importlib.util

    if importlib.util.find_spec("google.adk") is None:
        raise ImportPathError(ADK_MISSING)
    from google.adk.agents import BaseAgent  # here: only ADK agents load google.adk

    target = resolve_object(path, base_dir=base_dir)
    if not isinstance(target, BaseAgent):
        raise ImportPathError(f"{path!r} is a {type(target).__name__}, not an ADK agent "
                              "(google.adk.agents.BaseAgent, e.g. an LlmAgent)")
    return target


def resolve_callable(
    path: str, *, base_dir: Path | None = None, positional_args: int | None = None,
    optional_keywords: Collection[str] = (),
) -> Callable[..., Any]:
    """Import ``package.module:function`` (``base_dir`` first on ``sys.path``) and return the
    callable. With ``positional_args``, also check the callable accepts that many positional
    arguments, plus each of ``optional_keywords`` it names as a parameter (the caller passes
    those only to a callable that names them). Raises :class:`ImportPathError` saying what
    failed."""
    target = resolve_object(path, base_dir=base_dir)
    if not callable(target):
        raise ImportPathError(f"{path!r} is not callable")
    if positional_args is not None and not _accepts(target, positional_args, optional_keywords):
        named = [k for k in optional_keywords if takes_keyword(target, k)]
        also = f" and the keyword argument(s) {', '.join(named)}" if named else ""
        raise ImportPathError(f"{path!r} must accept {positional_args} positional arguments"
                              + also)
    return target  # type: ignore[no-any-return]


def takes_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` has a parameter ``name`` that can be passed by keyword."""
    try:
        parameter = inspect.signature(function).parameters.get(name)
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _accepts(function: Callable[..., Any], count: int, optional_keywords: Collection[str]
             ) -> bool:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # builtins without a signature: give them the benefit
        return True
    keywords = {k: None for k in optional_keywords if takes_keyword(function, k)}
    try:
        signature.bind(*([None] * count), **keywords)
    except TypeError:
        return False
    return True
