"""The two providers' batch APIs, through their own SDKs: submit a list of requests, ask how a
batch is doing, and read its results.

OpenAI's Batch API takes a JSONL file uploaded with the Files API (``purpose="batch"``), one
line per request (``custom_id``, ``method``, ``url``, ``body``), and gives back an output file
(a line per succeeded request) and an error file; a batch that runs past its 24-hour window
ends ``expired`` with the unfinished requests in the error file. Anthropic's Message Batches
take the requests inline (``custom_id``, ``params``) and stream their results as JSONL, each
``succeeded``, ``errored``, ``canceled`` or ``expired``.

Both come down to the same three calls here (:class:`BatchWire`), and a result is the reply
body a live request would have had (decoded JSON), so the caller validates it exactly as a
live reply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

# The providers' limits on one batch (OpenAI: 50,000 requests and a 200 MB file; Anthropic:
# 100,000 requests and 256 MB), with room to spare for the JSONL framing.
MAX_REQUESTS = {"openai": 50_000, "anthropic": 100_000}
MAX_BYTES = {"openai": 190_000_000, "anthropic": 240_000_000}


@dataclass(frozen=True)
class BatchStatus:
    """Where a batch is: ``ended`` once its results can be read (completed, expired,
    cancelled or failed as a whole); ``state`` the provider's own word; ``detail`` what a
    batch that failed as a whole said."""

    ended: bool
    state: str
    detail: str | None = None


@dataclass(frozen=True)
class BatchResult:
    """One request's outcome: its reply body, or the provider's error (``expired`` when the
    batch ran out of time before reaching it)."""

    custom_id: str
    body: dict[str, Any] | None
    error: str | None = None
    expired: bool = False


class BatchWire(Protocol):
    """One provider's batch API on an SDK client."""

    async def submit(self, client: Any, requests: list[tuple[str, dict[str, Any]]]) -> str:
        """Send ``(custom_id, request body)`` pairs as one batch; return its id."""
        ...

    async def status(self, client: Any, batch_id: str) -> BatchStatus: ...

    async def results(self, client: Any, batch_id: str) -> list[BatchResult]:
        """Every result the ended batch has (requests it never reached may be missing)."""
        ...


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        inner = error.get("error", error)
        if isinstance(inner, dict):
            code = inner.get("code") or inner.get("type")
            message = inner.get("message") or ""
            return f"{code}: {message}" if code else str(message or inner)
    return str(error)


class OpenAIBatchWire:
    """OpenAI's Batch API over Chat Completions."""

    ENDPOINT = "/v1/chat/completions"

    async def submit(self, client: Any, requests: list[tuple[str, dict[str, Any]]]) -> str:
        lines = "".join(json.dumps({"custom_id": custom_id, "method": "POST",
                                    "url": self.ENDPOINT, "body": body}) + "\n"
                        for custom_id, body in requests)
        upload = await client.files.create(
            file=("harness-judge-batch.jsonl", lines.encode(), "application/jsonl"),
            purpose="batch")
        batch = await client.batches.create(input_file_id=upload.id, endpoint=self.ENDPOINT,
                                            completion_window="24h")
        return str(batch.id)

    async def status(self, client: Any, batch_id: str) -> BatchStatus:
        batch = await client.batches.retrieve(batch_id)
        state = str(batch.status)
        detail = None
        errors = getattr(getattr(batch, "errors", None), "data", None)
        if errors:
            detail = "; ".join(f"{e.code}: {e.message}" for e in errors[:3])
        return BatchStatus(ended=state in ("completed", "expired", "cancelled", "failed"),
                           state=state, detail=detail)

    async def results(self, client: Any, batch_id: str) -> list[BatchResult]:
        batch = await client.batches.retrieve(batch_id)
        out: list[BatchResult] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await client.files.content(file_id)
            for line in content.text.splitlines():
                if line.strip():
                    out.append(self._result(json.loads(line)))
        return out

    @staticmethod
    def _result(line: dict[str, Any]) -> BatchResult:
        custom_id = str(line.get("custom_id"))
        response = line.get("response") or {}
        error = line.get("error")
        status = response.get("status_code")
        if error is None and status == 200 and isinstance(response.get("body"), dict):
            return BatchResult(custom_id, response["body"])
        if error is None:
            error = response.get("body") or {"message": f"HTTP {status}"}
        text = _error_text(error)
        return BatchResult(custom_id, None, f"{text} (HTTP {status})" if status else text,
                           expired="batch_expired" in text)


class AnthropicBatchWire:
    """Anthropic's Message Batches."""

    async def submit(self, client: Any, requests: list[tuple[str, dict[str, Any]]]) -> str:
        batch = await client.messages.batches.create(
            requests=[{"custom_id": custom_id, "params": body} for custom_id, body in requests])
        return str(batch.id)

    async def status(self, client: Any, batch_id: str) -> BatchStatus:
        batch = await client.messages.batches.retrieve(batch_id)
        state = str(batch.processing_status)
        return BatchStatus(ended=state == "ended", state=state)

    async def results(self, client: Any, batch_id: str) -> list[BatchResult]:
        out: list[BatchResult] = []
        async for entry in await client.messages.batches.results(batch_id):
            result = entry.result
            kind = getattr(result, "type", None)
            if kind == "succeeded":
                out.append(BatchResult(entry.custom_id,
                                       result.message.model_dump(mode="json")))
            elif kind == "errored":
                error = result.error.model_dump(mode="json") if result.error else {}
                out.append(BatchResult(entry.custom_id, None, _error_text(error)))
            else:  # canceled, expired
                out.append(BatchResult(entry.custom_id, None, f"request {kind}",
                                       expired=kind == "expired"))
        return out


WIRES: dict[str, BatchWire] = {"openai": OpenAIBatchWire(), "anthropic": AnthropicBatchWire()}
"""The providers with a batch API (Gemini's judges are called live)."""
