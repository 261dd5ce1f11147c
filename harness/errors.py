"""The errors the harness raises on purpose.

Every error a user can cause (a bad file, a missing key, a model that keeps failing) is a
:class:`HarnessError` with a message that says what to fix. The CLI prints the message on one
line and exits non-zero; it never shows a traceback for these.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def field_path(loc: Sequence[int | str]) -> str:
    """A field's path as an error names it, from a pydantic error location:
    ``("messages", 2, "role")`` -> ``messages[2].role``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class HarnessError(Exception):
    """Base class: a failure the user can act on. ``str(err)`` is the whole message."""


class InputError(HarnessError):
    """Bad input: names the file (or source), the field path and what was expected.

    ``location`` is a line number or record id when the source is a multi-record file.
    """

    def __init__(
        self,
        source: str | Path,
        field: str | None,
        expected: str,
        *,
        location: str | int | None = None,
    ) -> None:
        self.source = str(source)
        self.field = field
        self.expected = expected
        self.location = location
        where = self.source
        if location is not None:
            where += f":{location}"
        if field:
            where += f": {field}"
        super().__init__(f"{where}: {expected}")


class InputErrors(HarnessError):
    """Several input problems found in one pass (e.g. every bad scenario file), so the user
    can fix them all at once. ``errors`` keeps each :class:`InputError`; ``str(err)`` is one
    line per problem."""

    def __init__(self, errors: list[InputError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


class ModelError(HarnessError):
    """A model call failed. ``retryable`` says whether retrying could have helped."""

    retryable: bool = False

    def __init__(self, message: str, *, model: str | None = None) -> None:
        self.model = model
        super().__init__(f"{model}: {message}" if model else message)


class ModelConfigError(ModelError):
    """The call cannot succeed as configured: missing or refused key, unknown model, bad
    request. Raised at once, never retried."""


class ModelUnavailableError(ModelError):
    """The service kept failing (429, 5xx, timeouts, dropped connections) until the bounded
    retries ran out. The message names the last failure."""

    retryable = True


class StructuredOutputError(ModelError):
    """The model's answer still failed validation against the response schema after the
    bounded number of re-asks."""


class CacheMissError(ModelError):
    """Replay-only cache mode found no stored response for a call."""


# Model failures no retry can fix and every later call would meet alike (a missing or
# refused key, an unknown model, a replay-only cache miss), by the error's kind as recorded
# in a transcript or judge error: they stop a run, study or comparison rather than being
# recorded once per sample.
FATAL_MODEL_ERRORS: dict[str, type[ModelError]] = {
    cls.__name__: cls for cls in (ModelConfigError, CacheMissError)
}


def raise_if_fatal(error_type: str | None, message: str | None, *, kept: str = "") -> None:
    """Raise the error a recorded failure of kind ``error_type`` stands for, when it is one of
    :data:`FATAL_MODEL_ERRORS`; ``kept`` says what is kept (appended to the message)."""
    fatal = FATAL_MODEL_ERRORS.get(error_type or "")
    if fatal is not None:
        text = message or error_type or "model configuration error"
        raise fatal(f"{text} ({kept})" if kept else text)


class BudgetExceededError(HarnessError):
    """A run budget (cost or calls) was reached; work already finished is kept."""
