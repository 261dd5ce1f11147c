"""The ``gemini:`` provider: the real google-genai SDK against the loopback server's
``generateContent`` route. A plain reply with usage and cost, the request on the wire, a tool
call round trip in an episode, structured output, faults (malformed bodies, server errors
until retries run out, a refused key), keys kept out of errors, logs and the cache, the cache
replaying, Vertex AI clients, the missing-key line, and ``harness run`` with a Gemini agent
and judge end to end. (The judge API and the retry tests run for gemini too:
tests/test_judging_loopback.py, tests/test_models_retry.py.)"""

from __future__ import annotations

import base64
import json
import logging
import traceback
from pathlib import Path
from typing import Any

import httpx2
import pytest
from google.genai import types
from pydantic import BaseModel
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import (
    HarnessError,
    ModelConfigError,
    ModelUnavailableError,
    StructuredOutputError,
)
from harness.models.config import GeminiProviderConfig, ModelsConfig
from harness.models.formats import to_gemini_contents
from harness.models.gemini_provider import gemini_tool_config, make_client, usage_tokens
from harness.models.hub import ModelHub
from harness.models.request import ModelRequest
from harness.models.types import GenerationParams, Message, ToolCall, Usage
from harness.scenarios import parse_scenario
from harness.simulation import run_episode
from harness.testing.hub import TEST_KEYS, loopback_config
from harness.testing.replies import RecordedRequest, Reply
from harness.testing.server import LoopbackServer
from tests.helpers.cli import run_cli
from tests.helpers.loopback_script import Script, agent_requests, goal_met, is_simulator, say

HI = [Message(role="system", content="Be brief."), Message(role="user", content="hi")]
FLASH = "gemini:gemini-2.5-flash"


class Verdict(BaseModel):
    score: int
    reason: str


async def test_a_plain_reply_with_usage_and_cost(loopback: LoopbackServer, make_hub) -> None:
    loopback.enqueue(Reply.text_reply("Hello.", usage=(1000, 200)))
    params = GenerationParams(temperature=0.2, top_p=0.9, seed=7, stop=("END",), max_tokens=64)
    reply = await make_hub().get(FLASH).chat(ModelRequest(HI, "agent", params=params))
    assert reply.message == Message(role="assistant", content="Hello.")
    assert reply.finish_reason == "stop"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1000, 200)
    assert reply.cost_usd == pytest.approx((1000 * 0.30 + 200 * 2.50) / 1e6)
    [request] = loopback.requests
    assert request.api == "gemini"
    assert request.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert request.headers["x-goog-api-key"] == "<redacted>"  # the key was sent, as Google's
    assert request.body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert request.body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert request.body["generationConfig"] == {
        "maxOutputTokens": 64, "temperature": 0.2, "topP": 0.9, "seed": 7,
        "stopSequences": ["END"]}


def test_usage_counts_thinking_as_output_and_cached_tokens_as_input() -> None:
    raw = types.GenerateContentResponse.model_validate({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}],
        "usageMetadata": {"promptTokenCount": 120, "cachedContentTokenCount": 100,
                          "toolUsePromptTokenCount": 5, "candidatesTokenCount": 7,
                          "thoughtsTokenCount": 30, "totalTokenCount": 162}})
    # cached tokens are part of the prompt's count (and read from the cache); thinking is
    # billed as output
    assert usage_tokens(raw) == Usage(input_tokens=125, output_tokens=37, cache_read_tokens=100)


