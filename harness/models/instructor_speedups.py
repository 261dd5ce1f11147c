"""Remembering one of instructor's per-call checks, which depends only on the response model.

instructor (1.14 and later) refuses response models that declare its asynchronous validators,
which its runtime does not run. It checks this by walking the model class, its fields and
their nested models, and it does so several times per structured call (when the call is
patched, when the model is prepared, on each retry loop): measured here, ~1.9 ms of CPU per
structured call, a quarter of the runner's CPU. The answer depends only on the class, so it is
remembered per class: a class that passes is not walked again, and a class that fails is
walked (and refused) every time, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

_installed = False


def memoise_async_validator_check() -> None:
    """Replace instructor's ``reject_async_validators`` with a version that remembers the
    classes that passed. Idempotent; does nothing on an instructor without the check."""
    global _installed
    if _installed:
        return
    _installed = True
    try:
        from instructor.v2.core import patch
        from instructor.v2.validation import async_validators
    except ImportError:  # an instructor without the check
        return
    original: Callable[[Any], None] = async_validators.reject_async_validators

    @lru_cache(maxsize=512)
    def passed(response_model: Any) -> bool:
        original(response_model)  # raises for a model with async validators: not cached
        return True

    def reject_async_validators(response_model: Any) -> None:
        try:
            passed(response_model)
        except TypeError as err:  # an unhashable annotation: check it the long way
            if "unhashable" not in str(err):
                raise
            original(response_model)

    reject_async_validators.__wrapped__ = original  # type: ignore[attr-defined]
    reject_async_validators.cache_info = passed.cache_info  # type: ignore[attr-defined]
    async_validators.reject_async_validators = reject_async_validators
    # patch.py imported the function by name; the other modules import it at call time.
    if getattr(patch, "reject_async_validators", None) is original:
        setattr(patch, "reject_async_validators", reject_async_validators)  # noqa: B010
