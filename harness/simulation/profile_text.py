"""How a simulated user's profile reads as text, in one place for the offline simulator
(:mod:`harness.simulation.offline`, which acts on it) and the simulator checks
(:mod:`harness.simulation.user_checks`, which hold a conversation against it): the words of a
fact's key, and the steps of a plan with the sentence each one quotes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")
_QUOTED = re.compile(r'"([^"]+)"')


def name_words(name: str) -> list[str]:
    """A key's words, lowercase: ``"order_id"`` / ``"orderId"`` -> ``["order", "id"]``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ")
    return [w.lower() for w in spaced.split() if w]


def fact_text(value: Any) -> str:
    """A known fact's value as the user would say it: a string as it is, anything else as its
    JSON text."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class PlanLine:
    """One step of a scenario's plan: the line without its bullet (``1.``, ``-``, ``*``) and
    the sentence it quotes for the user to say (``Then ask: "Will it rain?"``), if any."""

    text: str
    quoted: str | None


def plan_lines(plan: str | None) -> list[PlanLine]:
    """The non-blank lines of ``plan``, one step each, in order."""
    lines: list[PlanLine] = []
    for raw in (plan or "").splitlines():
        text = _BULLET.sub("", raw).strip()
        if not text:
            continue
        quoted = _QUOTED.search(text)
        sentence = quoted.group(1).strip() if quoted else ""
        lines.append(PlanLine(text=text, quoted=sentence or None))
    return lines
