"""A run's episodes on Ray actors (``harness run --executor ray``), on this machine or a cluster.

The driver (the process running ``harness run``) keeps everything a run owns, as with
``--workers``: the store (every finished sample is written there, as it finishes), the counts,
the progress bar, stops and Ctrl-C. Each actor loads the suite from the run's resolved
configuration and keeps its own model hub, HTTP connections and tool server on an event loop
of its own for the whole run (connections stay warm), running
:class:`~harness.runs.engine.SampleWork` for the samples it is sent. A sample comes back as
JSON bytes (the header of :mod:`harness.runs.workers`' messages, a newline, the record),
carrying the actor's usage so far and the log records it made since its last answer (logged
again in the driver, so they reach the run's ``harness.log`` through its redaction).

Budgets hold over all actors through one small :class:`BudgetKeeper` actor that grants each
uncached model call, so ``max_calls`` is never exceeded and ``max_cost_usd`` is overrun by at
most the calls in flight. An actor that dies stops the run as ``worker_lost``; so does one
that stops answering: the driver pings each actor (a method that runs in the thread the actor
keeps free beside its samples) and ends one it has heard nothing from, neither a sample nor a
ping, for :data:`harness.runs.workers.WORKER_SILENCE_S` (stopped with SIGSTOP, or hung), as
it ends a silent worker process. ``--resume`` runs what is missing. Ray is imported only here,
and only when a run asks for it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import signal
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    asynccontextmanager,
    contextmanager,
    suppress,
)
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

from harness.errors import HarnessError
from harness.models.hub import ModelHub
from harness.models.types import SCRUBBED
from harness.models.usage import ExportedUsage, UsageLedger
from harness.runs import workers
from harness.runs.config import RunConfig
from harness.runs.engine import SampleKey, SampleSink, SampleWork, Suite
from harness.runs.event_loop import new_event_loop
from harness.runs.sample import SampleRecord
from harness.runs.summary_model import RunStop
from harness.runs.workers import _decode, _encode, _worker_models
from harness.wording import plural

log = logging.getLogger("harness.runs.ray_executor")

INSTALL_HINT = "pip install 'agent-eval-harness[ray]'"
# How long the actors may take to close their tool servers and send their last usage.
EXIT_GRACE_S = 30.0
# How long one ray.wait blocks the driver's event loop before it looks at signals again.
WAIT_SLICE_S = 0.05
# A gap this long between two turns of the driver's loop means the driver was stopped (Ctrl-Z,
# a suspended machine): the actors get a fresh window before silence counts against them.
PAUSE_S = 5.0

T = TypeVar("T")


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` set in ``os.environ`` inside the block; each name as it was afterwards."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """This process's handlers of SIGTERM and SIGINT as they were before the block, put back
    after it. ``ray.init`` installs Ray's own crash handler for SIGTERM in the driver, which
    prints a stack dump and aborts: a run given SIGTERM must stop as it does without Ray
    (the run's task cancelled, what finished summarised, exit 143). Nothing to put back
    outside the main thread, where signal handlers cannot be set."""
    kept = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, handler in kept.items():
            if handler is not None:  # None: a handler not set from Python, left to its owner
                with suppress(ValueError):  # not the main thread
                    signal.signal(signum, handler)


def import_ray() -> ModuleType:
    """The ``ray`` module; raises :class:`HarnessError` (one line, exit 2) naming the extra
    to install when it is missing."""
    try:
        import ray
    except ImportError as err:
        raise HarnessError(f"--executor ray needs Ray, which is not installed ({err}); "
                           f"{INSTALL_HINT}") from None
    return ray


# --- budgets over every actor ------------------------------------------------------------


class BudgetKeeper:
    """A Ray actor (one call at a time, so each grant is atomic) counting the calls started
    and the money spent by every actor of the run."""

    def __init__(self) -> None:
        self.calls = 0
        self.cost_usd = 0.0

    def take(self, max_calls: int | None, max_cost_usd: float | None) -> tuple[bool, int, float]:
        """Grant one call when no budget is reached (and count it). Returns whether it was
        granted, and the counts it was judged on."""
        reached = ((max_calls is not None and self.calls >= max_calls)
                   or (max_cost_usd is not None and self.cost_usd >= max_cost_usd))
        counts = (self.calls, self.cost_usd)
        if not reached:
            self.calls += 1
        return not reached, *counts

    def add_cost(self, cost_usd: float) -> None:
        self.cost_usd += cost_usd

    def totals(self) -> tuple[int, float]:
        return self.calls, self.cost_usd


class RayBudget:
    """An actor's side of the :class:`BudgetKeeper` (a
    :class:`~harness.models.usage.RunBudget`)."""

    def __init__(self, keeper: Any) -> None:
        self.keeper = keeper

    def begin_call(self, ledger: UsageLedger) -> None:
        import ray

        granted, calls, cost = ray.get(self.keeper.take.remote(ledger.max_calls,
                                                               ledger.max_cost_usd))
        if not granted:
            ledger.check_against(calls, cost)  # raises BudgetExceededError

    def add_cost(self, cost_usd: float) -> None:
        self.keeper.add_cost.remote(cost_usd)  # in order with this actor's later grants

    @property
    def calls(self) -> int:
        import ray

        return int(ray.get(self.keeper.totals.remote())[0])

    @property
    def cost_usd(self) -> float:
        import ray

        return float(ray.get(self.keeper.totals.remote())[1])


# --- an actor ----------------------------------------------------------------------------


class _Buffered(logging.Handler):
    """Keeps an actor's log records until its next answer carries them to the driver."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[list[Any]] = []
        self._records_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._records_lock:
            self.records.append([record.levelno, record.name, record.getMessage()])

    def drain(self) -> list[list[Any]]:
        with self._records_lock:
            records, self.records = self.records, []
        return records


