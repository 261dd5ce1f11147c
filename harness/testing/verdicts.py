"""A loopback responder that plays a judge whose verdicts differ from prompt to prompt.

The auto responder answers a forced tool call with the smallest valid arguments, so every
criterion of every rubric gets the same score and a comparison of two runs' verdicts could
not fail. :func:`varied_verdicts` answers with arguments valid against the tool's schema in
which every choice (an enum: a criterion's score) is a hash of the prompt and of where the
choice sits: the same prompt always gets the same verdicts, live or in a batch, and different
prompts get different ones. For OpenAI's tools mode and Anthropic's tools; anything else falls
through to the auto responder.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness.models.schema_example import example_from_schema
from harness.testing.replies import RecordedRequest, Reply


def varied_verdicts(request: RecordedRequest) -> Reply | None:
    """The forced tool's arguments as a function of the prompt (see the module docstring);
    ``None`` for a request that forces no tool."""
    tools = request.body.get("tools") or []
    if not tools:
        return None
    tool = tools[0]
    if request.api == "openai":
        tool = tool.get("function") or {}
        schema = tool.get("parameters")
    else:
        schema = tool.get("input_schema")
    if not isinstance(schema, dict) or "name" not in tool:
        return None
    seed = json.dumps([request.body.get("system"), request.messages], sort_keys=True)
    return Reply.tool_call(str(tool["name"]), _value(schema, schema.get("$defs") or {}, seed))


def _value(schema: dict[str, Any], defs: dict[str, Any], seed: str) -> Any:
    if "$ref" in schema:
        schema = defs[str(schema["$ref"]).rsplit("/", 1)[-1]]
    if schema.get("enum"):
        digest = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
        return schema["enum"][digest % len(schema["enum"])]
    if schema.get("type") == "object":
        required = schema.get("required") or []
        return {name: _value(sub, defs, f"{seed}/{name}")
                for name, sub in (schema.get("properties") or {}).items() if name in required}
    return example_from_schema({**schema, "$defs": defs})
