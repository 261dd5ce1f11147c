"""The memoised async-validator check answers exactly as instructor's own check does."""

from __future__ import annotations

import pytest
from instructor.v2.core import patch
from instructor.v2.validation import async_validators
from instructor.v2.validation.async_validators import async_field_validator
from pydantic import BaseModel

from harness.models.instructor_speedups import memoise_async_validator_check
from harness.models.request import ModelRequest
from harness.models.types import Message
from harness.testing.replies import Reply


class Plain(BaseModel):
    answer: str


class Nested(BaseModel):
    items: list[Plain]


class WithAsyncValidator(BaseModel):
    answer: str

    @async_field_validator("answer")
    async def check_answer(self, value: str) -> None:  # pragma: no cover - never run
        return None


class HidesOneInside(BaseModel):
    inner: list[WithAsyncValidator]


def test_the_check_is_replaced_everywhere_instructor_calls_it() -> None:
    memoise_async_validator_check()
    memoise_async_validator_check()  # a second call changes nothing
    check = async_validators.reject_async_validators
    assert getattr(check, "__wrapped__", None) is not None
    assert patch.reject_async_validators is check
    assert check.__wrapped__.__module__ == async_validators.__name__  # type: ignore[attr-defined]


@pytest.mark.parametrize("model", [WithAsyncValidator, HidesOneInside])
def test_a_model_with_async_validators_is_refused_every_time(model: type[BaseModel]) -> None:
    memoise_async_validator_check()
    check = async_validators.reject_async_validators
    original = check.__wrapped__  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="async validators") as first:
        original(model)
    for _ in range(3):
        with pytest.raises(ValueError) as again:
            check(model)
        assert str(again.value) == str(first.value)


def test_a_plain_model_passes_and_is_remembered() -> None:
    memoise_async_validator_check()
    check = async_validators.reject_async_validators

    class Fresh(BaseModel):
        nested: Nested

    before = check.cache_info()  # type: ignore[attr-defined]
    for _ in range(5):
        assert check(Fresh) is None
    after = check.cache_info()  # type: ignore[attr-defined]
    assert after.misses - before.misses == 1
    assert after.hits - before.hits == 4


@pytest.mark.parametrize("name", ["openai:judge", "anthropic:judge"])
async def test_a_structured_call_installs_it_and_still_refuses_async_validators(
        name: str, loopback, make_hub, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.models.instructor_speedups as speedups

    # Start from instructor's own check, as a fresh process would.
    original = getattr(async_validators.reject_async_validators, "__wrapped__",
                       async_validators.reject_async_validators)
    monkeypatch.setattr(speedups, "_installed", False)
    monkeypatch.setattr(async_validators, "reject_async_validators", original)
    monkeypatch.setattr(patch, "reject_async_validators", original)

    hub = make_hub()
    loopback.enqueue(Reply.json({"answer": "yes"}))
    ask = [Message(role="user", content="Answer.")]
    result = await hub.get(name).structured(ModelRequest(ask, role="judge"), Plain)
    assert result.value == Plain(answer="yes")
    assert async_validators.reject_async_validators is not original
    assert patch.reject_async_validators is async_validators.reject_async_validators

    # A model whose validators instructor would not run is still refused, call after call.
    for _ in range(2):
        with pytest.raises(ValueError, match="async validators"):
            await hub.get(name).structured(ModelRequest(ask, role="judge"), WithAsyncValidator)