class HarnessActor:
    """One worker of the run as a Ray actor (threaded: each sample it is sent waits in a Ray
    thread while it runs on the actor's own event loop, beside the others)."""

    def __init__(self, index: int, count: int, config_json: str, keeper: Any | None) -> None:
        self.number = index + 1
        self._logs = _Buffered()
        root = logging.getLogger()
        root.addHandler(self._logs)
        root.setLevel(logging.WARNING)
        logging.getLogger("harness").setLevel(logging.INFO)
        self._usage_lock = threading.Lock()
        self._sequence = 0
        # The runs' event loop, as in a worker process (uvloop where installed).
        self._loop = new_event_loop()
        threading.Thread(target=self._loop.run_forever, daemon=True,
                         name="harness-actor-loop").start()
        self._error: str | None = None
        try:
            self.hub, self.work, self._tools = self._on_loop(_start(
                index, count, RunConfig.model_validate_json(config_json), keeper))
        except HarnessError as err:
            self._error = str(err)

    def _on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _header(self, header: dict[str, Any]) -> dict[str, Any]:
        with self._usage_lock:
            self._sequence += 1
            header["usage"] = [self._sequence, self.hub.ledger.export()]
        header["logs"] = self._logs.drain()
        return header

    def run(self, scenario_id: str, epoch: int) -> bytes:
        """Sample ``epoch`` of ``scenario_id``: a message of :mod:`harness.runs.workers`'
        format (``sample`` with the record, ``stop``, or ``error``)."""
        if self._error is not None:
            return _encode({"error": self._error, "logs": self._logs.drain()})
        try:
            outcome = self._on_loop(self.work.run(scenario_id, epoch))
        except HarnessError as err:
            return _encode({"error": str(err), "logs": self._logs.drain()})
        if isinstance(outcome, RunStop):
            return _encode(self._header({"stop": outcome.model_dump(mode="json")}))
        return _encode(self._header({"sample": [scenario_id, epoch]}),
                       outcome.model_dump_json().encode())

    def ping(self) -> int:
        """The actor's process id: an answer at all says it is still there."""
        return os.getpid()

    def close(self) -> bytes:
        """Stop the tool server, close connections; the last usage and log records."""
        if self._error is not None:
            return _encode({"bye": True, "logs": self._logs.drain()})
        self._on_loop(_leave(self.hub, self.work, self._tools))
        return _encode(self._header({"bye": True}))


# Coroutines of an actor's own event loop, outside its class: Ray makes an actor with any
# coroutine method an async actor, whose blocking budget grants would stall its loop.


async def _start(index: int, count: int, config: RunConfig, keeper: Any | None
                 ) -> tuple[ModelHub, SampleWork, AbstractAsyncContextManager[None]]:
    suite = Suite.load(config.design)
    models = _worker_models(config, (index, count))
    hub = ModelHub(models, ledger=UsageLedger(
        max_cost_usd=models.budget.max_cost_usd, max_calls=models.budget.max_calls,
        shared=None if keeper is None else RayBudget(keeper)), limit_share=1 / count)
    work = SampleWork(config, suite, hub, http_share=(index, count))
    tools = work.tools_served()
    await tools.__aenter__()
    return hub, work, tools


