"""The loopback server's batch APIs: OpenAI's Files and Batches endpoints and Anthropic's
Message Batches, well enough for the real SDKs, with the faults a batch can meet.

OpenAI: ``POST /v1/files`` (multipart, ``purpose=batch``), ``GET /v1/files/{id}/content``,
``POST /v1/batches``, ``GET /v1/batches/{id}``. Anthropic: ``POST /v1/messages/batches``,
``GET /v1/messages/batches/{id}`` and ``GET /v1/messages/batches/{id}/results`` (JSONL).

A batch is ``in_progress`` for :attr:`BatchFaults.delay_s` after it was created; the first
time it is looked at after that, each of its requests is answered as the server answers a
live one (the reply queue, then the responder, then the auto responder; prompt caches
played), and the batch has ended. :class:`BatchFaults` makes some requests fail, makes the
batch expire part-way, makes the whole batch fail, or refuses the key when a batch is looked
at or its results read.
"""

from __future__ import annotations

import collections
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from harness.testing.replies import Api, RecordedRequest, Rendered

_ids = itertools.count(1)


@dataclass
class BatchFaults:
    """What goes wrong with batches. ``delay_s``: how long a batch takes; ``error_every``:
    every n-th request of a batch (1-based, in input order) fails with a server error
    (0: none); ``expire_after``: the batch expires after answering this many requests (the
    rest are left undone); ``fail_batch``: the whole batch fails (OpenAI ``failed``, an
    Anthropic batch whose every request errored); ``refuse_key``: looking at a batch or its
    results answers 401. Changed at any time; read when a batch is looked at."""

    delay_s: float = 0.0
    error_every: int = 0
    expire_after: int | None = None
    fail_batch: bool = False
    refuse_key: bool = False


@dataclass
class _Batch:
    id: str
    api: Api
    created: float
    requests: list[tuple[str, dict[str, Any]]]
    input_file_id: str | None = None
    state: str = "in_progress"
    results: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    output_file_id: str | None = None
    error_file_id: str | None = None
    ended: float | None = None


Answer = Callable[[RecordedRequest], Rendered]


