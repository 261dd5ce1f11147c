"""The usage ledger, budgets, the price table and the models config."""

from __future__ import annotations

import asyncio

import pytest

from harness.errors import BudgetExceededError, InputError
from harness.models.config import ModelsConfig
from harness.models.hub import ModelHub
from harness.models.prices import Price, PriceTable
from harness.models.request import ModelRequest
from harness.models.types import Message
from harness.models.usage import UsageLedger
from harness.testing.replies import Reply

HI = [Message(role="user", content="hi")]


def test_ledger_slices_by_role_and_model():
    ledger = UsageLedger()
    ledger.record_request("agent", "openai:a", 100, 10, 0.5)
    ledger.record_call("agent", "openai:a", 1.0)
    ledger.record_request("judge", "openai:a", 50, 5, None)
    ledger.record_failed_request("judge", "openai:a")
    ledger.record_call("judge", "openai:a", 2.0)
    ledger.record_call("judge", "anthropic:b", 0.1, cached=True, saved_cost_usd=0.2)
    ledger.record_error("agent", "anthropic:b", 0.3)

    assert ledger.total.calls == 4
    assert ledger.total.requests == 3
    assert ledger.total.cached_calls == 1
    assert ledger.total.errors == 1
    assert ledger.total.cost_usd == 0.5
    assert ledger.total.saved_cost_usd == 0.2
    assert ledger.total.unpriced_requests == 1
    assert ledger.total.latency_s == pytest.approx(3.4)
    by_role = ledger.by_role()
    assert by_role["agent"].calls == 2 and by_role["judge"].calls == 2
    assert by_role["judge"].input_tokens == 50
    by_model = ledger.by_model()
    assert by_model["openai:a"].input_tokens == 150
    assert by_model["anthropic:b"].errors == 1
    snap = ledger.snapshot()
    assert snap["by_role_and_model"]["judge/openai:a"]["requests"] == 2
    # The slices add up to the total.
    summed = sum(s["calls"] for s in snap["by_role_and_model"].values())
    assert summed == snap["total"]["calls"]


def test_call_budget_counts_calls_as_they_start():
    ledger = UsageLedger(max_calls=2)
    ledger.begin_call()
    ledger.begin_call()
    with pytest.raises(BudgetExceededError, match="call budget of 2"):
        ledger.begin_call()
    assert ledger.started_calls == 2


def test_cost_budget():
    ledger = UsageLedger(max_cost_usd=1.0)
    ledger.begin_call()
    ledger.record_request("agent", "m:x", 0, 0, 0.99)
    ledger.begin_call()
    ledger.record_request("agent", "m:x", 0, 0, 0.02)
    with pytest.raises(BudgetExceededError, match=r"cost budget of \$1.0000 reached"):
        ledger.begin_call()


async def test_budget_stops_calls_before_a_request(loopback, make_hub):
    hub = make_hub(max_calls=3)
    model = hub.get("openai:m")
    for _ in range(3):
        await model.chat(ModelRequest(HI, role="agent"))
    with pytest.raises(BudgetExceededError):
        await model.chat(ModelRequest(HI, role="agent"))
    assert loopback.request_count == 3
    # A budget stop is not a model error.
    assert hub.ledger.total.errors == 0


async def test_call_budget_holds_under_concurrency(loopback, make_hub):
    hub = make_hub(max_calls=5, concurrency=20)
    loopback.latency = 0.05
    model = hub.get("anthropic:m")
    results = await asyncio.gather(*(model.chat(ModelRequest(HI, role="agent")) for _ in range(12)),
                                   return_exceptions=True)
    assert sum(not isinstance(r, BaseException) for r in results) == 5
    assert all(isinstance(r, BudgetExceededError) for r in results if isinstance(r, BaseException))
    assert loopback.request_count == 5


async def test_cached_calls_do_not_count_against_the_budget(loopback, make_hub, tmp_path):
    hub = make_hub(max_calls=1, cache_path=tmp_path / "c.sqlite")
    model = hub.get("openai:m")
    await model.chat(ModelRequest(HI, role="agent"))
    for _ in range(3):
        assert (await model.chat(ModelRequest(HI, role="agent"))).cached


