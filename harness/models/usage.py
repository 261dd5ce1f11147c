"""The usage ledger: model calls, requests, tokens, latency, cost and errors, per role and per
model, readable at any moment (a progress bar or a budget check reads it mid-run).

Vocabulary:

- a **call** is one ``chat`` or ``structured`` invocation; ``cached_calls`` of them were
  answered from the response cache;
- a **request** is one HTTP request to a provider: every retry and every re-ask is one;
- tokens and cost are summed over every request that got an answer (re-asks included);
  a cached call charges nothing and adds its stored cost to ``saved_cost_usd`` instead;
- ``errors`` counts calls that raised (after retries, or at once for configuration errors);
- ``unpriced_requests`` counts answered requests to a model with no price, so a total cost
  is never silently understated;
- the **prompt cache** is the provider's (Anthropic's ``cache_control``, OpenAI's and
  Gemini's automatic prefix caches), not ours: ``prompt_cache_read_tokens`` and
  ``prompt_cache_write_tokens`` are the parts of ``input_tokens`` it served and stored, and
  ``prompt_cache_saved_usd`` what it saved against the input price (writes that cost more
  than the input price count against it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from multiprocessing.context import BaseContext
from typing import Any, Protocol

from harness.errors import BudgetExceededError
from harness.models.types import Role


@dataclass
class UsageStats:
    """Running totals for one slice of the ledger (a role, a model, or everything)."""

    calls: int = 0
    cached_calls: int = 0
    requests: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    saved_cost_usd: float = 0.0
    unpriced_requests: int = 0
    prompt_cache_read_tokens: int = 0
    prompt_cache_write_tokens: int = 0
    prompt_cache_saved_usd: float = 0.0

    @property
    def uncached_calls(self) -> int:
        return self.calls - self.cached_calls

    def add(self, other: UsageStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# A ledger's slices as plain data, to send to another process: [role, model, stats] each.
ExportedUsage = list[tuple[str, str, dict[str, Any]]]


class RunBudget(Protocol):
    """The budgets' counts over every process of a run: :class:`SharedBudget` for worker
    processes of one machine, :class:`harness.runs.ray_executor.RayBudget` for Ray actors."""

    def begin_call(self, ledger: UsageLedger) -> None:
        """Check ``ledger``'s budgets against the run's counts and count one call started,
        atomically; raise :class:`BudgetExceededError` (counting nothing) when one is reached."""
        ...

    def add_cost(self, cost_usd: float) -> None: ...

    @property
    def calls(self) -> int: ...

    @property
    def cost_usd(self) -> float: ...


class SharedBudget:
    """The calls started and the money spent by every process of a run, in shared memory, so
    the budgets of a run spread over worker processes hold for the run as a whole.

    Each process's ledger checks and counts a call under one lock (:meth:`begin_call`), so
    ``max_calls`` is never exceeded, and adds each request's cost once it is answered
    (:meth:`add_cost`), so ``max_cost_usd`` is overrun by at most the calls in flight when it
    is reached, as in one process. Made in the parent and handed to the worker processes when
    they start (multiprocessing's shared values travel only that way)."""

    def __init__(self, context: BaseContext) -> None:
        self._lock = context.Lock()
        self._calls = context.RawValue("q", 0)
        self._cost = context.RawValue("d", 0.0)

    def begin_call(self, ledger: UsageLedger) -> None:
        with self._lock:
            ledger.check_against(self._calls.value, self._cost.value)
            self._calls.value += 1

    def add_cost(self, cost_usd: float) -> None:
        with self._lock:
            self._cost.value += cost_usd

    @property
    def calls(self) -> int:
        return int(self._calls.value)

    @property
    def cost_usd(self) -> float:
        return float(self._cost.value)


class UsageLedger:
    """Usage per ``(role, model)``, with running totals; optionally with budgets, counted in
    this process or, with ``shared``, over every process of the run.

    Not locked: the model layer updates it from one event loop; readers in other threads see
    plain integer and float fields, which is good enough for a progress display.
    """

    def __init__(self, *, max_cost_usd: float | None = None, max_calls: int | None = None,
                 shared: RunBudget | None = None) -> None:
        self.max_cost_usd = max_cost_usd
        self.max_calls = max_calls
        self.shared = shared
        self.total = UsageStats()
        # Uncached calls started, counted when they start so concurrent calls cannot all slip
        # under `max_calls` together. The cost budget can only be checked against money
        # already spent, so calls in flight when it is reached still finish.
        self.started_calls = 0
        self._slices: dict[tuple[Role, str], UsageStats] = {}

    def _slice(self, role: Role, model: str) -> UsageStats:
        stats = self._slices.get((role, model))
        if stats is None:
            stats = self._slices[(role, model)] = UsageStats()
        return stats

    # --- recording (called by the model layer) --------------------------------------------

    def record_request(self, role: Role, model: str, input_tokens: int, output_tokens: int,
                       cost_usd: float | None, *, cache_read_tokens: int = 0,
                       cache_write_tokens: int = 0, cache_saved_usd: float = 0.0) -> None:
        """One answered HTTP request (or one mock answer); the prompt-cache counts are parts
        of ``input_tokens``."""
        for stats in (self._slice(role, model), self.total):
            stats.requests += 1
            stats.input_tokens += input_tokens
            stats.output_tokens += output_tokens
            stats.prompt_cache_read_tokens += cache_read_tokens
            stats.prompt_cache_write_tokens += cache_write_tokens
            stats.prompt_cache_saved_usd += cache_saved_usd
            if cost_usd is None:
                stats.unpriced_requests += 1
            else:
                stats.cost_usd += cost_usd
        if self.shared is not None and cost_usd:
            self.shared.add_cost(cost_usd)

    def record_failed_request(self, role: Role, model: str) -> None:
        """One HTTP request that got no usable answer (a 429, a 5xx, a timeout)."""
        self._slice(role, model).requests += 1
        self.total.requests += 1

    def record_call(self, role: Role, model: str, latency_s: float, *, cached: bool = False,
                    saved_cost_usd: float | None = None) -> None:
        """One finished call (its requests were recorded as they happened)."""
        for stats in (self._slice(role, model), self.total):
            stats.calls += 1
            stats.latency_s += latency_s
            if cached:
                stats.cached_calls += 1
                stats.saved_cost_usd += saved_cost_usd or 0.0

    def record_error(self, role: Role, model: str, latency_s: float = 0.0) -> None:
        """One call that raised."""
        for stats in (self._slice(role, model), self.total):
            stats.calls += 1
            stats.errors += 1
            stats.latency_s += latency_s

    # --- reading --------------------------------------------------------------------------

    def by_role(self) -> dict[Role, UsageStats]:
        out: dict[Role, UsageStats] = {}
        for (role, _), stats in self._slices.items():
            out.setdefault(role, UsageStats()).add(stats)
        return out

    def by_model(self) -> dict[str, UsageStats]:
        out: dict[str, UsageStats] = {}
        for (_, model), stats in self._slices.items():
            out.setdefault(model, UsageStats()).add(stats)
        return out

    def get(self, role: Role, model: str) -> UsageStats:
        """A copy of the totals for one role and model (zeros when unused)."""
        copy = UsageStats()
        copy.add(self._slices.get((role, model), UsageStats()))
        return copy

    def snapshot(self) -> dict[str, Any]:
        """Everything as plain JSON-ready data: ``total``, ``by_role``, ``by_model``,
        ``by_role_and_model`` (``"role/model"`` keys) and the budgets."""
        return {
            "total": self.total.as_dict(),
            "by_role": {r: s.as_dict() for r, s in self.by_role().items()},
            "by_model": {m: s.as_dict() for m, s in self.by_model().items()},
            "by_role_and_model": {f"{r}/{m}": s.as_dict() for (r, m), s in self._slices.items()},
            "budget": {"max_cost_usd": self.max_cost_usd, "max_calls": self.max_calls},
        }

    def export(self) -> ExportedUsage:
        """The slices as plain data (for a worker process to send its usage to the parent)."""
        return [(role, model, stats.as_dict()) for (role, model), stats in self._slices.items()]

    def replace_with_sum(self, parts: Iterable[ExportedUsage]) -> None:
        """Make this ledger's usage the sum of ``parts`` (each an :meth:`export`): the
        parent's view of its worker processes' ledgers. Budgets are left as they are."""
        self.total = UsageStats()
        self._slices = {}
        for part in parts:
            for role, model, values in part:
                stats = UsageStats(**values)
                self._slice(role, model).add(stats)  # type: ignore[arg-type]
                self.total.add(stats)

    # --- budgets --------------------------------------------------------------------------

    def begin_call(self) -> None:
        """Check the budgets, then count one more uncached call as started (in every process
        of the run with ``shared``). Raises :class:`BudgetExceededError` (and counts nothing)
        when a budget is reached."""
        if self.shared is not None:
            self.shared.begin_call(self)
        else:
            self.check_budget()
        self.started_calls += 1

    def check_budget(self) -> None:
        """Raise :class:`BudgetExceededError` when a budget is already reached, so the next
        call is not made. Cached calls count for neither budget (they cost nothing)."""
        if self.shared is not None:
            self.check_against(self.shared.calls, self.shared.cost_usd)
        else:
            self.check_against(self.started_calls, self.total.cost_usd)

    def check_against(self, started_calls: int, spent_usd: float) -> None:
        """Raise :class:`BudgetExceededError` when ``started_calls`` or ``spent_usd`` (this
        process's, or the run's) reach a budget."""
        if self.max_cost_usd is not None and spent_usd >= self.max_cost_usd:
            raise BudgetExceededError(
                f"cost budget of ${self.max_cost_usd:.4f} reached "
                f"(${spent_usd:.4f} spent); no further model calls were made"
            )
        if self.max_calls is not None and started_calls >= self.max_calls:
            raise BudgetExceededError(
                f"call budget of {self.max_calls} model calls reached; "
                "no further model calls were made"
            )
