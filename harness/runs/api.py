"""The Python API of runs; the CLI calls exactly these.

    config = RunConfig(design=RunDesign(scenario_paths=["scenarios"], offline=True, epochs=5))
    result = asyncio.run(run_suite(config, Path("runs/demo")))
    print(result.summary.score.mean, result.summary.score.ci_low)

A run directory holds ``run.sqlite`` (the store), ``summary.json`` and ``samples.jsonl``;
``result.summary`` is the :class:`~harness.runs.summary_model.RunSummary` written there
(``score`` is ``None`` when no sample was scored).
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Callable
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.errors import HarnessError, InputError
from harness.models.config import RateLimits, merge_rate_limits
from harness.models.hub import ModelHub
from harness.models.prices import PriceTable
from harness.runs.config import RESUMABLE_FIELDS, RunConfig
from harness.runs.cost_estimate import CostEstimate, estimate_run, gate_design, measure
from harness.runs.engine import (
    Executor,
    InProcessExecutor,
    Runner,
    RunState,
    SampleKey,
    SampleWork,
    Suite,
    collector_tuned_for_run,
    epochs_plan,
)
from harness.runs.judge_record import judge_definition, record_judge
from harness.runs.reruns import simulator_faults
from harness.runs.sample import SampleRecord
from harness.runs.settings import models_config_for, resolve_settings
from harness.runs.shards import check_fits_grid, coverage, in_shard
from harness.runs.store import RunStore, StoreError
from harness.runs.summary import scores_by_scenario, summarise, write_summary
from harness.runs.summary_model import (
    AdaptiveReport,
    AdaptiveRound,
    RunSavings,
    RunStop,
    RunSummary,
)
from harness.stats.adaptive import (
    AdaptiveConfig,
    adaptive_savings,
    fixed_epochs_for_width,
    plan_next_round,
)
from harness.stats.estimate import InsufficientDataError
from harness.wording import plural

OnStart = Callable[[Runner], None]
OnSample = Callable[[SampleRecord], None]

# The message of a cancellation asked for by SIGTERM (see harness.cli.interrupts); any other
# cancellation, Ctrl-C included, is an interruption. The run records which.
TERMINATED = "SIGTERM"


@dataclass
class RunResult:
    """A finished (or stopped) run: its directory, what happened in this invocation, the
    summary written to ``summary.json``, and the model usage ledger."""

    run_dir: Path
    state: RunState
    summary: RunSummary
    ledger: dict[str, Any]


async def run_suite(
    config: RunConfig,
    run_dir: Path,
    *,
    on_start: OnStart | None = None,
    on_sample: OnSample | None = None,
    tune_collector: bool = False,
    rerun_simulator_faults: bool = False,
) -> RunResult:
    """Start a new run in ``run_dir``. Everything is checked (scenarios, rubrics, models,
    keys) before the store is created or any model is called. The store records ``config``
    as resolved (:func:`~harness.runs.settings.resolve_settings`: ``--offline``, absolute
    paths, and the cache and budgets from the models YAML where ``config`` gives none).

    The calling process's garbage collector is left as it is unless ``tune_collector``
    (:func:`~harness.runs.engine.collector_tuned_for_run`, from before worker processes
    start until the summary is written, then restored): for a process that exists to run
    the suite, as ``harness run``'s does. Worker processes tune their own either way.

    ``rerun_simulator_faults``: once the planned samples are done, run each sample whose
    failure is attributed to the simulator again, once, with a new seed; the rerun takes its
    place in the figures and the first record is kept (:mod:`harness.runs.reruns`)."""
    config = resolve_settings(config)
    _check_executor(config)
    _check_judge_batch(config)
    suite = Suite.load(config.design)
    check_fits_grid(config.design.shard, len(suite.scenarios), config.design.epochs)
    _prepare_executor(config, suite)
    hub = ModelHub(models_config_for(config))
    try:
        Runner.preflight(config, suite, hub)
        refuse_over_budget(config, suite, hub.prices)
        store = RunStore.create(run_dir, {"run": config.model_dump(mode="json")})
    except BaseException:
        hub.close()
        raise
    return await _execute(config, suite, store, hub, run_dir, on_start=on_start,
                          on_sample=on_sample, tune_collector=tune_collector,
                          rerun_simulator_faults=rerun_simulator_faults)


def estimate_cost(config: RunConfig, *, measured_from: Path | None = None,
                  min_pass_rate: float | None = None) -> CostEstimate:
    """What :func:`run_suite` with ``config`` would call and cost (``harness run
    --dry-run``), with no model called and nothing written: from the scenarios, or from the
    samples of the run in ``measured_from`` where it has them
    (:mod:`~harness.runs.cost_estimate`). With ``min_pass_rate``, also what a gate on the
    pass rate's lower bound needs (its variance measured on ``measured_from``). Raises what
    :func:`run_suite` raises for bad input, and :class:`~harness.runs.store.StoreError` for
    a ``measured_from`` that is not a readable run."""
    config = resolve_settings(config)
    suite = Suite.load(config.design)
    models = models_config_for(config)
    measured = measure(measured_from) if measured_from is not None else None
    limits = {provider: RateLimits(requests_per_minute=settings.requests_per_minute,
                                   tokens_per_minute=settings.tokens_per_minute)
              for provider, settings in (("openai", models.openai),
                                         ("anthropic", models.anthropic),
                                         ("gemini", models.gemini))}
    estimate = estimate_run(config, list(suite.scenarios.values()), suite.rubrics,
                            PriceTable(models.prices), measured=measured,
                            concurrency=config.execution.concurrency, rate_limits=limits)
    if min_pass_rate is not None:
        estimate.decision = gate_design(estimate, measured, list(suite.scenarios),
                                        min_pass_rate=min_pass_rate,
                                        confidence=config.design.confidence)
    return estimate


def refuse_over_budget(config: RunConfig, suite: Suite, prices: PriceTable) -> None:
    """``--max-cost`` before the first call: raise :class:`~harness.errors.InputError`
    (``--max-cost``) when the run's estimated cost, with the providers' prompt caches,
    exceeds it. A run whose models have no price is not refused (its estimate is unknown)."""
    budget = config.execution.max_cost_usd
    if budget is None:
        return
    estimate = estimate_run(config, list(suite.scenarios.values()), suite.rubrics, prices,
                            batch=False, concurrency=config.execution.concurrency)
    cost = estimate.cost_with_cache_usd
    if cost is not None and cost > budget:
        raise InputError("--max-cost", None, (
            f"the run is estimated at ${cost:.4f} ({plural(estimate.samples, 'sample')}, "
            f"estimated from the scenarios), over the budget of ${budget:.4f}; nothing was "
            "run. Raise --max-cost, run fewer --epochs or scenarios, or see the estimate "
            "with --dry-run (--estimate-from RUN_DIR measures it on an earlier run)"))


def preflight_run(config: RunConfig) -> RunConfig:
    """Every check :func:`run_suite` makes before it creates the store (scenarios, rubrics,
    models, keys, the executor, the shard against the grid), with nothing written and no
    model called; returns ``config`` as :func:`run_suite` would store it. For a caller that
    starts several runs one after the other (a simulator panel), so that a later run's bad
    configuration stops the whole before the first run starts. Raises what
    :func:`run_suite` raises for them."""
    config = resolve_settings(config)
    _check_executor(config)
    _check_judge_batch(config)
    suite = Suite.load(config.design)
    check_fits_grid(config.design.shard, len(suite.scenarios), config.design.epochs)
    hub = ModelHub(models_config_for(config))
    try:
        Runner.preflight(config, suite, hub)
    finally:
        hub.close()
    return config


async def resume_run(
    run_dir: Path,
    *,
    overrides: dict[str, Any] | None = None,
    retry_errors: bool = False,
    on_start: OnStart | None = None,
    on_sample: OnSample | None = None,
    tune_collector: bool = False,
    rerun_simulator_faults: bool = False,
) -> RunResult:
    """Continue a stopped run with its stored configuration; no finished sample is repeated
    (errored ones are, with ``retry_errors``; samples attributed to the simulator and not
    re-run yet are re-run once, with ``rerun_simulator_faults``, as for :func:`run_suite`).
    ``overrides`` may change only settings that do
    not change finished results: concurrency, worker processes, the executor and its Ray
    address, budgets and the episode timeout (a run stalled by a hung agent can be resumed
    with one). ``tune_collector``: as for :func:`run_suite`."""
    store = RunStore.open(run_dir)
    try:
        stored = store.run_config()
    except StoreError:
        store.close()
        raise
    allowed = RESUMABLE_FIELDS
    unknown = set(overrides or {}) - allowed
    if unknown:
        store.close()
        raise StoreError(f"--resume keeps the run's configuration; only {sorted(allowed)} may "
                         f"change, not {sorted(unknown)}")
    try:
        changes = dict(overrides or {})
        if "rate_limits" in changes:  # per provider and limit: what is not given is kept
            changes["rate_limits"] = merge_rate_limits(stored.execution.rate_limits,
                                                       changes["rate_limits"])
        config = resolve_settings(stored.with_execution(**changes), resumed=True)
        _check_executor(config)
        _check_judge_batch(config)
        suite = Suite.load(config.design)
        check_fits_grid(config.design.shard, len(suite.scenarios), config.design.epochs)
        _prepare_executor(config, suite)
        hub = ModelHub(models_config_for(config))
        Runner.preflight(config, suite, hub)
    except BaseException:
        store.close()
        raise
    store.log_event("resumed", {"retry_errors": retry_errors, "overrides": overrides or {}})
    return await _execute(config, suite, store, hub, run_dir, retry_errors=retry_errors,
                          on_start=on_start, on_sample=on_sample,
                          tune_collector=tune_collector,
                          rerun_simulator_faults=rerun_simulator_faults)


async def _execute(
    config: RunConfig, suite: Suite, store: RunStore, hub: ModelHub, run_dir: Path, *,
    retry_errors: bool = False, on_start: OnStart | None, on_sample: OnSample | None,
    tune_collector: bool, rerun_simulator_faults: bool = False,
) -> RunResult:
    try:
        # When asked for, the collector is tuned from before worker processes are forked
        # (they inherit the frozen objects, and no full collection holds up the first
        # samples) until the summary is written.
        with collector_tuned_for_run() if tune_collector else nullcontext():
            return await _run_and_summarise(config, suite, store, hub, run_dir,
                                            retry_errors=retry_errors, on_start=on_start,
                                            on_sample=on_sample,
                                            rerun_simulator_faults=rerun_simulator_faults)
    finally:
        # However the session ended (an error, Ctrl-C included), a reader now knows that
        # no process runs it; a failing write must not hide the error on its way out.
        with suppress(StoreError):
            store.record_session_end()
        store.close()


async def _run_and_summarise(
    config: RunConfig, suite: Suite, store: RunStore, hub: ModelHub, run_dir: Path, *,
    retry_errors: bool, on_start: OnStart | None, on_sample: OnSample | None,
    rerun_simulator_faults: bool = False,
) -> RunResult:
    if config.execution.judge_batch:
        hub.enable_batches(run_dir / BATCH_JOURNAL, reask=config.execution.judge_batch_reask)
    runner = Runner(config, suite, store, hub, executor_for(config, suite, hub),
                    on_sample=on_sample)
    done = store.finished_keys(include_errored=not retry_errors)
    store.record_scenarios(list(suite.scenarios))
    store.record_definitions(list(suite.scenarios.values()), suite.rubrics)
    record_judge(store, judge_definition(config.design, suite.scenarios, suite.rubrics))
    design = config.design
    shards = None if design.shard is None else coverage(
        design.shard.count, [design.shard.index], list(suite.scenarios), design.epochs)
    adaptive = None
    store.record_session_start(
        shards.held_samples if shards is not None
        else None if design.adaptive is not None else len(suite.scenarios) * design.epochs)
    # The summary's scipy.stats (half a second to import), imported while the first samples
    # wait on their models rather than after the last one; from once the executor is up, as
    # worker processes are forked only from a process without threads.
    summary_imports = threading.Thread(target=importlib.import_module, args=("scipy.stats",),
                                       name="harness-summary-imports", daemon=True)
    try:
        async with runner.executor.started():
            # Called once the executor is up, not before: what it starts (a progress bar's
            # thread) would stop worker processes from being forked from this one.
            if on_start is not None:
                on_start(runner)
            summary_imports.start()
            if design.adaptive is None:
                await runner.run_samples(
                    in_shard(epochs_plan(suite, design.epochs, done), design.shard))
            else:
                adaptive = await _adaptive(runner, store, done)
            if rerun_simulator_faults and not runner.stopped:
                faults = simulator_faults(store.iter_samples())
                store.log_event("rerun_simulator_faults", {"samples": len(faults)})
                await runner.run_samples(faults)
    except (KeyboardInterrupt, asyncio.CancelledError) as err:
        # Stopped from outside (Ctrl-C, SIGTERM, a cancelled task): the samples in flight
        # are abandoned, but what finished is summarised, so `harness report` works and
        # `--resume` knows where to go on.
        how: Literal["interrupted", "terminated"] = (
            "terminated" if TERMINATED in err.args else "interrupted")
        store.log_event(how, {"finished_this_session": runner.state.finished})
        stop = RunStop(reason=how, message=_stop_message(how, runner.state))
        write_summary(run_dir, summarise(store, config, run_dir=run_dir, stopped=stop,
                                         scenarios_loaded=len(suite.scenarios),
                                         shards=shards))
        raise
    finally:
        await hub.aclose()
        if summary_imports.is_alive():
            summary_imports.join()
    summary = summarise(store, config, run_dir=run_dir, stopped=runner.state.stop,
                        adaptive=adaptive, scenarios_loaded=len(suite.scenarios),
                        shards=shards)
    write_summary(run_dir, summary)
    return RunResult(run_dir=run_dir, state=runner.state, summary=summary,
                     ledger=hub.ledger.snapshot())


def _check_executor(config: RunConfig) -> None:
    """Before anything is written: ``--executor ray`` needs the ``ray`` extra (imported only
    then). Raises :class:`HarnessError` naming what to install."""
    if config.execution.executor == "ray":
        from harness.runs.ray_executor import import_ray

        import_ray()


BATCH_JOURNAL = "batches.sqlite"
"""The run directory's record of the judge batches it sent (see
:mod:`harness.models.batch_journal`)."""


def _check_judge_batch(config: RunConfig) -> None:
    """``judge_batch`` needs one process (its batches are collected where they were sent)
    and the response cache (a resumed run finds the requests it sent through it). Raises
    :class:`HarnessError` saying what to change."""
    execution = config.execution
    if not execution.judge_batch:
        return
    from harness.runs.workers import worker_count

    if execution.executor == "ray" or worker_count(config) > 1:
        raise HarnessError("--judge-batch sends and collects the judges' batches from this "
                           "process: drop --workers and --executor ray (--concurrency still "
                           "bounds the episodes)")
    if execution.cache_mode == "off":
        raise HarnessError("--judge-batch needs the response cache: a resumed run replays its "
                           "episodes from it, so that it asks for the judge requests it sent "
                           "already (drop --cache-mode off)")


def _prepare_executor(config: RunConfig, suite: Suite) -> None:
    """With worker processes that will come from a fork server, start it now, so its imports
    overlap the preflight (see :func:`harness.runs.workers.prepare_worker_processes`)."""
    from harness.runs.workers import prepare_worker_processes, worker_count

    if config.execution.executor != "ray" and worker_count(config) > 1:
        prepare_worker_processes(name.partition(":")[0]
                                 for name, _ in Runner.model_names(config, suite))


def executor_for(config: RunConfig, suite: Suite, hub: ModelHub) -> Executor:
    """What runs the samples: Ray actors with ``executor`` ``ray`` (see
    :mod:`harness.runs.ray_executor`); else this process's event loop for one worker, or a
    pool of worker processes (``config.execution.workers``, see
    :mod:`harness.runs.workers`). Workers' and actors' usage adds up in ``hub``'s ledger."""
    if config.execution.executor == "ray":
        from harness.runs.ray_executor import RayExecutor

        return RayExecutor(config, hub.ledger)
    from harness.runs.workers import WorkerPool, worker_count

    count = worker_count(config)
    if count == 1:
        return InProcessExecutor(SampleWork(config, suite, hub), config.execution.concurrency)
    return WorkerPool(config, suite, count, hub.ledger)


