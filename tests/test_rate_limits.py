"""The client's rate limits on their own: token buckets paced on a fake clock, the AIMD bound on
requests in flight, and the providers' rate-limit headers (example values from their docs)."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime

import pytest

from harness.models.rate_limit import (
    AdaptiveConcurrency,
    RateLimiter,
    TokenBucket,
    estimate_tokens,
)
from harness.models.rate_limit_headers import (
    Allowance,
    ServerLimits,
    parse_anthropic,
    parse_duration,
    parse_openai,
)


class FakeClock:
    """A clock that moves only when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def limiter(clock: FakeClock, **limits: int | None) -> RateLimiter:
    return RateLimiter(clock=clock, sleep=clock.sleep, **limits)  # type: ignore[arg-type]


async def send_times(rl: RateLimiter, clock: FakeClock, count: int, tokens: int = 0
                     ) -> list[float]:
    times = []
    for _ in range(count):
        await rl.acquire(tokens)
        times.append(clock.now)
    return times


# --- the token buckets ---------------------------------------------------------------------------

async def test_requests_are_paced_evenly_after_half_a_second_of_burst():
    clock = FakeClock()
    times = await send_times(limiter(clock, requests_per_minute=600), clock, 40)
    # Capacity is half a second's worth (5), then one request every 1/10 s.
    assert times[:5] == [0.0] * 5
    gaps = [b - a for a, b in itertools.pairwise(times[4:])]
    assert all(gap == pytest.approx(0.1) for gap in gaps)
    assert times[-1] == pytest.approx(3.5)


async def test_a_long_run_sends_at_the_limit_not_above():
    clock = FakeClock()
    times = await send_times(limiter(clock, requests_per_minute=120), clock, 241)
    # 2 a second; the first from the full bucket (one request), then 240 more over 120 s.
    assert times[-1] == pytest.approx(120.0)
    in_first_minute = sum(t < 60.0 for t in times)
    assert in_first_minute == 120  # the limit, the burst included


async def test_a_slow_limit_still_holds_one_request():
    clock = FakeClock()
    times = await send_times(limiter(clock, requests_per_minute=6), clock, 3)
    assert times == [0.0, pytest.approx(10.0), pytest.approx(20.0)]


async def test_tokens_limit_paces_by_the_estimate():
    clock = FakeClock()
    rl = limiter(clock, tokens_per_minute=6000)  # 100 a second, capacity 50
    times = await send_times(rl, clock, 4, tokens=50)
    assert times == [0.0, pytest.approx(0.5), pytest.approx(1.0), pytest.approx(1.5)]


async def test_a_request_larger_than_the_capacity_passes_once_the_bucket_grows():
    clock = FakeClock()
    rl = limiter(clock, tokens_per_minute=6000)
    await rl.acquire(300)  # 50 in the bucket: 250 more take 2.5 s
    assert clock.now == pytest.approx(2.5)
    assert rl.tokens is not None and rl.tokens.capacity == 300


async def test_both_limits_wait_for_the_stricter():
    clock = FakeClock()
    rl = limiter(clock, requests_per_minute=6000, tokens_per_minute=600)  # 10 tokens a second
    times = await send_times(rl, clock, 3, tokens=10)  # 5 in the bucket, 5 more take 0.5 s
    assert times == [pytest.approx(0.5), pytest.approx(1.5), pytest.approx(2.5)]


async def test_settling_returns_what_was_not_used_and_charges_what_was():
    clock = FakeClock()
    rl = limiter(clock, tokens_per_minute=6000)
    await rl.acquire(30)
    assert rl.tokens is not None
    assert rl.tokens.level == pytest.approx(20)
    rl.settle(30, 10)  # the answer was shorter than max_tokens allowed
    assert rl.tokens.level == pytest.approx(40)
    rl.settle(0, 120)  # more used than estimated: a debt the refill pays first
    assert rl.tokens.level == pytest.approx(-80)
    await rl.acquire(20)
    assert clock.now == pytest.approx(1.0)


