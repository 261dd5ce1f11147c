"""A scenario the judging tests run offline (``mock:`` models): a weather question with a
reference answer, scored by ``final_response_match``; other tests change its rubrics and
reference."""

from __future__ import annotations

MATCH_SCENARIO = {
    "id": "weather-match",
    "user": {"goal": "The weather in Paris.", "opening_message": "Weather in Paris?"},
    "agent": {"model": "mock:agent", "system_prompt": "You are a weather assistant."},
    "tools": [{"name": "get_weather", "description": "Current weather.",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
               "returns": {"city": "Paris", "temperature_c": 18}}],
    "expectations": {"tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}],
                     "reference_answer": "It is 18 °C in Paris."},
    "rubrics": ["final_response_match"],
}
