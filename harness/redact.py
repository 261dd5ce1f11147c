"""API keys kept out of everything the harness writes or shows.

Keys are read from the environment or a models config and handed to the SDKs; any text that
could carry one back (a server's error message, a library's log line, an exception) goes
through :func:`redact` before it reaches a log, a stored error, a report or the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_KEY_SHAPES = re.compile(
    # OpenAI and Anthropic keys (sk-...), Google API keys (AIza...), bearer tokens, and
    # the value after a key header's or field's name.
    r"(sk-[A-Za-z0-9_\-]{8,}|AIza[A-Za-z0-9_\-]{16,}|Bearer\s+\S+|"
    r"(?:x-goog-api-key|x-api-key|api[_-]key|authorization)"
    r"[\"']?\s*[:=]\s*[\"']?(?:Bearer\s+)?[^\s,\"'}]+)",
    re.IGNORECASE,
)
REDACTED = "[redacted]"


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets`` and anything shaped like an API key replaced."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return _KEY_SHAPES.sub(REDACTED, text)