def test_tool_choice_and_call_ids_on_the_wire() -> None:
    assert gemini_tool_config("auto") == {"function_calling_config": {"mode": "AUTO"}}
    assert gemini_tool_config("none") == {"function_calling_config": {"mode": "NONE"}}
    assert gemini_tool_config("required") == {"function_calling_config": {"mode": "ANY"}}
    assert gemini_tool_config("lookup") == {"function_calling_config": {
        "mode": "ANY", "allowed_function_names": ["lookup"]}}
    system, contents = to_gemini_contents([
        Message(role="user", content="Where are A-1 and A-2?"),
        Message(role="assistant", content="Looking.", tool_calls=(
            ToolCall(id="own-id", name="lookup", arguments={"id": "A-1"}),
            ToolCall(id="gemini-call-r1-1", name="lookup", arguments={"id": "A-2"}))),
        Message(role="tool", tool_call_id="own-id", content='{"status": "shipped"}'),
        Message(role="tool", tool_call_id="gemini-call-r1-1", name="lookup",
                content="no such order", is_error=True),
    ])
    assert system is None
    assert contents[1] == {"role": "model", "parts": [
        {"text": "Looking."},
        {"function_call": {"name": "lookup", "args": {"id": "A-1"}, "id": "own-id"}},
        # an id the harness made up for an id-less call is not sent back
        {"function_call": {"name": "lookup", "args": {"id": "A-2"}}}]}
    # both results in one user turn, named by their calls, the failure as an error
    assert contents[2] == {"role": "user", "parts": [
        {"function_response": {"name": "lookup", "response": {"output": {"status": "shipped"}},
                               "id": "own-id"}},
        {"function_response": {"name": "lookup", "response": {"error": "no such order"}}}]}


ORDER_ID = {"type": "object", "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"]}
SCENARIO: dict[str, Any] = {
    "id": "orders",
    "user": {"persona": "a customer", "goal": "cancel order A-1",
             "opening_message": "Please cancel order A-1."},
    "agent": {"model": FLASH, "system_prompt": "You are the order desk."},
    "state": {"orders": {"A-1": {"status": "pending"}}},
    "tools": [{
        "name": "cancel_order", "parameters": ORDER_ID,
        "rules": [{"when_state": {"orders.${args.order_id}.status": "pending"},
                   "returns": {"cancelled": "${args.order_id}"},
                   "set_state": {"orders.${args.order_id}.status": "cancelled"}}],
        "default": {"error": "order ${args.order_id} cannot be cancelled"},
    }],
    "limits": {"max_user_turns": 3, "max_agent_steps": 4},
}


async def test_a_tool_call_round_trip_in_an_episode(loopback: LoopbackServer, make_hub) -> None:
    loopback.set_responder(Script(
        agent=[Reply.tool_call("cancel_order", {"order_id": "A-1"}),
               Reply.text_reply("Order A-1 is cancelled.")],
        simulator=[goal_met("Thanks.")]))
    hub = make_hub()
    transcript = await run_episode(parse_scenario(SCENARIO, check_imports=False),
                                   agent_model=hub.get(FLASH),
                                   simulator_model=hub.get("gemini:gemini-2.5-flash-lite"),
                                   epoch=0)
    assert (transcript.stop_reason, transcript.error) == ("goal_met", None)
    assert [(r.name, r.arguments, r.result) for r in transcript.tool_calls] == [
        ("cancel_order", {"order_id": "A-1"}, {"cancelled": "A-1"})]
    assert transcript.final_state == {"orders": {"A-1": {"status": "cancelled"}}}
    assert transcript.final_response == "Order A-1 is cancelled."
    first, second = agent_requests(loopback)
    declared = first.body["tools"][0]["functionDeclarations"][0]
    assert declared["name"] == "cancel_order"
    assert first.body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    # the mock's result went back as a function response in a user turn
    assert second.messages[-2]["role"] == "model"
    call_part = second.messages[-2]["parts"][0]
    assert call_part["functionCall"]["name"] == "cancel_order"
    # its thought signature went back with it, as Gemini 3 requires
    assert base64.b64decode(call_part["thoughtSignature"]).startswith(b"loopback-signature-")
    assert second.messages[-1] == {"role": "user", "parts": [{"functionResponse": {
        "name": "cancel_order", "response": {"output": {"cancelled": "A-1"}}}}]}
    # the simulator answered in Gemini's JSON mode
    [sim] = [r for r in loopback.requests if is_simulator(r)]
    assert sim.body["generationConfig"]["responseMimeType"] == "application/json"
    assert transcript.usage["agent"].calls == 2 and transcript.usage["agent"].cost_usd > 0