async def test_reservations_in_flight_do_not_crowd_the_refill_out():
    clock = FakeClock()
    rl = limiter(clock, tokens_per_minute=6000)  # 100 a second, capacity 50
    await rl.acquire(40)  # reserved while its request is out
    clock.now += 1.0  # the refill goes on past the capacity by what is reserved
    await rl.acquire(40)
    await rl.acquire(40)
    assert clock.sleeps == []
    assert rl.tokens is not None and rl.tokens.reserved == 120
    for _ in range(3):
        rl.settle(40, 10)
    assert rl.tokens.reserved == 0 and rl.tokens.level == pytest.approx(50)


async def test_settling_never_fills_above_the_capacity():
    rl = limiter(FakeClock(), tokens_per_minute=600)
    rl.settle(1000, 0)
    assert rl.tokens is not None and rl.tokens.level == rl.tokens.capacity


async def test_concurrent_callers_are_served_in_arrival_order():
    clock = FakeClock()
    rl = limiter(clock, requests_per_minute=60)
    order: list[int] = []

    async def caller(index: int) -> None:
        await rl.acquire()
        order.append(index)

    await asyncio.gather(*(caller(i) for i in range(6)))
    assert order == list(range(6))
    assert clock.now == pytest.approx(5.0)


async def test_a_pause_holds_every_new_request():
    clock = FakeClock()
    rl = limiter(clock)
    assert not rl.active
    rl.pause(2.5)
    assert rl.active
    await rl.acquire()
    assert clock.now == pytest.approx(2.5)
    await rl.acquire()  # the pause is over
    assert clock.now == pytest.approx(2.5)


async def test_no_limits_means_no_waiting_and_nothing_to_check():
    clock = FakeClock()
    rl = limiter(clock)
    assert not rl.active and not rl.counts_tokens
    await send_times(rl, clock, 100)
    assert clock.sleeps == []


def test_the_bucket_refills_continuously_up_to_its_capacity():
    clock = FakeClock()
    bucket = TokenBucket(600, clock)
    bucket.take(5, 0.0)
    assert bucket.delay(1, 0.0) == pytest.approx(0.1)
    assert bucket.delay(5, 0.25) == pytest.approx(0.25)
    assert bucket.delay(1, 100.0) == 0.0
    assert bucket.level == bucket.capacity == 5


