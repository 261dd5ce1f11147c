"""A run's episodes spread over worker processes of this machine (``harness run --workers N``).

The parent process keeps everything a run owns: the store (it writes every finished sample;
no worker ever opens ``run.sqlite``), the counts, the progress bar, stops, Ctrl-C and SIGTERM.
Each worker process is forked from the parent itself on Linux while the parent runs no other
thread (the command line's case: the run is checked and the provider SDKs are imported, the
progress bar not yet shown), and uses the suite the parent loaded; else it is forked from
multiprocessing's *fork server* (*spawn* where the platform has none), which
:func:`prepare_worker_processes` starts while the parent checks the run, importing once what
every worker needs (the engine, and the provider SDKs the suite uses), and loads the suite
itself from the run's resolved configuration. Either way it runs the samples it is sent on an
event loop of its own, with its own model hub, HTTP connections and tool server, through the
same :class:`~harness.runs.engine.SampleWork` as a one-process run. What a sample
came to goes back to the parent as JSON bytes over the worker's pipe.

One message is one ``send_bytes``: a JSON header, a newline, then (for a sample) the
record's JSON, which the parent validates straight from the bytes. Parent to worker:
``{"run": [scenario_id, epoch]}`` or ``{"exit": true}``. Worker to parent: ``{"sample": key,
"usage": ...}`` with the record; ``{"stop": RunStop, "key": key, "usage": ...}``; ``{"log":
[level, logger, message]}`` (logged again in the parent, so it reaches the run's
``harness.log`` through the parent's handlers and their redaction); ``{"error": message}`` (a
problem of the run itself, raised in the parent as a :class:`HarnessError`); ``{"bye": true,
"usage": ..., "cpu_s": ..., "peak_rss_mb": ...}`` when it leaves (its own CPU time and peak
memory, logged by the parent); ``{"beat": true}`` every few seconds from a thread of its own.
``usage`` is the worker's whole usage ledger so far (:meth:`UsageLedger.export`); the
parent's ledger is the sum of the last one of each worker.

The parent keeps at most ``concurrency`` samples in flight over all workers, sending the next
sample to the worker with the fewest as each one finishes. Budgets hold over all of them
through a :class:`~harness.models.usage.SharedBudget`. A worker that dies (killed, out of
memory) stops the run as ``worker_lost``: its samples in flight are abandoned, the other
workers' finish and are stored, and ``--resume`` runs what is missing. So does a worker the
parent hears nothing from, not even a heartbeat, for :data:`WORKER_SILENCE_S` (stopped with
SIGSTOP, or hung): the parent ends it. A worker ends itself when its parent dies.
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from harness.errors import HarnessError
from harness.models.config import ModelsConfig, split_rate_limits
from harness.models.hub import PROVIDER_MODULES, ModelHub
from harness.models.types import SCRUBBED
from harness.models.usage import ExportedUsage, SharedBudget, UsageLedger
from harness.runs import event_loop
from harness.runs.config import RunConfig
from harness.runs.engine import (
    SampleKey,
    SampleSink,
    SampleWork,
    Suite,
    collector_tuned_for_run,
)
from harness.runs.sample import SampleRecord
from harness.runs.settings import models_config_for
from harness.runs.summary_model import RunStop

log = logging.getLogger("harness.runs.workers")

# How long a worker that was asked to leave may take to send its last usage and exit.
EXIT_GRACE_S = 30.0
# A worker sends a heartbeat (a thread's, so a busy event loop still sends it) ten times in
# this long; one the parent hears nothing from for this long (stopped with SIGSTOP, or hung
# where no thread of it runs) is ended and stops the run as a worker that died.
WORKER_SILENCE_S = 30.0
# A parent that itself ran nothing for this long (stopped with its workers by Ctrl-Z, the
# machine suspended) hears its workers out again rather than taking their silence for theirs.
PARENT_GAP_S = 5.0


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform says)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def worker_count(config: RunConfig) -> int:
    """The worker processes a run uses: ``workers`` (``auto``: one per usable core), never
    more than the episodes allowed in flight."""
    wanted = usable_cores() if config.execution.workers == "auto" else config.execution.workers
    return max(1, min(wanted, config.execution.concurrency))


def start_method() -> str:
    """How worker processes start, decided when they do: ``fork`` (from this process, which
    has everything they need imported and loaded by then, so they start at once) on Linux
    while this process runs no other thread (forking a process with threads can leave the
    child with a lock held by a thread it does not have); else ``forkserver`` where the
    platform has it (macOS, or Linux with threads: a test's server, a progress bar, a caller's
    own); else ``spawn`` (Windows)."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


