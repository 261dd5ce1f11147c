"""The runner: scenarios x epochs as concurrent episodes, each checked, judged and stored the
moment it finishes. One engine serves the CLI and the Python API.

Three parts: :class:`SampleWork` runs, checks and judges one sample and returns what it came
to (a record, or a stop), storing nothing; :class:`Runner` stores and counts outcomes; an
:class:`Executor` runs the first for the second: :class:`InProcessExecutor` on this event loop,
or :class:`~harness.runs.workers.WorkerPool` in worker processes (``--workers``).

Stops are clean: when a budget is reached, or a model call fails in a way no retry can fix
(a missing or refused key, an unknown model, a replay-only cache miss), no new sample starts,
samples in flight are abandoned unstored (``--resume`` runs them again), and everything
finished is kept.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from harness.checks.result import CheckReport
from harness.checks.run import PreparedExpectations, prepare_expectations, run_checks
from harness.errors import (
    FATAL_MODEL_ERRORS,
    BudgetExceededError,
    HarnessError,
    InputError,
    InputErrors,
    ModelConfigError,
)
from harness.formats import load_scenarios
from harness.judging.context import JudgeContext
from harness.judging.judge import JudgeSettings, judge_transcript
from harness.judging.rubric import Rubric, load_rubrics
from harness.models.base import ChatModel, ModelSpec
from harness.models.hub import ModelHub
from harness.models.usage import UsageStats
from harness.runs.config import RunConfig, RunDesign
from harness.runs.failure_attribution import attribute
from harness.runs.judge_record import rubric_as_judged
from harness.runs.reruns import as_rerun, split_epoch
from harness.runs.sample import SampleRecord
from harness.runs.scoring import build_sample
from harness.runs.store import RunStore
from harness.runs.summary_model import RunStop
from harness.scenarios.judge_context import context_for_scenario, user_turn_problem
from harness.scenarios.schema import AgentSpec, Scenario
from harness.simulation.agent_factory import agent_for
from harness.simulation.episode import run_episode
from harness.simulation.http_agent import HttpEndpoints
from harness.simulation.user_checks import SimulatorFinding, simulator_findings
from harness.transcript import ErrorInfo, Transcript
from harness.user_code import ImportPathError, check_path_syntax, resolve_adk_agent

if TYPE_CHECKING:
    from harness.mcp import ToolServer

SampleKey = tuple[str, int]
ProgressCallback = Callable[[SampleRecord], None]


@dataclass
class Suite:
    """The loaded scenarios and what every sample of them needs, prepared once."""

    scenarios: dict[str, Scenario]
    rubrics: dict[str, Rubric]
    expectations: dict[str, PreparedExpectations]
    contexts: dict[str, JudgeContext]

    @classmethod
    def load(cls, design: RunDesign) -> Suite:
        """Load and check everything the run's ``design`` names before any model call: every
        scenario file, every rubric a scenario names, the expectations' matchers, and that
        each scenario has the models it needs. Raises :class:`InputError` /
        :class:`InputErrors` naming file and field."""
        rubrics = load_rubrics(design.rubric_paths)
        scenarios = load_scenarios(design.scenario_paths, known_rubrics=set(rubrics),
                                   selector=design.select)
        if design.adk_agent is not None:
            scenarios = _with_adk_agent(scenarios, design.adk_agent)
        if not scenarios:
            from harness.formats.adk import ADK_SUFFIXES

            adk = all(p.endswith(ADK_SUFFIXES) for p in design.scenario_paths)
            raise InputError(", ".join(design.scenario_paths), None,
                             "the ADK eval set holds no eval cases: nothing to run (ADK "
                             "accepts an empty eval set; add a case)" if adk else
                             "no scenarios found (expected *.yaml scenario files or ADK eval "
                             "sets, *.evalset.json / *.test.json)")
        problems: list[InputError] = []
        for s in scenarios:
            where = s.source or s.id
            if s.agent.is_model and not (design.agent or s.agent.model):
                problems.append(InputError(where, "agent.model",
                                           "no agent model: set it or pass --agent"))
            problems.extend(_unset_env_problems(s))
            if not s.user.scripted and not (design.simulator or s.user.model):
                problems.append(InputError(
                    where, "user.model",
                    f"scenario {s.id!r} has a simulated user but no simulator model: set "
                    "user.model, pass --simulator MODEL, or use --offline"))
            problems.extend(_user_turn_problems(s, rubrics))
            if s.rubrics and not design.judges and not design.no_judge:
                problems.append(InputError(
                    where, "rubrics",
                    f"scenario {s.id!r} lists rubrics but no judge was given: pass --judge "
                    "MODEL, --no-judge to skip judging, or --offline"))
        if problems:
            raise problems[0] if len(problems) == 1 else InputErrors(problems[:20])
        return cls(
            scenarios={s.id: s for s in scenarios},
            rubrics=rubrics,
            expectations={s.id: prepare_expectations(s.expectations, s.checks,
                                                     base_dir=s.base_dir)
                          for s in scenarios},
            contexts={s.id: context_for_scenario(s) for s in scenarios},
        )


def _with_adk_agent(scenarios: list[Scenario], path: str) -> list[Scenario]:
    """``--agent adk:PATH``: every model agent becomes that ADK agent (its tools answered by
    the scenario's mocks). Raises :class:`InputError` (``--agent``) when it does not import."""
    for base_dir in {s.base_dir for s in scenarios if s.agent.is_model}:
        try:
            resolve_adk_agent(check_path_syntax(path), base_dir=base_dir)
        except ImportPathError as err:
            raise InputError("--agent", None, f"adk:{path}: {err}") from None
    return [s.model_copy(update={"agent": AgentSpec(adk=path)}) if s.agent.is_model else s
            for s in scenarios]


def _user_turn_problems(scenario: Scenario, rubrics: dict[str, Rubric]) -> list[InputError]:
    """A ``user_turn`` rubric listed where there is no simulated user turn to judge."""
    known = {**rubrics, **{r.id: r for r in scenario.inline_rubrics}}
    return [problem for i, rid in enumerate(scenario.rubrics) if rid in known
            and (problem := user_turn_problem(scenario, known[rid], f"rubrics[{i}]"))]


def _unset_env_problems(scenario: Scenario) -> list[InputError]:
    """An HTTP agent's ``${env:NAME}`` whose variable is not set, before any request."""
    http = scenario.agent.http
    if http is None:
        return []
    return [
        InputError(scenario.source or scenario.id, ".".join(map(str, ("agent.http", *path))),
                   f"${{env:{name}}}: the environment variable {name} is not set")
        for path, name in http.env_variables() if name not in os.environ
    ]


@dataclass
class RunState:
    """What happened in this invocation (the store holds the samples themselves)."""

    planned: int = 0
    finished: int = 0
    errored: int = 0
    stop: RunStop | None = None

    @property
    def stopped(self) -> bool:
        return self.stop is not None


SampleOutcome = SampleRecord | RunStop


@dataclass
class PlayedSample:
    """A sample whose episode ran and was checked, waiting for its judges."""

    scenario_id: str
    epoch: int
    started: float
    transcript: Transcript
    checks: CheckReport


class SampleSink(Protocol):
    """Where an executor puts what its samples came to: the runner, which stores and counts
    them. ``stopped`` tells the executor to start no further sample."""

    @property
    def stopped(self) -> bool: ...

    def accept(self, outcome: SampleOutcome) -> None: ...


class SampleWork:
    """Runs, checks and judges one sample, and stores nothing: the work every executor calls
    (in this process, in each worker process), given the suite and a model hub of its own
    process."""

    def __init__(self, config: RunConfig, suite: Suite, hub: ModelHub, *,
                 http_share: tuple[int, int] = (0, 1)) -> None:
        self.config = config
        self.suite = suite
        self.hub = hub
        self._judge_base = JudgeSettings(temperature=config.design.judge_temperature)
        self._judges: list[ChatModel] = [hub.get(name) for name in config.design.judges]
        self._tool_server: ToolServer | None = None
        self.http_endpoints = HttpEndpoints(
            hub.services.retry,
            specs=[s.agent.http for s in suite.scenarios.values() if s.agent.http is not None],
            share=http_share,
        )

    # -- models ------------------------------------------------------------------------

    def agent_model(self, scenario: Scenario) -> ChatModel | None:
        if not scenario.agent.is_model:
            return None
        design = self.config.design
        if design.agent:
            return self.hub.get(design.agent, base_url=design.agent_base_url)
        assert scenario.agent.model is not None  # Suite.load checked
        return self.hub.get(scenario.agent.model)

    def simulator_model(self, scenario: Scenario) -> ChatModel | None:
        if scenario.user.scripted:
            return None
        name = self.config.design.simulator or scenario.user.model
        assert name is not None  # Suite.load checked
        return self.hub.get(name)

    # -- mocked tools over MCP ----------------------------------------------------------

    def needs_tool_server(self) -> bool:
        """Whether any scenario's agent reaches its mocked tools over MCP."""
        return any(agent_for(s, self.agent_model(s), sample_index=0,
                             http_endpoints=self.http_endpoints).needs_tool_server
                   for s in self.suite.scenarios.values())

    @asynccontextmanager
    async def tools_served(self) -> AsyncIterator[None]:
        """Inside, one :class:`~harness.mcp.ToolServer` serves the tools of every episode
        whose agent needs one (each at its own path); started only when some scenario's agent
        does, and stopped on the way out, errors and cancellation (Ctrl-C) included. Samples
        run outside get a server per episode."""
        if not self.needs_tool_server():
            yield
            return
        from harness.mcp import ToolServer  # here: runs without MCP agents never load the SDK

        async with ToolServer() as server:
            self._tool_server = server
            try:
                yield
            finally:
                self._tool_server = None

    # -- one sample --------------------------------------------------------------------

    def _rubric_for(
        self, scenario: Scenario, rubric_id: str
    ) -> tuple[Rubric, JudgeSettings]:
        """The rubric a scenario names and the settings it is judged with
        (:func:`~harness.runs.judge_record.rubric_as_judged`, which the run's judge record
        describes)."""
        return rubric_as_judged(self.config.design, self.suite.rubrics, scenario, rubric_id,
                                self._judge_base)

    async def run(self, scenario_id: str, epoch: int) -> SampleOutcome:
        """Run, check and judge sample ``epoch`` of ``scenario_id``. Returns its record (an
        errored one when the episode, a judge or user code failed), or a :class:`RunStop` when
        the run must stop: a budget was reached, or a model call failed in a way no retry can
        fix. Raises :class:`HarnessError` for a problem of the run itself (e.g. bad input
        found late)."""
        played = await self.play(scenario_id, epoch)
        return await self.judge(played) if isinstance(played, PlayedSample) else played

    async def play(self, scenario_id: str, epoch: int) -> PlayedSample | SampleOutcome:
        """The first half of :meth:`run`: the episode and its checks, or what stopped them
        (as :meth:`run` returns it)."""
        scenario = self.suite.scenarios[scenario_id]
        started = time.time()

        async def episode() -> PlayedSample | RunStop:
            transcript = await run_episode(
                scenario,
                agent_model=self.agent_model(scenario),
                simulator_model=self.simulator_model(scenario),
                epoch=epoch,
                time_limit_s=self.config.execution.episode_timeout_s,
                tool_server=self._tool_server,
                http_endpoints=self.http_endpoints,
                services=self.hub.services,
            )
            fatal = _fatal_error(transcript.error)
            if fatal:
                return RunStop(reason="model_configuration", message=fatal)
            checks = run_checks(transcript, self.suite.expectations[scenario_id])
            return PlayedSample(scenario_id, epoch, started, transcript, checks)

        return await self._guarded(scenario_id, epoch, started, episode())

    async def judge(self, played: PlayedSample) -> SampleOutcome:
        """The second half of :meth:`run`: the judges, then the record."""
        scenario = self.suite.scenarios[played.scenario_id]
        transcript = played.transcript

        async def judged() -> SampleOutcome:
            judgments = []
            if not transcript.errored and scenario.rubrics and self._judges:
                judgments = list(await asyncio.gather(*(
                    judge_transcript(self._judges, rubric, transcript,
                                     self.suite.contexts[played.scenario_id], settings=settings)
                    for rubric, settings in (self._rubric_for(scenario, rid)
                                             for rid in scenario.rubrics)
                )))
                judge_fatal = next((e for j in judgments if (e := j.fatal_error()) is not None),
                                   None)
                if judge_fatal is not None:
                    return RunStop(reason="model_configuration", message=judge_fatal.message)
            record = build_sample(transcript, played.checks, judgments,
                                  started_at=played.started, finished_at=time.time(),
                                  weights=scenario.scoring.weights)
            record.simulator_findings = episode_findings(scenario, transcript)
            return record

        outcome = await self._guarded(played.scenario_id, played.epoch, played.started,
                                      judged())
        assert not isinstance(outcome, PlayedSample)
        return outcome

    async def _guarded(self, scenario_id: str, epoch: int, started: float,
                       work: Awaitable[PlayedSample | SampleOutcome]
                       ) -> PlayedSample | SampleOutcome:
        """``work``'s result, with a budget or a fatal model error turned into a stop and
        any other failure (a bug in user code or ours) into an errored record: it must not
        lose the run. A record gets its tags and failure attribution."""
        try:
            outcome = await work
        except BudgetExceededError as err:
            return RunStop(reason="budget", message=str(err))
        except ModelConfigError as err:
            return RunStop(reason="model_configuration", message=str(err))
        except HarnessError:
            raise
        except Exception as err:
            outcome = SampleRecord(
                scenario_id=scenario_id, epoch=epoch, status="errored",
                error=ErrorInfo(kind="internal_error", message=f"{type(err).__name__}: {err}"),
                transcript=Transcript(scenario_id=scenario_id, epoch=epoch,
                                      stop_reason="agent_error"),
                started_at=started, finished_at=time.time(),
            )
        if isinstance(outcome, SampleRecord):
            outcome.tags = list(self.suite.scenarios[scenario_id].tags)
            outcome.attribution = attribute(outcome)
        return outcome


class Runner:
    """Runs samples of a suite into a store: an executor runs them (in this process or in
    worker processes), the runner stores and counts what they come to."""

    def __init__(
        self,
        config: RunConfig,
        suite: Suite,
        store: RunStore,
        hub: ModelHub,
        executor: Executor,
        *,
        on_sample: ProgressCallback | None = None,
    ) -> None:
        self.config = config
        self.suite = suite
        self.store = store
        self.hub = hub
        self.executor = executor
        self.on_sample = on_sample
        self.state = RunState()

    def ledger_total(self) -> UsageStats:
        """Model usage so far in this invocation (for progress displays)."""
        return self.hub.ledger.total

    @staticmethod
    def model_names(config: RunConfig, suite: Suite) -> set[tuple[str, str | None]]:
        """Every ``(model name, base URL)`` the run calls: agents, simulators, judges."""
        names: set[tuple[str, str | None]] = set()
        for s in suite.scenarios.values():
            if s.agent.is_model:
                names.add((config.design.agent, config.design.agent_base_url) if config.design.agent
                          else (s.agent.model or "", None))
            if not s.user.scripted:
                names.add((config.design.simulator or s.user.model or "", None))
        if any(s.rubrics for s in suite.scenarios.values()):
            names.update((j, None) for j in config.design.judges)
        return names

    @staticmethod
    def preflight(config: RunConfig, suite: Suite, hub: ModelHub) -> None:
        """Before anything is created or called: every model name resolves, and a real
        provider's key is present unless a cache may answer for it (read-write or replay
        mode; a missing key then stops the run at the first call that needs it)."""
        for name, base_url in sorted(Runner.model_names(config, suite), key=str):
            model = hub.get(name, base_url=base_url)
            spec: ModelSpec = model.spec
            if not spec.is_offline and config.execution.cache_mode in ("off", "refresh"):
                hub.endpoint(spec.provider, spec.base_url).require_key(str(spec))

    @property
    def stopped(self) -> bool:
        return self.state.stopped

    async def run_samples(self, keys: Sequence[SampleKey]) -> RunState:
        """Run the given (scenario id, epoch) samples through the executor (inside its
        ``started()``), at most ``concurrency`` at a time, storing each as it finishes.
        Returns the state (how many finished, why it stopped)."""
        self.state.planned += len(keys)
        await self.executor.run(keys, self)
        return self.state

    def accept(self, outcome: SampleOutcome) -> None:
        """Store and count one finished sample, or record the stop it brought. After a stop,
        samples still in flight are stored when the stop was the budget's (they are whole,
        and made no call past it) and dropped otherwise (``--resume`` runs them again)."""
        if isinstance(outcome, RunStop):
            if self.state.stop is None:
                self.state.stop = outcome
                self.store.log_event("stopped", outcome.model_dump(mode="json"))
            return
        if self.state.stop is not None and self.state.stop.reason == "model_configuration":
            return
        epoch, attempt = split_epoch(outcome.epoch)
        if attempt:  # a rerun: back at its own epoch, the first record kept
            outcome = as_rerun(outcome, self.store.sample(outcome.scenario_id, epoch))
            self.store.replace_sample(outcome)
        else:
            self.store.write_sample(outcome)
        self.state.finished += 1
        self.state.errored += int(outcome.status == "errored")
        if self.on_sample is not None:
            self.on_sample(outcome)


class Executor(Protocol):
    """Runs samples for a :class:`Runner`: :meth:`run` inside :meth:`started`, which sets up
    what lasts the whole run (a tool server, worker processes) and tears it down."""

    def started(self) -> AbstractAsyncContextManager[None]: ...

    async def run(self, keys: Sequence[SampleKey], sink: SampleSink) -> None:
        """Run ``keys`` (in order, at most the run's concurrency at a time), giving each
        outcome to ``sink.accept``; start no sample once ``sink.stopped``."""
        ...


class InProcessExecutor:
    """The samples run on this process's event loop (``--workers 1``)."""

    def __init__(self, work: SampleWork, concurrency: int) -> None:
        self.work = work
        self.concurrency = concurrency

    def started(self) -> AbstractAsyncContextManager[None]:
        return self.work.tools_served()

    async def run(self, keys: Sequence[SampleKey], sink: SampleSink) -> None:
        # `concurrency` lanes take the samples in order, rather than a task per sample
        # waiting on a semaphore: the same bound and order, without holding thousands of
        # pending tasks (memory, and garbage-collector passes over them) in a long run.
        # With judges batched, a lane plays its sample's episode and moves on; the judging
        # waits for its batch apart, holding no lane (else `concurrency` samples waiting on
        # a batch would hold up every other episode, and each batch would be a few requests).
        pending = iter(keys)
        work = self.work
        batches = work.hub.services.batches
        judging: set[asyncio.Task[None]] = set()

        async def judge_and_accept(played: PlayedSample) -> None:
            sink.accept(await work.judge(played))

        async def lane() -> None:
            for key in pending:
                if sink.stopped:
                    return
                if batches is None:
                    sink.accept(await work.run(*key))
                    continue
                played = await work.play(*key)
                if isinstance(played, PlayedSample):
                    judging.add(asyncio.create_task(judge_and_accept(played)))
                else:
                    sink.accept(played)

        tasks = [asyncio.create_task(lane()) for _ in range(min(self.concurrency, len(keys)))]
        try:
            await asyncio.gather(*tasks)
            if batches is not None:
                batches.flush()  # no more episodes: what waits for a batch goes now
                await asyncio.gather(*judging)
        finally:
            for task in [*tasks, *judging]:
                task.cancel()
            await work.http_endpoints.aclose()


# Allocations between two young-generation collections during a run (Python's default: 700).
# Each collection looks at every young object still alive, most of them the episodes in
# flight: at 200 in flight, 50,000 took a worker process 0.08 s of collections over 5,500
# calls against 0.2 s at 10,000. Only cyclic garbage waits longer to be freed.
RUN_GC_THRESHOLD = 50_000


@contextmanager
def collector_tuned_for_run() -> Iterator[None]:
    """Tune Python's cyclic garbage collector for the run inside, then restore it.

    A run allocates many short-lived objects (requests, replies, pydantic models) beside some
    200,000 long-lived ones (imported modules, SDK classes, the suite). With the defaults the
    collector spent ~10% of the run's CPU, most of it in full passes over the long-lived
    objects. Inside, the objects that exist at the start are frozen (left out of collections
    until the end, :func:`gc.freeze`), and young collections run every
    :data:`RUN_GC_THRESHOLD` allocations instead of 700. Garbage is still collected; the
    settings and the frozen objects are given back on the way out, errors included.
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], RUN_GC_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def episode_findings(scenario: Scenario, transcript: Transcript) -> list[SimulatorFinding]:
    """What the simulated user did wrong in one episode of ``scenario``
    (:func:`~harness.simulation.user_checks.simulator_findings`, no model call): none when the
    simulator's own call failed (the conversation stopped where it broke), only the checks
    of its profile for a scripted user."""
    if transcript.stop_reason == "simulator_error":
        return []
    return simulator_findings(scenario.user, transcript.messages,
                              stop_reason=transcript.stop_reason, history=transcript.history)


def _fatal_error(error: ErrorInfo | None) -> str | None:
    if error is not None and error.kind in FATAL_MODEL_ERRORS:
        return error.message
    return None

def epochs_plan(suite: Suite, epochs: int, done: set[SampleKey]) -> list[SampleKey]:
    """Every (scenario, epoch) of a fixed design not yet stored, epoch-major so a stopped run
    has covered every scenario as evenly as possible."""
    return [
        (sid, e) for e in range(epochs) for sid in suite.scenarios if (sid, e) not in done
    ]
