"""mkdocs hook: the docstrings behind docs/api.md cross-reference with Sphinx roles
(``:func:`run_config```, ``:class:`~harness.errors.HarnessError```), which mkdocstrings leaves
as text. Shown as code instead: the name, or its last part after ``~``."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):<code>(~?)([^<]+)</code>")


def _name(match: re.Match[str]) -> str:
    short, target = match.groups()
    return f"<code>{target.rsplit('.', 1)[-1] if short else target}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(_name, html)