def prepare_worker_processes(providers: Iterable[str]) -> None:
    """Start the fork server the worker processes will be forked from, now, with the engine
    and the client modules of ``providers`` to import, so that its imports overlap the rest
    of the parent's start (call it before the pool's :meth:`WorkerPool.started`; a server
    already running from an earlier run in this process is used as it is). The main module is
    imported there too (as ``__mp_main__``, as *spawn* imports it in each worker). Nothing to
    do where the workers will be forked from this process, or there is no fork server."""
    if start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    modules = [PROVIDER_MODULES[p] for p in sorted(set(providers)) if p in PROVIDER_MODULES]
    multiprocessing.get_context("forkserver").set_forkserver_preload(
        ["__main__", "harness.runs.workers", *modules])
    forkserver.ensure_running()


def _encode(header: dict[str, Any], body: bytes = b"") -> bytes:
    return json.dumps(header).encode() + b"\n" + body


_BEAT = _encode({"beat": True})  # a worker's heartbeat: "still here", nothing else


def _decode(data: bytes) -> tuple[dict[str, Any], bytes]:
    header, _, body = data.partition(b"\n")
    decoded: dict[str, Any] = json.loads(header)
    return decoded, body


# --- the parent's side -----------------------------------------------------------------


@dataclass(eq=False)
class _Worker:
    number: int  # 1-based, as messages name it
    process: BaseProcess
    conn: Connection
    in_flight: set[SampleKey] = field(default_factory=set)
    alive: bool = True
    leaving: bool = False
    heard_at: float = field(default_factory=time.monotonic)  # its last message's arrival
    silenced: float | None = None  # how long it had been silent when the parent ended it


