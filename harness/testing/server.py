"""A loopback model server for tests and benchmarks.

It speaks OpenAI Chat Completions (``POST /v1/chat/completions``), Anthropic Messages
(``POST /v1/messages``) and Gemini ``generateContent`` (``POST
/v1beta/models/{model}:generateContent``, and Vertex AI's
``/v1beta1/projects/…/models/{model}:generateContent``) well enough for the real SDKs,
binds only to 127.0.0.1 on a free port, and answers from a script: a queue of
:class:`~harness.testing.replies.Reply` objects, then a function of the request, then the
auto responder. It injects faults on request (429 with Retry-After, 5xx, slow replies,
malformed bodies, 401) or at random with a seed, records every request, and tracks how many
requests are in flight. With ``prompt_cache=True`` it plays the providers' prompt caches
(:mod:`harness.testing.prompt_cache`), so the usage it sends says what was cached. With
``rate_limit=RateLimit(rpm=..., tpm=...)`` it enforces a provider's rate limits and sends its
rate-limit headers (:mod:`harness.testing.rate_limits`).

In a test::

    with LoopbackServer() as server:
        server.enqueue(Reply.rate_limited(retry_after=0.2), Reply.text_reply("hi"))
        ...  # point a model at server.openai_base_url, anthropic_base_url or gemini_base_url

For benchmarks, run it in its own process so its CPU is not counted against the client's::

    python -m harness.testing.server --latency 0.2     # prints the port on the first line
    python -m harness.testing.server --rpm 600 --tpm 200000   # limited; prints its counts
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import random
import signal
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from harness.errors import InputError
from harness.json_values import load_json
from harness.runs.event_loop import new_event_loop
from harness.testing.batches import BatchService
from harness.testing.prompt_cache import CacheUse, PromptCacheSimulator
from harness.testing.rate_limits import RateLimit, ServerLimits
from harness.testing.replies import Api, RecordedRequest, Rendered, Reply, auto_reply, render

# What aiohttp logs about a request (a client that hung up mid-reply, as the timeout tests make
# clients do) is expected of a test server: kept out of the caller's logs and log files.
_QUIET = logging.getLogger("harness.testing.server.aiohttp")
_QUIET.propagate = False
_QUIET.addHandler(logging.NullHandler())

Responder = Callable[[RecordedRequest], "Reply | None"]
"""A function of the request returning the reply, or ``None`` to fall through to auto."""

_AUTH_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization",
                           "x-goog-api-key"})


@dataclass(frozen=True)
class FaultInjection:
    """Random faults, each request independently: ``rate_429``, ``rate_500`` and
    ``rate_timeout`` are probabilities (their sum at most 1). Draws come from
    ``random.Random(seed)`` in arrival order, so a run with the same seed and the same
    request order sees the same faults. A timeout fault waits ``timeout_delay`` seconds
    before answering (past any sensible client timeout)."""

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_timeout: float = 0.0
    seed: int = 0
    retry_after: float | None = 0.0
    timeout_delay: float = 30.0

    def __post_init__(self) -> None:
        rates = (self.rate_429, self.rate_500, self.rate_timeout)
        if any(r < 0 for r in rates) or sum(rates) > 1:
            raise ValueError("fault rates must be >= 0 and sum to at most 1")


class LoopbackServer:
    """The server, run on its own event loop in a background thread.

    ``latency`` (seconds) is how long every answer takes, from the moment its request is
    read to the moment the answer is sent: the server's own work (parsing, the responder,
    rendering) is inside it, as a model server's is inside its latency, rather than added to
    it (under a benchmark's hundreds of requests at once, that work would otherwise add up
    to a latency the clients never asked for). ``record=False`` stops keeping request bodies
    (for long benchmarks); counters are kept either way.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        responder: Responder | None = None,
        faults: FaultInjection | None = None,
        record: bool = True,
        port: int = 0,
        prompt_cache: bool = False,
        rate_limit: RateLimit | None = None,
    ) -> None:
        self.latency = latency
        self.limits = None if rate_limit is None else ServerLimits(rate_limit)
        self.prompt_cache = PromptCacheSimulator() if prompt_cache else None
        self._responder = responder
        self._faults = faults
        self._rng = random.Random(faults.seed if faults else 0)
        self._record = record
        self._requested_port = port
        self._lock = threading.Lock()
        self._queue: collections.deque[Reply] = collections.deque()
        self._requests: list[RecordedRequest] = []
        self._request_count = 0
        self._in_flight = 0
        self._max_in_flight = 0
        # Bumped by reset(): requests that started before a reset (e.g. slow replies still
        # sleeping) must not disturb the counters of the next test.
        self._generation = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self.batches = BatchService(self.answer, lambda: self.url)
        """The batch APIs (:mod:`harness.testing.batches`): their faults, batches and how
        often each request was submitted."""

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> LoopbackServer:
        """Start serving; returns once the port is bound. Raises ``RuntimeError`` if the
        server could not start."""
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            # The loop runs use (uvloop where installed): the server's CPU is taken from the
            # run it serves when both share a machine (benchmarks/run_throughput.py).
            loop = new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve())
            except BaseException as err:  # reported to start()'s caller below
                failure.append(err)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
            loop.close()

        self._thread = threading.Thread(target=run, name="loopback-model-server", daemon=True)
        self._thread.start()
        ready.wait(timeout=10)
        if failure or self._port is None:
            self._thread = None
            raise RuntimeError(f"loopback server did not start: {failure[0] if failure else '?'}")
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _serve(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handle_openai)
        app.router.add_post("/chat/completions", self._handle_openai)
        app.router.add_post("/v1/messages", self._handle_anthropic)
        self.batches.add_routes(app.router)
        for version in ("v1beta", "v1"):
            app.router.add_post(f"/{version}/models/{{model}}:generateContent",
                                self._handle_gemini)
        app.router.add_post("/v1beta1/projects/{project}/locations/{location}/publishers/"
                            "google/models/{model}:generateContent", self._handle_gemini)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, logger=_QUIET)
        await self._runner.setup()
        # The socket is bound here, so its port (a free one when 0 was asked for) is known
        # from the socket itself rather than from the site's internals.
        sock = _listening_socket(self._requested_port)
        try:
            # A deep backlog so hundreds of clients connecting at once are not refused.
            await web.SockSite(self._runner, sock, backlog=4096).start()
        except BaseException:
            sock.close()
            raise
        self._port = int(sock.getsockname()[1])

    async def _shutdown(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # --- addresses ------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the loopback server is not running")
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for ``openai.AsyncOpenAI`` (the SDK appends ``/chat/completions``)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for ``anthropic.AsyncAnthropic`` (the SDK appends ``/v1/messages``)."""
        return self.url

    @property
    def gemini_base_url(self) -> str:
        """Base URL for ``google.genai.Client`` (``http_options.base_url``; the SDK appends
        ``/v1beta/models/{model}:generateContent``, or Vertex AI's path)."""
        return self.url

    # --- scripting ------------------------------------------------------------------------

    def enqueue(self, *replies: Reply, times: int = 1) -> None:
        """Queue replies, answered in order before the responder; ``times`` repeats them."""
        with self._lock:
            for _ in range(times):
                self._queue.extend(replies)

    def set_responder(self, responder: Responder | None) -> None:
        """Answer with ``responder(request)`` once the queue is empty (``None``: auto)."""
        self._responder = responder

    def set_faults(self, faults: FaultInjection | None) -> None:
        """Turn random fault injection on (re-seeding the generator) or off."""
        with self._lock:
            self._faults = faults
            self._rng = random.Random(faults.seed if faults else 0)

    def play_prompt_caches(self, on: bool = True, *, stores: bool = True) -> None:
        """Start (with an empty cache) or stop playing the providers' prompt caches;
        ``stores=False`` counts input as they do but caches nothing (see
        :class:`~harness.testing.prompt_cache.PromptCacheSimulator`)."""
        self.prompt_cache = PromptCacheSimulator(stores=stores) if on else None

    def set_rate_limit(self, limit: RateLimit | None) -> None:
        """Enforce ``limit`` from now on, with full buckets (``None``: no limits)."""
        self.limits = None if limit is None else ServerLimits(limit)

    @property
    def rate_limited(self) -> int:
        """How many requests the rate limits answered with 429 (since they were set)."""
        return 0 if self.limits is None else self.limits.refused

    def reset(self) -> None:
        """Forget the queue, the responder, faults, latency, records, counters, the
        prompt caches (and stop playing them) and the rate limits."""
        self.prompt_cache = None
        self.limits = None
        with self._lock:
            self._generation += 1
            self._queue.clear()
            self._requests = []
            self._request_count = 0
            self._in_flight = 0
            self._max_in_flight = 0
            self._responder = None
            self._faults = None
            self.latency = 0.0
        self.batches.reset()

    # --- observations ---------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the recorded requests, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        return self._request_count

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def max_in_flight(self) -> int:
        return self._max_in_flight

    @property
    def queued(self) -> int:
        return len(self._queue)

    # --- handling -------------------------------------------------------------------------

    async def _handle_openai(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "openai")

    async def _handle_anthropic(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "anthropic")

    async def _handle_gemini(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "gemini")

    async def _handle(self, request: web.Request, api: Api) -> web.StreamResponse:
        generation = self._generation
        with self._lock:
            self._request_count += 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            data = await request.read()
            due = asyncio.get_running_loop().time() + self.latency
            try:
                body = load_json(data, "a request body")
            except (ValueError, InputError):
                return _json_response(Rendered(400, b'{"error": {"message": "body is not JSON"}}'))
            if not isinstance(body, dict):
                return _json_response(
                    Rendered(400, b'{"error": {"message": "body must be an object"}}'))
            headers = {
                k.lower(): ("<redacted>" if k.lower() in _AUTH_HEADERS else v)
                for k, v in request.headers.items()
            }
            recorded = RecordedRequest(api=api, path=request.path, body=body, headers=headers)
            limits = self.limits
            admission = None if limits is None else limits.admit(recorded)
            if isinstance(admission, Rendered):  # over a limit: refused at once
                return _json_response(admission)
            with self._lock:
                if self._record and generation == self._generation:
                    self._requests.append(recorded)
                scripted = self._next_reply()
            # The responder is user code: called outside the lock, so it may script the server.
            reply = scripted or self._fallback(recorded)
            cache = self._cache_use(recorded)
            rendered = None if reply.kind == "slow" else render(reply, recorded, cache)
            if self.latency:
                await asyncio.sleep(due - asyncio.get_running_loop().time())
            while reply.kind == "slow":  # its delay comes on top of the latency
                await asyncio.sleep(reply.delay)
                reply = reply.then or self._fallback(recorded)
            rendered = rendered or render(reply, recorded, cache)
            if cache is not None and rendered.status == 200:
                cache.commit()  # readable from now on, as on the real services
            if limits is not None and admission is not None:
                limits.finish(admission, rendered, api)
            return _json_response(rendered)
        finally:
            with self._lock:
                if generation == self._generation:
                    self._in_flight -= 1

    def answer(self, request: RecordedRequest) -> Rendered:
        """``request`` answered as a live one is (the queue, the responder, the auto
        responder, the prompt caches), at once: a slow reply's delay is not waited for. What
        a batch does with each of its requests."""
        with self._lock:
            scripted = self._next_reply()
        reply = scripted or self._fallback(request)
        while reply.kind == "slow":
            reply = reply.then or self._fallback(request)
        cache = self._cache_use(request)
        rendered = render(reply, request, cache)
        if cache is not None and rendered.status == 200:
            cache.commit()
        return rendered

    def _cache_use(self, request: RecordedRequest) -> CacheUse | None:
        """What the provider's prompt cache does for ``request`` (``None`` unless the server
        plays prompt caches)."""
        if self.prompt_cache is None:
            return None
        body = request.body
        if request.api == "anthropic":
            return self.prompt_cache.explicit(request.model, body)
        if request.api == "openai":
            return self.prompt_cache.automatic(
                request.model, {"tools": body.get("tools"), "messages": body.get("messages")})
        return self.prompt_cache.automatic(request.model, {
            "tools": body.get("tools"), "system": body.get("systemInstruction"),
            "contents": body.get("contents")})

    def _next_reply(self) -> Reply | None:
        """A random fault, else the head of the queue, else ``None``. Caller holds the lock."""
        faults = self._faults
        if faults is not None:
            draw = self._rng.random()
            if draw < faults.rate_429:
                return Reply.rate_limited(retry_after=faults.retry_after)
            if draw < faults.rate_429 + faults.rate_500:
                return Reply.server_error()
            if draw < faults.rate_429 + faults.rate_500 + faults.rate_timeout:
                return Reply.slow(faults.timeout_delay)
        if self._queue:
            return self._queue.popleft()
        return None

    def _fallback(self, request: RecordedRequest) -> Reply:
        if self._responder is not None:
            reply = self._responder(request)
            if reply is not None:
                return reply
        return auto_reply(request)


def _listening_socket(port: int) -> socket.socket:
    """A TCP socket bound to 127.0.0.1:``port`` (0: a free port), not yet listening (the site
    listens with its backlog). Raises ``OSError`` when the port cannot be had."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # As aiohttp's own TCP site sets it: a port just freed by an earlier server (in
        # TIME_WAIT) can be bound again at once.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
    except BaseException:
        sock.close()
        raise
    return sock


def _json_response(rendered: Rendered) -> web.Response:
    headers = dict(rendered.headers)
    headers.setdefault("Content-Type", "application/json")
    return web.Response(status=rendered.status, body=rendered.body, headers=headers)


def main(argv: list[str] | None = None) -> None:
    """Run the server in the foreground: print the port on the first line, then serve until
    SIGTERM/SIGINT or until stdin closes (so it dies with the process that started it)."""
    parser = argparse.ArgumentParser(
        description="Loopback model server (OpenAI, Anthropic, Gemini).")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds each reply takes")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--rate-429", type=float, default=0.0)
    parser.add_argument("--rate-500", type=float, default=0.0)
    parser.add_argument("--rate-timeout", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", action="store_true", help="keep request bodies in memory")
    parser.add_argument("--prompt-cache", action="store_true",
                        help="play the providers' prompt caches (cached tokens in usage)")
    parser.add_argument("--rpm", type=int, default=None, help="requests per minute allowed")
    parser.add_argument("--tpm", type=int, default=None, help="tokens per minute allowed")
    parser.add_argument("--burst", type=float, default=1.0,
                        help="seconds' worth of the limits allowed at once")
    parser.add_argument("--no-limit-headers", action="store_true",
                        help="send no rate-limit headers (only 429s with Retry-After)")
    args = parser.parse_args(argv)
    limit = None
    if args.rpm is not None or args.tpm is not None:
        try:
            limit = RateLimit(rpm=args.rpm, tpm=args.tpm, burst_s=args.burst,
                              headers=not args.no_limit_headers)
        except ValueError as err:
            parser.error(str(err))
    faults = None
    if args.rate_429 or args.rate_500 or args.rate_timeout:
        faults = FaultInjection(rate_429=args.rate_429, rate_500=args.rate_500,
                                rate_timeout=args.rate_timeout, seed=args.seed)
    server = LoopbackServer(latency=args.latency, faults=faults, record=args.record,
                            port=args.port, prompt_cache=args.prompt_cache,
                            rate_limit=limit).start()
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())

    def watch_stdin() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    print(server.port, flush=True)
    done.wait()
    server.stop()
    if server.limits is not None:  # for a benchmark in another process to read
        print(json.dumps({"admitted": server.limits.admitted,
                          "rate_limited": server.limits.refused}), flush=True)


if __name__ == "__main__":
    main()