async def test_structured_output_is_re_asked_then_validated(loopback: LoopbackServer,
                                                            make_hub) -> None:
    loopback.enqueue(Reply.json({"score": "high"}), Reply.json({"score": 4, "reason": "Good."}))
    answer = await make_hub().get(FLASH).structured(ModelRequest(HI, "judge"), Verdict)
    assert answer.value == Verdict(score=4, reason="Good.") and answer.attempts == 2
    first, second = loopback.requests
    config = first.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == Verdict.model_json_schema()
    # the re-ask shows the model its answer and what was wrong with it, in a user turn
    assert second.messages[-2] == {"role": "model", "parts": [{"text": '{"score": "high"}'}]}
    assert second.messages[-1]["role"] == "user"
    assert "reason" in second.messages[-1]["parts"][0]["text"]


async def test_finish_reasons_in_the_neutral_words(loopback: LoopbackServer, make_hub) -> None:
    model = make_hub().get(FLASH)
    for gemini_reason, neutral in (("MAX_TOKENS", "length"), ("SAFETY", "content_filter"),
                                   ("MALFORMED_FUNCTION_CALL", "malformed_function_call")):
        loopback.enqueue(Reply.text_reply("partial", finish_reason=gemini_reason))
        reply = await model.chat(ModelRequest(HI, "agent"))
        assert reply.finish_reason == neutral
    # a structured answer cut off by max_tokens is not re-asked: it would be cut off again
    loopback.enqueue(Reply("json", data='{"score": 4, "rea', finish_reason="MAX_TOKENS"))
    with pytest.raises(StructuredOutputError, match="cut off at max_tokens=1024"):
        await model.structured(ModelRequest(HI, "judge"), Verdict)
    assert loopback.request_count == 4


async def test_a_malformed_body_is_retried_then_reported(loopback: LoopbackServer,
                                                         make_hub) -> None:
    loopback.enqueue(Reply.malformed(), Reply.text_reply("fine now"))
    model = make_hub(max_attempts=3).get(FLASH)
    assert (await model.chat(ModelRequest(HI, "agent"))).message.content == "fine now"
    loopback.enqueue(Reply.malformed(), times=3)
    with pytest.raises(ModelUnavailableError, match="malformed response body"):
        await model.chat(ModelRequest(HI, "agent"))
    assert loopback.request_count == 5


async def test_server_errors_until_retries_run_out_are_the_samples_error(
        loopback: LoopbackServer, make_hub) -> None:
    loopback.set_responder(Script(agent=[Reply.server_error(500)] * 3))
    hub = make_hub(max_attempts=3)
    transcript = await run_episode(parse_scenario(SCENARIO, check_imports=False),
                                   agent_model=hub.get(FLASH),
                                   simulator_model=hub.get("gemini:sim"), epoch=0)
    assert transcript.stop_reason == "agent_error" and transcript.error is not None
    assert (transcript.error.kind, transcript.error.role) == ("ModelUnavailableError", "agent")
    assert "server error (500)" in transcript.error.message
    assert loopback.request_count == 3


async def test_a_refused_key_is_a_config_error_naming_the_provider(loopback: LoopbackServer,
                                                                   make_hub) -> None:
    loopback.enqueue(Reply.error(401, message=f"API key {TEST_KEYS['gemini']} not valid"))
    with pytest.raises(ModelConfigError) as caught:
        await make_hub(max_attempts=5).get(FLASH).chat(ModelRequest(HI, "agent"))
    text = str(caught.value)
    assert text.startswith(f"{FLASH}: the gemini api_key in the models config was refused (401)")
    assert TEST_KEYS["gemini"] not in text and loopback.request_count == 1


@pytest.mark.parametrize(("status", "expected"), [
    (400, "request rejected (400)"),
    (403, "not allowed to use this model (403"),
    (404, "model not found (404): check the model name at http://127.0.0.1:"),
])
async def test_client_errors_are_config_errors_at_once(status: int, expected: str,
                                                       loopback: LoopbackServer,
                                                       make_hub) -> None:
    loopback.enqueue(Reply.error(status, message="details from Google"))
    with pytest.raises(ModelConfigError) as caught:
        await make_hub(max_attempts=5).get(FLASH).chat(ModelRequest(HI, "agent"))
    assert expected in str(caught.value) and "details from Google" in str(caught.value)
    assert loopback.request_count == 1


