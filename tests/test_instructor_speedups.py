"""The memoised async-validator check answers exactly as instructor's own check does, and is
installed only on the instructor releases it was checked against (it replaces a function of
instructor's internals: these tests fail when upstream changes what it relies on)."""

from __future__ import annotations

import sys
from importlib import metadata
from types import FrameType

import pytest
from instructor.v2.core import patch
from instructor.v2.validation import async_validators
from instructor.v2.validation.async_validators import async_field_validator
from pydantic import BaseModel

from harness.models import instructor_speedups as speedups
from harness.models.instructor_speedups import (
    CHECKED_RELEASES,
    checked_release,
    memoise_async_validator_check,
)
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


def test_the_installed_instructor_is_a_release_the_memo_was_checked_against() -> None:
    version = metadata.version("instructor")
    assert checked_release(version), (
        f"instructor {version} is outside CHECKED_RELEASES {CHECKED_RELEASES}: the memo is not "
        "installed there. Check that every caller of reject_async_validators still looks it "
        "up at call time (or is patched), run this file, then widen CHECKED_RELEASES")


@pytest.mark.parametrize(("version", "checked"), [
    ("1.17.0", True), ("1.17.3rc1", True), ("1.14.0", True), ("1.13.9", False),
    ("1.18.0", False), ("2.0.0", False), ("dev", False),
])
def test_which_releases_are_checked(version: str, checked: bool) -> None:
    assert CHECKED_RELEASES == ((1, 14), (1, 17))
    assert checked_release(version) is checked


def _fresh_instructor(monkeypatch: pytest.MonkeyPatch) -> object:
    """instructor's own check back in place, as in a fresh process; returns it."""
    original = getattr(async_validators.reject_async_validators, "__wrapped__",
                       async_validators.reject_async_validators)
    monkeypatch.setattr(speedups, "_installed", False)
    monkeypatch.setattr(async_validators, "reject_async_validators", original)
    monkeypatch.setattr(patch, "reject_async_validators", original)
    return original


def test_outside_the_checked_releases_instructor_is_left_as_it_is(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    original = _fresh_instructor(monkeypatch)
    monkeypatch.setattr(speedups.metadata, "version", lambda name: "1.99.0")
    with caplog.at_level("INFO", logger="harness.models.instructor_speedups"):
        memoise_async_validator_check()
    assert async_validators.reject_async_validators is original
    assert patch.reject_async_validators is original
    assert "instructor 1.99.0 is not among the releases" in caplog.text


@pytest.mark.parametrize("name", ["openai:judge", "anthropic:judge"])
async def test_a_structured_call_of_a_remembered_model_never_runs_instructor_s_walk(
        name: str, loopback, make_hub, monkeypatch: pytest.MonkeyPatch) -> None:
    # The memo reaches instructor's callers only while each finds the check where it was
    # replaced (its module, and patch.py's name for it): a caller that keeps instructor's own
    # function some other way would walk the model on every call again. Watched by its code
    # object, however it is reached.
    original = _fresh_instructor(monkeypatch)
    hub = make_hub()
    loopback.enqueue(Reply.json({"answer": "yes"}), Reply.json({"answer": "again"}))
    first = await hub.get(name).structured(
        ModelRequest([Message(role="user", content="One.")], role="judge"), Plain)
    assert first.value == Plain(answer="yes")  # installed, Plain remembered
    walks = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal walks
        walks += event == "call" and frame.f_code is original.__code__  # type: ignore[attr-defined]

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        again = await hub.get(name).structured(
            ModelRequest([Message(role="user", content="Two.")], role="judge"), Plain)
    finally:
        sys.setprofile(previous)
    assert again.value == Plain(answer="again")
    assert walks == 0