def _stop_message(how: str, state: RunState) -> str:
    cause = "SIGTERM" if how == "terminated" else "an interrupt (Ctrl-C or a cancelled task)"
    return (f"{how} by {cause} after {plural(state.finished, 'sample')} finished in this "
            "session; "
            "samples in flight were abandoned")


async def _adaptive(runner: Runner, store: RunStore, done: set[SampleKey]) -> AdaptiveReport:
    """Pilot epochs, then Neyman-allocated rounds until the suite interval is narrower than
    the target, a budget stops the run, or the planner finds nothing worth sampling."""
    settings = runner.config.design.adaptive
    assert settings is not None
    config = runner.config
    await runner.run_samples(epochs_plan(runner.suite, settings.pilot_epochs, done))
    plan_config = AdaptiveConfig(
        target_width=settings.target_width, confidence=config.design.confidence,
        pilot_epochs=settings.pilot_epochs,
        max_epochs_per_scenario=settings.max_epochs_per_scenario,
    )
    rounds: list[AdaptiveRound] = []
    decision = None
    while not runner.state.stopped:
        scores, passed = scores_by_scenario(store, config.design.error_policy)
        try:
            decision = plan_next_round(scores, passed, config=plan_config)
        except InsufficientDataError as err:
            return AdaptiveReport(target_width=settings.target_width, stopped=str(err),
                                  rounds=rounds)
        rounds.append(AdaptiveRound(reason=decision.reason, allocations=decision.allocations,
                                    current_width=decision.current_width,
                                    projected_width=decision.projected_width))
        store.log_event("adaptive_round", rounds[-1].model_dump(mode="json"))
        if decision.stop:
            break
        next_epoch = _next_epochs(store)
        keys: list[SampleKey] = []
        for sid, extra in decision.allocations.items():
            start = next_epoch.get(sid, 0)
            keys.extend((sid, start + i) for i in range(extra))
        await runner.run_samples(keys)
    scores, passed = scores_by_scenario(store, config.design.error_policy)
    used = sum(len(v) for v in scores.values())
    savings = None
    if len(scores) >= 2:
        fixed = fixed_epochs_for_width(scores, passed, target_width=settings.target_width,
                                       confidence=config.design.confidence)
        saved = adaptive_savings(used, fixed)
        calls = runner.hub.ledger.total.calls
        per_sample = calls / runner.state.finished if runner.state.finished else None
        savings = RunSavings(
            **dict(saved), model_calls_per_sample=per_sample,
            saved_model_calls=None if per_sample is None or saved.saved_samples is None
            else round(saved.saved_samples * per_sample),
        )
    return AdaptiveReport(
        target_width=settings.target_width,
        pilot_epochs=settings.pilot_epochs,
        final_reason=None if decision is None else decision.reason,
        final_width=None if decision is None else decision.current_width,
        samples_used=used,
        rounds=rounds,
        method=None if decision is None else decision.method,
        savings=savings,
    )


def _next_epochs(store: RunStore) -> dict[str, int]:
    nxt: dict[str, int] = {}
    for sid, epoch, *_ in store.score_rows():
        nxt[sid] = max(nxt.get(sid, 0), epoch + 1)
    return nxt
