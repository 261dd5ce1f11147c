"""The providers' prompt caches: requests marked where their prompt recurs (Anthropic), the
cached tokens read back from each provider's usage and priced at its rates, judge samples
that follow a first one so they find it cached, and the savings shown per role. The loopback
server plays the caches (:mod:`harness.testing.prompt_cache`), so the real SDKs read back
what the services would send."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.judging.judge import JudgeSettings, judge_transcript
from harness.judging.rubric import load_rubrics
from harness.models.anthropic_provider import EPHEMERAL, mark_prompt_cache
from harness.models.prices import DEFAULT_PRICES, Price
from harness.models.request import ModelRequest
from harness.models.types import Message
from harness.testing.prompt_cache import MIN_TOKENS, PromptCacheSimulator
from harness.testing.server import LoopbackServer
from harness.transcript import transcript_from_anthropic, transcript_from_openai

LONG = "The customer's order history, line by line, for the judge to read. " * 120
RUBRIC = load_rubrics()["final_response_quality"]


def _transcript() -> Any:
    return transcript_from_openai("orders", [
        {"role": "user", "content": f"Please cancel order 1234. {LONG}"},
        {"role": "assistant", "content": "Order 1234 is cancelled."},
    ]).model_copy(update={"stop_reason": "goal_met"})


# --- prices ---------------------------------------------------------------------------------


def test_cached_tokens_are_priced_at_the_cache_rates() -> None:
    price = Price(input_per_mtok=3.0, output_per_mtok=15.0, cache_read_per_mtok=0.3,
                  cache_write_per_mtok=3.75)
    # 10,000 input tokens of which 6,000 read and 2,000 written; 500 output
    expected = (2_000 * 3.0 + 6_000 * 0.3 + 2_000 * 3.75 + 500 * 15.0) / 1e6
    assert price.cost(10_000, 500, 6_000, 2_000) == pytest.approx(expected)
    assert price.cache_saving(6_000, 2_000) == pytest.approx(
        (6_000 * (3.0 - 0.3) - 2_000 * (3.75 - 3.0)) / 1e6)
    assert price.cache_saving(0, 1_000) < 0  # a write that is never read costs more
    unknown = Price(input_per_mtok=1.0, output_per_mtok=2.0)  # no cache rates: no discount
    assert unknown.cost(1_000, 0, 1_000, 0) == unknown.cost(1_000, 0)


def test_built_in_cache_rates_follow_each_providers_rule() -> None:
    sonnet = DEFAULT_PRICES["anthropic:claude-sonnet-4-5"]
    assert (sonnet.cache_read_per_mtok, sonnet.cache_write_per_mtok) == (0.3, 3.75)
    for name, price in DEFAULT_PRICES.items():
        assert price.cache_read_per_mtok is not None, name
        assert price.cache_read_per_mtok < price.input_per_mtok, name
        if name.startswith("anthropic:"):
            assert price.cache_write_per_mtok == pytest.approx(price.input_per_mtok * 1.25)
        else:  # OpenAI's and Gemini's caches charge nothing to store
            assert price.cache_write_per_mtok is None, name


# --- what is marked -------------------------------------------------------------------------


def _body() -> dict[str, Any]:
    return {"model": "m", "system": "Be careful.", "max_tokens": 10, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        {"role": "user", "content": [{"type": "text", "text": "more"}]},
    ]}


def test_anthropic_marks_where_the_plan_says_the_prompt_recurs() -> None:
    body = _body()
    before = json.dumps(body)
    assert mark_prompt_cache(body, "off") is body
    system = mark_prompt_cache(body, "system")
    assert system["system"] == [{"type": "text", "text": "Be careful.", "cache_control": EPHEMERAL}]
    assert system["messages"] == body["messages"]
    whole = mark_prompt_cache(body, "conversation")
    assert whole["messages"][-1]["content"] == [
        {"type": "text", "text": "more", "cache_control": EPHEMERAL}]
    assert whole["messages"][:2] == body["messages"][:2]
    assert json.dumps(body) == before  # copied, never changed in place
    empty = {**body, "messages": [{"role": "assistant", "content": [{"type": "text",
                                                                      "text": ""}]}]}
    # Anthropic refuses a mark on an empty text block
    assert "cache_control" not in mark_prompt_cache(empty, "conversation")["messages"][0][
        "content"][0]


async def test_the_marks_leave_the_response_cache_key_alone(
    loopback: LoopbackServer, make_hub: Any, tmp_path: Path
) -> None:
    """The same call asked with another plan is answered from the response cache: the
    marks change the request body, not what the call means."""
    hub = make_hub(cache_path=tmp_path / "cache.sqlite")
    model = hub.get("anthropic:claude-sonnet-4-5")
    messages = [Message(role="system", content="s"), Message(role="user", content="u")]
    answers = [await model.chat(ModelRequest(messages, "agent", prompt_cache=plan))
               for plan in ("conversation", "system", "off")]
    assert [a.cached for a in answers] == [False, True, True]
    assert loopback.request_count == 1
    assert "cache_control" in json.dumps(loopback.requests[0].body)


def test_a_marked_system_prompt_imports_as_its_text() -> None:
    imported = transcript_from_anthropic(
        "s", [{"role": "user", "content": [{"type": "text", "text": "hi",
                                             "cache_control": EPHEMERAL}]}],
        system=[{"type": "text", "text": "Be careful.", "cache_control": EPHEMERAL}])
    assert imported.system_prompt == "Be careful."
    assert [(m.role, m.content) for m in imported.messages] == [("user", "hi")]


# --- the loopback server's caches -----------------------------------------------------------


def test_explicit_cache_writes_then_reads_and_only_after_the_reply() -> None:
    cache = PromptCacheSimulator()
    body = mark_prompt_cache({"system": LONG, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "judge this"}]}]}, "system")
    first, together = cache.explicit("m", body), cache.explicit("m", body)
    assert first.read == 0 and first.written >= MIN_TOKENS
    first.commit()
    assert together.read == 0  # sent before the first reply: it missed too
    later = cache.explicit("m", body)
    assert (later.read, later.written) == (first.written, 0)
    assert cache.explicit("other-model", body).read == 0
    short = mark_prompt_cache({"system": "short", "messages": []}, "system")
    assert cache.explicit("m", short).written == 0  # under the minimum: not cached


def test_explicit_cache_finds_a_growing_conversation_by_looking_back() -> None:
    cache = PromptCacheSimulator()
    turns = [{"role": "user", "content": [{"type": "text", "text": LONG}]}]
    cache.explicit("m", mark_prompt_cache({"messages": turns}, "conversation")).commit()
    grown = [*turns, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
             {"role": "user", "content": [{"type": "text", "text": "and then?"}]}]
    use = cache.explicit("m", mark_prompt_cache({"messages": grown}, "conversation"))
    # the old turn read, the two new short turns written
    assert use.read > MIN_TOKENS and 0 < use.written < 30


def test_automatic_cache_reads_the_longest_stored_prefix_in_chunks() -> None:
    cache = PromptCacheSimulator()
    prompt = {"messages": [{"role": "user", "content": LONG}]}
    cache.automatic("m", prompt).commit()
    grown = {"messages": [*prompt["messages"], {"role": "assistant", "content": "x" * 2000}]}
    use = cache.automatic("m", grown)
    assert use.written == 0 and MIN_TOKENS <= use.read < use.input_tokens
    assert use.read % 128 == 0


# --- through the real SDKs ------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_judge_samples_after_the_first_read_its_prompt_from_the_cache(
    loopback: LoopbackServer, make_hub: Any, provider: str
) -> None:
    loopback.play_prompt_caches()
    hub = make_hub()
    name = {"anthropic": "anthropic:claude-sonnet-4-5", "openai": "openai:gpt-4.1"}[provider]
    result = await judge_transcript(hub.get(name), RUBRIC, _transcript(),
                                    settings=JudgeSettings(samples=3))
    assert result.score is not None
    stats = hub.ledger.total
    assert stats.requests == 3
    # the first sample went alone and stored the prompt; the other two read all of it but
    # the tail the automatic cache keeps no chunk of
    per_request = stats.input_tokens / 3
    assert stats.prompt_cache_read_tokens >= 2 * (per_request - 128)
    price = DEFAULT_PRICES[name]
    if provider == "anthropic":
        assert stats.prompt_cache_write_tokens == stats.prompt_cache_read_tokens / 2
        bodies = [r.body for r in loopback.requests]
        assert all(b["system"][0]["cache_control"] == EPHEMERAL for b in bodies)
        assert all(b["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
                   for b in bodies)
    else:
        assert stats.prompt_cache_write_tokens == 0
    expected = price.cost(stats.input_tokens, stats.output_tokens,
                          stats.prompt_cache_read_tokens, stats.prompt_cache_write_tokens)
    assert stats.cost_usd == pytest.approx(expected)
    assert stats.prompt_cache_saved_usd == pytest.approx(price.cache_saving(
        stats.prompt_cache_read_tokens, stats.prompt_cache_write_tokens))
    assert stats.prompt_cache_saved_usd > 0


async def test_a_one_sample_judge_marks_only_its_rubric(loopback: LoopbackServer,
                                                        make_hub: Any) -> None:
    """One sample: the rubric (system message) recurs for every transcript, the transcript
    does not, and a mark on it would pay a quarter more for nothing."""
    loopback.play_prompt_caches()
    hub = make_hub()
    await judge_transcript(hub.get("anthropic:claude-sonnet-4-5"), RUBRIC, _transcript(),
                           settings=JudgeSettings(samples=1))
    (request,) = loopback.requests
    assert request.body["system"][0]["cache_control"] == EPHEMERAL
    assert all("cache_control" not in block for m in request.body["messages"]
               for block in m["content"])


def test_run_report_shows_the_prompt_cache_per_role() -> None:
    from rich.console import Console

    from harness.report.terminal import _usage
    from harness.runs.summary_model import RunUsage
    from harness.transcript import UsageTotals

    usage = RunUsage(by_role={
        "agent": UsageTotals(calls=4, input_tokens=8_000, output_tokens=400),
        "judge": UsageTotals(calls=6, input_tokens=12_000, output_tokens=600,
                             prompt_cache_read_tokens=9_000, prompt_cache_write_tokens=1_500,
                             prompt_cache_saved_usd=0.0241, cost_usd=0.0153),
    }, total_cost_usd=0.0153, unpriced_calls=0)
    console = Console(width=80, record=True)
    _usage(usage, console)
    text = console.export_text()
    words = " ".join(text.split())
    assert ("judge: 75% of input tokens from the provider's prompt cache, $0.0241 saved"
            in words)
    assert "agent:" not in words  # no prompt cache there: nothing said
    assert max(len(line) for line in text.splitlines()) <= 80
