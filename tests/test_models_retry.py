"""Retries, timeouts, refusals and the concurrency bound, real SDKs against the loopback."""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import time

import pytest

from harness.errors import ModelConfigError, ModelUnavailableError
from harness.models.config import RetryConfig
from harness.models.request import ModelRequest
from harness.models.retry import RetryPolicy, TransientFailure, retry_after_seconds
from harness.models.types import Message
from harness.redact import redact
from harness.testing.replies import Reply
from harness.testing.server import LoopbackServer

HI = [Message(role="user", content="hi")]
PROVIDERS = ["openai", "anthropic", "gemini"]
# The variables a missing key is asked for in, per provider.
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
                 "gemini": "GOOGLE_API_KEY or GEMINI_API_KEY"}


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_then_success_honours_retry_after(provider, loopback, make_hub):
    hub = make_hub(backoff_s=0.0)  # any wait must come from Retry-After
    loopback.enqueue(Reply.rate_limited(retry_after=0.4), Reply.text_reply("done"))
    started = time.perf_counter()
    reply = await hub.get(f"{provider}:m").chat(ModelRequest(HI, role="agent"))
    elapsed = time.perf_counter() - started
    assert reply.message.content == "done"
    assert elapsed >= 0.4
    assert loopback.request_count == 2
    stats = hub.ledger.get("agent", f"{provider}:m")
    assert (stats.calls, stats.requests, stats.errors) == (1, 2, 0)


async def test_retry_after_is_capped(loopback, make_hub):
    hub = make_hub(retry_after_cap_s=0.05)
    loopback.enqueue(Reply.rate_limited(retry_after=30), Reply.text_reply("done"))
    started = time.perf_counter()
    await hub.get("openai:m").chat(ModelRequest(HI, role="agent"))
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("attempts", [1, 4])
async def test_server_errors_give_up_after_bounded_attempts(provider, attempts, loopback,
                                                           make_hub):
    hub = make_hub(max_attempts=attempts)
    loopback.enqueue(Reply.server_error(503), times=attempts + 2)
    with pytest.raises(ModelUnavailableError) as caught:
        await hub.get(f"{provider}:m").chat(ModelRequest(HI, role="agent"))
    assert loopback.request_count == attempts
    assert f"gave up after {attempts} attempt" in str(caught.value)
    assert "server error (503)" in str(caught.value)
    assert str(caught.value).startswith(f"{provider}:m: ")
    stats = hub.ledger.get("agent", f"{provider}:m")
    assert (stats.calls, stats.errors, stats.requests) == (1, 1, attempts)


async def test_success_on_the_last_attempt(loopback, make_hub):
    loopback.enqueue(Reply.server_error(), Reply.server_error(), Reply.text_reply("third time"))
    reply = await make_hub(max_attempts=3).get("anthropic:m").chat(ModelRequest(HI, role="agent"))
    assert reply.message.content == "third time"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_401_fails_at_once_naming_the_key(provider, loopback, make_hub):
    hub = make_hub(max_attempts=5, environ={})
    loopback.enqueue(Reply.unauthorized(), Reply.text_reply("never"))
    with pytest.raises(ModelConfigError) as caught:
        await hub.get(f"{provider}:m").chat(ModelRequest(HI, role="agent"))
    assert loopback.request_count == 1
    assert f"the {provider} api_key in the models config was refused (401)" in str(caught.value)


