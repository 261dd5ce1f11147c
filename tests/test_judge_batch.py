"""Judges through the providers' batch APIs: the real openai and anthropic SDKs against the
loopback server's Files/Batches and Message Batches endpoints, with the faults a batch meets
(partial failure, expiry, a whole batch failed, an invalid structured reply, a key refused
when collecting, a process that stopped after submitting)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from harness.errors import ModelConfigError, ModelUnavailableError
from harness.models.batch import BATCH_DISCOUNT, request_id
from harness.models.batch_journal import BatchJournal
from harness.models.config import BatchConfig
from harness.models.request import ModelRequest
from harness.models.types import Message
from harness.testing.batches import BatchFaults
from harness.testing.replies import Reply
from harness.testing.server import LoopbackServer


class Verdict(BaseModel):
    reasoning: str
    score: int = Field(ge=1, le=5)


MODELS = {"openai": "openai:judge", "anthropic": "anthropic:judge"}
PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0}


def _ask(i: int) -> ModelRequest:
    return ModelRequest([Message(role="system", content="Judge fairly."),
                         Message(role="user", content=f"Rate answer {i}.")], role="judge",
                        sample_index=i)


def _answers(n: int) -> list[Reply]:
    return [Reply.json({"reasoning": f"answer {i}", "score": 1 + i % 5}, usage=(100 + i, 10))
            for i in range(n)]


def _batched_hub(make_hub, tmp_path: Path, provider: str, **batch: float | int):
    hub = make_hub(prices={MODELS[provider]: PRICE},
                   batch=BatchConfig(poll_interval_s=0.02, max_wait_s=0.02, **batch))
    hub.enable_batches(tmp_path / "batches.sqlite")
    return hub, hub.get(MODELS[provider])


@pytest.mark.parametrize("provider", MODELS)
async def test_batched_answers_equal_live_ones_at_half_the_price(
        provider: str, loopback: LoopbackServer, make_hub, tmp_path: Path) -> None:
    live_hub = make_hub(prices={MODELS[provider]: PRICE})
    loopback.enqueue(*_answers(4))
    live = [await live_hub.get(MODELS[provider]).structured(_ask(i), Verdict) for i in range(4)]
    assert loopback.batches.batch_count == 0 and loopback.request_count == 4

    loopback.reset()
    hub, judge = _batched_hub(make_hub, tmp_path, provider)
    loopback.enqueue(*_answers(4))
    batched = await asyncio.gather(*(judge.structured(_ask(i), Verdict) for i in range(4)))

    assert [r.value for r in batched] == [r.value for r in live]
    assert loopback.request_count == 0  # no live request: the batch endpoints answered
    assert loopback.batches.batch_count == 1  # sent together
    for one, other in zip(batched, live, strict=True):
        assert one.usage == other.usage
        assert one.cost_usd == pytest.approx(BATCH_DISCOUNT * (other.cost_usd or 0))
        assert one.cost_usd == pytest.approx(
            0.5 * (one.usage.input_tokens * 2.0 + one.usage.output_tokens * 8.0) / 1e6)
    stats = hub.ledger.get("judge", MODELS[provider])
    assert (stats.calls, stats.requests, stats.errors) == (4, 4, 0)


@pytest.mark.parametrize("provider", MODELS)
async def test_a_batch_is_journalled_before_its_results_come(
        provider: str, loopback: LoopbackServer, make_hub, tmp_path: Path) -> None:
    loopback.batches.faults = BatchFaults(delay_s=30)
    hub, judge = _batched_hub(make_hub, tmp_path, provider)
    calls = [asyncio.ensure_future(judge.structured(_ask(i), Verdict)) for i in range(3)]
    for _ in range(200):
        if loopback.batches.batch_count:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    journal = BatchJournal(tmp_path / "batches.sqlite")
    [batch] = journal.batches()
    assert (batch.provider, batch.requests, batch.waiting) == (provider, 3, 3)
    assert set(loopback.batches.states()) == {batch.batch_id}
    for call in calls:
        call.cancel()
    await hub.aclose()


@pytest.mark.parametrize("provider", MODELS)
async def test_failed_and_expired_requests_are_sent_again(
        provider: str, loopback: LoopbackServer, make_hub, tmp_path: Path) -> None:
    loopback.batches.faults = BatchFaults(error_every=2)
    _, judge = _batched_hub(make_hub, tmp_path, provider)
    results = await asyncio.gather(*(judge.structured(_ask(i), Verdict) for i in range(4)))
    assert len(results) == 4
    sent = loopback.batches.submissions
    # the 2nd and 4th failed in the first batch; in the second (of two) the 2nd failed again
    assert sorted(sent.values()) == [1, 1, 2, 3]
    assert loopback.batches.batch_count == 3

    loopback.reset()
    loopback.batches.faults = BatchFaults(expire_after=1)  # each batch gets one request done
    _, judge = _batched_hub(make_hub, tmp_path / "expiry", provider)
    assert len(await asyncio.gather(*(judge.structured(_ask(10 + i), Verdict)
                                      for i in range(3)))) == 3
    # an Anthropic batch only ever "ends": its results say which requests expired
    expired, ended = ("expired", "completed") if provider == "openai" else ("ended", "ended")
    assert list(loopback.batches.states().values()) == [expired, expired, ended]
    assert sorted(loopback.batches.submissions.values()) == [1, 2, 3]
    journal = BatchJournal(tmp_path / "expiry" / "batches.sqlite")
    assert [b.state for b in journal.batches()] == [expired, expired, ended]
    assert [b.succeeded for b in journal.batches()] == [1, 1, 1]
    assert journal.open_batches() == []


async def test_a_request_failed_every_time_is_an_error_of_its_call(
        loopback: LoopbackServer, make_hub, tmp_path: Path) -> None:
    loopback.batches.faults = BatchFaults(fail_batch=True)
    hub, judge = _batched_hub(make_hub, tmp_path, "openai", resubmits=1)
    with pytest.raises(ModelUnavailableError, match="failed this request 2 times"):
        await judge.structured(_ask(0), Verdict)
    assert list(loopback.batches.states().values()) == ["failed", "failed"]
    assert hub.ledger.get("judge", MODELS["openai"]).errors == 1


@pytest.mark.parametrize(("reask", "batches", "live"), [("live", 1, 1), ("batch", 2, 0)])
async def test_an_invalid_structured_reply_is_reasked_where_the_user_chose(
        reask: str, batches: int, live: int, loopback: LoopbackServer, make_hub,
        tmp_path: Path) -> None:
    hub = make_hub(batch=BatchConfig(poll_interval_s=0.02, max_wait_s=0.02))
    hub.enable_batches(tmp_path / "batches.sqlite", reask=reask)  # type: ignore[arg-type]
    loopback.enqueue(Reply.json({"reasoning": "too generous", "score": 9}),
                     Reply.json({"reasoning": "fair", "score": 4}))
    result = await hub.get("anthropic:judge").structured(_ask(0), Verdict)
    assert result.value == Verdict(reasoning="fair", score=4) and result.attempts == 2
    assert loopback.batches.batch_count == batches
    chats = [r for r in loopback.requests if r.path == "/v1/messages"]
    assert len(chats) == live
    if live:  # the re-ask shows the model its answer and the validation error
        assert "less than or equal to 5" in str(chats[0].body["messages"][-1])


async def test_a_key_refused_when_collecting_stops_and_a_later_process_collects(
        loopback: LoopbackServer, make_hub, tmp_path: Path) -> None:
    loopback.batches.faults = BatchFaults(refuse_key=True)
    hub, judge = _batched_hub(make_hub, tmp_path, "openai")
    with pytest.raises(ModelConfigError, match=r"401"):
        await judge.structured(_ask(0), Verdict)
    await hub.aclose()
    [batch] = BatchJournal(tmp_path / "batches.sqlite").open_batches()

    loopback.batches.faults = BatchFaults()  # the right key, in a later process
    hub, judge = _batched_hub(make_hub, tmp_path, "openai")
    result = await judge.structured(_ask(0), Verdict)
    assert result.value.score >= 1
    assert list(loopback.batches.submissions.values()) == [1]  # never sent twice
    assert BatchJournal(tmp_path / "batches.sqlite").batch(batch.batch_id).succeeded == 1


async def test_a_stored_result_is_taken_without_asking_the_provider(
        loopback: LoopbackServer, make_hub, tmp_path: Path) -> None:
    hub, judge = _batched_hub(make_hub, tmp_path, "anthropic")
    first = await judge.structured(_ask(0), Verdict)
    await hub.aclose()
    loopback.reset()
    hub, judge = _batched_hub(make_hub, tmp_path, "anthropic")
    again = await judge.structured(_ask(0), Verdict)
    assert again.value == first.value
    assert loopback.request_count == 0


def test_request_ids_are_stable_and_fit_both_providers() -> None:
    one = request_id("key", 0)
    assert one == request_id("key", 0) != request_id("key", 1) != request_id("other", 0)
    assert len(one) == 40 and one.isalnum()


async def test_a_judge_of_a_provider_with_no_batch_api_stays_live(
        loopback: LoopbackServer, make_hub, tmp_path: Path) -> None:
    hub = make_hub()
    hub.enable_batches(tmp_path / "batches.sqlite")
    model = hub.get("gemini:gemini-2.5-flash")
    assert not model.batched and hub.get("openai:judge").batched
    assert not hub.get("mock:judge").batched


async def test_a_full_batch_goes_at_once_and_the_rest_follow(
        loopback: LoopbackServer, make_hub, tmp_path: Path) -> None:
    hub = make_hub(batch=BatchConfig(poll_interval_s=0.02, max_wait_s=30, max_requests=2))
    hub.enable_batches(tmp_path / "batches.sqlite")
    judge = hub.get("openai:judge")
    calls = [asyncio.ensure_future(judge.structured(_ask(i), Verdict)) for i in range(5)]
    for _ in range(200):  # two full batches go without waiting out max_wait_s
        if loopback.batches.batch_count == 2:
            break
        await asyncio.sleep(0.01)
    assert loopback.batches.batch_count == 2
    assert not calls[4].done()  # the fifth waits for more, or for the flush
    hub.services.batches.flush()
    assert len(await asyncio.gather(*calls)) == 5
    assert loopback.batches.batch_count == 3
    assert sorted(b.requests for b in BatchJournal(tmp_path / "batches.sqlite").batches()) \
        == [1, 2, 2]
