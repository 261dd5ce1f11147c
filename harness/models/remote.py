"""What every real provider shares: the response cache, budgets, the key check, the
concurrency bound, the per-request timeout, retries, usage accounting, and structured output
through instructor. Subclasses supply only the wire format (:mod:`.openai_provider`,
:mod:`.anthropic_provider`, :mod:`.gemini_provider`, which also has its own structured-output
loop).

Structured output: instructor's re-ask loop is wrapped around *our* request function, not the
SDK's, so each HTTP request (first answer or re-ask) goes through the endpoint's limits, the
timeout and the transport retries on its own (a 429 during a re-ask retries that request, not
the whole loop), and every request's tokens and cost are counted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.errors import (
    CacheMissError,
    HarnessError,
    ModelConfigError,
    ModelError,
    ModelUnavailableError,
    StructuredOutputError,
)
from harness.models.base import ChatModel, ModelSpec
from harness.models.batch import BATCH_DISCOUNT, BatchQueue, request_id
from harness.models.cache import ResponseCache, cache_key
from harness.models.endpoint import Endpoint
from harness.models.instructor_speedups import memoise_async_validator_check
from harness.models.prices import PriceTable
from harness.models.request import ModelRequest, PromptCache
from harness.models.retry import (
    ErrorContext,
    RetryPolicy,
    TransientFailure,
    classify,
    http_status,
    unreachable,
)
from harness.models.types import (
    ChatResponse,
    GenerationParams,
    Message,
    Role,
    StructuredResponse,
    T,
    ToolChoice,
    ToolSpec,
    Usage,
)
from harness.models.usage import UsageLedger
from harness.redact import redact

log = logging.getLogger("harness.models")

@dataclass
class ModelServices:
    """The shared parts a model uses: ledger, cache (``None`` when off), prices, retry
    policy, timeout, the OpenAI structured-output mode, and the batch queue judges' structured
    calls go through (``None``: sent live)."""

    ledger: UsageLedger
    cache: ResponseCache | None
    prices: PriceTable
    retry: RetryPolicy
    timeout_s: float
    openai_structured_mode: str = "tools"
    batches: BatchQueue | None = None


class _Tally:
    """Requests, tokens and cost of one call, summed over its requests."""

    __slots__ = ("batch_saved_usd", "batched_requests", "cache_read_tokens", "cache_saved_usd",
                 "cache_write_tokens", "cost_usd", "input_tokens", "output_tokens", "requests")

    def __init__(self) -> None:
        self.requests = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read_tokens = 0
        self.cache_write_tokens = 0
        self.cache_saved_usd = 0.0
        self.cost_usd: float | None = 0.0
        self.batched_requests = 0
        self.batch_saved_usd = 0.0

    def add(self, usage: Usage, cost: float | None, cache_saved_usd: float) -> None:
        self.requests += 1
        self.cache_saved_usd += cache_saved_usd
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost

    @property
    def usage(self) -> Usage:
        return Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                     cache_read_tokens=self.cache_read_tokens,
                     cache_write_tokens=self.cache_write_tokens)


@lru_cache(maxsize=256)
def instructor_model(response_model: type[BaseModel]) -> type[BaseModel]:
    """instructor's wrapper class for ``response_model`` (a subclass adding its schema
    helpers), made once per class. Given the plain class, instructor builds a new wrapper
    class on every call, and its schema cache is keyed by class, so every structured call
    paid for a pydantic class build and a JSON Schema generation (~3 ms together); given a
    wrapper, it uses it as it is."""
    import instructor

    return instructor.response_schema(response_model)


# The role, tally and response-cache key of the structured call in progress, read by the
# request function that instructor calls (instructor passes only request kwargs through); the
# key is ``None`` unless the call may go through a batch.
_CURRENT: ContextVar[tuple[Role, _Tally, str | None]] = ContextVar("harness_structured_call")


def reply_from(sdk_model: Any, data: Any) -> Any:
    """A provider's reply body (decoded JSON) as the SDK's reply type ``sdk_model``: validated
    with pydantic when it is well-formed (an order of magnitude faster than the SDKs' own
    reflective build), else built as leniently as the SDK builds it (a compatible server that
    leaves a field out). A body that is not a JSON object is returned as it came, as the SDKs
    do, for the caller to reject as malformed."""
    if not isinstance(data, dict):
        return data
    try:
        return sdk_model.model_validate(data)
    except ValidationError:
        return sdk_model.construct(**data)  # the SDKs' lenient build


class RemoteChatModel(ChatModel):
    """A model reached over HTTP through a provider SDK. See the module docstring."""

    def __init__(self, spec: ModelSpec, endpoint: Endpoint, services: ModelServices) -> None:
        self.spec = spec
        self.endpoint = endpoint
        self.services = services
        self.label = str(spec)
        self._error_context = ErrorContext(
            model=self.label,
            key_source=endpoint.key_source,
            base_url=endpoint.base_url,
            base_url_is_custom=endpoint.base_url_is_custom,
            timeout_s=services.timeout_s,
            secrets=endpoint.secrets,
        )
        self._instructor_create: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label!r}, base_url={self.endpoint.base_url!r})"

    # --- the wire format, per provider ----------------------------------------------------

    @abstractmethod
    def _create_function(self, client: Any) -> Callable[..., Any]:
        """The SDK's async create function on ``client``."""

    @abstractmethod
    def _chat_request(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                      tool_choice: ToolChoice, params: GenerationParams) -> dict[str, Any]:
        """Keyword arguments for a chat request."""

    @abstractmethod
    def _structured_request(self, messages: Sequence[Message],
                            params: GenerationParams) -> dict[str, Any]:
        """Keyword arguments for a structured request (instructor adds the schema)."""

    def _mark_prompt_cache(self, body: dict[str, Any], plan: PromptCache) -> dict[str, Any]:
        """``body`` with what ``plan`` says will recur marked for the provider's prompt cache.
        The default marks nothing: OpenAI's and Gemini's caches find a repeated prefix on
        their own (the prompts put what repeats first, for them)."""
        return body

    def _patch_for_instructor(self, send: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap ``send`` with instructor's structured-output handling for this format. Only
        :meth:`_structured_value`'s default calls it: a provider with a structured loop of
        its own (Gemini's JSON mode) overrides that instead and never needs this."""
        raise TypeError(f"{type(self).__name__} gives neither an instructor mode nor a "
                        "_structured_value of its own")

    @abstractmethod
    def _usage(self, raw: Any) -> Usage:
        """The tokens of a reply (prompt-cache reads and writes included); raises
        :class:`TransientFailure` when the reply is not usable."""

    @abstractmethod
    def _parse_chat(self, raw: Any) -> tuple[Message, str | None]:
        """The assistant message and the neutral finish reason."""

    # --- the shared flow ------------------------------------------------------------------

    async def chat(self, request: ModelRequest) -> ChatResponse:
        messages, role, tools = request.messages, request.role, request.tools
        tool_choice, params = request.tool_choice, request.generation_params
        started = time.perf_counter()
        ledger = self.services.ledger
        key = None
        cache = self.services.cache
        if cache is not None:
            key = cache_key(kind="chat", provider=self.spec.provider, model=self.spec.name,
                            base_url=self.endpoint.base_url, messages=messages, tools=tools,
                            tool_choice=tool_choice, params=params,
                            sample_index=request.sample_index)
            hit = self._lookup(cache, key, role, started)
            if hit is not None:
                latency = time.perf_counter() - started
                ledger.record_call(role, self.label, latency, cached=True,
                                   saved_cost_usd=hit.get("cost_usd"))
                return ChatResponse(
                    message=hit["_message"], finish_reason=hit.get("finish_reason"),
                    usage=Usage(input_tokens=hit["usage"][0], output_tokens=hit["usage"][1]),
                    model=self.label, latency_s=latency, cost_usd=0.0, cached=True,
                )
        tally = _Tally()
        try:
            _check_tool_choice(tools, tool_choice, self.label)
            self.endpoint.require_key(self.label)
            ledger.begin_call()
            body = self._mark_prompt_cache(
                self._chat_request(messages, tools, tool_choice, params), request.prompt_cache)
            raw = await self._send(body, role, tally)
            message, finish_reason = self._parse_chat(raw)
        except ModelError:
            ledger.record_error(role, self.label, time.perf_counter() - started)
            raise
        latency = time.perf_counter() - started
        ledger.record_call(role, self.label, latency)
        if key is not None and cache is not None and cache.writes:
            cache.put(key, kind="chat", model=self.label, payload={
                "message": message.model_dump(mode="json", exclude_defaults=True),
                "finish_reason": finish_reason,
                "usage": [tally.input_tokens, tally.output_tokens],
                "cost_usd": tally.cost_usd,
            })
        return ChatResponse(message=message, finish_reason=finish_reason, usage=tally.usage,
                            model=self.label, latency_s=latency, cost_usd=tally.cost_usd,
                            prompt_cache_saved_usd=tally.cache_saved_usd)

    async def structured(
        self, request: ModelRequest, response_model: type[T]
    ) -> StructuredResponse[T]:
        messages, role, params = request.messages, request.role, request.generation_params
        started = time.perf_counter()
        ledger = self.services.ledger
        key = None
        cache = self.services.cache
        batched = self.batched and role == "judge"
        if cache is not None or batched:
            key = cache_key(kind="structured", provider=self.spec.provider,
                            model=self.spec.name, base_url=self.endpoint.base_url,
                            messages=messages, params=params, sample_index=request.sample_index,
                            response_model=response_model)
        if cache is not None and key is not None:
            hit = self._lookup(cache, key, role, started, response_model=response_model)
            if hit is not None:
                ledger.record_call(role, self.label, time.perf_counter() - started,
                                   cached=True, saved_cost_usd=hit.get("cost_usd"))
                return StructuredResponse[response_model](  # type: ignore[valid-type]
                    value=hit["_value"],
                    usage=Usage(input_tokens=hit["usage"][0], output_tokens=hit["usage"][1]),
                    model=self.label, latency_s=time.perf_counter() - started, cost_usd=0.0,
                    cached=True, attempts=int(hit.get("attempts", 1)),
                )
        tally = _Tally()
        token = _CURRENT.set((role, tally, key if batched else None))
        try:
            self.endpoint.require_key(self.label)
            ledger.begin_call()
            value = await self._structured_value(messages, response_model, params,
                                                 request.max_reasks, request.prompt_cache)
        except ModelError:
            ledger.record_error(role, self.label, time.perf_counter() - started)
            raise
        finally:
            _CURRENT.reset(token)
        latency = time.perf_counter() - started
        ledger.record_call(role, self.label, latency)
        if key is not None and cache is not None and cache.writes:
            cache.put(key, kind="structured", model=self.label, payload={
                "value": value.model_dump(mode="json"),
                "usage": [tally.input_tokens, tally.output_tokens],
                "cost_usd": tally.cost_usd,
                "attempts": tally.requests,
            })
        return StructuredResponse[response_model](  # type: ignore[valid-type]
            value=value, usage=tally.usage, model=self.label, latency_s=latency,
            cost_usd=tally.cost_usd, attempts=tally.requests,
            prompt_cache_saved_usd=tally.cache_saved_usd,
            batched_requests=tally.batched_requests, batch_saved_usd=tally.batch_saved_usd,
        )

    # --- pieces ---------------------------------------------------------------------------

    def _lookup(self, cache: ResponseCache, key: str, role: Role, started: float, *,
                response_model: type[BaseModel] | None = None) -> dict[str, Any] | None:
        """A usable cached payload, ``None`` on a miss (unless replaying: then raise)."""
        hit = cache.get(key) if cache.reads else None
        if hit is not None:
            try:
                if not isinstance(hit.get("usage"), list) or len(hit["usage"]) != 2:
                    raise ValueError("no usage")
                if response_model is not None:
                    hit["_value"] = response_model.model_validate(hit["value"])
                else:
                    hit["_message"] = Message.model_validate(hit["message"])
                return hit
            except (ValidationError, ValueError, KeyError, TypeError):
                log.warning("%s: cached answer %s… is unreadable; treating it as a miss",
                            self.label, key[:12])
        if cache.mode == "replay":
            self.services.ledger.record_error(role, self.label, time.perf_counter() - started)
            raise CacheMissError(
                f"no cached answer for this call in {cache.path} (cache mode replay); run "
                "with cache mode read-write once to record it",
                model=self.label,
            )
        return None

    async def _send(self, request: dict[str, Any], role: Role, tally: _Tally) -> Any:
        """One request within the endpoint's limits, with the timeout and bounded retries;
        counts it."""
        endpoint = self.endpoint
        create_function = self._create_function
        ledger, count = self.services.ledger, self._count
        timeout_s, label, ctx = self.services.timeout_s, self.label, self._error_context
        retry_after_cap_s = self.services.retry.config.retry_after_cap_s

        async def attempt() -> Any:
            lease = await endpoint.acquire(request)
            try:
                async with asyncio.timeout(timeout_s):
                    raw = await create_function(lease.client)(**request)
                endpoint.answered = True
                usage = self._usage(raw)
                lease.used_tokens = usage.input_tokens + usage.output_tokens
            except TransientFailure:
                ledger.record_failed_request(role, label)
                raise
            except Exception as err:
                failure = classify(err, ctx)
                ledger.record_failed_request(role, label)
                if failure is None:
                    raise
                if http_status(err) is not None:
                    endpoint.answered = True  # an HTTP status: something is there
                elif not endpoint.answered:
                    failure = unreachable(err, ctx, role) or failure
                if isinstance(failure, TransientFailure) and failure.rate_limited:
                    # The pause is the wait the retry makes, capped the same way.
                    lease.rate_limited = True
                    if failure.retry_after is not None:
                        lease.retry_after = min(failure.retry_after, retry_after_cap_s)
                raise failure from None
            finally:
                endpoint.release(lease)
            count(role, usage, tally)
            return raw

        return await self.services.retry.run(attempt, model=label)

    async def _send_in_call(self, **request: Any) -> Any:
        """:meth:`_send` for the structured call in progress (its role and tally), or through
        the batch queue when the call is batched (its first request; a re-ask too when the
        queue says so)."""
        role, tally, call_key = _CURRENT.get()
        batches = self.services.batches
        if call_key is not None and batches is not None and (
                tally.requests == 0 or batches.reask == "batch"):
            return await self._send_batched(batches, call_key, request, role, tally)
        return await self._send(request, role, tally)

    @property
    def batched(self) -> bool:
        """Whether this model's judge calls go through its provider's batch API."""
        batches = self.services.batches
        return batches is not None and batches.supports(self.spec.provider)

    def _reply_from_body(self, data: Any) -> Any:
        """A reply body (decoded JSON, as a batch result holds it) as the SDK's reply type."""
        raise TypeError(f"{type(self).__name__} has no batch API")

    async def _send_batched(self, batches: BatchQueue, call_key: str, request: dict[str, Any],
                            role: Role, tally: _Tally) -> Any:
        """One request through the batch queue, counted at the batch price."""
        custom_id = request_id(call_key, tally.requests)
        body, shared = await batches.request(self.endpoint, self.label, self._error_context,
                                             custom_id, request)
        raw = self._reply_from_body(body)
        try:
            usage = self._usage(raw)
        except TransientFailure as failure:
            self.services.ledger.record_failed_request(role, self.label)
            raise ModelUnavailableError(f"batch result unusable: {failure.reason}",
                                        model=self.label) from None
        # The same request of another call (shared) was paid for there.
        list_cost = self._count(role, usage, tally, share=0.0 if shared else BATCH_DISCOUNT)
        tally.batched_requests += 1
        if list_cost is not None and not shared:
            tally.batch_saved_usd += (1 - BATCH_DISCOUNT) * list_cost
        return raw

    def _count(self, role: Role, usage: Usage, tally: _Tally, *, share: float = 1.0
               ) -> float | None:
        """Record one answered request in the ledger and the call's tally: its tokens, and
        ``share`` of its list price (1 live, the batch discount through a batch, 0 for a
        request another call paid for). Returns the list price (``None``: no price)."""
        price = self.services.prices.lookup(self.label)
        list_cost = None if price is None else price.cost(
            usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
            usage.cache_write_tokens)
        cost, saved = (None, 0.0) if price is None or list_cost is None else (
            share * list_cost,
            share * price.cache_saving(usage.cache_read_tokens, usage.cache_write_tokens))
        self.services.ledger.record_request(
            role, self.label, usage.input_tokens, usage.output_tokens, cost,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens, cache_saved_usd=saved)
        tally.add(usage, cost, saved)
        return list_cost

    async def _structured_value(self, messages: Sequence[Message], response_model: type[T],
                                params: GenerationParams, max_reasks: int,
                                prompt_cache: PromptCache) -> T:
        """The validated answer of a structured call, re-asked up to ``max_reasks`` times:
        instructor's loop around :meth:`_send_in_call` (a provider may have its own)."""
        return await self._run_instructor(messages, response_model, params, max_reasks,
                                          prompt_cache)

    async def _run_instructor(self, messages: Sequence[Message], response_model: type[T],
                              params: GenerationParams, max_reasks: int,
                              prompt_cache: PromptCache) -> T:
        from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException

        if self._instructor_create is None:
            memoise_async_validator_check()
            self._instructor_create = self._patch_for_instructor(self._send_in_call)
        request = self._mark_prompt_cache(self._structured_request(messages, params),
                                          prompt_cache)
        name = getattr(response_model, "__name__", "the response model")
        try:
            value = await self._instructor_create(
                response_model=instructor_model(response_model),
                max_retries=max(0, max_reasks),
                # Lax validation: "3" for an int field is accepted, as pydantic does by default.
                strict=False,
                **request,
            )
        except InstructorRetryException as err:
            cause = err.__cause__
            if isinstance(cause, HarnessError):
                raise cause from None
            attempts = err.n_attempts
            detail = redact(str(cause or err), self.endpoint.secrets).strip().splitlines()
            summary = "; ".join(line.strip() for line in detail[:4])
            raise StructuredOutputError(
                f"the answer failed validation against {name} after {attempts} attempt"
                f"{'s' * (attempts != 1)} ({max_reasks} re-ask{'s' * (max_reasks != 1)}): "
                f"{summary}",
                model=self.label,
            ) from None
        except IncompleteOutputException:
            raise StructuredOutputError(
                f"the answer for {name} was cut off at max_tokens={params.max_tokens}; "
                "raise max_tokens",
                model=self.label,
            ) from None
        if not isinstance(value, response_model):
            raise StructuredOutputError(
                f"instructor returned {type(value).__name__}, not {name}", model=self.label
            )
        if type(value) is not response_model:
            # instructor validates into a subclass it makes of the model; hand back the
            # caller's own class (already validated, so no second validation).
            value = response_model.model_construct(
                _fields_set=set(value.model_fields_set),
                **{field: getattr(value, field) for field in type(value).model_fields
                   if field in response_model.model_fields},
            )
        return value


def _check_tool_choice(tools: Sequence[ToolSpec], tool_choice: ToolChoice, model: str) -> None:
    if tool_choice in ("auto", "none", "required"):
        if tool_choice == "required" and not tools:
            raise ModelConfigError("tool_choice 'required' needs at least one tool", model=model)
        return
    names = [t.name for t in tools]
    if tool_choice not in names:
        raise ModelConfigError(
            f"tool_choice names {tool_choice!r}, which is not among the tools offered "
            f"({', '.join(names) or 'none'})",
            model=model,
        )
