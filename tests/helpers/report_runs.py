"""Two small offline runs whose differences are known, for the compare and pairwise pages'
tests: six scripted scenarios (``task-0`` … ``task-5``) passed when the agent says ``DONE``,
and a seventh (``task-6``) in the baseline only.

``mock:pageagent`` (the baseline, A) passes every scenario but ``task-5``;
``mock:pageagent-new`` (the candidate, B) fails ``task-0`` and ``task-1`` in every epoch (two
clear regressions), passes ``task-5`` (a clear improvement) and fails ``task-2`` in even
epochs (lower, within noise). With ``hostile=True`` every user turn and agent reply carries
:data:`PAYLOAD`, markup and script that must reach a page as text.

``mock:pagejudge`` compares two such transcripts pairwise: the one that says ``DONE`` wins in
either order; between two equal ones it picks the response shown first (a position bias, so
the two orders disagree). Its reasoning carries :data:`PAYLOAD` when ``hostile`` is set;
with ``fail_first_shown`` set, a call whose first response contains that text fails after
retries (a judge error, never a verdict).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import ModelUnavailableError
from harness.models.request import ModelRequest
from harness.models.types import Message, T
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from tests.helpers.bound_mocks import ContextBound

PAYLOADS = (
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<script>window.__xss = 1</script>",
    '<img src=x onerror="window.__xss = 2">',
    '<a href="javascript:window.__xss = 3">click me</a>',
    "</script><script>window.__xss = 4</script>",
)
PAYLOAD = " ".join(PAYLOADS)
EPOCHS = 5
SCENARIOS = [f"task-{i}" for i in range(6)]
R = TypeVar("R")
REGRESSED, IMPROVED, NOISY = {"task-0", "task-1"}, {"task-5"}, {"task-2"}


class PageAgent(ContextBound):
    """The agents of the module docstring (``mock:pageagent``, ``mock:pageagent-new``)."""

    VARIANTS = ("new",)
    hostile = False

    def __init__(self, name: str) -> None:
        self.new = name.endswith("-new")

    def passes(self, scenario_id: str, epoch: int) -> bool:
        if self.new:
            return not (scenario_id in REGRESSED or (scenario_id in NOISY and epoch % 2 == 0))
        return scenario_id not in IMPROVED

    async def chat(self, request: ModelRequest) -> Message:
        text = "DONE" if self.passes(self.scenario_id, request.sample_index) else "no idea"
        return Message(role="assistant", content=f"{text} {PAYLOAD}" if self.hostile else text)

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        raise AssertionError("the page agent is never asked for structured output")


class PageJudge(ContextBound):
    """The pairwise judge of the module docstring (``mock:pagejudge``)."""

    hostile = False
    fail_first_shown: str | None = None

    def __init__(self, name: str) -> None:
        self.name = name

    async def chat(self, request: ModelRequest) -> Message:
        raise AssertionError("a judge is only asked for structured answers")

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        shown = self.pair
        if self.fail_first_shown is not None and self.fail_first_shown in shown.first:
            raise ModelUnavailableError("500 after 3 attempts", model=f"mock:{self.name}")
        first, second = ("DONE" in shown.first), ("DONE" in shown.second)
        verdict = "B" if second and not first else "A"
        why = ("Only one of them finished the task." if first != second
               else "Both read the same; the first one seemed fine.")
        return response_model.model_validate({
            "reasoning": f"{why}\n{PAYLOAD}" if self.hostile else why, "verdict": verdict})


def in_thread(work: Callable[..., R], *args: Any) -> R:
    """``work(*args)`` in a thread of its own: while a browser is open
    (``tests/helpers/browser.py``), Playwright's sync API keeps an event loop running in the
    main thread, where ``asyncio.run`` and the CLI's model-calling commands cannot start
    theirs."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work, *args).result()


def make_runs(base: Path, *, hostile: bool = False, epochs: int = EPOCHS) -> tuple[Path, Path]:
    """The baseline and candidate run directories under ``base`` (``mock:pageagent`` must be
    registered)."""
    PageAgent.hostile = hostile
    turn = f"do it {PAYLOAD}" if hostile else "do it"
    suites = {}
    for name, ids in (("a", [*SCENARIOS, "task-6"]), ("b", SCENARIOS)):
        suites[name] = base / f"suite-{name}.yaml"
        suites[name].write_text(json.dumps([  # JSON is YAML
            {"id": sid, "user": {"goal": "g", "script": [turn]},
             "agent": {"model": "mock:pageagent"},
             "expectations": {"required_phrases": ["DONE"]}} for sid in ids]))
    # Directory names are outside text too: the compare page shows them.
    out = {"a": base / ("A <img src=x onerror=alert(1)>" if hostile else "baseline"),
           "b": base / "candidate"}
    for name, agent in (("a", "mock:pageagent"), ("b", "mock:pageagent-new")):
        config = RunConfig(scenario_paths=[str(suites[name])], agent=agent, epochs=epochs,
                           cache_mode="off", bootstrap_resamples=0)
        in_thread(asyncio.run, run_suite(config, out[name]))
    return out["a"], out["b"]
