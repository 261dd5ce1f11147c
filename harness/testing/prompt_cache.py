"""The providers' prompt caches, as the loopback server plays them, so the usage a client
reads back (cached tokens read and written) comes from the requests it sent, as on the real
services.

Two kinds, as the providers have them:

- **explicit** (Anthropic): the request marks breakpoints (``cache_control`` on a tool, a
  system block or a message block). The prefix up to a breakpoint (tools, then system, then
  messages, in that order) is stored when the reply is sent, if it is long enough; a later
  request reads the longest stored prefix that ends at one of its breakpoints or, looking
  back, at one of the 20 block boundaries before one. What lies between the read prefix and
  the last breakpoint is written; what follows it is plain input.
- **automatic** (OpenAI, Gemini): no marks. The prompt (tools and messages, as JSON) is
  stored in chunks of :data:`CHUNK_TOKENS` once it reaches :data:`MIN_TOKENS`; a later
  request reads the longest stored prefix, in whole chunks. Writing costs nothing extra.

Tokens are counted as the server counts them elsewhere: about four characters a token. An
entry becomes readable only when the reply that stored it is sent, so requests sent together
all miss, as they do on the real services. Entries never expire here.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MIN_TOKENS = 1024
"""The shortest prefix a cache keeps (Anthropic's minimum for Sonnet and Opus, OpenAI's)."""
CHUNK_TOKENS = 128
"""The automatic caches' granularity."""
LOOKBACK_BLOCKS = 20
"""How many block boundaries before a breakpoint the explicit cache looks back over."""
_CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class CacheUse:
    """One request's input, split: ``read`` tokens served from the cache, ``written`` tokens
    stored, and the rest plain; ``commit`` stores what the request wrote (call it when the
    reply is sent)."""

    input_tokens: int
    read: int
    written: int
    commit: Callable[[], None]


def _tokens(chars: int) -> int:
    return max(0, chars // _CHARS_PER_TOKEN)


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _strip_marks(block: Any) -> Any:
    if isinstance(block, dict) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def anthropic_blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The prompt of a Messages request as its cacheable blocks, in cache order (tools,
    system, each message's content blocks): each as ``(text, marked)``, the text without its
    mark, so a marked and an unmarked copy of a block are the same prefix."""
    blocks: list[tuple[str, bool]] = []
    for tool in body.get("tools") or []:
        blocks.append((_text(_strip_marks(tool)), isinstance(tool, dict)
                       and "cache_control" in tool))
    system = body.get("system")
    if isinstance(system, str):
        blocks.append((system, False))
    elif isinstance(system, list):
        blocks.extend((_text(_strip_marks(b)), isinstance(b, dict) and "cache_control" in b)
                      for b in system)
    for message in body.get("messages") or []:
        content = message.get("content")
        role = str(message.get("role"))
        if isinstance(content, str):
            blocks.append((role + content, False))
            continue
        for block in content or []:
            blocks.append((role + _text(_strip_marks(block)),
                           isinstance(block, dict) and "cache_control" in block))
    return blocks


class PromptCacheSimulator:
    """Both kinds of cache, one store per model (thread-safe: the server's handlers and the
    test's thread may both use it). ``stores=False`` counts every request's input over its
    whole prompt as the caches do, but never stores nor serves anything: a provider with no
    prompt cache, to compare against on the same count."""

    def __init__(self, *, stores: bool = True) -> None:
        self._lock = threading.Lock()
        self._stored: set[tuple[str, str]] = set()
        self._stores = stores

    def _has(self, model: str, digest: str) -> bool:
        with self._lock:
            return (model, digest) in self._stored

    def _committer(self, model: str, digests: list[str]) -> Callable[[], None]:
        if not self._stores:
            return lambda: None

        def commit() -> None:
            with self._lock:
                self._stored.update((model, d) for d in digests)

        return commit

    def explicit(self, model: str, body: dict[str, Any]) -> CacheUse:
        """Anthropic's cache for a Messages request ``body``."""
        blocks = anthropic_blocks(body)
        digests, ends, running, digest = [], [], 0, hashlib.sha256()
        for text, _ in blocks:
            digest.update(text.encode())
            digest.update(b"\x00")
            digests.append(digest.hexdigest())
            running += len(text)
            ends.append(_tokens(running))
        total = ends[-1] if ends else 0
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        read = 0
        for mark in marks:
            for i in range(mark, max(-1, mark - LOOKBACK_BLOCKS - 1), -1):
                if ends[i] >= MIN_TOKENS and self._has(model, digests[i]):
                    read = max(read, ends[i])
                    break
        last = marks[-1] if marks else None
        if last is None or ends[last] < MIN_TOKENS or ends[last] <= read:
            return CacheUse(total, read, 0, lambda: None)
        stored = [digests[m] for m in marks if ends[m] >= MIN_TOKENS]
        return CacheUse(total, read, ends[last] - read, self._committer(model, stored))

    def automatic(self, model: str, prompt: Any) -> CacheUse:
        """OpenAI's or Gemini's cache for a prompt (the JSON of its tools and messages)."""
        text = _text(prompt)
        total = _tokens(len(text))
        chunk = CHUNK_TOKENS * _CHARS_PER_TOKEN
        first = MIN_TOKENS * _CHARS_PER_TOKEN
        digests = [(end, hashlib.sha256(text[:end].encode()).hexdigest())
                   for end in range(first, len(text) + 1, chunk)]
        read = 0
        for end, digest in digests:
            if not self._has(model, digest):
                break
            read = _tokens(end)
        return CacheUse(total, read, 0, self._committer(model, [d for _, d in digests]))
