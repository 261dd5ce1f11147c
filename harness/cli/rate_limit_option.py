"""``--rate-limit PROVIDER:rpm=N,tpm=M``: a provider's requests and tokens per minute from the
command line, over the models YAML's (``harness run``, ``pairwise``, ``calibrate``).

Repeatable, one provider each; either key may be left out, and a limit left out keeps the
YAML's. A bad value is refused naming the flag, the value and what was expected (exit 2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli.help_format import LIMITS_PANEL
from harness.errors import HarnessError

# The model layer's config is imported when the option is given, not when the CLI starts.
if TYPE_CHECKING:
    from harness.models.config import RateLimits

RateLimitOption = Annotated[list[str] | None, typer.Option(
    "--rate-limit", metavar="PROVIDER:rpm=N,tpm=M", rich_help_panel=LIMITS_PANEL,
    help="a provider's requests (rpm) and tokens (tpm) per minute, held before sending, "
    "over the models YAML's; repeat for each provider, e.g. openai:rpm=500,tpm=200000")]

_KEYS = {"rpm": "requests_per_minute", "tpm": "tokens_per_minute"}
# harness.models.config.RateLimitProvider's values (a test holds them equal).
PROVIDERS = ("openai", "anthropic", "gemini")


def _refuse(value: str, why: str) -> HarnessError:
    return HarnessError(f"--rate-limit: {value!r}: {why}")


def _one(value: str) -> tuple[str, RateLimits]:
    from harness.models.config import RateLimits

    provider, colon, pairs = value.partition(":")
    provider = provider.strip().lower()
    if not colon or provider not in PROVIDERS:
        raise _refuse(value, f"expected PROVIDER:rpm=N,tpm=M with PROVIDER one of "
                             f"{', '.join(PROVIDERS)}")
    fields: dict[str, int] = {}
    for pair in filter(None, (p.strip() for p in pairs.split(","))):
        key, equals, number = (part.strip() for part in pair.partition("="))
        if not equals or key.lower() not in _KEYS:
            raise _refuse(value, f"{pair!r} is not rpm=N or tpm=N")
        field = _KEYS[key.lower()]
        if field in fields:
            raise _refuse(value, f"{key} is given twice")
        try:
            count = int(number)
        except ValueError:
            count = 0
        if count < 1:
            raise _refuse(value, f"{key} must be a whole number >= 1")
        fields[field] = count
    if not fields:
        raise _refuse(value, "give rpm=N, tpm=N or both after the provider")
    return provider, RateLimits(**fields)


def parse_rate_limits(values: list[str] | None) -> dict[str, RateLimits]:
    """The providers' limits the ``--rate-limit`` values give. Raises :class:`HarnessError`
    naming the flag and the value for a malformed one, or a provider given twice."""
    limits: dict[str, RateLimits] = {}
    for value in values or []:
        provider, given = _one(value)
        if provider in limits:
            raise _refuse(value, f"{provider} is given twice; give both limits in one "
                                 f"--rate-limit {provider}:rpm=N,tpm=M")
        limits[provider] = given
    return limits