class WorkerPool:
    """The executor of ``--workers N`` (N >= 2): see the module docstring. ``ledger`` is the
    parent's usage ledger, kept equal to the sum of the workers' ledgers."""

    def __init__(self, config: RunConfig, suite: Suite, count: int, ledger: UsageLedger) -> None:
        self.config = config
        self.suite = suite
        self.count = count
        self.ledger = ledger
        self._workers: list[_Worker] = []
        self._usage: dict[int, ExportedUsage] = {}
        self._inbox: asyncio.Queue[tuple[_Worker, bytes | None]] = asyncio.Queue()
        self._checked_at = time.monotonic()

    @asynccontextmanager
    async def started(self) -> AsyncIterator[None]:
        """The worker processes, started (a worker that loads the suite itself does so while
        the first samples are already on their way to it). On the way out they are asked to
        leave and send their last usage; on an error or a cancellation (Ctrl-C, SIGTERM) they
        are ended at once, their samples in flight abandoned."""
        method = start_method()
        context = (multiprocessing.get_context("fork") if method == "fork"
                   else multiprocessing.get_context("forkserver") if method == "forkserver"
                   else multiprocessing.get_context("spawn"))
        budget = SharedBudget(context)
        loop = asyncio.get_running_loop()
        config_json = self.config.model_dump_json()
        # A forked worker has the parent's memory: the suite as loaded here, and the
        # environment as it is. Elsewhere the suite is loaded again from the configuration.
        suite = self.suite if method == "fork" else None
        try:
            for index in range(self.count):
                ours, theirs = context.Pipe(duplex=True)
                # A forked worker has a copy of every pipe end this process holds: its own
                # pipe's other end and the earlier workers'. Left open, they keep its pipe
                # from ever reaching end-of-file when this process dies; it closes them.
                parents_ends = [*(w.conn for w in self._workers), ours] if method == "fork" else []
                process = context.Process(
                    target=worker_main, name=f"harness-worker-{index + 1}", daemon=True,
                    args=(index, self.count, config_json, theirs, budget, dict(os.environ),
                          suite, parents_ends, os.getpid() if method == "fork" else None,
                          WORKER_SILENCE_S / 10))
                process.start()
                theirs.close()
                worker = _Worker(index + 1, process, ours)
                self._workers.append(worker)
                log.info("worker process %d of %d started (pid %s, %s)", worker.number,
                         self.count, process.pid, method)
            # Only now the threads that read their pipes: the forks above had none to copy.
            for worker in self._workers:
                threading.Thread(target=self._read, args=(worker, loop), daemon=True,
                                 name=f"harness-worker-{worker.number}-reader").start()
            yield
        except BaseException:
            self._end_now()
            raise
        await self._dismiss()

    def _read(self, worker: _Worker, loop: asyncio.AbstractEventLoop) -> None:
        """A thread per worker: its messages into the inbox, then ``None`` when its pipe
        closes (it left or died)."""
        while True:
            try:
                data: bytes | None = worker.conn.recv_bytes()
            except (EOFError, OSError):
                data = None
            worker.heard_at = time.monotonic()
            if data == _BEAT:
                continue
            try:
                loop.call_soon_threadsafe(self._inbox.put_nowait, (worker, data))
            except RuntimeError:  # the run's event loop is closed: nobody is listening
                return
            if data is None:
                return

    async def run(self, keys: Sequence[SampleKey], sink: SampleSink) -> None:
        pending = iter(keys)
        limit = self.config.execution.concurrency
        in_flight = 0
        while True:
            while in_flight < limit and not sink.stopped:
                live = [w for w in self._workers if w.alive]
                key = next(pending, None) if live else None
                if key is None:
                    break
                worker = min(live, key=lambda w: len(w.in_flight))
                try:
                    worker.conn.send_bytes(_encode({"run": key}))
                except OSError:
                    # It died since its last message; its reader's end-of-pipe, still in the
                    # inbox, stops the run. The key is run again by --resume.
                    worker.alive = False
                    continue
                worker.in_flight.add(key)
                in_flight += 1
            if in_flight == 0:
                return
            worker, data = await self._next_message()
            before = len(worker.in_flight)
            outcome = self._handle(worker, data)
            in_flight -= before - len(worker.in_flight)
            if outcome is not None:
                sink.accept(outcome)

    async def _next_message(self) -> tuple[_Worker, bytes | None]:
        """The next message of any worker; meanwhile, at least once a second, a worker silent
        for :data:`WORKER_SILENCE_S` is ended (its end-of-pipe, a message too, follows)."""
        while True:
            self._end_silent_workers()
            try:
                async with asyncio.timeout(WORKER_SILENCE_S / 30):
                    return await self._inbox.get()
            except TimeoutError:
                continue

    def _end_silent_workers(self) -> None:
        """SIGKILL every running worker not heard from for :data:`WORKER_SILENCE_S`. A gap in
        the parent's own checks longer than :data:`PARENT_GAP_S` means the parent was not
        running either: its workers' silence is then no sign of theirs, and they get a fresh
        :data:`WORKER_SILENCE_S`."""
        now = time.monotonic()
        if now - self._checked_at > PARENT_GAP_S:
            for worker in self._workers:
                worker.heard_at = max(worker.heard_at, now)
        self._checked_at = now
        for worker in self._workers:
            silent = now - worker.heard_at
            if worker.alive and not worker.leaving and worker.silenced is None \
                    and silent > WORKER_SILENCE_S:
                worker.silenced = silent
                log.warning("worker process %d (pid %s) sent nothing for %.0f s; ending it",
                            worker.number, worker.process.pid, silent)
                with suppress(OSError):
                    worker.process.kill()

    def _handle(self, worker: _Worker, data: bytes | None) -> SampleRecord | RunStop | None:
        """One message of ``worker``: what it brings for the sink, if anything."""
        if data is None:
            return self._lost(worker)
        header, body = _decode(data)
        if "log" in header:
            level, name, message = header["log"]
            logging.getLogger(name).log(level, "worker %d: %s", worker.number, message)
            return None
        if "usage" in header:
            self._usage[worker.number] = header["usage"]
            self.ledger.replace_with_sum(self._usage.values())
        if "error" in header:
            raise HarnessError(header["error"])
        if "sample" in header:
            worker.in_flight.discard(tuple(header["sample"]))
            return SampleRecord.model_validate_json(body, context=SCRUBBED)
        if "stop" in header:
            worker.in_flight.discard(tuple(header["key"]))
            return RunStop.model_validate(header["stop"])
        if "bye" in header:
            worker.leaving = True
            if "cpu_s" in header:
                log.info("worker process %d left: %.1f s of CPU, peak RSS %.0f MB (pages "
                         "shared with the process it was forked from included)", worker.number,
                         header["cpu_s"], header["peak_rss_mb"])
        return None

    def _lost(self, worker: _Worker) -> RunStop | None:
        """``worker``'s pipe closed: fine when it was leaving, else it died."""
        worker.alive = False
        abandoned, worker.in_flight = len(worker.in_flight), set()
        if worker.leaving:
            return None
        worker.process.join(timeout=5)
        code = worker.process.exitcode
        how = (f"sent nothing for {worker.silenced:.0f} s (stopped, or hung) and was ended"
               if worker.silenced is not None
               else f"was killed by {signal.Signals(-code).name}" if code is not None and code < 0
               else f"exited with code {code}")
        return RunStop(reason="worker_lost", message=(
            f"worker process {worker.number} (pid {worker.process.pid}) {how}, abandoning "
            f"{abandoned} sample(s) in flight; every sample finished before was stored"))

    async def _dismiss(self) -> None:
        """Ask every live worker to leave, collect their last usage, and wait for them. The
        run's samples are all in by now: a worker's problem on the way out is logged, not
        raised (it must not cost the run its summary)."""
        for worker in self._workers:
            if worker.alive:
                with suppress(OSError):
                    worker.conn.send_bytes(_encode({"exit": True}))
        try:
            async with asyncio.timeout(EXIT_GRACE_S):
                while any(w.alive for w in self._workers):
                    worker, data = await self._inbox.get()
                    if data is None:
                        worker.alive = False
                        continue
                    try:
                        self._handle(worker, data)
                    except HarnessError as err:
                        log.warning("worker process %d, leaving: %s", worker.number, err)
        except TimeoutError:
            log.warning("worker processes still running %.0f s after the run; ended",
                        EXIT_GRACE_S)
        finally:
            self._end_now()

    def _end_now(self) -> None:
        """End every worker process still running (SIGTERM, then SIGKILL) and close pipes."""
        for worker in self._workers:
            if worker.process.is_alive():
                worker.process.terminate()
        for worker in self._workers:
            worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(timeout=5)
            worker.conn.close()


