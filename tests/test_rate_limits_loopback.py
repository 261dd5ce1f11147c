"""Rate limits end to end: the loopback server enforcing a provider's limits (its buckets on a
fake clock, its headers read back by the client's parsers), and the real openai and anthropic
SDKs held under them by the model layer."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import httpx2
import pytest

from harness.models.config import ModelsConfig
from harness.models.hub import ModelHub
from harness.models.rate_limit_headers import parse_anthropic, parse_openai
from harness.models.request import ModelRequest
from harness.models.types import GenerationParams, Message
from harness.testing.hub import loopback_config
from harness.testing.rate_limits import Admission, RateLimit, ServerLimits, admitted_tokens
from harness.testing.replies import RecordedRequest, Rendered
from harness.testing.server import LoopbackServer

HI = [Message(role="user", content="hi")]
SHORT = GenerationParams(max_tokens=40)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def request(api: str = "openai", max_tokens: int = 40) -> RecordedRequest:
    return RecordedRequest(api=api, path="/v1/chat/completions",  # type: ignore[arg-type]
                           body={"model": "m", "max_tokens": max_tokens,
                                 "messages": [{"role": "user", "content": "hello there"}]},
                           headers={})


# --- the server's buckets ------------------------------------------------------------------------

def test_the_server_refuses_over_its_request_limit_and_says_when_to_come_back():
    clock = Clock()
    limits = ServerLimits(RateLimit(rpm=120), clock=clock)  # 2 a second, 2 at once
    assert isinstance(limits.admit(request()), Admission)
    assert isinstance(limits.admit(request()), Admission)
    refused = limits.admit(request())
    assert isinstance(refused, Rendered) and refused.status == 429
    assert refused.headers["Retry-After"] == "0.5"
    assert refused.headers["retry-after-ms"] == "500"
    assert parse_openai(refused.headers).requests.remaining == 0  # type: ignore[union-attr]
    assert (limits.admitted, limits.refused) == (2, 1)
    clock.now += 0.5
    assert isinstance(limits.admit(request()), Admission)


def test_the_server_reserves_max_tokens_and_settles_to_the_usage_it_reports():
    clock = Clock()
    limits = ServerLimits(RateLimit(tpm=6000), clock=clock)  # 100 a second, 100 at once
    reserved = admitted_tokens(request(max_tokens=60))
    assert reserved == len('[{"role":"user","content":"hello there"}]') // 4 + 60
    admission = limits.admit(request(max_tokens=60))
    assert isinstance(admission, Admission) and admission.reserved == reserved
    assert isinstance(limits.admit(request(max_tokens=60)), Rendered)  # 100 - 70 < 70
    answer = Rendered(200, json.dumps(
        {"usage": {"prompt_tokens": 3, "completion_tokens": 5}}).encode())
    limits.finish(admission, answer, "openai")
    tokens = parse_openai(answer.headers).tokens  # type: ignore[union-attr]
    assert tokens is not None and tokens.limit == 6000
    assert tokens.remaining == 100 - 8  # the reservation came back, the usage went out
    assert isinstance(limits.admit(request(max_tokens=60)), Admission)


def test_anthropic_answers_carry_its_headers_with_rfc3339_resets():
    clock = Clock()
    limits = ServerLimits(RateLimit(rpm=60, tpm=60_000), clock=clock, wall=lambda: 1.7e9)
    admission = limits.admit(request("anthropic"))
    assert isinstance(admission, Admission)
    answer = Rendered(200, json.dumps(
        {"usage": {"input_tokens": 3, "output_tokens": 5}}).encode())
    limits.finish(admission, answer, "anthropic")
    parsed = parse_anthropic(answer.headers, now=1.7e9)
    assert parsed is not None and parsed.requests is not None and parsed.tokens is not None
    assert (parsed.requests.limit, parsed.requests.remaining) == (60, 0)
    assert parsed.requests.reset_s == pytest.approx(1.0, abs=1.0)  # whole seconds on the wire
    assert parsed.tokens.limit == 60_000
    assert not any(k.startswith("x-ratelimit") for k in answer.headers)


def test_a_request_larger_than_the_burst_is_admitted_once_the_bucket_holds_it():
    clock = Clock()
    limits = ServerLimits(RateLimit(tpm=600), clock=clock)  # 10 a second
    big = request(max_tokens=100)
    refused = limits.admit(big)
    assert isinstance(refused, Rendered)
    clock.now += float(refused.headers["Retry-After"])
    assert isinstance(limits.admit(big), Admission)


@pytest.mark.parametrize("value", [0, -5])
def test_a_rate_limit_must_allow_something(value):
    with pytest.raises(ValueError, match="rpm must be at least 1"):
        RateLimit(rpm=value)


def test_every_reply_of_a_limited_server_has_the_headers(loopback):
    loopback.set_rate_limit(RateLimit(rpm=6000, tpm=1_000_000))
    with httpx2.Client() as client:
        ok = client.post(f"{loopback.openai_base_url}/chat/completions",
                         json={"model": "m", "messages": [{"role": "user", "content": "x"}]})
        anthropic = client.post(f"{loopback.url}/v1/messages", json={
            "model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]})
    assert ok.status_code == 200 and anthropic.status_code == 200
    assert ok.headers["x-ratelimit-limit-requests"] == "6000"
    assert ok.headers["x-ratelimit-limit-tokens"] == "1000000"
    assert anthropic.headers["anthropic-ratelimit-requests-limit"] == "6000"
    loopback.reset()
    assert loopback.rate_limited == 0 and loopback.limits is None


def test_the_server_process_enforces_limits_from_its_flags():
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.testing.server", "--rpm", "60", "--burst", "2"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    try:
        port = int(process.stdout.readline())
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        with httpx2.Client() as client:
            statuses = [client.post(url, json=body).status_code for _ in range(3)]
        assert statuses == [200, 200, 429]  # a burst of two seconds' worth at 1 a second
    finally:
        process.stdin.close()  # the server stops when its stdin closes
        out = process.stdout.read()
        process.wait(timeout=10)
    assert json.loads(out.strip().splitlines()[-1]) == {"admitted": 2, "rate_limited": 1}


def test_the_server_refuses_bad_limits_on_its_command_line():
    done = subprocess.run([sys.executable, "-m", "harness.testing.server", "--rpm", "0"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    assert done.returncode == 2
    assert "rpm must be at least 1" in done.stderr and "Traceback" not in done.stderr


# --- the real SDKs under the limits --------------------------------------------------------------

def limited_config(server: LoopbackServer, *, concurrency: int, max_attempts: int = 3,
                   **limits: int) -> ModelsConfig:
    base = loopback_config(server, concurrency=concurrency, max_attempts=max_attempts,
                           retry_after_cap_s=5.0)
    update = {provider: getattr(base, provider).model_copy(update=limits)
              for provider in ("openai", "anthropic")}
    return base.model_copy(update=update)


async def calls(hub: ModelHub, model: str, count: int) -> None:
    chat = hub.get(model).chat
    await asyncio.gather(*(chat(ModelRequest(HI, role="judge", params=SHORT))
                           for _ in range(count)))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_configured_limits_keep_a_burst_of_calls_under_the_servers(provider, loopback):
    loopback.set_rate_limit(RateLimit(rpm=480, tpm=48_000))  # 8 and 800 tokens a second
    hub = ModelHub(limited_config(loopback, concurrency=16, requests_per_minute=480,
                                  tokens_per_minute=48_000), environ={})
    try:
        await calls(hub, f"{provider}:m", 24)
    finally:
        await hub.aclose()
    assert loopback.rate_limited == 0
    assert loopback.limits is not None and loopback.limits.admitted == 24


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_with_no_limits_configured_the_servers_headers_pace_the_retries(provider,
                                                                             loopback):
    # 40 callers at once against 10 a second: the first wave is refused past the burst, and
    # every refused call must then get through on its one retry (max_attempts=2). Retrying
    # alone sends the 30 refused back together, to be refused again past the first 10.
    loopback.set_rate_limit(RateLimit(rpm=600))
    hub = ModelHub(limited_config(loopback, concurrency=40, max_attempts=2), environ={})
    try:
        await calls(hub, f"{provider}:m", 40)
        endpoint = hub.endpoint(provider)
        assert endpoint.limiter.requests is not None  # adopted from the headers
        assert endpoint.limiter.requests.rate == pytest.approx(10)
        assert endpoint.in_flight_limit < 40  # the 429s cut the bound
    finally:
        await hub.aclose()
    assert loopback.rate_limited <= 30
    assert loopback.limits is not None and loopback.limits.admitted == 40


async def test_a_429_pauses_the_endpoint_for_its_retry_after(loopback):
    # Gemini sends no rate-limit headers: its 429's RetryInfo is all the client learns.
    loopback.set_rate_limit(RateLimit(rpm=600, burst_s=0.1))  # one request at once
    hub = ModelHub(limited_config(loopback, concurrency=4, max_attempts=5), environ={})
    try:
        endpoint = hub.endpoint("gemini")
        await calls(hub, "gemini:m", 2)
        assert loopback.rate_limited >= 1
        assert endpoint.limiter.requests is None  # nothing stated, nothing adopted
        assert endpoint.limiter.paused_until > 0 and endpoint.limiter.active
    finally:
        await hub.aclose()


async def test_configured_limits_hold_a_provider_that_states_none(loopback):
    loopback.set_rate_limit(RateLimit(rpm=600))
    base = limited_config(loopback, concurrency=8)
    hub = ModelHub(base.model_copy(update={"gemini": base.gemini.model_copy(
        update={"requests_per_minute": 600})}), environ={})
    try:
        await calls(hub, "gemini:m", 20)
    finally:
        await hub.aclose()
    assert loopback.rate_limited == 0
    assert loopback.limits is not None and loopback.limits.admitted == 20