GEMINI_KEY = "gm-SECRETgeminiKEY0123456789"  # in no known key shape: only its value hides it


def _texts_of(err: BaseException) -> list[str]:
    return [str(err), repr(err), "".join(traceback.format_exception(err))]


async def test_the_key_never_leaks(loopback: LoopbackServer, tmp_path: Path,
                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and the HTTP client's included
    config = loopback_config(loopback, keys=False, cache_path=tmp_path / "cache.sqlite",
                             max_attempts=2)
    hub = ModelHub(config, environ={"GEMINI_API_KEY": GEMINI_KEY})
    errors: list[BaseException] = []
    try:
        model = hub.get(FLASH)
        await model.chat(ModelRequest(HI, "agent"))
        assert loopback.requests[-1].headers["x-goog-api-key"] == "<redacted>"
        loopback.enqueue(Reply.json({"score": 1, "reason": "ok"}))
        await model.structured(ModelRequest(HI, "judge"), Verdict)
        for replies in ([Reply.unauthorized()],
                        [Reply.error(400, message=f"key {GEMINI_KEY} is malformed")],
                        [Reply.error(500, message=f"upstream saw {GEMINI_KEY}")] * 2,
                        [Reply.rate_limited(0.0), Reply.error(403, message=f"{GEMINI_KEY} no")]):
            loopback.enqueue(*replies)
            with pytest.raises(HarnessError) as caught:
                await model.chat(ModelRequest([Message(role="user", content=f"fail {replies}")],
                                              "agent"))
            errors.append(caught.value)
    finally:
        await hub.aclose()
    assert [type(e).__name__ for e in errors] == [
        "ModelConfigError", "ModelConfigError", "ModelUnavailableError", "ModelConfigError"]
    assert "GEMINI_API_KEY was refused (401)" in str(errors[0])
    for err in errors:
        assert all(GEMINI_KEY not in text for text in _texts_of(err))
    log_text = "\n".join([caplog.text, *(r.getMessage() for r in caplog.records)])
    assert caplog.records and GEMINI_KEY not in log_text
    cache_bytes = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert cache_bytes and b"SECRET" not in cache_bytes
    assert all(GEMINI_KEY not in str(r.headers) for r in loopback.requests)


async def test_the_cache_replays_without_a_second_request(loopback: LoopbackServer, make_hub,
                                                          tmp_path: Path) -> None:
    loopback.set_responder(lambda request: Reply.json({"score": 3, "reason": "Fine."})
                           if "generationConfig" in request.body
                           and "responseJsonSchema" in request.body["generationConfig"]
                           else Reply.text_reply("cached?", usage=(10, 2)))
    model = make_hub(cache_path=tmp_path / "cache.sqlite").get(FLASH)
    first = await model.chat(ModelRequest(HI, "agent"))
    again = await model.chat(ModelRequest(HI, "agent"))
    other_sample = await model.chat(ModelRequest(HI, "agent", sample_index=1))
    assert again.message == first.message and again.cached and not other_sample.cached
    assert (again.usage.input_tokens, again.cost_usd) == (10, 0.0)
    judged = await model.structured(ModelRequest(HI, "judge"), Verdict)
    rejudged = await model.structured(ModelRequest(HI, "judge"), Verdict)
    assert rejudged.value == judged.value and rejudged.cached
    assert loopback.request_count == 3


def _client_target(hub: ModelHub) -> tuple[bool, str | None, str | None, str]:
    endpoint = hub.endpoint("gemini")
    client = make_client("AIza-a-key", endpoint.base_url, httpx2.AsyncClient(), 5.0,
                         hub._gemini_target())
    api = client._api_client
    return bool(api.vertexai), api.project, api.location, endpoint.base_url


def test_vertex_ai_clients_are_built_from_the_config_or_the_environment() -> None:
    config = ModelsConfig(gemini=GeminiProviderConfig(vertexai=True, project="my-project",
                                                      location="europe-west4"))
    hub = ModelHub(config, environ={"GEMINI_API_KEY": "not-used-on-vertex"})
    assert _client_target(hub) == (True, "my-project", "europe-west4",
                                   "https://europe-west4-aiplatform.googleapis.com")
    assert not hub.endpoint("gemini").key_required  # application default credentials
    from_env = ModelHub(environ={"GOOGLE_GENAI_USE_VERTEXAI": "true",
                                 "GOOGLE_CLOUD_PROJECT": "env-project"})
    assert _client_target(from_env) == (True, "env-project", "global",
                                        "https://aiplatform.googleapis.com")
    # the Gemini API, even with Vertex variables set for another tool, when the config says so
    gemini_api = ModelHub(ModelsConfig(gemini=GeminiProviderConfig(vertexai=False)),
                          environ={"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_API_KEY": "k"})
    assert _client_target(gemini_api)[0] is False
    assert gemini_api.endpoint("gemini").base_url == "https://generativelanguage.googleapis.com"


async def test_the_server_answers_on_vertex_ais_path(loopback: LoopbackServer) -> None:
    loopback.enqueue(Reply.text_reply("from vertex"))
    path = ("/v1beta1/projects/p/locations/us-central1/publishers/google/models/"
            "gemini-2.5-pro:generateContent")
    async with httpx2.AsyncClient() as client:
        answer = await client.post(loopback.url + path, json={
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    body = answer.json()
    assert body["candidates"][0]["content"]["parts"] == [{"text": "from vertex"}]
    assert body["modelVersion"] == "gemini-2.5-pro" and loopback.requests[0].api == "gemini"


def test_a_missing_key_is_one_line_naming_the_variables() -> None:
    no_keys: dict[str, str | None] = {name: None for name in (
        "GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_GENAI_USE_VERTEXAI")}
    example = Path(__file__).resolve().parents[1] / "examples" / "transcripts"
    transcripts = sorted(example.glob("*.jsonl"))[0]
    proc = run_cli("score-transcripts", str(transcripts), "--json", "--judge", FLASH,
                   "--rubric", "safety", env=no_keys)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0
    assert "no GOOGLE_API_KEY or GEMINI_API_KEY set" in proc.stderr
    assert "GOOGLE_GENAI_USE_VERTEXAI" in proc.stderr and "Traceback" not in proc.stderr


def _judge_or_agent(request: RecordedRequest) -> Reply:
    schema = (request.body.get("generationConfig") or {}).get("responseJsonSchema")
    if schema is None:
        return Reply.text_reply("The capital of France is Paris.", usage=(400, 20))
    if is_simulator(request):
        return say("Thanks.")
    return Reply.json({criterion: {"reasoning": "Right.", "evidence": [], "score": 5}
                       for criterion in schema["properties"]})


def test_harness_run_with_a_gemini_agent_and_judge(loopback: LoopbackServer, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", TEST_KEYS["gemini"])
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", loopback.gemini_base_url)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    loopback.set_responder(_judge_or_agent)
    scenario = {"id": "capital", "user": {"persona": "A student.", "goal": "Learn the capital.",
                                          "opening_message": "What is the capital of France?"},
                "agent": {"model": FLASH, "system_prompt": "Answer briefly."},
                "limits": {"max_user_turns": 1},
                "rubrics": ["final_response_quality"]}
    suite = tmp_path / "capital.yaml"
    suite.write_text(json.dumps([scenario]))
    done = CliRunner().invoke(app, [
        "run", str(suite), "--agent", FLASH, "--simulator", "mock:simulator",
        "--judge", "gemini:gemini-2.5-pro", "--epochs", "1", "--cache-mode", "off",
        "--out", str(tmp_path / "run")], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    [sample] = [json.loads(line) for line in
                (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert sample["models"]["judge"] == ["gemini:gemini-2.5-pro"]
    assert sample["score"] == 1.0 and sample["passed"] is True
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    by_role = summary["usage"]["by_role"]
    assert by_role["agent"]["cost_usd"] > 0 and by_role["judge"]["cost_usd"] > 0
    judged = [r for r in loopback.requests if r.model == "gemini-2.5-pro"]
    assert judged and all(r.api == "gemini" for r in loopback.requests)
