"""One provider at one base URL: its key, its SDK clients over one shared HTTP connection pool
(split in shards, see :meth:`Endpoint._build`) and the semaphore that bounds requests in
flight.

SDK clients and pools are built once and shared by every model on the endpoint. Both are bound
to the event loop that first used them (pooled connections and semaphores belong to a loop),
so when the running loop changes (a new ``asyncio.run``) they are rebuilt for it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import httpx2

from harness.errors import ModelConfigError
from harness.logs import hide_in_logs

ClientFactory = Callable[[str, str, httpx2.AsyncClient, float], Any]
"""``(api_key, base_url, http_client, timeout_s) -> SDK client`` with the SDK's own retries
off."""

# Placeholder key for OpenAI-compatible local servers (vLLM, Ollama, llama.cpp) that need none;
# the SDK refuses to start without some key.
NO_KEY_NEEDED = "not-needed"

# Connections per pool shard (see Endpoint._build): measured on the loopback benchmark,
# 8 shards of 25 cut client CPU per call at 200 concurrent by about a quarter against 1 of 200.
SHARD_SIZE = 32


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
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self._client_factory = client_factory
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: list[Any] = []
        self._http: list[httpx2.AsyncClient] = []
        self._load: list[int] = []
        self._semaphore: asyncio.Semaphore | None = None

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
                "in the models config",
                model=model,
            )

    def _ensure(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop or self._semaphore is None:
            self._build(loop)

    async def acquire(self) -> int:
        """Wait for a free slot under the concurrency bound; return the pool shard to send
        on (its client is ``self.clients[shard]``). Pair with :meth:`release`."""
        self._ensure()
        assert self._semaphore is not None
        await self._semaphore.acquire()
        load = self._load
        # Least-loaded shard: with fewer than `concurrency` requests in flight, some shard
        # has a free connection, so no request ever queues inside a pool.
        shard = min(range(len(load)), key=load.__getitem__) if len(load) > 1 else 0
        load[shard] += 1
        return shard

    def release(self, shard: int) -> None:
        """Give back the slot taken by :meth:`acquire`."""
        self._load[shard] -= 1
        assert self._semaphore is not None
        self._semaphore.release()

    @property
    def clients(self) -> list[Any]:
        """The SDK clients, one per pool shard (built for the running loop)."""
        self._ensure()
        return self._clients

    def _build(self, loop: asyncio.AbstractEventLoop) -> None:
        # httpcore's pool looks at every pooled connection for each request it places, so
        # its CPU cost per request grows with the pool size: at 200 connections it costs more
        # than the rest of the request. The bound is therefore split over shards of at most
        # SHARD_SIZE connections, each one httpx2 client sized to its share; together they
        # hold exactly as many connections as the concurrency bound.
        shards = max(1, math.ceil(self.concurrency / SHARD_SIZE))
        size = math.ceil(self.concurrency / shards)
        key = self._api_key or NO_KEY_NEEDED
        self._http = []
        self._clients = []
        for _ in range(shards):
            http = httpx2.AsyncClient(
                limits=httpx2.Limits(max_connections=size, max_keepalive_connections=size,
                                     keepalive_expiry=30.0),
                timeout=httpx2.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
                follow_redirects=True,
            )
            self._http.append(http)
            self._clients.append(self._client_factory(key, self.base_url, http, self.timeout_s))
        self._load = [0] * shards
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._loop = loop

    async def aclose(self) -> None:
        """Close the connection pools if they belong to the running loop (pools of a finished
        loop cannot be closed any more; dropping them is all that is left)."""
        pools, same_loop = self._http, self._loop is asyncio.get_running_loop()
        self._clients, self._http, self._load = [], [], []
        self._semaphore = self._loop = None
        if same_loop:
            for http in pools:
                await http.aclose()