def test_the_token_estimate_counts_the_body_and_the_output_allowance():
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 400}], "max_tokens": 50}
    assert estimate_tokens(body) == len('{"model":"m","messages":[{"role":"user","content":"'
                                        + "x" * 400 + '"}],"max_tokens":50}') // 4 + 50
    assert estimate_tokens({"messages": [], "max_completion_tokens": 7}) == (
        len('{"messages":[],"max_completion_tokens":7}') // 4 + 7)
    assert estimate_tokens({"contents": [object()]}) > 0  # anything the SDK takes


# --- limits the server states --------------------------------------------------------------------

async def test_a_limit_the_server_states_is_adopted_when_none_was_configured():
    clock = FakeClock()
    rl = limiter(clock)
    rl.observe(ServerLimits(requests=Allowance(limit=600, remaining=0),
                            tokens=Allowance(limit=60_000, remaining=50_000)))
    assert rl.active and rl.counts_tokens
    assert rl.requests is not None and rl.requests.rate == pytest.approx(10)
    times = await send_times(rl, clock, 3)  # nothing remains: paced from empty
    assert times == [pytest.approx(0.1), pytest.approx(0.2), pytest.approx(0.3)]


async def test_a_configured_limit_is_kept_and_lowered_to_what_remains():
    clock = FakeClock()
    rl = limiter(clock, requests_per_minute=60)
    rl.observe(ServerLimits(requests=Allowance(limit=10_000, remaining=0)))
    assert rl.requests is not None and rl.requests.rate == pytest.approx(1)
    await rl.acquire()
    assert clock.now == pytest.approx(1.0)


def test_remaining_above_the_level_raises_nothing():
    rl = limiter(FakeClock(), requests_per_minute=600)
    assert rl.requests is not None
    rl.requests.take(3, 0.0)
    rl.observe(ServerLimits(requests=Allowance(limit=600, remaining=500)))
    assert rl.requests.level == pytest.approx(2)


def test_a_process_adopts_its_share_of_the_accounts_limit():
    rl = RateLimiter(share=0.25, clock=FakeClock())
    rl.observe(ServerLimits(requests=Allowance(limit=400, remaining=4)))
    assert rl.requests is not None
    assert rl.requests.rate * 60 == pytest.approx(100)
    assert rl.requests.level == pytest.approx(1)  # a quarter of what remains


def test_a_changed_server_limit_is_followed_when_adopted():
    rl = limiter(FakeClock())
    rl.observe(ServerLimits(requests=Allowance(limit=600)))
    rl.observe(ServerLimits(requests=Allowance(limit=1200)))
    assert rl.requests is not None and rl.requests.rate == pytest.approx(20)


# --- AIMD --------------------------------------------------------------------------------------

async def test_a_429_halves_the_bound_once_per_round_trip():
    gate = AdaptiveConcurrency(16)
    tickets = [await gate.acquire() for _ in range(16)]
    gate.release(tickets[0], succeeded=False, rate_limited=True)
    assert gate.allowed == 8
    # The other requests in flight at the cut were sent under the old bound: no second cut.
    for ticket in tickets[1:6]:
        gate.release(ticket, succeeded=False, rate_limited=True)
    assert gate.allowed == 8
    for ticket in tickets[6:]:
        gate.release(ticket, succeeded=False, rate_limited=False)
    later = await gate.acquire()  # sent after the cut: its 429 cuts again
    gate.release(later, succeeded=False, rate_limited=True)
    assert gate.allowed == 4


async def test_the_bound_never_goes_below_one():
    gate = AdaptiveConcurrency(4)
    for _ in range(6):
        ticket = await gate.acquire()
        gate.release(ticket, succeeded=False, rate_limited=True)
    assert gate.limit == 1.0 and gate.allowed == 1


async def test_successes_climb_back_by_one_per_window_never_above_the_ceiling():
    gate = AdaptiveConcurrency(8)
    gate.limit = 2.0
    for _ in range(2):  # one window at 2 in flight adds about one
        ticket = await gate.acquire()
        gate.release(ticket, succeeded=True, rate_limited=False)
    assert gate.limit == pytest.approx(2.0 + 1 / 2 + 1 / 2.5)
    for _ in range(200):
        ticket = await gate.acquire()
        gate.release(ticket, succeeded=True, rate_limited=False)
    assert gate.limit == 8.0


async def test_other_failures_leave_the_bound_as_it_is():
    gate = AdaptiveConcurrency(8)
    gate.limit = 3.0
    ticket = await gate.acquire()
    gate.release(ticket, succeeded=False, rate_limited=False)
    assert gate.limit == 3.0


async def test_after_a_cut_callers_wait_until_in_flight_is_under_the_new_bound():
    gate = AdaptiveConcurrency(4)
    tickets = [await gate.acquire() for _ in range(4)]
    gate.release(tickets[0], succeeded=False, rate_limited=True)  # bound 2, 3 in flight
    waiter = asyncio.ensure_future(gate.acquire())
    await asyncio.sleep(0)
    assert not waiter.done()
    gate.release(tickets[1], succeeded=False, rate_limited=False)  # 2 in flight: still full
    await asyncio.sleep(0)
    assert not waiter.done()
    gate.release(tickets[2], succeeded=False, rate_limited=False)
    assert await waiter > tickets[3]
    assert gate.in_flight == 2


async def test_a_cancelled_waiter_gives_its_slot_on():
    gate = AdaptiveConcurrency(1)
    first = await gate.acquire()
    cancelled = asyncio.ensure_future(gate.acquire())
    second = asyncio.ensure_future(gate.acquire())
    await asyncio.sleep(0)
    gate.release(first, succeeded=True, rate_limited=False)  # wakes `cancelled`
    cancelled.cancel()
    await asyncio.sleep(0)
    assert cancelled.cancelled()
    assert await asyncio.wait_for(second, 1) > first
    assert gate.in_flight == 1


# --- the providers' headers ----------------------------------------------------------------------

def test_openai_headers_as_its_docs_show_them():
    # The example in OpenAI's rate-limit guide.
    limits = parse_openai({
        "x-ratelimit-limit-requests": "60", "x-ratelimit-limit-tokens": "150000",
        "x-ratelimit-remaining-requests": "59", "x-ratelimit-remaining-tokens": "149984",
        "x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"})
    assert limits == ServerLimits(requests=Allowance(60, 59, 1.0),
                                  tokens=Allowance(150000, 149984, 360.0))


def test_openai_headers_with_millisecond_resets():
    # As the Chat Completions API sends them (OpenAI's community forum, 2025).
    limits = parse_openai({
        "x-ratelimit-limit-requests": "5000", "x-ratelimit-remaining-requests": "4999",
        "x-ratelimit-reset-requests": "12ms", "x-ratelimit-limit-tokens": "160000",
        "x-ratelimit-remaining-tokens": "159976", "x-ratelimit-reset-tokens": "9ms"})
    assert limits is not None and limits.requests is not None and limits.tokens is not None
    assert limits.requests.reset_s == pytest.approx(0.012)
    assert limits.tokens.reset_s == pytest.approx(0.009)


def test_anthropic_headers_as_the_api_sends_them():
    # A recorded response of the Messages API (tidyllm's test fixtures, 2025-08-21).
    headers = {
        "anthropic-ratelimit-input-tokens-limit": "80000",
        "anthropic-ratelimit-input-tokens-remaining": "80000",
        "anthropic-ratelimit-input-tokens-reset": "2025-08-21T12:40:59Z",
        "anthropic-ratelimit-output-tokens-limit": "16000",
        "anthropic-ratelimit-output-tokens-remaining": "16000",
        "anthropic-ratelimit-output-tokens-reset": "2025-08-21T12:41:00Z",
        "anthropic-ratelimit-requests-limit": "1000",
        "anthropic-ratelimit-requests-remaining": "999",
        "anthropic-ratelimit-requests-reset": "2025-08-21T12:40:59Z",
        "anthropic-ratelimit-tokens-limit": "96000",
        "anthropic-ratelimit-tokens-remaining": "96000",
        "anthropic-ratelimit-tokens-reset": "2025-08-21T12:40:59Z",
    }
    now = datetime(2025, 8, 21, 12, 40, 58, 500_000, tzinfo=UTC).timestamp()
    limits = parse_anthropic(headers, now=now)
    assert limits == ServerLimits(
        requests=Allowance(1000, 999, pytest.approx(0.5)),  # type: ignore[arg-type]
        tokens=Allowance(96000, 96000, pytest.approx(0.5)),  # type: ignore[arg-type]
        input_tokens=Allowance(80000, 80000, pytest.approx(0.5)),  # type: ignore[arg-type]
        output_tokens=Allowance(16000, 16000, pytest.approx(1.5)))  # type: ignore[arg-type]


def test_anthropic_without_a_combined_token_limit_follows_the_input_one():
    limits = parse_anthropic({"anthropic-ratelimit-input-tokens-limit": "80000",
                              "anthropic-ratelimit-input-tokens-remaining": "100"})
    assert limits is not None and limits.tokens == Allowance(80000, 100, None)
    assert limits.requests is None


def test_a_reset_in_the_past_is_zero():
    limits = parse_anthropic({"anthropic-ratelimit-requests-limit": "5",
                              "anthropic-ratelimit-requests-reset": "2020-01-01T00:00:00Z"})
    assert limits is not None and limits.requests == Allowance(5, None, 0.0)


@pytest.mark.parametrize(("text", "seconds"), [
    ("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3s", 3723.0), ("1.5s", 1.5),
    ("250us", 0.00025), ("0s", 0.0)])
def test_go_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "5", "1x", "s1", "1s garbage", "-1s"])
def test_what_is_not_a_duration_is_left_out(text):
    assert parse_duration(text) is None


def test_values_that_do_not_parse_are_left_out_not_errors():
    limits = parse_openai({"x-ratelimit-limit-requests": "many",
                           "x-ratelimit-remaining-requests": "-3",
                           "x-ratelimit-limit-tokens": "1000",
                           "x-ratelimit-reset-tokens": "later"})
    assert limits == ServerLimits(requests=None, tokens=Allowance(1000, None, None))
    assert parse_anthropic({"anthropic-ratelimit-tokens-reset": "not a time",
                            "anthropic-ratelimit-tokens-limit": "x"}) is None
    assert parse_openai({"content-type": "application/json"}) is None