# --- the worker's side -----------------------------------------------------------------


def worker_main(index: int, count: int, config_json: str, conn: Connection,
                budget: SharedBudget, environ: dict[str, str], suite: Suite | None,
                parents_ends: Sequence[Connection] = (), parent_pid: int | None = None,
                beat_s: float = WORKER_SILENCE_S / 10) -> None:
    """The entry point of worker process ``index`` (0-based) of ``count``. ``environ`` is the
    parent's environment as the run started: a process forked from the fork server has the
    environment the server started with, which may be older (keys and ``${env:...}`` values
    set since, by a program that runs several suites, would be missing). ``suite`` is the
    parent's, in a worker forked from it (else ``None``: loaded here). ``parents_ends`` are
    the pipe ends of the parent that a worker forked from it holds copies of (closed here),
    and ``parent_pid`` is then the parent's pid (else the process it was forked from is
    taken as its parent). A heartbeat goes to the parent every ``beat_s`` seconds."""
    for end in parents_ends:
        end.close()
    _die_with_parent(os.getppid() if parent_pid is None else parent_pid)
    os.environ.clear()
    os.environ.update(environ)
    _forget_parent_signals()
    pipe = _ToParent(conn)
    threading.Thread(target=_beat, args=(pipe, beat_s), daemon=True,
                     name="harness-worker-heartbeat").start()
    _log_to_parent(pipe)
    try:
        event_loop.run(_serve(index, count, RunConfig.model_validate_json(config_json), conn,
                              pipe, budget, suite))
    except (BrokenPipeError, EOFError):  # the parent is gone
        pass
    except Exception as err:  # a bug: say so in the parent rather than vanish
        with suppress(OSError):
            pipe.send({"error": f"worker process {index + 1} failed: "
                                f"{type(err).__name__}: {err}"})


def _beat(pipe: _ToParent, every_s: float) -> None:
    """Send the parent a heartbeat every ``every_s`` seconds until the pipe closes."""
    while True:
        try:
            pipe.send_bytes(_BEAT)
        except OSError:
            return
        time.sleep(every_s)


