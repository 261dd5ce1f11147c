"""The agent under test as an HTTP endpoint (``agent.http``; docs/http-agents.md).

Each user turn becomes one POST (``openai_chat`` with ``tools: client``: one per step of a tool
loop whose calls the mocks answer). The request is rendered from the scenario's templates
(:mod:`harness.scenarios.expressions`, the renderer of mocked tools' templates) with the
placeholders of :data:`~harness.scenarios.schema.HTTP_PLACEHOLDERS` and ``${env:NAME}``.

Failures follow the models' rules: 429 (``Retry-After`` honoured), 5xx, timeouts and dropped
connections are retried with the run's :class:`~harness.models.retry.RetryPolicy`; anything
else the endpoint refuses, and an answer that cannot be read, ends the episode at once as
``agent_error`` with an :class:`~harness.transcript.ErrorInfo` whose ``kind`` says which fault
it was (:data:`FAULT_KINDS`). Values read from ``${env:...}`` are secrets: they are hidden in
logs, removed from every error message and from the endpoint's answers before anything is
recorded.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from harness.errors import InputError, ModelUnavailableError
from harness.json_values import load_json
from harness.logs import hide_in_logs
from harness.models.config import RetryConfig, share_of
from harness.models.formats import (
    from_openai_messages,
    openai_tool_calls,
    parse_tool_arguments,
    to_openai_messages,
    to_openai_tools,
)
from harness.models.retry import (
    RetryPolicy,
    TransientFailure,
    connection_failure,
    retry_after_seconds,
)
from harness.models.types import Message, ToolCall
from harness.redact import REDACTED, redact
from harness.scenarios.expressions import UnresolvedReference, get_path, render, render_string
from harness.scenarios.schema import HttpAgentSpec, http_origin
from harness.simulation.agent import Agent, AgentTurn, tool_message
from harness.tools.toolbox import Toolbox
from harness.transcript import ErrorInfo, ToolCallRecord

FAULT_KINDS: dict[str, str] = {
    "agent_unreachable": "no connection could be made, at any attempt",
    "agent_unavailable": "429, 5xx, timeouts or dropped connections until the retries ran out",
    "agent_auth_refused": "the endpoint refused the credentials (401 or 403)",
    "agent_http_error": "the endpoint refused the request (another 4xx)",
    "agent_bad_reply": "the answer is not JSON, the reply is not text, or the answer is not "
    "HTTP at all (a garbage status line)",
    "agent_response_too_large": "the answer is larger than max_response_bytes",
    "agent_redirect_refused": "a redirect to an origin not named in redirect_origins, with no "
    "Location, or more than 5 in a row",
    "agent_reply_missing": "the reply (reply_path, or choices[0].message) is not in the answer",
    "agent_unexpected_tool_calls": "tool calls returned while tools is not client",
    "agent_config": "a placeholder with no value (${mcp_url} with no MCP server)",
}
"""The ``ErrorInfo.kind`` of each fault of an HTTP agent, and what it means."""


class HttpEndpoints:
    """What the HTTP agents of a run share: one connection pool, a bound on requests in flight
    per endpoint (its ``url`` template; scenarios naming the same url share the smallest
    ``max_concurrency`` among ``specs``) and the models' retry policy. In worker process
    ``index`` of ``count`` (``share``), each bound is that process's part of it
    (:func:`~harness.models.config.share_of`), so the bound holds across the run.

    The pool is made on first use in the running event loop; :meth:`aclose` closes it (a later
    request makes a new one). It is the SDKs' aiohttp-backed ``httpx2`` client, as the model
    endpoints' pools are (:mod:`harness.models.endpoint`): httpx's own transport cost about
    three times the CPU per request at 100 in flight (1.1 ms against 0.33)."""

    def __init__(self, retry: RetryPolicy | None = None, *,
                 specs: Iterable[HttpAgentSpec] = (), share: tuple[int, int] = (0, 1)) -> None:
        self.retry = retry or RetryPolicy(RetryConfig())
        self._share = share
        self._bounds: dict[str, int] = {}
        for spec in specs:
            self._bounds[spec.url] = min(self._bounds.get(spec.url, spec.max_concurrency),
                                         spec.max_concurrency)
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._client: httpx2.AsyncClient | None = None

    def client(self) -> httpx2.AsyncClient:
        if self._client is None:
            from openai import DefaultAioHttpClient

            # No pool limit (0 is aiohttp's "none"): the per-endpoint semaphores are the bound.
            self._client = DefaultAioHttpClient(
                limits=httpx2.Limits(max_connections=0, max_keepalive_connections=64),
                follow_redirects=False,  # see HttpAgent._exchange: never to another origin
            )
        return self._client

    def semaphore(self, spec: HttpAgentSpec) -> asyncio.Semaphore:
        bound = self._semaphores.get(spec.url)
        if bound is None:
            bound = asyncio.Semaphore(share_of(self._bounds.get(spec.url, spec.max_concurrency),
                                               self._share))
            self._semaphores[spec.url] = bound
        return bound

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


_MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class _Answer:
    """An endpoint's answer, read whole (within ``max_response_bytes``)."""

    status_code: int
    headers: httpx2.Headers
    content: bytes


