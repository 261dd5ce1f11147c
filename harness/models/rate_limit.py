"""Keeping an endpoint just under its provider's rate limits instead of bursting into them.

A provider limits requests and tokens per minute and answers anything over with a 429. Retrying
alone meets such a limit by failing: every request in flight is refused, every caller sleeps
the same Retry-After, and all of them come back at once to be refused again. Three parts here
avoid that, all pure asyncio (no threads, no timers):

- :class:`TokenBucket`, one per limit (requests, tokens), refilled continuously at the
  per-minute rate over 60 and holding half a second's worth (:data:`BURST_S`), so requests
  leave evenly spaced rather than in a burst that a provider's own bucket would refuse.
  :class:`RateLimiter` waits until both buckets allow a request, in arrival order; it pauses
  every new request until a 429's Retry-After has passed; and it reads what the provider's
  headers say remains (:mod:`.rate_limit_headers`), lowering a bucket to it, or adopting the
  provider's stated limit when none was configured.
- :class:`AdaptiveConcurrency`, the bound on requests in flight: it starts at the endpoint's
  ``concurrency``, halves on a 429 (once per round trip: not again for the requests that were
  already in flight when it was cut) and grows by ``1/limit`` on each success, so by one per
  window of requests (additive increase, multiplicative decrease, as TCP's congestion window).

With no limit configured and no header seen, the limiter does nothing but one attribute test
per request, and the gate costs what the semaphore it replaced cost
(``benchmarks/model_layer.py``).
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from harness.models.rate_limit_headers import Allowance, ServerLimits

Clock = Callable[[], float]
"""Seconds on a monotonic clock (``time.monotonic``; a fake one in tests)."""

Sleep = Callable[[float], Awaitable[None]]
"""``asyncio.sleep``, or a fake one that moves a fake clock."""

BURST_S = 0.5
"""What a bucket holds, in seconds' worth of its rate (at least one request, and at least the
largest request seen). Less than the second's worth a provider allows at once, on purpose: a
burst sent together reaches the server spread out (connections open one by one), and a
request paced just behind it can then arrive before the server's bucket has refilled for it.
Half a second's worth leaves the other half in the server's bucket as slack for that, and
keeps it there while the pacing holds the rate (measured: ``benchmarks/rate_limits.py``)."""


class TokenBucket:
    """A bucket holding at most ``capacity`` units, refilled continuously at ``rate`` units a
    second.

    What a request is counted for before it is sent is *reserved* (:meth:`take`) until its
    usage is known (:meth:`settle`), and the capacity grows by what is reserved: a reservation
    is given back in part, so it must not crowd the refill out of the bucket while it is out
    (at 0.2 s a request, a bucket of half a second's worth would otherwise be held by the
    requests in flight, and the rate would fall to two thirds of the limit). The level may go
    below zero: a request that used more than was reserved for it is a debt the refill pays
    first."""

    __slots__ = ("_clock", "_stamp", "capacity", "level", "rate", "reserved")

    def __init__(self, per_minute: float, clock: Clock) -> None:
        self._clock = clock
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * BURST_S)
        self.level = self.capacity
        self.reserved = 0.0
        self._stamp = clock()

    def _refill(self, now: float) -> None:
        if now > self._stamp:
            self.level = min(self.capacity + self.reserved,
                             self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    def delay(self, amount: float, now: float) -> float:
        """Seconds from ``now`` until ``amount`` can be taken (0 when it can now)."""
        self._refill(now)
        if amount > self.capacity:
            # A request larger than the bucket must still pass some time: the bucket grows
            # to hold the largest single request.
            self.capacity = amount
        missing = amount - self.level
        # Rounding may leave a sliver after waiting exactly the time computed: not a wait.
        return 0.0 if missing <= 1e-9 * max(1.0, amount) else missing / self.rate

    def take(self, amount: float, now: float, *, reserve: bool = False) -> None:
        """Take ``amount``; ``reserve``: until :meth:`settle` says what was used of it."""
        self._refill(now)
        self.level -= amount
        if reserve:
            self.reserved += amount

    def settle(self, reserved: float, used: float, now: float) -> None:
        """A reservation's outcome: ``reserved`` comes back, ``used`` goes out."""
        self._refill(now)
        self.reserved = max(0.0, self.reserved - reserved)
        self.level = min(self.capacity + self.reserved, self.level + reserved - used)

    def lower_to(self, remaining: float, now: float) -> None:
        """What the server says remains: the level is never above it."""
        self._refill(now)
        self.level = min(self.level, remaining)

    def set_rate(self, per_minute: float) -> None:
        """A new limit (the server stated another): rate and capacity follow it."""
        self._refill(self._clock())
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * BURST_S)
        self.level = min(self.level, self.capacity)


SETTLE_POLL_S = 0.02
"""How long a caller waiting for tokens sleeps at most while reservations are out."""


def estimate_tokens(body: Mapping[str, Any]) -> int:
    """The tokens a request will be counted for when it is admitted: the characters of its
    JSON body over four (a common rule of thumb for English text, close to what providers
    estimate from before tokenising) plus its ``max_tokens``. The output allowance is counted
    in full because providers reserve it at admission (OpenAI counts max_tokens against the
    token limit when the request arrives); what was not used comes back when the usage is
    known (:meth:`RateLimiter.settle`)."""
    text = orjson.dumps(body, default=str)
    allowance = (body.get("max_tokens") or body.get("max_completion_tokens")
                 or body.get("max_output_tokens") or 0)
    return len(text) // 4 + (allowance if isinstance(allowance, int) else 0)


