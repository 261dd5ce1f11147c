"""A rule-based weather agent: shows how to plug any Python agent into the harness.

The harness calls ``answer(messages, toolbox)`` once per user turn with the conversation so far
(``harness.models.types.Message`` objects, the user's latest message last) and a toolbox of
the scenario's mocked tools. Tool calls go through ``toolbox.call``, which records them; the
return value is the agent's reply. A real adapter would call its own framework here.
"""

from __future__ import annotations

import re
from typing import Any

from harness.models.types import Message
from harness.tools import Toolbox

_CITY = re.compile(r"\bin ([A-Z][a-zA-Z]+(?: [A-Z][a-zA-Z]+)*)")
_FORECAST_WORDS = ("forecast", "tomorrow", "next", "week", "days")


def answer(messages: list[Message], toolbox: Toolbox) -> str:
    """Reply to the last user message, calling get_weather or get_forecast when a city is
    named."""
    question = next(m.content for m in reversed(messages) if m.role == "user")
    match = _CITY.search(question)
    if match is None:
        return "Which city would you like the weather for?"
    city = match.group(1)
    if any(word in question.lower() for word in _FORECAST_WORDS):
        result = toolbox.call("get_forecast", city=city, days=3)
        if result.is_error:
            return f"Sorry, I couldn't get the forecast for {city}: {result.error_message}"
        return _forecast_text(city, result.value)
    result = toolbox.call("get_weather", city=city)
    if result.is_error:
        return f"Sorry, I couldn't get the weather for {city}: {result.error_message}"
    weather: dict[str, Any] = result.value
    return f"It's {weather['temperature_c']} °C and {weather['conditions']} in {city}."


def _forecast_text(city: str, forecast: dict[str, Any]) -> str:
    days = ", ".join(
        f"day {d['day']}: {d['conditions']}, {d['low_c']}-{d['high_c']} °C"
        for d in forecast["days"]
    )
    return f"Forecast for {city}: {days}."
