"""One provider at one base URL: its key, its SDK client over one HTTP connection pool, the
bound on requests in flight and the rate limits (:mod:`.rate_limit`).

The SDK client and its pool are built once and shared by every model on the endpoint. Both are
bound to the event loop that first used them (pooled connections and waiting callers belong to
a loop), so when the running loop changes (a new ``asyncio.run``) they are rebuilt for it.

Rate-limit headers are read from every response, success and 429 alike, by a response hook
on the pool (httpx's ``event_hooks``, which the SDKs' aiohttp client keeps): the SDKs' parsed
replies do not carry headers, and asking for raw responses instead would change how every
request is sent.

The pool is the SDKs' own aiohttp transport (``DefaultAioHttpClient``, which both SDKs ship)
rather than their default httpx one: measured on ``benchmarks/run_throughput.py``, it costs
about a third less CPU per request at 200 in flight (httpcore's pool looks at every pooled
connection for each request it places, and its async locking goes through anyio), and the CPU
per model call is what bounds a run's throughput.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import httpx2

from harness.errors import ModelConfigError
from harness.logs import hide_in_logs
from harness.models.rate_limit import AdaptiveConcurrency, RateLimiter, estimate_tokens
from harness.models.rate_limit_headers import PARSERS, SENTINELS

ClientFactory = Callable[[str, str, httpx2.AsyncClient, float], Any]
"""``(api_key, base_url, http_client, timeout_s) -> SDK client`` with the SDK's own retries
off."""

HttpClientClass = Callable[..., httpx2.AsyncClient]
"""The SDK's ``DefaultAioHttpClient``: an ``httpx2.AsyncClient`` over aiohttp."""

# Placeholder key for OpenAI-compatible local servers (vLLM, Ollama, llama.cpp) that need none;
# the SDK refuses to start without some key.
NO_KEY_NEEDED = "not-needed"


class Lease:
    """One request's place on an endpoint, from :meth:`Endpoint.acquire` to
    :meth:`Endpoint.release`: the SDK client to send with, and what the request's outcome
    tells the limits. The sender sets ``used_tokens`` on success, or ``rate_limited`` (and
    ``retry_after``) on a 429."""

    __slots__ = ("client", "estimate", "rate_limited", "retry_after", "ticket", "used_tokens")

    def __init__(self, client: Any, ticket: int, estimate: int) -> None:
        self.client = client
        self.ticket = ticket
        self.estimate = estimate
        self.used_tokens: int | None = None
        self.rate_limited = False
        self.retry_after: float | None = None