async def test_401_names_the_environment_variable(loopback, make_hub):
    hub = make_hub(keys=False, environ={"ANTHROPIC_API_KEY": "sk-ant-from-env-123456"})
    loopback.enqueue(Reply.unauthorized())
    with pytest.raises(ModelConfigError, match=r"ANTHROPIC_API_KEY was refused \(401\)"):
        await hub.get("anthropic:m").chat(ModelRequest(HI, role="agent"))


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (404, "model not found (404)"),
        (403, "not allowed to use this model (403"),
        (400, "request rejected (400)"),
        (422, "request rejected (422)"),
    ],
)
async def test_client_errors_are_not_retried(status, expected, loopback, make_hub):
    loopback.enqueue(Reply.error(status, message="details from the server"))
    with pytest.raises(ModelConfigError) as caught:
        await make_hub(max_attempts=5).get("openai:m").chat(ModelRequest(HI, role="agent"))
    assert loopback.request_count == 1
    assert expected in str(caught.value)
    assert "details from the server" in str(caught.value)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_missing_key_fails_before_any_request(provider, loopback, make_hub):
    hub = make_hub(keys=False, environ={})
    model = hub.get(f"{provider}:m")
    if provider == "openai":
        # A custom base URL is taken for an OpenAI-compatible server that may need no key;
        # the official endpoint always needs one.
        model = hub.get("openai:gpt-4o", base_url="https://api.openai.com/v1")
    with pytest.raises(ModelConfigError) as caught:
        await model.chat(ModelRequest(HI, role="agent"))
    assert f"no {KEY_VARIABLES[provider]} set" in str(caught.value)
    assert loopback.request_count == 0


async def test_openai_compatible_server_needs_no_key(loopback, make_hub):
    hub = make_hub(keys=False, environ={})
    reply = await hub.get("openai:llama3").chat(ModelRequest(HI, role="agent"))
    assert reply.message.content.startswith("auto reply")


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_timeout_is_retried_then_reported(provider, loopback, make_hub):
    hub = make_hub(timeout_s=0.2, max_attempts=2)
    loopback.enqueue(Reply.slow(2.0), Reply.slow(2.0))
    started = time.perf_counter()
    with pytest.raises(ModelUnavailableError, match=r"timed out after 0.2s"):
        await hub.get(f"{provider}:m").chat(ModelRequest(HI, role="agent"))
    assert time.perf_counter() - started < 1.5
    assert loopback.request_count == 2


async def test_timeout_then_success(loopback, make_hub):
    loopback.enqueue(Reply.slow(2.0), Reply.text_reply("fast now"))
    reply = await make_hub(timeout_s=0.2).get("openai:m").chat(ModelRequest(HI, role="agent"))
    assert reply.message.content == "fast now"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_malformed_body_is_retried(provider, loopback, make_hub):
    loopback.enqueue(Reply.malformed(), Reply.text_reply("fine"))
    reply = await make_hub().get(f"{provider}:m").chat(ModelRequest(HI, role="agent"))
    assert reply.message.content == "fine"
    assert loopback.request_count == 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_refused_first_connection_stops_at_once_naming_role_model_and_address(
        provider, make_hub):
    # Nothing listens on this port, and nothing ever answered there: a wrong address, which
    # retrying would only repeat (the SDKs' aiohttp transport calls it a timeout; the cause
    # says otherwise).
    hub = make_hub(max_attempts=3)
    model = hub.get(f"{provider}:m", base_url="http://127.0.0.1:9/v1")
    started = time.perf_counter()
    with pytest.raises(ModelConfigError) as caught:
        await model.chat(ModelRequest(HI, role="simulator"))
    assert time.perf_counter() - started < 1.0  # no backoff between attempts
    message = str(caught.value)
    assert f"{provider}:m" in message and "the simulator model" in message
    assert "cannot reach http://127.0.0.1:9/v1" in message
    assert hub.ledger.get("simulator", f"{provider}:m").requests == 1  # one attempt only


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_refused_connection_after_an_answer_is_retried_then_reported(provider,
                                                                             make_hub):
    # The same address answered before: the server going away mid-run is a failure to
    # retry and report for that sample, not a configuration error that stops the run.
    server = LoopbackServer().start()
    base_url = (server.openai_base_url if provider == "openai"
                else server.anthropic_base_url)
    model = make_hub(max_attempts=2).get(f"{provider}:m", base_url=base_url)
    try:
        server.enqueue(Reply.text_reply("first"))
        assert (await model.chat(ModelRequest(HI, role="agent"))).message.content == "first"
    finally:
        server.stop()
    with pytest.raises(ModelUnavailableError, match="connection failed or dropped"):
        await model.chat(ModelRequest(HI, role="agent"))


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_server_hanging_up_is_retried_then_reported(provider, make_hub):
    accepted = 0

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        await reader.readline()  # the request has started arriving
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        model = make_hub(max_attempts=3).get(f"{provider}:m",
                                              base_url=f"http://127.0.0.1:{port}/v1")
        with pytest.raises(ModelUnavailableError,
                           match="3 attempts; last failure: connection failed or dropped"):
            await model.chat(ModelRequest(HI, role="agent"))
    finally:
        server.close()
        await server.wait_closed()
    assert accepted == 3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_concurrency_limit_is_honoured(provider, loopback, make_hub):
    hub = make_hub(concurrency=3)
    loopback.latency = 0.05
    model = hub.get(f"{provider}:m")
    replies = await asyncio.gather(*(model.chat(ModelRequest(HI, role="agent")) for _ in range(24)))
    assert len(replies) == 24
    assert loopback.request_count == 24
    assert loopback.max_in_flight == 3  # reached, never exceeded