def _not_http(err: Exception) -> str | None:
    """What was wrong when the endpoint's answer was not HTTP (a garbage status line, broken
    headers: aiohttp's parser reports them as a response error of status 400, which the
    transport passes on unwrapped), on one line; ``None`` for any other exception."""
    import aiohttp

    if isinstance(err, aiohttp.ClientResponseError) and err.status == 400:
        said = " ".join(str(err.message).split())
        return said[:200] or "an unreadable status line or headers"
    return None


class _Fault(Exception):
    """Ends the turn as ``agent_error`` with this kind and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class _Unreachable(TransientFailure):
    """No connection was made (retried like a dropped one; named apart when it lasts)."""


class HttpAgent(Agent):
    """The endpoint ``spec`` describes, for one episode (its own session id). ``environ``
    (default ``os.environ``) gives ``${env:NAME}``; ``source`` names the scenario file in
    errors. Raises :class:`InputError` when a variable the templates read is not set."""

    def __init__(
        self,
        spec: HttpAgentSpec,
        *,
        endpoints: HttpEndpoints,
        scenario_id: str,
        epoch: int,
        max_steps: int,
        source: str = "<scenario>",
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.endpoints = endpoints
        self.max_steps = max_steps
        self.needs_tool_server = spec.tools == "mcp"
        # The template, never the rendered URL: ${env:...} may be part of it.
        self.label = f"http:{spec.url}"
        self.session_id = uuid.uuid4().hex
        env = os.environ if environ is None else environ
        self._env: dict[str, str] = {}
        for path, name in spec.env_variables():
            if name not in env:
                field = ".".join(map(str, ("agent", "http", *path)))
                raise InputError(source, field, f"${{env:{name}}}: {name} is not set")
            self._env[f"env:{name}"] = env[name]
        self._secrets = tuple(v for v in self._env.values() if v)
        for secret in self._secrets:
            hide_in_logs(secret)
        self._base_scope: dict[str, Any] = {
            **self._env, "session_id": self.session_id, "scenario_id": scenario_id,
            "epoch": epoch,
        }
        self._seen = 0  # messages of the conversation the (stateful) agent has been sent

    async def respond(
        self, conversation: list[Message], toolbox: Toolbox, *, turn: int
    ) -> AgentTurn:
        # calls over MCP arrive while the request is in flight: inside its time
        out = AgentTurn(steps_include_tool_time=self.needs_tool_server)
        toolbox.turn, toolbox.step = turn, 0
        client_tools = self.spec.tools == "client"
        try:
            for step in range(self.max_steps if client_tools else 1):
                toolbox.step = step
                message = await self._request(conversation, out, toolbox, turn, step)
                if not message.tool_calls:
                    return out
                for call in message.tool_calls:
                    result = toolbox.execute(call, turn=turn, step=step)
                    out.messages.append(tool_message(call, result.content,
                                                     is_error=result.is_error))
                if toolbox.limit_reached:
                    out.stop_reason = "tool_call_limit"
                    out.stop_detail = f"more than {toolbox.max_calls} tool calls"
                    return out
        except _Fault as fault:
            out.stop_reason = "agent_error"
            out.error = ErrorInfo(kind=fault.kind, message=redact(fault.message, self._secrets),
                                  role="agent")
            return out
        out.stop_reason = "agent_step_limit"
        out.stop_detail = (f"still returning tool calls after {self.max_steps} requests in turn "
                           f"{turn} (limits.max_agent_steps)")
        return out

    # -- one request -------------------------------------------------------------------

    async def _request(self, conversation: list[Message], out: AgentTurn, toolbox: Toolbox,
                       turn: int, step: int) -> Message:
        """Send what the agent needs, record the answer in ``out`` and return the assistant
        message that ends it (with tool calls left for the harness to answer, in client
        mode)."""
        everything = [*conversation, *out.messages]
        new = everything if self.spec.session == "stateless" else everything[self._seen:]
        latest = next((m.content for m in reversed(conversation) if m.role == "user"), "")
        scope = {**self._base_scope, "message": latest, "messages": _plain_messages(new)}
        if self.mcp_url is not None:
            scope["mcp_url"] = self.mcp_url
        try:
            url = _text(render_string(self.spec.url, scope))
            headers = {_text(render_string(k, scope)): _text(render_string(v, scope))
                       for k, v in self.spec.headers.items()}
            body = (render(self.spec.request, scope) if self.spec.protocol == "json"
                    else self._chat_body(new, toolbox))
        except UnresolvedReference as err:
            raise _Fault("agent_config", f"{err}: {_unset(err.reference)}") from None
        answer, latency = await self._post(url, headers, body)
        out.callable_steps.append((step, latency))
        answer = _scrubbed(answer, self._secrets)
        if self.spec.protocol == "openai_chat":
            message = self._chat_message(answer)
            out.messages.append(message)
        else:
            message = Message(role="assistant", content=self._reply_text(answer))
            out.messages.extend(self._reported_calls(answer, toolbox, turn))
            out.messages.append(message)
        self._seen = len(conversation) + len(out.messages)
        return message

    def _chat_body(self, new: list[Message], toolbox: Toolbox) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": to_openai_messages(new)}
        if self.spec.model is not None:
            body["model"] = self.spec.model
        if self.spec.tools == "client" and toolbox.specs:
            body["tools"] = to_openai_tools(toolbox.specs)
        return body

    async def _post(self, url: str, headers: dict[str, str], body: Any) -> tuple[Any, float]:
        """POST ``body`` as JSON with the retry policy; return the decoded answer and the
        seconds the answered attempt took."""
        spec, client = self.spec, self.endpoints.client()
        semaphore = self.endpoints.semaphore(spec)
        last: list[TransientFailure] = []

        async def attempt() -> tuple[Any, float]:
            async with semaphore:
                started = time.perf_counter()
                try:
                    async with asyncio.timeout(spec.timeout_s):
                        answer = await self._exchange(client, url, headers, body)
                except TimeoutError:
                    last.append(TransientFailure(
                        f"no complete answer within {spec.timeout_s:g}s (timeout_s)"))
                    raise last[-1] from None
                except httpx2.ConnectError:
                    last.append(_Unreachable("connection refused or host unreachable"))
                    raise last[-1] from None
                except httpx2.TimeoutException as err:
                    last.append(_timeout_or_connection(err, spec.timeout_s))
                    raise last[-1] from None
                except httpx2.TransportError as err:
                    last.append(TransientFailure(f"connection failed or dropped "
                                                 f"({type(err).__name__})"))
                    raise last[-1] from None
                except Exception as err:
                    broken = _not_http(err)
                    if broken is None:
                        raise
                    raise _Fault("agent_bad_reply", f"the answer from {spec.url} is not "
                                 f"HTTP ({broken})") from None
                latency = time.perf_counter() - started
            self._check_status(answer, last)
            try:
                return load_json(answer.content, spec.url), latency
            except InputError as err:  # nested too deep, a number too long
                raise _Fault("agent_bad_reply", f"the answer from {spec.url} is refused: "
                             f"{err.expected}") from None
            except ValueError:
                kind = answer.headers.get("content-type", "no content type")
                raise _Fault("agent_bad_reply",
                             f"the answer from {spec.url} is not JSON ({kind}): "
                             f"{_said(answer)}") from None

        try:
            return await self.endpoints.retry.run(attempt, model=self.label)
        except ModelUnavailableError:
            failure = last[-1]
            kind = "agent_unreachable" if isinstance(failure, _Unreachable) else "agent_unavailable"
            attempts = self.endpoints.retry.config.max_attempts
            raise _Fault(kind, f"{spec.url}: gave up after {attempts} "
                         f"attempt{'s' * (attempts > 1)}; last failure: {failure.reason}"
                         ) from None

    async def _exchange(self, client: httpx2.AsyncClient, url: str, headers: dict[str, str],
                        body: Any) -> _Answer:
        """POST ``body`` to ``url`` and read the answer, up to ``max_response_bytes``
        (decompressed). Redirects within the url's origin are followed with the scenario's
        headers; to an origin the scenario names in ``redirect_origins``, with none of them;
        to any other origin, not at all (a header from ``${env:...}`` is a secret, and only
        ``Authorization`` is one the HTTP client itself would drop)."""
        spec, method = self.spec, "POST"
        home = http_origin(url)
        content: bytes | None = json.dumps(body).encode("utf-8")
        sent = {**headers, "Content-Type": "application/json"}
        for _ in range(_MAX_REDIRECTS + 1):
            async with client.stream(method, url, headers=sent, content=content,
                                     timeout=spec.timeout_s) as response:
                if response.status_code not in _REDIRECTS:
                    return _Answer(response.status_code, response.headers,
                                   await self._read(response))
                location = response.headers.get("location")
                if not location:
                    raise _Fault("agent_redirect_refused", f"{spec.url} answered "
                                 f"{response.status_code} with no Location to go to")
                target = response.url.join(location)
            try:
                origin = http_origin(str(target))
            except ValueError:
                raise _Fault("agent_redirect_refused", f"{spec.url} redirected to "
                             f"{str(target)[:200]!r}, which is not an http(s) URL") from None
            if origin != home:
                if origin not in spec.redirect_origins:
                    raise _Fault("agent_redirect_refused", f"{spec.url} redirected "
                                 f"({response.status_code}) to another origin, {origin}; the "
                                 "harness does not follow it: name it in redirect_origins to "
                                 "follow it, without the scenario's headers")
                sent = {"Content-Type": "application/json"}
            if response.status_code == 303 or (response.status_code in (301, 302)
                                               and method == "POST"):
                method, content = "GET", None  # as HTTP clients do: the body is not resent
                sent.pop("Content-Type", None)
            url, home = str(target), origin
        raise _Fault("agent_redirect_refused", f"{spec.url}: more than {_MAX_REDIRECTS} "
                     "redirects in a row")

    async def _read(self, response: httpx2.Response) -> bytes:
        limit, chunks, size = self.spec.max_response_bytes, [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise _Fault("agent_response_too_large", f"the answer from {self.spec.url} "
                             f"is more than {limit:,} bytes (max_response_bytes)")
            chunks.append(chunk)
        return b"".join(chunks)

    def _check_status(self, response: _Answer, last: list[TransientFailure]) -> None:
        status, url = response.status_code, self.spec.url
        if status < 400:
            return
        if status == 429:
            wait = retry_after_seconds(response.headers)
            hint = f", Retry-After {wait:g}s" if wait is not None else ""
            last.append(TransientFailure(f"rate limited (429{hint})", retry_after=wait))
            raise last[-1]
        if status >= 500 or status == 408:
            last.append(TransientFailure(f"server error ({status}): {_said(response)}"))
            raise last[-1]
        if status in (401, 403):
            sources = sorted({name for path, name in self.spec.env_variables()
                              if path[0] == "headers"})
            where = (f"the credentials in its headers, from {', '.join(sources)}; check "
                     f"{'that variable' if len(sources) == 1 else 'those variables'}"
                     if sources else "the request: no header carries credentials from "
                     "${env:...}")
            refused = "refused" if status == 401 else "does not allow"
            raise _Fault("agent_auth_refused", f"{url} {refused} {where} ({status})")
        raise _Fault("agent_http_error",
                     f"{url} refused the request ({status}): {_said(response)}")

    # -- reading the answer ------------------------------------------------------------

    def _chat_message(self, answer: Any) -> Message:
        try:
            raw = answer["choices"][0]["message"]
            [message] = from_openai_messages([{**raw, "role": "assistant"}])
        except (KeyError, IndexError, TypeError, ValueError):
            raise _Fault("agent_reply_missing",
                         f"the answer from {self.spec.url} has no choices[0].message, as an "
                         f"openai_chat answer must; {_top_level(answer)}") from None
        if message.tool_calls and self.spec.tools != "client":
            names = ", ".join(sorted({c.name for c in message.tool_calls}))
            raise _Fault("agent_unexpected_tool_calls",
                         f"{self.spec.url} returned tool calls ({names}) but tools is "
                         f"{self.spec.tools!r}: set tools: client for the harness to answer "
                         "them from the mocks")
        return message

    def _reply_text(self, answer: Any) -> str:
        path = self.spec.reply_path
        assert path is not None  # the schema requires it with protocol json
        try:
            reply = get_path(answer, path)
        except KeyError:
            raise _Fault("agent_reply_missing", f"reply_path {path!r} finds nothing in the "
                         f"answer from {self.spec.url}; {_top_level(answer)}") from None
        if not isinstance(reply, str):
            raise _Fault("agent_bad_reply", f"reply_path {path!r} found "
                         f"{type(reply).__name__}, expected the reply text")
        return reply

    def _reported_calls(self, answer: Any, toolbox: Toolbox, turn: int) -> list[Message]:
        """The tool calls the answer reports (``tool_calls_path``), recorded in the toolbox's
        records as made (never run against the mocks), as assistant/tool message pairs."""
        path = self.spec.tool_calls_path
        if path is None:
            return []
        try:
            reported = get_path(answer, path)
        except KeyError:
            return []  # an agent that made no call may leave the list out
        if reported is None:
            return []
        if not isinstance(reported, list):
            raise _Fault("agent_bad_reply", f"tool_calls_path {path!r} found "
                         f"{type(reported).__name__}, expected a list of tool calls")
        messages: list[Message] = []
        for i, item in enumerate(reported):
            call, result = _reported_call(item, f"reported_{turn}_{i}")
            if call is None:
                raise _Fault("agent_bad_reply", f"tool_calls_path {path!r}: item {i} is not a "
                             "tool call ({name, arguments} or {function: {name, arguments}})")
            toolbox.records.append(ToolCallRecord(
                call_id=call.id, name=call.name, arguments=call.arguments,
                raw_arguments=call.raw_arguments, turn=turn, step=i, result=result,
            ))
            content = "" if result is None else (
                result if isinstance(result, str) else json.dumps(result, ensure_ascii=False))
            messages.append(Message(role="assistant", tool_calls=(call,)))
            messages.append(tool_message(call, content, is_error=False))
        return messages


def _reported_call(item: Any, default_id: str) -> tuple[ToolCall | None, Any]:
    """One reported call as a :class:`ToolCall` and its result (None when not reported)."""
    if not isinstance(item, dict):
        return None, None
    if isinstance(item.get("function"), dict):
        [call] = openai_tool_calls([{"id": default_id, **item}])
        return (call if call.name else None), item.get("result")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return None, None
    arguments, invalid = parse_tool_arguments(item.get("arguments", item.get("args")))
    call = ToolCall(id=str(item.get("id") or default_id), name=name, arguments=arguments,
                    raw_arguments=invalid)
    return call, item.get("result", item.get("output"))


def _plain_messages(messages: list[Message]) -> list[dict[str, str]]:
    """``${messages}``: the conversation's text as ``{role, content}`` (tool traffic left
    out: a json agent runs its own tools)."""
    return [{"role": m.role, "content": m.content} for m in messages
            if m.role != "tool" and m.content]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _unset(reference: str) -> str:
    if reference == "mcp_url":
        return "the episode serves no MCP tools (tools: mcp with a run that starts the server)"
    return "no value"


def _timeout_or_connection(err: httpx2.TimeoutException, timeout_s: float) -> TransientFailure:
    """What a timeout from the pool's transport was: a connection never made or dropped (its
    aiohttp cause says so: see :func:`~harness.models.retry.connection_failure`), else no
    answer in time."""
    cause = connection_failure(err)
    if cause is None:
        return TransientFailure(f"no complete answer within {timeout_s:g}s (timeout_s)")
    import aiohttp

    if isinstance(cause, aiohttp.ClientConnectorError):
        return _Unreachable("connection refused or host unreachable")
    return TransientFailure(f"connection failed or dropped ({type(cause).__name__})")


def _said(response: _Answer, limit: int = 200) -> str:
    """The start of what the endpoint said (its own text: data, redacted by the caller)."""
    text = " ".join(response.content[:4 * limit].decode("utf-8", "replace").split())
    text = text if len(text) <= limit else text[:limit] + "..."
    return repr(text) if text else "an empty body"


def _top_level(answer: Any) -> str:
    if isinstance(answer, dict):
        keys = ", ".join(repr(k)[:40] for k in list(answer)[:20]) or "none"
        return f"its top-level keys: {keys}"
    return f"the answer is a JSON {type(answer).__name__}, not an object"


def _scrubbed(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` with every secret removed from its strings (an endpoint may echo a header)."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {_scrubbed(k, secrets): _scrubbed(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v, secrets) for v in value]
    return value