class Endpoint:
    """Where and how to reach one provider.

    ``api_key`` is ``None`` when none was configured; ``key_required`` says whether that is an
    error (official endpoints) or fine (a custom OpenAI-compatible base URL). ``key_source`` is
    how messages name the key (``ANTHROPIC_API_KEY`` or "the anthropic api_key in the
    config"), never its value.
    """

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        base_url_is_custom: bool,
        api_key: str | None,
        key_source: str,
        env_var: str,
        key_required: bool,
        concurrency: int,
        timeout_s: float,
        client_factory: ClientFactory,
        http_client_class: HttpClientClass,
        missing_key_hint: str = "",
        limiter: RateLimiter | None = None,
    ) -> None:
        self.provider = provider
        self.base_url = base_url
        self.base_url_is_custom = base_url_is_custom
        self._api_key = api_key
        if api_key:
            hide_in_logs(api_key)
        self.key_source = key_source
        self.env_var = env_var
        self.key_required = key_required
        self.missing_key_hint = missing_key_hint
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self._client_factory = client_factory
        self._http_client_class = http_client_class
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._http: httpx2.AsyncClient | None = None
        self._gate: AdaptiveConcurrency | None = None
        self.limiter = limiter or RateLimiter()
        self._parse_limits = PARSERS.get(provider)
        self._sentinels = SENTINELS.get(provider, ())
        # Whether any request here got an answer (a reply or an HTTP error) in this process: a
        # connection refused before then is a wrong address, not a passing failure.
        self.answered = False

    def __repr__(self) -> str:  # never shows the key
        return f"Endpoint({self.provider}, {self.base_url}, concurrency={self.concurrency})"

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values to scrub from any text shown to the user."""
        return (self._api_key,) if self._api_key else ()

    def require_key(self, model: str) -> None:
        """Raise :class:`ModelConfigError` (before any request) when a required key is
        missing."""
        if self._api_key is None and self.key_required:
            raise ModelConfigError(
                f"no {self.env_var} set; export {self.env_var} or set {self.provider}.api_key "
                f"in the models config{self.missing_key_hint}",
                model=model,
            )

    def _ensure(self) -> AdaptiveConcurrency:
        loop = asyncio.get_running_loop()
        if loop is not self._loop or self._gate is None:
            self._build(loop)
        assert self._gate is not None
        return self._gate

    @property
    def in_flight_limit(self) -> int:
        """Requests allowed in flight now (the concurrency bound, lowered after a 429)."""
        return self.concurrency if self._gate is None else self._gate.allowed

    async def acquire(self, body: Mapping[str, Any] | None = None) -> Lease:
        """Wait for a slot under the in-flight bound, then for the rate limits to allow
        ``body`` (the request's keyword arguments, for its token estimate); return the lease
        holding the SDK client (built for the running loop). Pair with :meth:`release`.
        ``None``: a request to the provider's other APIs (a batch's files and state), bounded
        in flight but not counted against the model's rate limits, which it does not use."""
        gate = self._ensure()
        ticket = await gate.acquire()
        limiter = self.limiter
        estimate = 0
        if body is not None and limiter.active:
            # Waited for while holding the slot: the bucket is the last wait before sending,
            # so requests leave as evenly spaced as it paces them.
            try:
                estimate = estimate_tokens(body) if limiter.counts_tokens else 0
                await limiter.acquire(estimate)
            except BaseException:
                gate.release(ticket, succeeded=False, rate_limited=False)
                raise
        return Lease(self._client, ticket, estimate)

    def release(self, lease: Lease) -> None:
        """Give back the slot of :meth:`acquire`, telling the limits how the request went."""
        if self._gate is not None:
            self._gate.release(lease.ticket, succeeded=lease.used_tokens is not None,
                               rate_limited=lease.rate_limited)
        limiter = self.limiter
        if limiter.counts_tokens:
            used = lease.used_tokens
            if used is None:
                # Refused (429): nothing was used. Failed otherwise: it may have been
                # counted whole, so its reservation stays spent.
                used = 0 if lease.rate_limited else lease.estimate
            limiter.settle(lease.estimate, used)
        if lease.rate_limited and lease.retry_after:
            limiter.pause(lease.retry_after)

    async def _on_response(self, response: httpx2.Response) -> None:
        """Every response's rate-limit headers, to the limiter (see the module docstring)."""
        headers = response.headers
        if self._parse_limits is None or not any(h in headers for h in self._sentinels):
            return
        limits = self._parse_limits(headers)
        if limits is not None:
            self.limiter.observe(limits)

    def _build(self, loop: asyncio.AbstractEventLoop) -> None:
        # As many pooled connections as requests may be in flight: none ever waits for one.
        self._http = self._http_client_class(
            limits=httpx2.Limits(max_connections=self.concurrency,
                                 max_keepalive_connections=self.concurrency,
                                 keepalive_expiry=30.0),
            timeout=httpx2.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
            follow_redirects=True,
            event_hooks={"response": [self._on_response]} if self._parse_limits else None,
        )
        self._client = self._client_factory(self._api_key or NO_KEY_NEEDED, self.base_url,
                                            self._http, self.timeout_s)
        self._gate = AdaptiveConcurrency(self.concurrency)
        self._loop = loop

    async def aclose(self) -> None:
        """Close the connection pool if it belongs to the running loop (a pool of a finished
        loop cannot be closed any more; dropping it is all that is left)."""
        http, same_loop = self._http, self._loop is asyncio.get_running_loop()
        self._client = self._http = self._gate = self._loop = None
        if same_loop and http is not None:
            await http.aclose()
