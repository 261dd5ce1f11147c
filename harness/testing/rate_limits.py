"""Rate limits as a provider enforces them, for the loopback server.

:class:`RateLimit` says what is allowed: requests and tokens per minute, replenished
continuously (a token bucket, as Anthropic documents its limits and as OpenAI's behave), with
room for ``burst_s`` seconds' worth at once (OpenAI enforces a per-minute limit over shorter
periods, so a minute's worth sent at once is refused; 1 s by default). :class:`ServerLimits`
keeps the buckets: a request over either limit is answered 429 with ``Retry-After`` (and
``retry-after-ms``) saying when it would fit, and every answer, success or 429, carries the
provider's headers (``x-ratelimit-*`` for OpenAI, ``anthropic-ratelimit-*`` for Anthropic;
Gemini sends none, its 429 says the wait in its body).

Tokens are counted as OpenAI admits a request: its estimated input tokens (the same estimate
the server's replies report as usage) plus its ``max_tokens`` are reserved when it arrives, and
once the answer is rendered the reservation is settled to the usage the answer reports (input
plus output), so an answer shorter than ``max_tokens`` gives the rest back. Refused requests
cost nothing (OpenAI says its refusals do count; not counting them makes retry-only clients
look better here than they would fare there, never worse).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from harness.testing.replies import RecordedRequest, Rendered, Reply, estimate_tokens, render


@dataclass(frozen=True)
class RateLimit:
    """Per-minute limits (``None``: not limited) and the burst the buckets hold, in seconds'
    worth of the limit (at least one request, and at least the largest request seen).
    ``headers=False`` sends no rate-limit headers (a server that states nothing: its 429's
    Retry-After is all a client learns)."""

    rpm: int | None = None
    tpm: int | None = None
    burst_s: float = 1.0
    headers: bool = True

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        if self.burst_s <= 0:
            raise ValueError(f"burst_s must be above 0, not {self.burst_s}")


class _Bucket:
    def __init__(self, per_minute: int, burst_s: float, now: float) -> None:
        self.limit = per_minute
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity
        self._stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + max(0.0, now - self._stamp) * self.rate)
        self._stamp = now

    def wait_for(self, amount: float) -> float:
        self.capacity = max(self.capacity, amount)  # the largest request must fit some time
        return max(0.0, (amount - self.level) / self.rate)

    def reset_s(self) -> float:
        return max(0.0, (self.capacity - self.level) / self.rate)


@dataclass
class Admission:
    """A request the limits let through, with the tokens reserved for it."""

    reserved: int


def admitted_tokens(request: RecordedRequest) -> int:
    """What a request is counted for on arrival: its input estimate plus its output allowance."""
    body = request.body
    allowance = (body.get("max_tokens") or body.get("max_completion_tokens")
                 or (body.get("generationConfig") or {}).get("maxOutputTokens") or 0)
    return estimate_tokens(request.messages) + (allowance if isinstance(allowance, int) else 0)


def _reported_usage(rendered: Rendered, api: str) -> int | None:
    """Input plus output tokens in a rendered answer's body (cache reads included)."""
    try:
        body = json.loads(rendered.body)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    if api == "openai":
        usage = body.get("usage") or {}
        return int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
    if api == "anthropic":
        usage = body.get("usage") or {}
        return sum(int(usage.get(k) or 0) for k in (
            "input_tokens", "output_tokens", "cache_read_input_tokens",
            "cache_creation_input_tokens"))
    usage = body.get("usageMetadata") or {}
    return int(usage.get("promptTokenCount", 0)) + int(usage.get("candidatesTokenCount", 0))


def _openai_duration(seconds: float) -> str:
    """A reset in OpenAI's form: ``20ms`` below a second, else ``1s``, ``6m0s``."""
    if seconds < 1:
        return f"{max(0, math.ceil(seconds * 1000))}ms"
    whole = math.ceil(seconds)
    minutes, rest = divmod(whole, 60)
    return f"{minutes}m{rest}s" if minutes else f"{rest}s"


class ServerLimits:
    """The buckets of one :class:`RateLimit`, shared by every API the server speaks.
    ``clock`` is ``time.monotonic`` unless a test gives another; ``wall`` (Unix time) dates
    Anthropic's resets."""

    def __init__(self, limit: RateLimit, *, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.limit = limit
        self._clock, self._wall = clock, wall
        now = clock()
        self._requests = None if limit.rpm is None else _Bucket(limit.rpm, limit.burst_s, now)
        self._tokens = None if limit.tpm is None else _Bucket(limit.tpm, limit.burst_s, now)
        self._lock = threading.Lock()  # admitted on the server's loop, read from tests
        self.refused = 0
        self.admitted = 0

    def admit(self, request: RecordedRequest) -> Admission | Rendered:
        """Let ``request`` through (reserving its tokens), or the 429 to answer it with."""
        tokens = admitted_tokens(request)
        with self._lock:
            now = self._clock()
            wait = 0.0
            for bucket, amount in ((self._requests, 1.0), (self._tokens, float(tokens))):
                if bucket is not None:
                    bucket.refill(now)
                    wait = max(wait, bucket.wait_for(amount))
            if wait > 0:
                self.refused += 1
                refusal = render(Reply.rate_limited(retry_after=round(wait, 3)), request)
                refusal.headers.update(self._headers(request.api))
                refusal.headers["retry-after-ms"] = str(math.ceil(wait * 1000))
                return refusal
            if self._requests is not None:
                self._requests.level -= 1
            if self._tokens is not None:
                self._tokens.level -= tokens
            self.admitted += 1
            return Admission(reserved=tokens)

    def finish(self, admission: Admission, rendered: Rendered, api: str) -> None:
        """Settle the reservation to the usage ``rendered`` reports (when it reports one) and
        add the rate-limit headers to it."""
        used = _reported_usage(rendered, api) if rendered.status == 200 else None
        with self._lock:
            if self._tokens is not None and used is not None:
                self._tokens.refill(self._clock())
                self._tokens.level = min(self._tokens.capacity,
                                         self._tokens.level + admission.reserved - used)
            rendered.headers.update(self._headers(api))

    def _headers(self, api: str) -> dict[str, str]:
        """The provider's rate-limit headers for the buckets as they are (caller holds the
        lock, buckets refilled)."""
        headers: dict[str, str] = {}
        if not self.limit.headers:
            return headers
        for kind, bucket in (("requests", self._requests), ("tokens", self._tokens)):
            if bucket is None:
                continue
            remaining = str(max(0, math.floor(bucket.level)))
            if api == "openai":
                headers[f"x-ratelimit-limit-{kind}"] = str(bucket.limit)
                headers[f"x-ratelimit-remaining-{kind}"] = remaining
                headers[f"x-ratelimit-reset-{kind}"] = _openai_duration(bucket.reset_s())
            elif api == "anthropic":
                reset = datetime.fromtimestamp(self._wall() + bucket.reset_s(), UTC)
                prefix = f"anthropic-ratelimit-{kind}-"
                headers[prefix + "limit"] = str(bucket.limit)
                headers[prefix + "remaining"] = remaining
                headers[prefix + "reset"] = reset.strftime("%Y-%m-%dT%H:%M:%SZ")
        return headers
