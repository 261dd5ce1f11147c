"""Which models played each role (agent, simulator, judge) in a set of results, whether each
was offline (``mock:``) or real, and what the role's calls cost: the facts behind the notice
every output made with offline models carries.

A run can mix them (a real agent with a ``mock:`` simulator and judge is a cheap way to try a
suite), so "offline" is said per role, never for the whole output: the notice names the
offline roles and the real ones with their calls and cost, e.g. ``OFFLINE roles: simulator,
judge (mock:simulator, mock:judge); REAL roles: agent (openai:gpt-4.1, 12 calls, $0.0123)``.
A Python callable agent (``python:module:function``) or an HTTP agent (``http:`` and its URL
template) is neither: the harness does not see the model calls it makes. Calls and cost are
counted per role; a role that mixes offline and real models (a judge panel) gives the role's
totals, mock calls (free) included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.models.types import ROLES

ModelKind = Literal["offline", "real", "callable"]
CALLABLE_PREFIX = "python:"
HTTP_AGENT_PREFIX = "http:"

ALL_OFFLINE_NOTICE = (
    "OFFLINE: these numbers come from mock: models only ({models}); no real model was called, "
    "so they exercise the pipeline and say nothing about any real agent."
)


def model_kind(name: str) -> ModelKind:
    """``offline`` for a ``mock:`` model, ``callable`` for a Python or HTTP agent (whose model
    calls the harness does not see), else ``real``."""
    if name.startswith("mock:"):
        return "offline"
    if name.startswith((CALLABLE_PREFIX, HTTP_AGENT_PREFIX)):
        return "callable"
    return "real"


class RoleModels(BaseModel):
    """One role's models by kind, and the role's calls and cost (every model of the role)."""

    model_config = ConfigDict(extra="forbid")

    offline: bool = Field(description="every model of this role was a mock: model")
    offline_models: list[str] = Field(default_factory=list)
    real_models: list[str] = Field(default_factory=list)
    callables: list[str] = Field(default_factory=list)
    calls: int = 0
    cached_calls: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0


class RoleCollector:
    """Gathers, sample by sample, the models of each role and each role's usage."""

    def __init__(self) -> None:
        self._models: dict[str, set[str]] = {}
        self._usage: dict[str, dict[str, float]] = {}

    def add(self, role: str, models: Iterable[str],
            usage: Mapping[str, Any] | None = None) -> None:
        """One sample's ``models`` for ``role`` and its usage there (``calls``,
        ``cached_calls``, ``cost_usd``, ``unpriced_calls``; other keys are ignored)."""
        self._models.setdefault(role, set()).update(models)
        totals = self._usage.setdefault(role, {})
        for key in ("calls", "cached_calls", "cost_usd", "unpriced_calls"):
            totals[key] = totals.get(key, 0) + ((usage or {}).get(key) or 0)

    def roles(self) -> dict[str, RoleModels]:
        """Every role seen with at least one model, in the order agent, simulator, judge."""
        out: dict[str, RoleModels] = {}
        known: dict[str, int] = {role: i for i, role in enumerate(ROLES)}
        for role in sorted(self._models, key=lambda r: (known.get(r, len(known)), r)):
            names = sorted(self._models[role])
            if not names:
                continue
            kinds = {name: model_kind(name) for name in names}
            usage = self._usage.get(role, {})
            out[role] = RoleModels(
                offline=all(k == "offline" for k in kinds.values()),
                offline_models=[n for n in names if kinds[n] == "offline"],
                real_models=[n for n in names if kinds[n] == "real"],
                callables=[n for n in names if kinds[n] == "callable"],
                calls=int(usage.get("calls", 0)),
                cached_calls=int(usage.get("cached_calls", 0)),
                cost_usd=float(usage.get("cost_usd", 0.0)),
                unpriced_calls=int(usage.get("unpriced_calls", 0)),
            )
        return out


def roles_notice(roles: Mapping[str, RoleModels]) -> str | None:
    """The offline notice for results made by ``roles``: ``None`` when no role used a
    ``mock:`` model; otherwise which roles were offline and which real (with their calls and
    cost), so a run with a real agent is never said to have called no real model."""
    offline = [f"{role} ({', '.join(r.offline_models)})" for role, r in roles.items()
               if r.offline_models]
    if not offline:
        return None
    real = [f"{role} ({_real_usage(r)})" for role, r in roles.items() if r.real_models]
    unseen = {"Python callable": _callables(roles, CALLABLE_PREFIX),
              "HTTP agent": _callables(roles, HTTP_AGENT_PREFIX)}
    if not real and not any(unseen.values()):
        return ALL_OFFLINE_NOTICE.format(models=", ".join(offline))
    parts = ["OFFLINE roles: " + ", ".join(offline),
             "REAL roles: " + ", ".join(real) if real
             else "no real model was called by the harness"]
    parts += [f"{kind}: {', '.join(agents)} (the harness does not see the model calls it makes)"
              for kind, agents in unseen.items() if agents]
    return ("; ".join(parts) + ". Figures that depend on an offline role come from a mock "
            "model, not a real one.")


def _callables(roles: Mapping[str, RoleModels], prefix: str) -> list[str]:
    """``role name, name`` for each role with callables named ``prefix...``."""
    out = []
    for role, r in roles.items():
        names = [n for n in r.callables if n.startswith(prefix)]
        if names:
            out.append(f"{role} {', '.join(names)}")
    return out


def _real_usage(role: RoleModels) -> str:
    calls = f"{role.calls} calls" + (f" ({role.cached_calls} cached)" if role.cached_calls else "")
    if role.offline_models:
        calls += " in all, mock calls included"
    cost = f"${role.cost_usd:.4f}" + (f" + {role.unpriced_calls} unpriced call(s)"
                                      if role.unpriced_calls else "")
    return f"{', '.join(role.real_models)}, {calls}, {cost}"
