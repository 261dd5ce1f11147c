"""How the harness writes counts in its messages, notes and tables: :func:`plural`.

At the bottom of the layers, because every layer writes counts ("1 scenario", "3 samples")."""

from __future__ import annotations


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``count`` and ``noun`` agreeing in number: ``plural(1, "scenario")`` is "1 scenario",
    ``plural(3, "scenario")`` "3 scenarios"; ``plural_form`` for a noun whose plural is not
    ``noun + "s"`` (``plural(2, "match", "matches")``)."""
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"