async def test_cost_budget_with_real_prices(loopback, make_hub):
    hub = make_hub(max_cost_usd=0.001,
                   prices={"openai:m": {"input_per_mtok": 1000.0, "output_per_mtok": 0.0}})
    loopback.enqueue(Reply.text_reply("x", usage=(2, 1)))  # $0.002
    await hub.get("openai:m").chat(ModelRequest(HI, role="agent"))
    with pytest.raises(BudgetExceededError):
        await hub.get("openai:m").chat(ModelRequest(HI, role="agent"))


def test_price_lookup():
    table = PriceTable({"openai:llama3": Price(input_per_mtok=0, output_per_mtok=0)})
    assert table.cost("anthropic:claude-sonnet-4-5", 1_000_000, 1_000_000) == pytest.approx(18.0)
    # Dated snapshots and -latest aliases share the listed price ...
    assert table.lookup("anthropic:claude-sonnet-4-5-20250929") == table.lookup(
        "anthropic:claude-sonnet-4-5")
    assert table.lookup("openai:gpt-4o-2024-08-06") == table.lookup("openai:gpt-4o")
    # ... other suffixes are different models, left unpriced rather than mispriced.
    assert table.lookup("openai:gpt-4o-audio-preview") is None
    assert table.cost("openai:unknown", 10, 10) is None
    assert table.cost("openai:llama3", 10**6, 10**6) == 0.0
    table.add("openai:gpt-4o", Price(input_per_mtok=1, output_per_mtok=1))
    assert table.cost("openai:gpt-4o", 10**6, 0) == 1.0


def test_config_from_yaml(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(
        "openai: {base_url: 'http://localhost:8000/v1', concurrency: 4}\n"
        "timeout_s: 30\n"
        "retry: {max_attempts: 2}\n"
        "cache: {path: cache.sqlite, mode: replay}\n"
        "budget: {max_cost_usd: 5}\n"
        "prices:\n"
        "  'openai:llama3': {input_per_mtok: 0, output_per_mtok: 0}\n"
    )
    config = ModelsConfig.from_yaml(path)
    assert config.openai.concurrency == 4
    assert config.retry.max_attempts == 2
    assert config.cache.mode == "replay"
    assert config.prices["openai:llama3"].input_per_mtok == 0
    hub = ModelHub(config.model_copy(update={"cache": config.cache.model_copy(
        update={"path": tmp_path / "cache.sqlite"})}), environ={})
    assert hub.prices.cost("openai:llama3", 5, 5) == 0.0
    assert hub.ledger.max_cost_usd == 5
    assert hub.endpoint("openai").concurrency == 4
    hub.close()


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        ("openai: {concurency: 4}\n", "openai.concurency", "Extra inputs are not permitted"),
        ("cache: {mode: sometimes}\n", "cache.mode", "Input should be"),
        ("retry: {max_attempts: 0}\n", "retry.max_attempts", "greater than or equal to 1"),
        ("prices: {llama3: {input_per_mtok: 1, output_per_mtok: 1}}\n", "prices",
         "not of the form provider:model"),
        ("- a list\n", None, "mapping"),
        ("openai: {concurrency: [\n", None, "not valid YAML"),
    ],
)
def test_config_errors_name_file_and_field(tmp_path, text, field, expected):
    path = tmp_path / "models.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        ModelsConfig.from_yaml(path)
    err = caught.value
    assert str(path) in str(err)
    if field:
        assert err.field is not None and err.field.startswith(field)
    assert expected in str(err)


def test_missing_config_file(tmp_path):
    with pytest.raises(InputError, match="file not found; expected a models YAML file"):
        ModelsConfig.from_yaml(tmp_path / "absent.yaml")


def test_environment_supplies_keys_and_base_urls():
    hub = ModelHub(environ={"OPENAI_BASE_URL": "http://localhost:1234/v1/",
                            "ANTHROPIC_API_KEY": "sk-ant-env-key-123"})
    openai_endpoint = hub.endpoint("openai")
    assert openai_endpoint.base_url == "http://localhost:1234/v1"
    assert openai_endpoint.base_url_is_custom and not openai_endpoint.key_required
    anthropic_endpoint = hub.endpoint("anthropic")
    assert anthropic_endpoint.base_url == "https://api.anthropic.com"
    assert anthropic_endpoint.key_source == "ANTHROPIC_API_KEY"
    anthropic_endpoint.require_key("anthropic:x")  # present: no error
    # An explicit base URL wins over the environment.
    assert hub.get("openai:m", base_url="http://other:9/v1").spec.base_url == "http://other:9/v1"
