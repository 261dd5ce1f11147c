"""What a provider's response headers say about its rate limits, read into one shape.

OpenAI sends, on every response, ``x-ratelimit-limit-requests``, ``-limit-tokens``,
``-remaining-requests``, ``-remaining-tokens``, ``-reset-requests`` and ``-reset-tokens``, the
resets as Go-style durations (``1s``, ``6m0s``, ``20ms``): the time until the bucket is full
again. Anthropic sends ``anthropic-ratelimit-requests-limit``/``-remaining``/``-reset`` and the
same for ``tokens`` (the most restrictive token limit in effect), ``input-tokens`` and
``output-tokens``, the resets as RFC 3339 times. A value that does not parse is left out, never
an error: a header is advice, and a proxy may rewrite it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


@dataclass(frozen=True)
class Allowance:
    """One limit as the server states it: the per-minute ``limit``, what ``remaining`` of it,
    and ``reset_s``, seconds until it is whole again (each ``None`` when not sent)."""

    limit: int | None = None
    remaining: int | None = None
    reset_s: float | None = None


@dataclass(frozen=True)
class ServerLimits:
    """The limits a response stated. ``tokens`` is what a token bucket follows: OpenAI's
    token limit, Anthropic's combined one (else its input-token limit); Anthropic's input and
    output limits are kept apart as well."""

    requests: Allowance | None = None
    tokens: Allowance | None = None
    input_tokens: Allowance | None = None
    output_tokens: Allowance | None = None


def parse_duration(text: str) -> float | None:
    """Seconds in a Go-style duration (``6m0s``, ``1.5s``, ``20ms``, ``1h2m3s``), ``None``
    when it is not one."""
    text = text.strip()
    if not text:
        return None
    parts = _DURATION.findall(text)
    if "".join(number + unit for number, unit in parts) != text:
        return None
    return sum(float(number) * _UNIT_S[unit] for number, unit in parts)


def _whole(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def _seconds_until(text: str | None, now: float) -> float | None:
    """Seconds from ``now`` (a Unix time) to an RFC 3339 time, at least 0."""
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


def _allowance(limit: int | None, remaining: int | None,
               reset_s: float | None) -> Allowance | None:
    if limit is None and remaining is None:
        return None
    return Allowance(limit=limit, remaining=remaining, reset_s=reset_s)


def parse_openai(headers: Mapping[str, str]) -> ServerLimits | None:
    """OpenAI's ``x-ratelimit-*`` headers (also sent by compatible servers such as Azure
    OpenAI and vLLM's gateways); ``None`` when there are none."""
    def one(kind: str) -> Allowance | None:
        reset = headers.get(f"x-ratelimit-reset-{kind}")
        return _allowance(_whole(headers.get(f"x-ratelimit-limit-{kind}")),
                          _whole(headers.get(f"x-ratelimit-remaining-{kind}")),
                          None if reset is None else parse_duration(reset))

    requests, tokens = one("requests"), one("tokens")
    if requests is None and tokens is None:
        return None
    return ServerLimits(requests=requests, tokens=tokens)


def parse_anthropic(headers: Mapping[str, str], *, now: float | None = None
                    ) -> ServerLimits | None:
    """Anthropic's ``anthropic-ratelimit-*`` headers; ``None`` when there are none. ``now``
    (a Unix time, default the current one) is what the resets are counted from."""
    moment = time.time() if now is None else now

    def one(kind: str) -> Allowance | None:
        prefix = f"anthropic-ratelimit-{kind}-"
        return _allowance(_whole(headers.get(prefix + "limit")),
                          _whole(headers.get(prefix + "remaining")),
                          _seconds_until(headers.get(prefix + "reset"), moment))

    requests, tokens = one("requests"), one("tokens")
    input_tokens, output_tokens = one("input-tokens"), one("output-tokens")
    if not any((requests, tokens, input_tokens, output_tokens)):
        return None
    return ServerLimits(requests=requests, tokens=tokens or input_tokens,
                        input_tokens=input_tokens, output_tokens=output_tokens)


PARSERS: dict[str, Callable[[Mapping[str, str]], ServerLimits | None]] = {
    "openai": parse_openai, "anthropic": parse_anthropic}
"""The parser of each provider that sends rate-limit headers (Gemini sends none)."""

SENTINELS = {"openai": ("x-ratelimit-limit-requests", "x-ratelimit-remaining-tokens"),
             "anthropic": ("anthropic-ratelimit-requests-limit",
                           "anthropic-ratelimit-tokens-remaining",
                           "anthropic-ratelimit-input-tokens-remaining")}
"""Headers whose absence means a response states no limit, checked before parsing so a
server that sends none (a local one) costs a lookup or two per response."""
