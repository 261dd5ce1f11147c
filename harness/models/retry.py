"""Which failures are worth retrying, how long to wait, and what to tell the user.

Transient failures (429, 408/409, 5xx, timeouts, dropped connections, a malformed body) are
retried with tenacity: exponential backoff with jitter, ``Retry-After`` honoured (capped),
a bounded number of attempts, then :class:`~harness.errors.ModelUnavailableError` naming the
last failure. Anything else a provider refuses (400, 401, 403, 404, 422, ...) is a
:class:`~harness.errors.ModelConfigError` at once, worded as what to fix.

Messages are built here from status codes and the server's own error text, with every known
secret and anything shaped like a key removed: SDK exception text can echo request details.
"""

from __future__ import annotations

import email.utils
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from harness.errors import ModelConfigError, ModelUnavailableError
from harness.models.config import RetryConfig
from harness.redact import redact

log = logging.getLogger("harness.models")

R = TypeVar("R")

class TransientFailure(Exception):
    """A failure worth retrying. ``reason`` is safe to show; ``retry_after`` is the wait the
    server asked for, in seconds; ``rate_limited`` says it was a 429 (which the endpoint's
    limits learn from)."""

    def __init__(self, reason: str, *, retry_after: float | None = None,
                 rate_limited: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.rate_limited = rate_limited


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms``, or ``retry-after`` as seconds or an HTTP date."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_message(body: Any) -> str:
    """The human part of a provider's error body (the three SDKs' shapes)."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if body.get("message"):
            return str(body["message"])
    if isinstance(body, str):
        return body
    return ""


class ErrorContext:
    """What an error message needs to say what to fix: the model, where the key came from
    (``OPENAI_API_KEY`` or the config), the base URL, the timeout and the secrets to hide."""

    def __init__(self, *, model: str, key_source: str, base_url: str, base_url_is_custom: bool,
                 timeout_s: float, secrets: tuple[str, ...]) -> None:
        self.model = model
        self.key_source = key_source
        self.base_url = base_url
        self.base_url_is_custom = base_url_is_custom
        self.timeout_s = timeout_s
        self.secrets = secrets


def classify(err: BaseException, ctx: ErrorContext) -> TransientFailure | ModelConfigError | None:
    """Map an SDK or transport exception to :class:`TransientFailure` (retry) or
    :class:`ModelConfigError` (fix the setup); ``None`` when it is not a provider failure
    (a bug, or a cancellation) and should propagate unchanged."""
    if isinstance(err, TimeoutError):
        return TransientFailure(f"timed out after {ctx.timeout_s:g}s")
    if isinstance(err, json.JSONDecodeError):
        return TransientFailure("malformed response body")
    genai_errors = sys.modules.get("google.genai.errors")
    if genai_errors is not None:
        failure = _classify_genai(err, genai_errors, ctx)
        if failure is not None:
            return failure
    # Only SDKs already imported can have raised; importing the other one costs a second.
    for sdk in (sys.modules.get("openai"), sys.modules.get("anthropic")):
        if sdk is None:
            continue
        if isinstance(err, sdk.APIStatusError):
            return _classify_status(err.status_code, err.response.headers, err.body, ctx)
        if isinstance(err, sdk.APITimeoutError) and connection_failure(err) is None:
            return TransientFailure(f"timed out after {ctx.timeout_s:g}s")
        if isinstance(err, sdk.APIConnectionError):
            return TransientFailure("connection failed or dropped")
        if isinstance(err, sdk.APIResponseValidationError):
            return TransientFailure("malformed response body")
    return None


def http_status(err: BaseException) -> int | None:
    """The HTTP status an SDK exception carries (``status_code`` for openai and anthropic,
    ``code`` for google-genai's ``APIError``), ``None`` when it is not an HTTP answer."""
    status = getattr(err, "status_code", None)
    if status is None:
        genai_errors = sys.modules.get("google.genai.errors")
        if genai_errors is not None and isinstance(err, genai_errors.APIError):
            status = err.code
    return status if isinstance(status, int) else None


def _classify_genai(err: BaseException, genai_errors: Any,
                    ctx: ErrorContext) -> TransientFailure | ModelConfigError | None:
    """google-genai raises its own ``APIError`` for an HTTP status, and lets the transport's
    exceptions (httpx2's, over aiohttp) through unwrapped, where the other SDKs wrap them."""
    if isinstance(err, genai_errors.APIError):
        headers = getattr(getattr(err, "response", None), "headers", None) or {}
        retry_after = retry_after_seconds(headers)
        if retry_after is None and err.code == 429:
            retry_after = _google_retry_delay(err.details)
        if retry_after is not None:
            headers = {"retry-after": f"{retry_after:g}"}
        return _classify_status(int(err.code or 0), headers, err.details, ctx)
    httpx2 = sys.modules.get("httpx2")
    if httpx2 is not None:
        if isinstance(err, httpx2.TimeoutException) and connection_failure(err) is None:
            return TransientFailure(f"timed out after {ctx.timeout_s:g}s")
        if isinstance(err, httpx2.TransportError):
            return TransientFailure("connection failed or dropped")
        if isinstance(err, httpx2.DecodingError):
            return TransientFailure("malformed response body")
    return None


def _google_retry_delay(details: Any) -> float | None:
    """The wait a Google 429 asks for: ``error.details[].retryDelay`` (``"20s"``) of its
    ``google.rpc.RetryInfo``, which Google APIs send instead of ``Retry-After``."""
    inner = details.get("error", details) if isinstance(details, dict) else None
    items = inner.get("details") if isinstance(inner, dict) else None
    for item in items if isinstance(items, list) else ():
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None


def unreachable(err: BaseException, ctx: ErrorContext, role: str) -> ModelConfigError | None:
    """For a request to an endpoint that has never answered in this process: when ``err`` is
    a connection that could not be made at all (refused, or a host that does not resolve), the
    error that stops the run, naming the role, the model and the address; else ``None``. A
    connection dropped or refused after the endpoint has answered is retried as usual."""
    aiohttp = sys.modules.get("aiohttp")
    cause = connection_failure(err)
    if aiohttp is None or not isinstance(cause, aiohttp.ClientConnectorError):
        return None
    reason = redact(str(cause.os_error or cause), ctx.secrets)[:200]
    return ModelConfigError(
        f"the {role} model cannot reach {ctx.base_url}: {reason}; nothing answered the first "
        "request there, so the run stops (check the base URL, and that the server is up)",
        model=ctx.model)


def connection_failure(err: BaseException) -> BaseException | None:
    """The aiohttp connection error behind ``err``, if it was one and not a timeout. The
    aiohttp transport the SDKs ship (``DefaultAioHttpClient``, used for model calls and HTTP
    agents alike) reports every aiohttp connection error (a server that hung up, a port nobody
    listens on) as an ``httpx2.ConnectTimeout``; the aiohttp error it came from, kept as the
    cause, says which it was (``aiohttp.ClientConnectorError``: no connection was made)."""
    aiohttp = sys.modules.get("aiohttp")
    cause = err.__cause__ or err.__context__
    while cause is not None:
        if aiohttp is not None and isinstance(cause, aiohttp.ClientConnectionError):
            return None if isinstance(cause, TimeoutError) else cause
        cause = cause.__cause__ or cause.__context__
    return None


def _classify_status(status: int, headers: Mapping[str, str], body: Any,
                     ctx: ErrorContext) -> TransientFailure | ModelConfigError:
    detail = redact(_server_message(body), ctx.secrets)[:300]
    if status == 429:
        wait = retry_after_seconds(headers)
        hint = f", Retry-After {wait:g}s" if wait is not None else ""
        return TransientFailure(f"rate limited (429{hint})", retry_after=wait, rate_limited=True)
    if status >= 500 or status in (408, 409):
        return TransientFailure(f"server error ({status})" + (f": {detail}" if detail else ""))
    if status == 401:
        message = f"{ctx.key_source} was refused (401); check that the key is valid"
    elif status == 403:
        message = (f"{ctx.key_source} is not allowed to use this model (403 permission denied); "
                   "check the key's access")
    elif status == 404:
        where = f" at {ctx.base_url}" if ctx.base_url_is_custom else ""
        message = f"model not found (404): check the model name{where}"
    else:
        message = f"request rejected ({status})"
    if detail and status != 401:
        message += f"; the server said: {detail}"
    return ModelConfigError(message, model=ctx.model)


class RetryPolicy:
    """Runs one request function with bounded retries of :class:`TransientFailure`."""

    def __init__(self, config: RetryConfig) -> None:
        self.config = config
        # Built from parts whose arguments are the same in every tenacity 9 release:
        # wait_exponential_jitter's first argument is `initial` before 9.2 and `multiplier`
        # after, and google-genai (needed by google-adk, the adk test extra) caps tenacity
        # below 9.2. The doubling is capped at backoff_max_s, then the jitter is added.
        self._backoff = wait_exponential(
            multiplier=config.backoff_initial_s, max=config.backoff_max_s,
        ) + wait_random(0, config.backoff_jitter_s)

    def _wait(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, TransientFailure) and failure.retry_after is not None:
            return min(failure.retry_after, self.config.retry_after_cap_s)
        return float(self._backoff(state))

    async def run(self, attempt: Callable[[], Awaitable[R]], *, model: str) -> R:
        """Await ``attempt()`` until it succeeds, raises something other than
        :class:`TransientFailure`, or the attempts run out; then raise
        :class:`ModelUnavailableError` naming the last failure."""
        attempts = self.config.max_attempts

        def before_sleep(state: RetryCallState) -> None:
            failure = state.outcome.exception() if state.outcome else None
            log.info("%s: %s; retrying (attempt %d of %d) in %.2fs", model,
                     getattr(failure, "reason", "failure"), state.attempt_number + 1, attempts,
                     state.upcoming_sleep)

        # The first attempt runs outside tenacity, whose bookkeeping (and building an
        # AsyncRetrying) costs more CPU than the rest of a request's handling here (see
        # benchmarks/run_throughput.py). Its failure is handed to tenacity as attempt 1, so
        # waits, logs and the attempt count are as if tenacity had made it.
        first_failure: list[TransientFailure] = []

        async def replay_first_then_attempt() -> R:
            if first_failure:
                raise first_failure.pop()
            return await attempt()

        try:
            try:
                return await attempt()
            except TransientFailure as failure:
                first_failure.append(failure)
            # A new AsyncRetrying per call: tenacity keeps per-run state on the instance,
            # which concurrent calls must not share.
            retrying = AsyncRetrying(
                stop=stop_after_attempt(attempts),
                wait=self._wait,
                retry=retry_if_exception_type(TransientFailure),
                before_sleep=before_sleep,
                reraise=True,
            )
            return await retrying(replay_first_then_attempt)
        except TransientFailure as failure:
            raise ModelUnavailableError(
                f"gave up after {attempts} attempt{'s' * (attempts > 1)}; "
                f"last failure: {failure.reason}",
                model=model,
            ) from None