class BatchService:
    """The batch endpoints of one loopback server; ``answer`` answers one request as the
    server answers a live one."""

    def __init__(self, answer: Answer, base_url: Callable[[], str]) -> None:
        self._answer = answer
        self._base_url = base_url
        self.faults = BatchFaults()
        self._lock = threading.Lock()
        self._files: dict[str, bytes] = {}
        self._batches: dict[str, _Batch] = {}
        self.submissions: collections.Counter[str] = collections.Counter()
        """How often each ``custom_id`` was submitted, over every batch."""

    def reset(self) -> None:
        with self._lock:
            self.faults = BatchFaults()
            self._files.clear()
            self._batches.clear()
            self.submissions.clear()

    @property
    def batch_count(self) -> int:
        return len(self._batches)

    def states(self) -> dict[str, str]:
        """Each batch's state, by id."""
        with self._lock:
            return {b.id: b.state for b in self._batches.values()}

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/files", self._upload)
        router.add_get("/v1/files/{file_id}/content", self._file_content)
        router.add_post("/v1/batches", self._openai_create)
        router.add_get("/v1/batches/{batch_id}", self._openai_retrieve)
        router.add_post("/v1/messages/batches", self._anthropic_create)
        router.add_get("/v1/messages/batches/{batch_id}", self._anthropic_retrieve)
        router.add_get("/v1/messages/batches/{batch_id}/results", self._anthropic_results)

    # --- processing -----------------------------------------------------------------------

    def _new_batch(self, api: Api, prefix: str, requests: list[tuple[str, dict[str, Any]]],
                   input_file_id: str | None = None) -> _Batch:
        batch = _Batch(id=f"{prefix}{next(_ids):06d}", api=api, created=time.time(),
                       requests=requests, input_file_id=input_file_id)
        with self._lock:
            self._batches[batch.id] = batch
            self.submissions.update(custom_id for custom_id, _ in requests)
        return batch

    def _advance(self, batch: _Batch) -> None:
        """End ``batch`` once its time is up, answering its requests."""
        faults = self.faults
        if batch.state != "in_progress" or time.time() - batch.created < faults.delay_s:
            return
        path = "/v1/chat/completions" if batch.api == "openai" else "/v1/messages"
        for index, (custom_id, body) in enumerate(batch.requests, start=1):
            if faults.fail_batch:
                batch.errors.append({"custom_id": custom_id, "kind": "errored",
                                     "message": "the batch failed"})
                continue
            if faults.expire_after is not None and index > faults.expire_after:
                batch.errors.append({"custom_id": custom_id, "kind": "expired",
                                     "message": "the batch expired before this request ran"})
                continue
            if faults.error_every and index % faults.error_every == 0:
                batch.errors.append({"custom_id": custom_id, "kind": "errored",
                                     "message": "simulated server error"})
                continue
            rendered = self._answer(RecordedRequest(api=batch.api, path=path, body=body,
                                                    headers={}))
            reply = json.loads(rendered.body) if rendered.body else {}
            if rendered.status == 200:
                batch.results.append({"custom_id": custom_id, "body": reply})
            else:
                batch.errors.append({"custom_id": custom_id, "kind": "errored",
                                     "status": rendered.status,
                                     "message": json.dumps(reply)[:300]})
        batch.ended = time.time()
        if batch.api == "anthropic":  # its batches only ever end; the results say how
            batch.state = "ended"
        elif faults.fail_batch:
            batch.state = "failed"
        elif faults.expire_after is not None and faults.expire_after < len(batch.requests):
            batch.state = "expired"
        else:
            batch.state = "completed"
        if batch.api == "openai" and batch.state != "failed":
            batch.output_file_id = self._store_file(
                "".join(json.dumps(_openai_line(r)) + "\n" for r in batch.results))
            if batch.errors:
                batch.error_file_id = self._store_file(
                    "".join(json.dumps(_openai_error_line(e)) + "\n" for e in batch.errors))

    def _store_file(self, text: str) -> str:
        file_id = f"file-{next(_ids):06d}"
        with self._lock:
            self._files[file_id] = text.encode()
        return file_id

    def _find(self, request: web.Request) -> _Batch:
        if self.faults.refuse_key:
            raise _error(401, "invalid x-api-key" if "messages" in request.path
                         else "Incorrect API key provided")
        batch = self._batches.get(request.match_info["batch_id"])
        if batch is None:
            raise _error(404, f"no batch {request.match_info['batch_id']}")
        self._advance(batch)
        return batch

    # --- OpenAI ---------------------------------------------------------------------------

    async def _upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("file")
        data = (upload.file.read() if isinstance(upload, web.FileField)
                else str(upload or "").encode())
        file_id = f"file-{next(_ids):06d}"
        with self._lock:
            self._files[file_id] = data
        return web.json_response({
            "id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
            "filename": getattr(upload, "filename", "upload.jsonl"),
            "purpose": str(form.get("purpose", "batch")), "status": "processed"})

    async def _file_content(self, request: web.Request) -> web.Response:
        if self.faults.refuse_key:
            raise _error(401, "Incorrect API key provided")
        data = self._files.get(request.match_info["file_id"])
        if data is None:
            raise _error(404, "no such file")
        return web.Response(body=data, content_type="application/octet-stream")

    async def _openai_create(self, request: web.Request) -> web.Response:
        body = await request.json()
        data = self._files.get(body.get("input_file_id", ""))
        if data is None:
            raise _error(400, f"no input file {body.get('input_file_id')!r}")
        lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        batch = self._new_batch("openai", "batch_",
                                [(line["custom_id"], line["body"]) for line in lines],
                                input_file_id=body["input_file_id"])
        return web.json_response(self._openai_view(batch))

    async def _openai_retrieve(self, request: web.Request) -> web.Response:
        return web.json_response(self._openai_view(self._find(request)))

    def _openai_view(self, batch: _Batch) -> dict[str, Any]:
        done = len(batch.results)
        view: dict[str, Any] = {
            "id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions",
            "input_file_id": batch.input_file_id, "completion_window": "24h",
            "status": batch.state, "created_at": int(batch.created),
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "request_counts": {"total": len(batch.requests), "completed": done,
                               "failed": len(batch.errors)}}
        if batch.state == "failed":
            view["errors"] = {"object": "list", "data": [
                {"code": "invalid_request", "message": "the batch failed", "line": None,
                 "param": None}]}
        return view

    # --- Anthropic ------------------------------------------------------------------------

    async def _anthropic_create(self, request: web.Request) -> web.Response:
        body = await request.json()
        requests = [(r["custom_id"], r["params"]) for r in body.get("requests", [])]
        return web.json_response(self._anthropic_view(
            self._new_batch("anthropic", "msgbatch_", requests)))

    async def _anthropic_retrieve(self, request: web.Request) -> web.Response:
        return web.json_response(self._anthropic_view(self._find(request)))

    async def _anthropic_results(self, request: web.Request) -> web.Response:
        batch = self._find(request)
        if batch.state != "ended":
            raise _error(400, "the batch is still in progress")
        lines = [{"custom_id": r["custom_id"],
                  "result": {"type": "succeeded", "message": r["body"]}} for r in batch.results]
        lines += [{"custom_id": e["custom_id"], "result": (
            {"type": "expired"} if e["kind"] == "expired" else
            {"type": "errored", "error": {"type": "error", "error": {
                "type": "api_error", "message": e["message"]}}})} for e in batch.errors]
        return web.Response(body="".join(json.dumps(line) + "\n" for line in lines).encode(),
                            content_type="application/binary")

    def _anthropic_view(self, batch: _Batch) -> dict[str, Any]:
        created = datetime.fromtimestamp(batch.created, UTC)
        ended = batch.state == "ended"
        kinds = collections.Counter(e["kind"] for e in batch.errors)
        return {
            "id": batch.id, "type": "message_batch", "processing_status": batch.state,
            "created_at": created.isoformat(),
            "expires_at": (created + timedelta(hours=24)).isoformat(),
            "ended_at": (datetime.fromtimestamp(batch.ended, UTC).isoformat()
                         if batch.ended else None),
            "archived_at": None, "cancel_initiated_at": None,
            "request_counts": {
                "processing": 0 if ended else len(batch.requests),
                "succeeded": len(batch.results), "errored": kinds["errored"],
                "canceled": 0, "expired": kinds["expired"]},
            "results_url": (f"{self._base_url()}/v1/messages/batches/{batch.id}/results"
                            if ended else None)}


def _openai_line(result: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"batch_req_{next(_ids):06d}", "custom_id": result["custom_id"],
            "response": {"status_code": 200, "request_id": f"req_{next(_ids):06d}",
                         "body": result["body"]}, "error": None}


def _openai_error_line(error: dict[str, Any]) -> dict[str, Any]:
    code = "batch_expired" if error["kind"] == "expired" else "server_error"
    return {"id": f"batch_req_{next(_ids):06d}", "custom_id": error["custom_id"],
            "response": None, "error": {"code": code, "message": error["message"]}}


def _error(status: int, message: str) -> web.HTTPException:
    """An HTTP error whose body both SDKs read (``error.message``)."""
    body = json.dumps({"type": "error", "error": {"type": "error", "message": message}})
    classes: dict[int, type[web.HTTPException]] = {
        400: web.HTTPBadRequest, 401: web.HTTPUnauthorized, 404: web.HTTPNotFound}
    return classes[status](text=body, content_type="application/json")
