"""Judge requests through the providers' batch APIs, at half the price, with nothing lost or
paid twice when the process stops.

A structured judge call with batching on does not send its request: it hands the body to a
:class:`BatchQueue` and waits for the body of the reply, which instructor then validates
exactly as a live reply (so a re-ask is an ordinary second request, sent live or in another
batch as ``reask`` says). The queue keeps one pending list per endpoint and model, and sends
it as one batch when the first request in it has waited ``max_wait_s``, when it is full, or
when :meth:`BatchQueue.flush` says no more requests are coming soon (the run played its last
episode). Each batch is written to the :class:`~harness.models.batch_journal.BatchJournal` as
soon as the provider accepts it; one task per open batch asks for its state every
``poll_interval_s`` and, once it has ended, reads its results, writes each to the journal and
hands it to the calls waiting for it. A request that failed or expired is sent again in a
later batch (``resubmits`` times), then fails its call with
:class:`~harness.errors.ModelUnavailableError`, which the judge records as a judge error of
that sample, never as a score.

A call whose request id is in the journal already (a resumed run replays its episodes from
the response cache, so it asks for the same judge requests) takes the stored result, or waits
for the batch the request is in: it is never submitted again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness.choices import ReaskMode
from harness.errors import ModelConfigError, ModelUnavailableError
from harness.models.batch_journal import BatchJournal
from harness.models.batch_wire import MAX_BYTES, MAX_REQUESTS, WIRES, BatchResult
from harness.models.config import BatchConfig
from harness.models.endpoint import Endpoint
from harness.models.retry import ErrorContext, RetryPolicy, TransientFailure, classify

log = logging.getLogger("harness.models")

R = TypeVar("R")

BATCH_DISCOUNT = 0.5
"""What the batch APIs charge against the list price (OpenAI and Anthropic alike)."""


def request_id(call_key: str, attempt: int) -> str:
    """The batch ``custom_id`` of request ``attempt`` (0 the first answer, 1 the first
    re-ask, ...) of the call whose response-cache key is ``call_key``: the same call of the
    same sample gets the same id in every process. 40 hex digits (Anthropic allows 64 of
    ``[A-Za-z0-9_-]``)."""
    return hashlib.sha256(f"{call_key}:{attempt}".encode()).hexdigest()[:40]


@dataclass
class _Pending:
    """Requests waiting to be sent as one batch to one endpoint and model."""

    endpoint: Endpoint
    model: str
    context: ErrorContext
    items: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    size: int = 0
    timer: asyncio.TimerHandle | None = None


class BatchQueue:
    """See the module docstring. One per process; the hub owns it."""

    def __init__(self, config: BatchConfig, journal: BatchJournal, retry: RetryPolicy, *,
                 reask: ReaskMode = "live") -> None:
        self.config = config
        self.journal = journal
        self.retry = retry
        self.reask = reask
        self._pending: dict[tuple[int, str], _Pending] = {}
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._bodies: dict[str, tuple[_Pending, dict[str, Any]]] = {}
        self._sent: dict[str, int] = {}  # submissions of a request id in this process
        self._batch_of: dict[str, str] = {}  # the batch a request id was last sent in
        self._pollers: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.submitted_batches = 0

    @staticmethod
    def supports(provider: str) -> bool:
        return provider in WIRES

    # --- a call's request -----------------------------------------------------------------

    async def request(self, endpoint: Endpoint, model: str, context: ErrorContext,
                      custom_id: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The reply body for ``body`` (request id ``custom_id``), from the journal, from the
        batch it is already in, or from a new batch; and whether another call of this
        process asked for the same request first (so it is paid for once). Raises
        :class:`ModelUnavailableError` when the provider failed it every time,
        :class:`ModelConfigError` when it refused the key or the batch."""
        key = (id(endpoint), model)
        group = self._pending.get(key)
        if group is None:
            group = self._pending[key] = _Pending(endpoint, model, context)
        self._bodies[custom_id] = (group, body)
        future = self._waiting.get(custom_id)
        shared = future is not None
        if future is None:
            future = self._waiting[custom_id] = asyncio.get_running_loop().create_future()
            entry = self.journal.request(custom_id)
            if entry is not None and entry.state == "succeeded" and entry.result is not None:
                future.set_result(entry.result)
            elif entry is not None and entry.state == "submitted":
                self._batch_of[custom_id] = entry.batch_id
                self._watch(entry.batch_id, group)
            else:
                self._enqueue(custom_id)
        try:
            return await asyncio.shield(future), shared
        finally:
            if future.done():  # a long run's request bodies are not kept past their answer
                self._waiting.pop(custom_id, None)
                self._bodies.pop(custom_id, None)
                self._batch_of.pop(custom_id, None)

    def _enqueue(self, custom_id: str) -> None:
        group, body = self._bodies[custom_id]
        group.items.append((custom_id, body))
        group.size += len(json.dumps(body)) + 200
        provider = group.endpoint.provider
        limit = self.config.max_requests or MAX_REQUESTS[provider]
        if len(group.items) >= limit or group.size >= MAX_BYTES[provider]:
            self._send(group)
        elif group.timer is None:
            group.timer = asyncio.get_running_loop().call_later(
                self.config.max_wait_s, self._send, group)

    def flush(self) -> None:
        """Send every pending request now (no more are coming soon)."""
        for group in list(self._pending.values()):
            if group.items:
                self._send(group)

    def _send(self, group: _Pending) -> None:
        if group.timer is not None:
            group.timer.cancel()
            group.timer = None
        items, group.items, group.size = group.items, [], 0
        if items:
            self._spawn(self._submit(group, items))

    def _spawn(self, work: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- the provider -----------------------------------------------------------------------

    async def _call(self, group: _Pending, what: Callable[[Any], Awaitable[R]]) -> R:
        """``what(client)`` under the endpoint's concurrency bound, its failures classified
        and retried as a live request's are."""
        endpoint, context = group.endpoint, group.context

        async def attempt() -> R:
            lease = await endpoint.acquire()
            client = lease.client
            try:
                return await what(client)
            except TransientFailure:
                raise
            except Exception as err:
                failure = classify(err, context)
                if failure is None:
                    raise
                raise failure from None
            finally:
                endpoint.release(lease)

        return await self.retry.run(attempt, model=group.model)

    async def _submit(self, group: _Pending, items: list[tuple[str, dict[str, Any]]]) -> None:
        wire = WIRES[group.endpoint.provider]
        try:
            batch_id = await self._call(group, lambda client: wire.submit(client, items))
        except (ModelConfigError, ModelUnavailableError) as err:
            self._fail([custom_id for custom_id, _ in items], err)
            return
        self.journal.record_batch(batch_id, provider=group.endpoint.provider,
                                  base_url=group.endpoint.base_url, model=group.model,
                                  custom_ids=[custom_id for custom_id, _ in items])
        self.submitted_batches += 1
        for custom_id, _ in items:
            self._sent[custom_id] = self._sent.get(custom_id, 0) + 1
            self._batch_of[custom_id] = batch_id
        log.info("%s: %d judge request%s sent as batch %s", group.model, len(items),
                 "s" * (len(items) != 1), batch_id)
        self._watch(batch_id, group)

    def _watch(self, batch_id: str, group: _Pending) -> None:
        if batch_id not in self._pollers:
            self._pollers[batch_id] = self._spawn(self._poll(batch_id, group))

    async def _poll(self, batch_id: str, group: _Pending) -> None:
        wire = WIRES[group.endpoint.provider]
        try:
            while True:
                status = await self._call(group, lambda client: wire.status(client, batch_id))
                if status.ended:
                    break
                await asyncio.sleep(self.config.poll_interval_s)
            results = await self._call(group, lambda client: wire.results(client, batch_id))
        except (ModelConfigError, ModelUnavailableError) as err:
            self._fail(self._members(batch_id), err, batch_id=batch_id)
            return
        finally:
            self._pollers.pop(batch_id, None)
        self.journal.record_batch_end(batch_id, status.state, status.detail)
        seen = set()
        for result in results:
            seen.add(result.custom_id)
            self._settle(result, status.detail)
        for custom_id in self._members(batch_id):
            if custom_id not in seen:  # a batch that failed as a whole reports none
                self._settle(BatchResult(custom_id, None, status.detail or
                                         f"no result (batch {status.state})",
                                         expired=status.state == "expired"), None)

    def _members(self, batch_id: str) -> list[str]:
        """The requests waiting here whose last batch is ``batch_id``."""
        return [custom_id for custom_id, future in self._waiting.items()
                if not future.done() and self._batch_of.get(custom_id) == batch_id]

    def _settle(self, result: BatchResult, detail: str | None) -> None:
        custom_id = result.custom_id
        if result.body is not None:
            self.journal.record_result(custom_id, result.body)
            future = self._waiting.get(custom_id)
            if future is not None and not future.done():
                future.set_result(result.body)
            return
        error = result.error or detail or "failed"
        self.journal.record_failure(custom_id, error)
        if custom_id not in self._waiting:
            return  # a request of an earlier process that nobody here asked for again
        if custom_id in self._bodies and self._sent.get(custom_id, 0) <= self.config.resubmits:
            log.info("batch request %s… %s; sending it again", custom_id[:8], error)
            self._enqueue(custom_id)
            return
        group = self._bodies[custom_id][0] if custom_id in self._bodies else None
        tries = self._sent.get(custom_id, 0)
        self._fail([custom_id], ModelUnavailableError(
            f"the batch API failed this request {tries} time{'s' * (tries != 1)}; last "
            f"failure: {error}", model=group.model if group else None))

    def _fail(self, custom_ids: list[str], err: Exception, *, batch_id: str | None = None
              ) -> None:
        for custom_id in custom_ids:
            future = self._waiting.get(custom_id)
            if future is not None and not future.done():
                future.set_exception(err)
        if batch_id is not None:
            log.warning("batch %s could not be collected (%s); it stays in the journal, and "
                        "`harness run --resume` collects it later", batch_id, err)

    async def aclose(self) -> None:
        """Stop every timer and poller (what is submitted stays in the journal)."""
        for group in self._pending.values():
            if group.timer is not None:
                group.timer.cancel()
                group.timer = None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.journal.close()
