"""Remembering one of instructor's per-call checks, which depends only on the response model.

instructor (1.14 and later) refuses response models that declare its asynchronous validators,
which its runtime does not run. It checks this by walking the model class, its fields and
their nested models, and it does so several times per structured call (when the call is
patched, when the model is prepared, on each retry loop): measured here, ~1.9 ms of CPU per
structured call, a quarter of the runner's CPU. The answer depends only on the class, so it is
remembered per class: a class that passes is not walked again, and a class that fails is
walked (and refused) every time, as before.

instructor has no public way to do this: its module-level function is replaced (and the one
module that imported it by name is pointed at the replacement), which works only while
instructor's other callers look the function up at call time. So it is done only on the
instructor releases it was checked against (:data:`CHECKED_RELEASES`), and tests fail when
the installed instructor is outside them or when a structured call still reaches
instructor's own check for a remembered class (tests/test_instructor_speedups.py): widen
the range once they pass on the new release. On other releases instructor's own check
runs, as it is.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import lru_cache
from importlib import metadata
from typing import Any

log = logging.getLogger("harness.models.instructor_speedups")

# The instructor releases (major, minor), first and last, whose callers of the check were
# read and tested with the replacement.
CHECKED_RELEASES = ((1, 14), (1, 17))

_installed = False


def checked_release(version: str) -> bool:
    """Whether instructor ``version`` (e.g. ``"1.17.0"``) is within :data:`CHECKED_RELEASES`;
    ``False`` for a version that does not start with two numbers."""
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None:
        return False
    release = (int(found[1]), int(found[2]))
    return CHECKED_RELEASES[0] <= release <= CHECKED_RELEASES[1]


def memoise_async_validator_check() -> None:
    """Replace instructor's ``reject_async_validators`` with a version that remembers the
    classes that passed. Idempotent; does nothing on an instructor without the check or
    outside :data:`CHECKED_RELEASES`."""
    global _installed
    if _installed:
        return
    _installed = True
    try:
        version = metadata.version("instructor")
    except metadata.PackageNotFoundError:
        return
    if not checked_release(version):
        log.info("instructor %s is not among the releases its async-validator check was "
                 "remembered on (%s to %s): its own check runs on every call", version,
                 *(".".join(map(str, r)) for r in CHECKED_RELEASES))
        return
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