class RateLimiter:
    """The per-minute limits of one endpoint: ``requests_per_minute`` and
    ``tokens_per_minute`` (``None``: not configured, adopted from the server's headers when it
    states one). ``share`` is this process's part of a limit the server states for the whole
    account (``1/N`` of it with N worker processes). ``clock`` and ``sleep`` are injectable so
    the pacing can be tested without waiting."""

    def __init__(self, *, requests_per_minute: int | None = None,
                 tokens_per_minute: int | None = None, share: float = 1.0,
                 clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep) -> None:
        self._clock, self._sleep, self._share = clock, sleep, share
        self.requests = (None if requests_per_minute is None
                         else TokenBucket(requests_per_minute, clock))
        self.tokens = None if tokens_per_minute is None else TokenBucket(tokens_per_minute, clock)
        self._configured = (requests_per_minute is not None, tokens_per_minute is not None)
        self.paused_until = 0.0
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        # Whether acquire has anything to check: false until a limit or a pause exists, so an
        # endpoint with neither pays one attribute read per request.
        self.active = self.requests is not None or self.tokens is not None

    @property
    def counts_tokens(self) -> bool:
        """Whether requests need a token estimate (a token limit is configured or adopted)."""
        return self.tokens is not None

    def _queue(self) -> asyncio.Lock:
        # One lock per event loop (an asyncio.Lock belongs to the loop it first waited on).
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    def delay(self, tokens: int, now: float) -> float:
        """Seconds from ``now`` until a request counted as ``tokens`` may be sent."""
        wait = self.paused_until - now
        if self.requests is not None:
            wait = max(wait, self.requests.delay(1, now))
        if self.tokens is not None:
            wait = max(wait, self.tokens.delay(tokens, now))
        return wait

    async def acquire(self, tokens: int = 0) -> None:
        """Wait until a request counted as ``tokens`` fits both limits and no pause holds
        it, then count it. Callers are served in arrival order (the lock is fair), so the
        one at the head waits out the bucket and the others wait behind it."""
        async with self._queue():
            while True:
                now = self._clock()
                wait = self.delay(tokens, now)
                if wait <= 0:
                    break
                if self.tokens is not None and self.tokens.reserved:
                    # A reservation settled meanwhile gives tokens back: look again soon
                    # rather than oversleep them (the bucket would fill and waste its refill).
                    wait = min(wait, SETTLE_POLL_S)
                await self._sleep(wait)
            if self.requests is not None:
                self.requests.take(1, now)
            if self.tokens is not None:
                self.tokens.take(tokens, now, reserve=True)

    def settle(self, estimate: int, actual: int) -> None:
        """Correct the token bucket once a request's usage is known: what it was counted for
        comes back, what it used goes out."""
        if self.tokens is not None:
            self.tokens.settle(estimate, actual, self._clock())

    def pause(self, seconds: float) -> None:
        """Hold every new request for ``seconds`` (a 429's Retry-After), so the callers that
        were refused together do not all come back together to be refused again."""
        self.paused_until = max(self.paused_until, self._clock() + seconds)
        self.active = True

    def observe(self, limits: ServerLimits) -> None:
        """What a response's headers said: a limit not configured here is adopted (scaled by
        this process's share), and each bucket is lowered to what the server says remains."""
        now = self._clock()
        self.requests = self._apply(self.requests, limits.requests, self._configured[0], now)
        self.tokens = self._apply(self.tokens, limits.tokens, self._configured[1], now)
        self.active = self.active or self.requests is not None or self.tokens is not None

    def _apply(self, bucket: TokenBucket | None, allowance: Allowance | None, configured: bool,
               now: float) -> TokenBucket | None:
        if allowance is None:
            return bucket
        if not configured and allowance.limit is not None and allowance.limit > 0:
            per_minute = allowance.limit * self._share
            if bucket is None:
                bucket = TokenBucket(per_minute, self._clock)
            elif abs(bucket.rate * 60.0 - per_minute) > 1e-9:
                bucket.set_rate(per_minute)
        if bucket is not None and allowance.remaining is not None:
            bucket.lower_to(allowance.remaining * self._share, now)
        return bucket


class AdaptiveConcurrency:
    """The bound on requests in flight, adapted to 429s (see the module docstring).

    :meth:`acquire` returns a ticket (the request's start number) to hand back to
    :meth:`release` with the outcome, so a 429 of a request that started before the last cut
    does not cut again: its refusal was caused by the load the cut already answered."""

    __slots__ = ("_cut_at", "_started", "_waiters", "ceiling", "in_flight", "limit")

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.limit = float(ceiling)
        self.in_flight = 0
        self._started = 0
        self._cut_at = 0
        self._waiters: collections.deque[asyncio.Future[int]] = collections.deque()

    @property
    def allowed(self) -> int:
        """Requests allowed in flight now (the limit's whole part, at least 1)."""
        return max(1, int(self.limit))

    async def acquire(self) -> int:
        """Wait for a slot; return the request's ticket."""
        if not self._waiters and self.in_flight < self.allowed:
            self.in_flight += 1
            self._started += 1
            return self._started
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                # Woken, then cancelled before running: the slot given to it passes on.
                self.in_flight -= 1
                self._wake()
            elif waiter in self._waiters:  # else already dropped by _wake
                self._waiters.remove(waiter)
            raise

    def release(self, ticket: int, *, succeeded: bool, rate_limited: bool) -> None:
        """Give the slot back. A 429 (``rate_limited``) halves the limit unless the request
        started before the last cut; a success adds ``1/limit``; other failures leave it."""
        self.in_flight -= 1
        if rate_limited:
            if ticket > self._cut_at:
                self.limit = max(1.0, self.limit / 2)
                self._cut_at = self._started
        elif succeeded and self.limit < self.ceiling:
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.allowed:
            waiter = self._waiters.popleft()
            if waiter.done():
                continue
            self.in_flight += 1
            self._started += 1
            waiter.set_result(self._started)
