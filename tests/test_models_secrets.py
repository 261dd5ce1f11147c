"""API keys set in the environment appear in no log line, cache row or error message."""

from __future__ import annotations

import logging
import traceback

import pytest
from pydantic import BaseModel

from harness.errors import HarnessError
from harness.models.hub import ModelHub
from harness.models.request import ModelRequest
from harness.models.types import Message
from harness.testing.hub import loopback_config
from harness.testing.replies import Reply

OPENAI_KEY = "sk-proj-SECRETopenaiKEY0123456789"
ANTHROPIC_KEY = "sk-ant-api03-SECRETanthropicKEY0123456789"
# A key in no known shape: only knowing the value can hide it.
PLAIN_KEY_PART = "SECRET"


class Verdict(BaseModel):
    score: int


def _texts_of(err: BaseException) -> list[str]:
    return [str(err), repr(err), "".join(traceback.format_exception(err))]


async def test_keys_never_leak(loopback, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    caplog.set_level(logging.DEBUG)  # every logger, SDKs and HTTP client included
    cache_path = tmp_path / "cache.sqlite"
    hub = ModelHub(loopback_config(loopback, keys=False, cache_path=cache_path, max_attempts=2))
    errors: list[BaseException] = []
    try:
        for provider in ("openai", "anthropic"):
            key = OPENAI_KEY if provider == "openai" else ANTHROPIC_KEY
            model = hub.get(f"{provider}:m")
            # The key reaches the server (so it was really used) ...
            await model.chat(ModelRequest([Message(role="user", content="hello")], role="agent"))
            headers = loopback.requests[-1].headers
            assert "<redacted>" in (headers.get("authorization"), headers.get("x-api-key"))
            loopback.enqueue(Reply.json({"score": "x"}), Reply.json({"score": 2}))
            await model.structured(ModelRequest([Message(role="user", content="rate")],
                                                role="judge"), Verdict)
            # ... and failures of every kind, one echoing the key back in its error body.
            scripted = [
                [Reply.unauthorized()],
                [Reply.error(400, message=f"invalid request: key {key} is malformed")],
                [Reply.error(500, message=f"upstream saw {key}")] * 2,
                [Reply.rate_limited(0.0), Reply.error(403, message=f"{key} forbidden")],
            ]
            for i, replies in enumerate(scripted):
                loopback.enqueue(*replies)
                with pytest.raises(HarnessError) as caught:
                    await model.chat(ModelRequest([Message(role="user", content=f"fail {i}")],
                                                  role="agent"))
                errors.append(caught.value)
            loopback.enqueue(Reply.json({"score": "bad"}), times=3)
            with pytest.raises(HarnessError) as caught:
                await model.structured(ModelRequest([Message(role="user", content="again")],
                                                    role="judge"), Verdict)
            errors.append(caught.value)
    finally:
        await hub.aclose()

    assert len(errors) == 10
    secrets = (OPENAI_KEY, ANTHROPIC_KEY)
    for err in errors:
        for text in _texts_of(err):
            for secret in secrets:
                assert secret not in text, f"key in error message: {text}"
    log_text = "\n".join(
        [caplog.text]
        + [r.getMessage() for r in caplog.records]
        + [r.exc_text or "" for r in caplog.records]
    )
    assert "refused (401)" in log_text or caplog.records  # logging really was captured
    for secret in secrets:
        assert secret not in log_text
    cache_bytes = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert len(cache_bytes) > 0
    for secret in secrets:
        assert secret.encode() not in cache_bytes
        assert PLAIN_KEY_PART.encode() not in cache_bytes
    # The recorded requests keep header names but not auth values.
    for request in loopback.requests:
        assert all(secret not in str(request.headers) for secret in secrets)


def test_config_repr_hides_keys(loopback):
    config = loopback_config(loopback)
    text = repr(config) + str(config.model_dump())
    assert "sk-test-openai" not in text
    endpoint = ModelHub(config, environ={}).endpoint("openai")
    assert "sk-test-openai" not in repr(endpoint)