async def test_the_bound_is_exact_at_high_concurrency(loopback, make_hub):
    # 70 in flight: the pool holds as many connections as the bound allows, so all 70 run at
    # once, and never more.
    hub = make_hub(concurrency=70)
    loopback.latency = 0.2
    model = hub.get("openai:m")
    await asyncio.gather(*(model.chat(ModelRequest(HI, role="agent")) for _ in range(140)))
    assert loopback.max_in_flight == 70


async def test_models_on_one_endpoint_share_the_bound(loopback, make_hub):
    hub = make_hub(concurrency=2)
    loopback.latency = 0.05
    models = [hub.get("anthropic:a"), hub.get("anthropic:b")]
    await asyncio.gather(*(models[i % 2].chat(ModelRequest(HI, role="agent")) for i in range(10)))
    assert loopback.max_in_flight == 2


# --- pure pieces ----------------------------------------------------------------------------


def test_retry_after_forms():
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "1.5"}) == 1.5
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after_seconds({"retry-after": future}) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_redact_removes_known_secrets_and_key_shapes():
    text = ("key sk-ant-api03-abcdefghijkl refused; header x-api-key: zzz-secret-zzz; "
            "Authorization: Bearer tok123; my-own-secret")
    out = redact(text, ["my-own-secret"])
    for leaked in ("abcdefghijkl", "zzz-secret-zzz", "tok123", "my-own-secret"):
        assert leaked not in out
    assert "refused" in out


async def test_backoff_grows_and_respects_the_attempt_bound():
    policy = RetryPolicy(RetryConfig(max_attempts=4, backoff_initial_s=0.01,
                                     backoff_max_s=0.04, backoff_jitter_s=0.0))
    calls: list[float] = []

    async def always_failing() -> None:
        calls.append(time.perf_counter())
        raise TransientFailure("flaky")

    with pytest.raises(ModelUnavailableError, match="gave up after 4 attempts; last failure: "
                                                    "flaky"):
        await policy.run(always_failing, model="x:y")
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert len(calls) == 4
    # 0.01, 0.02, 0.04 (capped at backoff_max_s)
    for gap, expected in zip(gaps, [0.01, 0.02, 0.04], strict=True):
        assert gap >= expected * 0.9


async def test_non_transient_errors_are_not_retried():
    policy = RetryPolicy(RetryConfig(max_attempts=5, backoff_initial_s=0))
    calls = 0

    async def broken() -> None:
        nonlocal calls
        calls += 1
        raise KeyError("bug")

    with pytest.raises(KeyError):
        await policy.run(broken, model="x:y")
    assert calls == 1