async def _leave(hub: ModelHub, work: SampleWork, tools: AbstractAsyncContextManager[None]
                 ) -> None:
    try:
        await tools.__aexit__(None, None, None)
    finally:
        await work.http_endpoints.aclose()
        await hub.aclose()


# --- the driver ----------------------------------------------------------------------------


@dataclass(eq=False)
class _Actor:
    number: int
    handle: Any
    in_flight: set[SampleKey] = field(default_factory=set)
    alive: bool = True
    heard_at: float = 0.0  # the driver's loop time of its last answer (a sample or a ping)
    probe: Any = None  # the ping in flight


class RayExecutor:
    """The executor of ``--executor ray``: see the module docstring. ``ledger`` is the
    driver's usage ledger, kept equal to the sum of the actors' ledgers."""

    def __init__(self, config: RunConfig, ledger: UsageLedger) -> None:
        self.config = config
        self.ledger = ledger
        self.ray = import_ray()
        self._actors: list[_Actor] = []
        self._usage: dict[int, tuple[int, ExportedUsage]] = {}

    def _connect(self) -> bool:
        """Connect to the cluster of ``ray_address``, or start a local instance (no dashboard,
        no usage statistics). Returns whether this run owns the
        connection (and shuts it down); a process already connected (a Ray driver calling
        the Python API) keeps its own."""
        ray = self.ray
        if ray.is_initialized():
            return False
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True,
                                   "configure_logging": False}
        # Read by the processes the local instance starts, as they start: set for its start
        # only, so the caller's environment is as it was afterwards.
        local = self.config.execution.ray_address is None
        usage_stats = {"RAY_USAGE_STATS_ENABLED": "0"} if local else {}
        options["address"] = "local" if local else self.config.execution.ray_address
        try:
            with _environment(usage_stats), _signal_handlers_kept():
                ray.init(**options)
        except Exception as err:  # Ray's own errors: a wrong address, a cluster gone
            raise HarnessError(f"--executor ray: could not start or reach Ray at "
                               f"{self.config.execution.ray_address or 'a local instance'}: "
                               f"{type(err).__name__}: {err}") from None
        return True

    def worker_count(self) -> int:
        """Actors for the run: ``workers`` (``auto``: the cluster's CPUs), never more than the
        episodes allowed in flight."""
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        wanted = cpus if self.config.execution.workers == "auto" else self.config.execution.workers
        return max(1, min(wanted, self.config.execution.concurrency))

    @asynccontextmanager
    async def started(self) -> AsyncIterator[None]:
        """The actors, started; on the way out they close and send their last usage. On an
        error or a cancellation (Ctrl-C, SIGTERM) they are killed at once, their samples in
        flight abandoned (what finished is stored; ``--resume`` runs the rest)."""
        ray = self.ray
        owns = self._connect()
        keeper = None
        try:
            count = self.worker_count()
            cpus = float(ray.cluster_resources().get("CPU", 1))
            execution = self.config.execution
            if execution.max_calls is not None or execution.max_cost_usd is not None:
                keeper = ray.remote(BudgetKeeper).options(num_cpus=0).remote()
            actor_class = ray.remote(HarnessActor).options(
                num_cpus=min(1.0, cpus / count),
                max_concurrency=math.ceil(self.config.execution.concurrency / count) + 1)
            config_json = self.config.model_dump_json()
            for index in range(count):
                handle = actor_class.remote(index, count, config_json, keeper)
                self._actors.append(_Actor(index + 1, handle))
            log.info("%d Ray actor(s) started", count)
            try:
                yield
            except BaseException:
                self._kill_all()
                raise
            await self._dismiss()
            self._kill_all()
        finally:
            if keeper is not None:
                with suppress(Exception):  # the cluster may be gone
                    ray.kill(keeper)
            if owns:
                ray.shutdown()

    async def run(self, keys: Sequence[SampleKey], sink: SampleSink) -> None:
        ray = self.ray
        pending = iter(keys)
        refs: dict[Any, tuple[_Actor, SampleKey]] = {}
        clock = asyncio.get_running_loop().time
        last_turn = clock()
        for actor in self._actors:
            actor.heard_at = last_turn
        while True:
            now = clock()
            if now - last_turn > PAUSE_S:  # the driver itself was stopped: a fresh window
                for actor in self._actors:
                    actor.heard_at = now
            last_turn = now
            for stop in self._silent_actors(now):
                sink.accept(stop)
            while len(refs) < self.config.execution.concurrency and not sink.stopped:
                live = [a for a in self._actors if a.alive]
                key = next(pending, None) if live else None
                if key is None:
                    break
                actor = min(live, key=lambda a: len(a.in_flight))
                refs[actor.handle.run.remote(*key)] = (actor, key)
                actor.in_flight.add(key)
            if not refs:
                return
            # Streamed: each sample is stored as soon as it is back, whichever actor ran it.
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=WAIT_SLICE_S)
            # Every turn, ready or not: a cancellation (Ctrl-C, SIGTERM) is delivered here.
            await asyncio.sleep(0)
            for ref in ready:
                actor, key = refs.pop(ref)
                actor.in_flight.discard(key)
                actor.heard_at = clock()
                try:
                    data: bytes = ray.get(ref)
                except ray.exceptions.RayActorError as err:
                    sink.accept(self._lost(actor, err))
                    continue
                outcome = self._handle(actor, data)
                if outcome is not None:
                    sink.accept(outcome)

    def _handle(self, actor: _Actor, data: bytes) -> SampleRecord | RunStop | None:
        header, body = _decode(data)
        for level, name, message in header.get("logs", []):
            logging.getLogger(name).log(level, "ray actor %d: %s", actor.number, message)
        if "usage" in header:
            sequence, usage = header["usage"]
            if sequence > self._usage.get(actor.number, (0, []))[0]:
                self._usage[actor.number] = (sequence, usage)
                self.ledger.replace_with_sum(u for _, u in self._usage.values())
        if "error" in header:
            raise HarnessError(header["error"])
        if "sample" in header:
            return SampleRecord.model_validate_json(body, context=SCRUBBED)
        if "stop" in header:
            return RunStop.model_validate(header["stop"])
        return None

    def _silent_actors(self, now: float) -> list[RunStop]:
        """Ping each live actor not heard from for a tenth of the silence allowed; end (kill)
        each one silent for longer than :data:`~harness.runs.workers.WORKER_SILENCE_S`."""
        ray, silence = self.ray, workers.WORKER_SILENCE_S
        live = [a for a in self._actors if a.alive]
        probes = [a.probe for a in live if a.probe is not None]
        answered = set(ray.wait(probes, num_returns=len(probes), timeout=0)[0]) if probes else ()
        stops = []
        for actor in live:
            if actor.probe is not None and actor.probe in answered:
                actor.probe, actor.heard_at = None, now
            silent = now - actor.heard_at
            if silent > silence:
                with suppress(Exception):  # already dead, or the cluster is gone
                    ray.kill(actor.handle)
                stops.append(self._lost(actor, None, silent=silent))
            elif actor.probe is None and silent >= silence / 10:
                actor.probe = actor.handle.ping.remote()
        return stops

    def _lost(self, actor: _Actor, err: Exception | None, *,
              silent: float | None = None) -> RunStop:
        actor.alive = False
        abandoned, actor.in_flight = len(actor.in_flight), set()
        if silent is not None:
            log.warning("Ray actor %d sent nothing for %.0f s; ended", actor.number, silent)
            what = (f"sent nothing for {silent:.0f} s (stopped, or hung) and was ended")
        else:
            first_line = str(err).strip().splitlines()[0] if str(err).strip() else ""
            what = f"died ({type(err).__name__}: {first_line})"
        return RunStop(reason="worker_lost", message=(
            f"Ray actor {actor.number} {what}, abandoning "
            f"{plural(abandoned, 'more sample')} in flight; every sample finished before was "
            "stored"))

    async def _dismiss(self) -> None:
        """Ask every live actor to close and send its last usage. The run's samples are all
        in: a problem on the way out is logged, not raised (it must not cost the summary)."""
        ray = self.ray
        refs = {a.handle.close.remote(): a for a in self._actors if a.alive}
        deadline = asyncio.get_running_loop().time() + EXIT_GRACE_S
        while refs and asyncio.get_running_loop().time() < deadline:
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=WAIT_SLICE_S)
            await asyncio.sleep(0)
            for ref in ready:
                actor = refs.pop(ref)
                try:
                    self._handle(actor, ray.get(ref))
                except (HarnessError, ray.exceptions.RayError) as err:
                    log.warning("Ray actor %d, leaving: %s", actor.number, err)
        if refs:
            log.warning("Ray actors still closing %.0f s after the run; killed", EXIT_GRACE_S)

    def _kill_all(self) -> None:
        for actor in self._actors:
            with suppress(Exception):  # already dead, or the cluster is gone
                self.ray.kill(actor.handle)
            actor.alive = False