class _ToParent:
    """A worker's end of its pipe, for sending: one message at a time, whichever thread sends
    (the event loop's, or a thread that logs)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._lock = threading.Lock()

    def send(self, header: dict[str, Any], body: bytes = b"") -> None:
        self.send_bytes(_encode(header, body))

    def send_bytes(self, data: bytes) -> None:
        with self._lock:
            self.conn.send_bytes(data)


class _ParentHandler(logging.Handler):
    """Sends each log record to the parent, which logs it again."""

    def __init__(self, pipe: _ToParent) -> None:
        super().__init__()
        self.pipe = pipe

    def emit(self, record: logging.LogRecord) -> None:
        with suppress(OSError):
            self.pipe.send({"log": [record.levelno, record.name, record.getMessage()]})


# How often a worker looks whether its parent is still there, where the system cannot tell
# it (a parent-death signal): it ends itself within about this long of its parent's death.
PARENT_CHECK_S = 0.5


def _die_with_parent(parent_pid: int) -> None:
    """End this worker when ``parent_pid`` (the process it was forked from) dies, however it
    dies (``kill -9`` included, where nothing of the parent's runs): a worker left behind
    would keep running samples nobody stores, holding the run's files open. On Linux the
    kernel sends SIGKILL at the parent's death (``PR_SET_PDEATHSIG``); everywhere, a thread
    polls the parent pid (a dead parent's children are handed to another process). Ends the
    process at once when the parent is already gone."""
    if sys.platform == "linux":
        _ask_kernel_for_parent_death_signal()
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="harness-worker-parent-watch").start()


def _ask_kernel_for_parent_death_signal() -> None:
    """``prctl(PR_SET_PDEATHSIG, SIGKILL)`` through the C library; nothing where it cannot be
    called (the polling thread of :func:`_die_with_parent` still ends the worker)."""
    import ctypes

    pr_set_pdeathsig = 1  # <linux/prctl.h>
    with suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)


def _forget_parent_signals() -> None:
    """A worker's signals are its own. Ctrl-C in a terminal reaches the whole process group:
    the parent alone decides what happens (it ends the workers), so SIGINT is ignored here.
    A worker forked from the parent also has the parent's SIGTERM handling, whose wake-up
    file descriptor is the parent's event loop's: a SIGTERM that ends this worker would be
    taken by the parent as its own."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _log_to_parent(pipe: _ToParent) -> None:
    """The records a run's log keeps (the harness's own from INFO, the libraries' from
    WARNING: see :mod:`harness.logs`) go to the parent, and only there (a worker forked from
    the parent has the parent's handlers: its run log file, its terminal)."""
    loggers = [logging.getLogger(), *(x for x in logging.Logger.manager.loggerDict.values()
                                       if isinstance(x, logging.Logger))]
    for logger in loggers:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
    root = logging.getLogger()
    root.addHandler(_ParentHandler(pipe))
    root.setLevel(logging.WARNING)
    logging.getLogger("harness").setLevel(logging.INFO)


def _worker_models(config: RunConfig, share: tuple[int, int]) -> ModelsConfig:
    """The run's model settings, each provider's concurrency bound and rate limits cut to this
    worker's part of them, so they hold over the run."""
    models = models_config_for(config)
    return models.model_copy(update={
        provider: getattr(models, provider).model_copy(
            update=split_rate_limits(getattr(models, provider), share))
        for provider in PROVIDER_MODULES})


async def _serve(index: int, count: int, config: RunConfig, conn: Connection,
                 pipe: _ToParent, budget: SharedBudget, suite: Suite | None) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    def read() -> None:
        while True:
            try:
                message: dict[str, Any] | None = _decode(conn.recv_bytes())[0]
            except (EOFError, OSError):
                message = None
            with suppress(RuntimeError):  # the loop is closed: we are leaving anyway
                loop.call_soon_threadsafe(inbox.put_nowait, message)
            if message is None:
                return

    threading.Thread(target=read, daemon=True, name="harness-worker-reader").start()
    try:
        suite = suite or Suite.load(config.design)
        models = _worker_models(config, (index, count))
        hub = ModelHub(models, ledger=UsageLedger(max_cost_usd=models.budget.max_cost_usd,
                                                  max_calls=models.budget.max_calls,
                                                  shared=budget),
                       limit_share=1 / count)
        work = SampleWork(config, suite, hub, http_share=(index, count))
    except HarnessError as err:
        pipe.send({"error": str(err)})
        return

    async def one(key: SampleKey) -> None:
        try:
            outcome = await work.run(*key)
        except HarnessError as err:
            pipe.send({"error": str(err)})
            return
        usage = hub.ledger.export()
        if isinstance(outcome, RunStop):
            pipe.send({"stop": outcome.model_dump(mode="json"), "key": key, "usage": usage})
        else:
            pipe.send({"sample": key, "usage": usage}, outcome.model_dump_json().encode())

    tasks: set[asyncio.Task[None]] = set()
    try:
        with collector_tuned_for_run():
            async with work.tools_served():
                while (message := await inbox.get()) is not None and "run" in message:
                    sid, epoch = message["run"]
                    task = asyncio.create_task(one((sid, epoch)))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                for task in list(tasks):
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await work.http_endpoints.aclose()
        await hub.aclose()
    pipe.send({"bye": True, "usage": hub.ledger.export(), **_own_resources()})


def _own_resources() -> dict[str, float]:
    """This process's CPU seconds and peak resident memory (where the platform tells)."""
    try:
        import resource
    except ImportError:  # Windows
        return {}
    own = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu_s": own.ru_utime + own.ru_stime, "peak_rss_mb": own.ru_maxrss / 1024}
