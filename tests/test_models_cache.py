"""The content-addressed response cache."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3

import pytest
from pydantic import BaseModel

from harness.errors import CacheMissError
from harness.models.cache import (
    WRITE_BATCH,
    WRITE_DELAY_S,
    ResponseCache,
    cache_key,
    canonical_json,
)
from harness.models.mock import bind_offline
from harness.models.request import ModelRequest
from harness.models.types import GenerationParams, Message, ToolSpec
from harness.testing.replies import Reply

HI = [Message(role="user", content="hi")]


class Answer(BaseModel):
    text: str
    n: int = 0


@pytest.fixture
def cache_path(tmp_path):
    return tmp_path / "cache.sqlite"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_hit_makes_no_request(provider, loopback, make_hub, cache_path):
    price = {f"{provider}:m": {"input_per_mtok": 1.0, "output_per_mtok": 1.0}}
    hub = make_hub(cache_path=cache_path, prices=price)
    loopback.enqueue(Reply.text_reply("first answer", usage=(100, 20)))
    model = hub.get(f"{provider}:m")
    first = await model.chat(ModelRequest(HI, role="agent"))
    second = await model.chat(ModelRequest(HI, role="agent"))

    assert loopback.request_count == 1
    assert first.cached is False and second.cached is True
    assert second.message == first.message
    assert second.usage == first.usage
    assert second.cost_usd == 0.0  # nothing spent again ...
    stats = hub.ledger.get("agent", f"{provider}:m")
    assert (stats.calls, stats.cached_calls, stats.requests) == (2, 1, 1)
    assert stats.saved_cost_usd == pytest.approx(first.cost_usd)  # ... and reported as saved
    assert stats.cost_usd == pytest.approx(first.cost_usd)


async def test_a_new_hub_replays_from_the_file(loopback, make_hub, cache_path):
    first = make_hub(cache_path=cache_path)
    await first.get("anthropic:m").chat(ModelRequest(HI, role="agent"))
    await first.aclose()  # its answers are written by now
    replay = make_hub(cache_path=cache_path, cache_mode="replay", keys=False, environ={})
    # Replaying needs no key: a cached answer makes no request.
    reply = await replay.get("anthropic:m").chat(ModelRequest(HI, role="agent"))
    assert reply.cached
    assert loopback.request_count == 1


async def test_replay_miss_is_an_error(loopback, make_hub, cache_path):
    hub = make_hub(cache_path=cache_path, cache_mode="replay")
    with pytest.raises(CacheMissError, match="cache mode replay"):
        await hub.get("anthropic:m").chat(ModelRequest(HI, role="agent"))
    assert loopback.request_count == 0
    assert hub.ledger.total.errors == 1


async def test_sample_index_changes_the_key(loopback, make_hub, cache_path):
    hub = make_hub(cache_path=cache_path)
    model = hub.get("openai:m")
    loopback.enqueue(Reply.text_reply("sample 0"), Reply.text_reply("sample 1"))
    a = await model.chat(ModelRequest(HI, role="agent", sample_index=0))
    b = await model.chat(ModelRequest(HI, role="agent", sample_index=1))
    again = await model.chat(ModelRequest(HI, role="agent", sample_index=1))
    assert (a.message.content, b.message.content) == ("sample 0", "sample 1")
    assert again.cached and again.message.content == "sample 1"
    assert loopback.request_count == 2


async def test_refresh_calls_again_and_overwrites(loopback, make_hub, cache_path):
    loopback.enqueue(Reply.text_reply("old"), Reply.text_reply("new"))
    first = make_hub(cache_path=cache_path)
    await first.get("openai:m").chat(ModelRequest(HI, role="agent"))
    await first.aclose()
    refreshing = make_hub(cache_path=cache_path, cache_mode="refresh")
    refreshed = await refreshing.get("openai:m").chat(ModelRequest(HI, role="agent"))
    await refreshing.aclose()
    assert refreshed.message.content == "new" and not refreshed.cached
    reread = await make_hub(cache_path=cache_path).get("openai:m").chat(ModelRequest(HI,
                                                                                     role="agent"))
    assert reread.cached and reread.message.content == "new"
    assert loopback.request_count == 2


async def test_off_mode_never_reads_or_writes(loopback, make_hub, cache_path):
    hub = make_hub(cache_path=cache_path, cache_mode="off")
    model = hub.get("openai:m")
    await model.chat(ModelRequest(HI, role="agent"))
    await model.chat(ModelRequest(HI, role="agent"))
    assert loopback.request_count == 2
    assert not cache_path.exists()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_structured_answers_are_cached(provider, loopback, make_hub, cache_path):
    hub = make_hub(cache_path=cache_path)
    loopback.enqueue(Reply.json({"text": "bad"} | {"n": "x"}), Reply.json({"text": "ok", "n": 3}))
    model = hub.get(f"{provider}:m")
    first = await model.structured(ModelRequest(HI, role="judge"), Answer)
    second = await model.structured(ModelRequest(HI, role="judge"), Answer)
    assert second.cached and type(second.value) is Answer
    assert second.value == first.value == Answer(text="ok", n=3)
    assert second.attempts == first.attempts == 2
    assert second.usage == first.usage
    assert loopback.request_count == 2


async def test_structured_and_chat_keys_differ(loopback, make_hub, cache_path):
    hub = make_hub(cache_path=cache_path)
    model = hub.get("openai:m")
    await model.chat(ModelRequest(HI, role="agent"))
    loopback.enqueue(Reply.json({"text": "t"}))
    result = await model.structured(ModelRequest(HI, role="judge"), Answer)
    assert not result.cached


async def test_failed_calls_are_not_cached(loopback, make_hub, cache_path):
    hub = make_hub(cache_path=cache_path, max_attempts=1)
    loopback.enqueue(Reply.server_error(), Reply.text_reply("later"))
    model = hub.get("openai:m")
    with pytest.raises(Exception, match="gave up"):
        await model.chat(ModelRequest(HI, role="agent"))
    assert (await model.chat(ModelRequest(HI, role="agent"))).message.content == "later"


async def test_unreadable_row_is_a_miss(loopback, make_hub, cache_path):
    hub = make_hub(cache_path=cache_path)
    model = hub.get("openai:m")
    await model.chat(ModelRequest(HI, role="agent"))
    assert hub.cache is not None
    hub.cache.flush()
    with sqlite3.connect(cache_path) as db:
        db.execute("UPDATE responses SET payload = '{\"message\": 5}'")
    reply = await model.chat(ModelRequest(HI, role="agent"))
    assert not reply.cached
    assert loopback.request_count == 2


def _key(**overrides):
    parts = dict(kind="chat", provider="openai", model="m", base_url="http://x/v1", messages=HI,
                 tools=(), tool_choice="auto", params=GenerationParams(), sample_index=0)
    parts.update(overrides)
    return cache_key(**parts)


def test_key_covers_what_changes_the_answer():
    base = _key()
    tool = ToolSpec(name="t")
    variants = [
        _key(provider="anthropic"),
        _key(model="m2"),
        _key(base_url="http://y/v1"),
        _key(messages=[Message(role="user", content="hi!")]),
        _key(tools=[tool]),
        _key(tools=[tool], tool_choice="required"),
        _key(params=GenerationParams(temperature=0.5)),
        _key(params=GenerationParams(seed=1)),
        _key(sample_index=1),
        _key(kind="structured", response_model=Answer),
    ]
    assert len({base, *variants}) == len(variants) + 1
    # Equal inputs, equal keys; a trailing slash on the base URL is not a difference.
    assert _key() == base
    assert _key(base_url="http://x/v1/") == base


def test_key_is_sha256_of_canonical_json():
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'
    document = {
        "v": 1, "kind": "chat", "provider": "openai", "model": "m", "base_url": "http://x/v1",
        "messages": [{"role": "user", "content": "hi"}], "tools": [], "tool_choice": None,
        "params": {}, "response_schema": None, "sample_index": 0,
    }
    expected = hashlib.sha256(
        json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    assert _key() == expected


async def test_offline_context_is_not_part_of_the_key(loopback, make_hub, cache_path):
    model = make_hub(cache_path=cache_path).get("openai:m")
    assert bind_offline(model, "scenario a") is model  # a real model is never bound
    await bind_offline(model, "scenario a").chat(ModelRequest(HI, role="agent"))
    again = await bind_offline(model, "scenario b").chat(ModelRequest(HI, role="agent"))
    assert again.cached


def test_cache_file_is_wal(cache_path):
    cache = ResponseCache(cache_path)
    cache.put("k", kind="chat", model="openai:m", payload={"x": 1})
    assert cache.get("k") == {"x": 1}
    assert cache.get("missing") is None
    assert len(cache) == 1
    mode = cache._db.execute("PRAGMA journal_mode").fetchone()[0]
    cache.close()
    assert mode == "wal"


def _rows_in_file(path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


async def test_answers_are_written_together_shortly_after(cache_path):
    cache = ResponseCache(cache_path)
    for i in range(3):
        cache.put(f"k{i}", kind="chat", model="openai:m", payload={"i": i})
    assert cache.get("k1") == {"i": 1}  # this cache finds them at once ...
    assert _rows_in_file(cache_path) == 0  # ... the file a moment later, in one write
    await asyncio.sleep(WRITE_DELAY_S * 3)
    assert _rows_in_file(cache_path) == 3
    cache.put("k1", kind="chat", model="openai:m", payload={"i": "again"})
    cache.close()  # what waits is written on the way out
    assert _rows_in_file(cache_path) == 3
    assert ResponseCache(cache_path).get("k1") == {"i": "again"}


async def test_a_full_batch_is_written_at_once(cache_path):
    cache = ResponseCache(cache_path)
    for i in range(WRITE_BATCH):
        cache.put(f"k{i}", kind="chat", model="openai:m", payload={"i": i})
    assert _rows_in_file(cache_path) == WRITE_BATCH
    cache.close()


def test_without_an_event_loop_each_answer_is_written_at_once(cache_path):
    cache = ResponseCache(cache_path)
    cache.put("k", kind="chat", model="openai:m", payload={"x": 1})
    assert _rows_in_file(cache_path) == 1
    cache.close()


async def test_a_failed_write_is_a_warning_and_the_run_goes_on(cache_path, caplog):
    cache = ResponseCache(cache_path)
    cache._db.execute("PRAGMA busy_timeout=10")
    holder = sqlite3.connect(cache_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the file's write lock
    cache.put("k", kind="chat", model="openai:m", payload={"x": 1})
    with caplog.at_level("WARNING", logger="harness.models.cache"):
        cache.flush()
    holder.execute("ROLLBACK")
    holder.close()
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot write 1 answer(s) to the response cache {cache_path} (database is locked); "
        "they are not cached"]
    assert cache.get("k") is None  # not kept in memory either: asked again next time
    cache.put("k", kind="chat", model="openai:m", payload={"x": 2})
    cache.close()
    assert ResponseCache(cache_path).get("k") == {"x": 2}  # the cache still works


async def test_a_request_is_keyed_by_its_fields_as_calls_were_before(loopback, make_hub,
                                                                       cache_path):
    # The key of a call made with a ModelRequest is the key of the same call made with the
    # keywords it replaced, so caches written before the request type replay.
    hub = make_hub(cache_path=cache_path)
    model = hub.get("openai:m")
    tools = [ToolSpec(name="lookup", parameters={"type": "object", "properties": {}})]
    params = GenerationParams(temperature=0.2, max_tokens=99)
    await model.chat(ModelRequest(HI, "agent", tools=tools, tool_choice="required",
                                  params=params, sample_index=3, max_reasks=7))
    loopback.enqueue(Reply.json({"text": "ok", "n": 2}))
    await model.structured(ModelRequest(HI, "judge", sample_index=1), Answer)
    hub.close()
    base = dict(provider="openai", model="m", base_url=model.spec.base_url, messages=HI)
    expected = {
        cache_key(kind="chat", tools=tools, tool_choice="required", params=params,
                  sample_index=3, **base),
        cache_key(kind="structured", params=GenerationParams(), sample_index=1,
                  response_model=Answer, **base),
    }
    with sqlite3.connect(cache_path) as db:
        assert {key for (key,) in db.execute("SELECT key FROM responses")} == expected
