"""The in-process fake model of the conversation tests (tests/helpers/simulation_fakes.py)
does what those tests rely on: replies in order, scripted errors raised, requests recorded."""

from __future__ import annotations

import pytest

from harness.errors import ModelUnavailableError
from harness.models.request import ModelRequest
from harness.models.types import Message
from tests.helpers.simulation_fakes import FakeModel, text


async def test_fake_model_replays_its_queue_then_raises_scripted_errors() -> None:
    model = FakeModel(replies=[text("hi"), ModelUnavailableError("down")])
    first = await model.chat(ModelRequest([Message(role="user", content="x")], role="agent"))
    assert first.message.content == "hi"
    with pytest.raises(ModelUnavailableError):
        await model.chat(ModelRequest([Message(role="user", content="y")], role="agent"))
    assert [r.messages[-1].content for r in model.requests] == ["x", "y"]
