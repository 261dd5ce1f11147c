"""What a run will cost before it starts (``harness run --dry-run``, and ``--max-cost``'s
check before the first call): the model calls per role, their tokens, the cost at list price,
with the providers' prompt caches, and with the judges' requests batched too, the time it
will take, and what the decision the user asked for (a pass-rate gate) needs and costs.

Two sources, per scenario:

- **measured**: a previous run of the same scenarios (``--estimate-from RUN_DIR``) stored
  every sample's calls and tokens per role; the estimate is their mean
  per sample, priced for this run's models. Its pass rates give the variance a gate needs.
- **estimated** from the scenario itself, when no run has it: the user turns (a script's
  length; a plan's steps plus one, else three, within ``max_user_turns``), one agent step per
  turn and per expected tool call, the text the scenario and its tools hold, and the judge
  prompts rendered for real, with fixed allowances for what only the models will write
  (:data:`ALLOWANCE`). A heuristic, stated as such; docs/models.md gives its error on the
  example suite (``benchmarks/cost_estimate.py``).

The time is the calls' latency over the samples in flight, unless the providers' rate limits
(``requests_per_minute``, ``tokens_per_minute``, ``--rate-limit``) allow less: a provider's
calls over its requests a minute, and its tokens over its tokens a minute, bound it from
below, and the basis names the limit that does.

Nothing here calls a model or writes a file.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from harness.judging.grounding import GroundingReply
from harness.judging.judge import JudgeSettings
from harness.judging.prompts import build_judge_prompt
from harness.judging.rubric import Rubric
from harness.judging.verdicts import response_model_for
from harness.models.batch import BATCH_DISCOUNT
from harness.models.config import RateLimits
from harness.models.prices import Price, PriceTable
from harness.models.types import Message
from harness.runs.config import RunConfig
from harness.runs.judge_record import rubric_as_judged
from harness.runs.store import RunStore
from harness.scenarios.schema import Scenario
from harness.simulation.simulator import SimulatorTurn, simulator_messages
from harness.transcript import Transcript

Role = Literal["agent", "simulator", "judge"]
ROLES: tuple[Role, ...] = ("agent", "simulator", "judge")

CHARS_PER_TOKEN = 4
"""About four characters a token, the usual rule for English text."""
MIN_CACHED_PREFIX = 1024
"""The shortest prefix the providers' prompt caches keep (Anthropic's Sonnet and Opus,
OpenAI's), in tokens."""
DEFAULT_LATENCY_S = 2.0
"""A model call's seconds when no previous run measured them."""

ALLOWANCE = {
    "user_message": 30,  # what a simulated user writes in a turn
    "agent_reply": 80,  # the agent's answer in a turn
    "tool_call": 30,  # a tool call's name and arguments
    "tool_result": 60,  # a mocked tool's answer
    "simulator_reply": 60,  # the simulator's structured move
    "verdict_per_criterion": 90,  # a judge's reasoning, evidence and score for one criterion
}
"""Tokens assumed for what the models will write, where no run has measured it."""


def tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


@dataclass
class Shape:
    """One role's calls in one sample: counts and tokens (means, when measured)."""

    calls: float = 0.0
    input_tokens: float = 0.0
    output_tokens: float = 0.0
    cache_read_tokens: float = 0.0
    cache_write_tokens: float = 0.0
    latency_s: float = 0.0  # summed over the sample's calls

    def add(self, other: Shape, weight: float = 1.0) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + weight * getattr(other, f.name))


SampleShape = dict[Role, Shape]


# --- measured ----------------------------------------------------------------------------------


@dataclass
class Measured:
    """A previous run's samples, per scenario: the mean shape of a sample, and the pass
    verdicts (for a gate's variance)."""

    run_dir: Path
    shapes: dict[str, SampleShape] = field(default_factory=dict)
    passes: dict[str, list[float]] = field(default_factory=dict)
    samples: int = 0


def measure(run_dir: Path) -> Measured:
    """Read a run's stored samples. Raises :class:`~harness.runs.store.StoreError` for a
    store that cannot be read."""
    sums: dict[str, SampleShape] = defaultdict(lambda: {r: Shape() for r in ROLES})
    counts: dict[str, int] = defaultdict(int)
    out = Measured(run_dir)
    with RunStore.open(run_dir, read_only=True) as store:
        for record in store.iter_samples():
            if record.errored:
                continue  # an errored sample stopped early: its calls are not a sample's
            sid = record.scenario_id
            counts[sid] += 1
            for role in ROLES:
                u = record.usage.get(role)
                if u is not None:
                    sums[sid][role].add(Shape(u.calls, u.input_tokens, u.output_tokens,
                                              u.prompt_cache_read_tokens,
                                              u.prompt_cache_write_tokens, u.latency_s))
            if record.passed is not None:
                out.passes.setdefault(sid, []).append(float(record.passed))
    for sid, shape in sums.items():
        out.shapes[sid] = {}
        for role, s in shape.items():
            mean = Shape()
            mean.add(s, 1.0 / counts[sid])
            out.shapes[sid][role] = mean
    out.samples = sum(counts.values())
    return out


# --- estimated from the scenario -------------------------------------------------------------


def user_turns(scenario: Scenario) -> int:
    """The user turns an episode of ``scenario`` is expected to have."""
    user, limit = scenario.user, scenario.limits.max_user_turns
    if user.script:
        return min(limit, len(user.script))
    steps = [line for line in (user.plan or "").splitlines() if line.strip()]
    return min(limit, len(steps) + 1 if steps else 3)


def _growing(base: int, growth: Sequence[int]) -> tuple[int, int, int]:
    """``(input, cache_read, cache_write)`` tokens of requests that each resend the prompt
    so far: ``base`` then ``base + growth[0]``... A request reads what the one before it
    stored once that reached :data:`MIN_CACHED_PREFIX`, and stores what it adds."""
    total = read = write = 0
    prompt, previous = base, 0
    for step, grow in enumerate([0, *growth]):
        prompt += grow
        total += prompt
        if step and previous >= MIN_CACHED_PREFIX:
            read += previous
        if prompt >= MIN_CACHED_PREFIX:
            write += prompt - (previous if previous >= MIN_CACHED_PREFIX and step else 0)
        previous = prompt
    return total, read, write


def estimate_shape(scenario: Scenario, judges: Sequence[tuple[Rubric, JudgeSettings]],
                   n_judges: int) -> SampleShape:
    """A sample of ``scenario`` estimated from its text (see the module docstring)."""
    turns = user_turns(scenario)
    expected_calls = len(scenario.expectations.tool_calls or [])
    script = scenario.user.script or []
    user_text = [tokens(t) for t in script[:turns]] or [ALLOWANCE["user_message"]] * turns
    # what the agent is sent of the tools: names, descriptions, argument schemas
    tools = json.dumps([{"name": t.name, "description": t.description,
                         "parameters": t.parameters} for t in scenario.tools])
    system = tokens(scenario.agent.system_prompt) + tokens(tools)
    # agent steps: one per turn plus one per expected call, each resending the conversation
    # so far; between two of them it grows by a tool call and its result, or by the agent's
    # reply and the next user message
    growth: list[int] = []
    for turn in range(turns):
        if turn:
            growth.append(ALLOWANCE["agent_reply"] + user_text[turn])
        calls_now = expected_calls // turns + (turn < expected_calls % turns)
        growth.extend([ALLOWANCE["tool_call"] + ALLOWANCE["tool_result"]] * calls_now)
    agent_in, agent_read, agent_write = _growing(system + user_text[0], growth)
    conversation = user_text[0] + sum(growth) + ALLOWANCE["agent_reply"]
    agent = Shape(calls=turns + expected_calls, input_tokens=agent_in,
                  output_tokens=turns * ALLOWANCE["agent_reply"]
                  + expected_calls * ALLOWANCE["tool_call"],
                  cache_read_tokens=agent_read, cache_write_tokens=agent_write)
    shape: SampleShape = {"agent": agent, "simulator": Shape(), "judge": Shape()}
    if not scenario.user.scripted:
        # its profile, and the schema of its structured move (sent as a tool)
        profile = (tokens(simulator_messages(scenario.user, [])[0].content)
                   + tokens(json.dumps(SimulatorTurn.model_json_schema())))
        per_turn = conversation // max(1, turns)
        calls = turns + 1
        shape["simulator"] = Shape(
            calls=calls,
            input_tokens=sum(profile + per_turn * i for i in range(calls)),
            output_tokens=calls * ALLOWANCE["simulator_reply"],
            # only its profile recurs (its conversation is written afresh in each request)
            cache_read_tokens=(calls - 1) * profile if profile >= MIN_CACHED_PREFIX else 0,
            cache_write_tokens=profile if profile >= MIN_CACHED_PREFIX else 0)
    shape["judge"] = _judge_shape(scenario, judges, n_judges, turns, conversation)
    return shape


def _judge_shape(scenario: Scenario, judges: Sequence[tuple[Rubric, JudgeSettings]],
                 n_judges: int, turns: int, conversation: int) -> Shape:
    shape = Shape()
    probe = Transcript(scenario_id=scenario.id, epoch=0, stop_reason="goal_met", messages=[
        Message(role="user", content="x"), Message(role="assistant", content="y")])
    for rubric, settings in judges:
        per_turn = rubric.target in ("agent_turn", "user_turn")
        prompt = build_judge_prompt(rubric, probe, turn=0 if per_turn else None).messages
        # the rubric and the verdict's schema (sent as a tool) recur for every transcript
        schema = (GroundingReply if rubric.target == "sentence_grounding"
                  else response_model_for(rubric)).model_json_schema()
        instructions = tokens(prompt[0].content) + tokens(json.dumps(schema))
        material = tokens(prompt[1].content) + conversation
        asks = settings.samples * n_judges * (turns if per_turn else 1)
        shape.calls += asks
        shape.input_tokens += asks * (instructions + material)
        shape.output_tokens += asks * ALLOWANCE["verdict_per_criterion"] * len(rubric.criteria)
        whole = instructions + material
        if settings.samples > 1 and whole >= MIN_CACHED_PREFIX:
            # the first sample stores the prompt, the others read it
            reads = asks - asks // settings.samples
            shape.cache_read_tokens += reads * whole
            shape.cache_write_tokens += (asks // settings.samples) * whole
        elif instructions >= MIN_CACHED_PREFIX:
            # the rubric recurs for every transcript: stored by the run's first ask, read by
            # the others (one write per run is too small to count)
            shape.cache_read_tokens += asks * instructions
    return shape


# --- the estimate ---------------------------------------------------------------------------


class RoleCost(BaseModel):
    """One role's calls, tokens and cost over the whole run. Costs are ``None`` when its
    model has no price."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    models: list[str]
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    cost_with_cache_usd: float | None
    cost_with_batch_and_cache_usd: float | None


class DecisionCost(BaseModel):
    """What the decision asked for needs: the design and its price."""

    model_config = ConfigDict(extra="forbid")

    decision: str
    achievable: bool
    n_scenarios: int
    epochs: int | None
    samples: int | None
    cost_usd: float | None
    cost_with_batch_and_cache_usd: float | None
    method: str
    reason: str | None = None


class CostEstimate(BaseModel):
    """The whole estimate (``harness run --dry-run --json`` prints it)."""

    model_config = ConfigDict(extra="forbid")

    scenarios: int
    epochs: int
    samples: int
    measured_scenarios: int
    measured_from: str | None
    roles: list[RoleCost]
    cost_usd: float | None
    cost_with_cache_usd: float | None
    cost_with_batch_and_cache_usd: float | None
    unpriced_models: list[str]
    duration_s: float
    duration_basis: str
    decision: DecisionCost | None = None
    method: str = ("measured: the mean calls and tokens per sample of a previous run; "
                   "estimated: the scenario's turns, tools and rubrics at about 4 characters "
                   "a token, with fixed allowances for what the models write")


FREE = Price(input_per_mtok=0.0, output_per_mtok=0.0)


@dataclass(frozen=True)
class Pricing:
    """The models of each role and the prices to apply."""

    models: Mapping[Role, Sequence[str]]
    prices: PriceTable

    def cost(self, role: Role, shape: Shape, *, cache: bool, batch: bool) -> float | None:
        names = list(self.models.get(role) or [])
        if not names or not shape.calls:
            return 0.0
        found: list[Price] = []
        for name in names:
            # an offline mock: model costs nothing
            price = FREE if name.startswith("mock:") else self.prices.lookup(name)
            if price is None:
                return None
            found.append(price)
        # several judges share the calls evenly (a panel asks each the same)
        share = 1.0 / len(found)
        total = 0.0
        for price in found:
            read = round(shape.cache_read_tokens * share) if cache else 0
            write = round(shape.cache_write_tokens * share) if cache else 0
            total += price.cost(round(shape.input_tokens * share),
                                round(shape.output_tokens * share), read, write)
        discount = BATCH_DISCOUNT if batch and role == "judge" else 1.0
        return total * discount


def _sum(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v or 0.0 for v in values)


def role_models(config: RunConfig, scenarios: Sequence[Scenario]) -> dict[Role, list[str]]:
    """The models each role calls (offline ``mock:`` models included)."""
    design = config.design
    agents = {design.agent or s.agent.model or "" for s in scenarios if s.agent.is_model}
    agents |= {name for s in scenarios if s.agent.adk is not None for name in adk_models(s)}
    users = {design.simulator or s.user.model or "" for s in scenarios if not s.user.scripted}
    judges = list(design.judges) if any(s.rubrics for s in scenarios) else []
    return {"agent": sorted(a for a in agents if a), "simulator": sorted(u for u in users if u),
            "judge": judges}


def adk_models(scenario: Scenario) -> list[str]:
    """The models the scenario's ADK agent calls, so its calls are priced (the agent is
    imported, as loading the suite already did; :class:`~harness.errors.InputError` if it
    does not import)."""
    from harness.simulation.adk_agent import load_adk_agent
    from harness.simulation.adk_plugin import agent_models

    assert scenario.agent.adk is not None
    return agent_models(load_adk_agent(scenario.agent.adk, base_dir=scenario.base_dir))


def estimate_run(config: RunConfig, scenarios: Sequence[Scenario],
                 rubrics: Mapping[str, Rubric], prices: PriceTable, *,
                 measured: Measured | None = None, batch: bool = True,
                 concurrency: int | None = None,
                 rate_limits: Mapping[str, RateLimits] | None = None) -> CostEstimate:
    """The estimate for ``config`` over ``scenarios`` (see the module docstring).
    ``rate_limits`` are the providers' limits the run holds (the models YAML's with
    ``--rate-limit`` over them), which bound its time from below."""
    design = config.design
    epochs = design.epochs
    judge_base = JudgeSettings(temperature=design.judge_temperature)
    totals: dict[Role, Shape] = {r: Shape() for r in ROLES}
    measured_ids = 0
    for s in scenarios:
        shape = measured.shapes.get(s.id) if measured is not None else None
        if shape is not None:
            measured_ids += 1
        else:
            judged = [rubric_as_judged(design, dict(rubrics), s, rid, judge_base)
                      for rid in s.rubrics] if design.judges and not design.no_judge else []
            shape = estimate_shape(s, judged, max(1, len(design.judges)))
        for role in ROLES:
            totals[role].add(shape[role], float(epochs))
    pricing = Pricing(role_models(config, scenarios), prices)
    roles = [RoleCost(
        role=role, models=list(pricing.models.get(role) or []), calls=round(t.calls),
        input_tokens=round(t.input_tokens), output_tokens=round(t.output_tokens),
        cache_read_tokens=round(t.cache_read_tokens),
        cache_write_tokens=round(t.cache_write_tokens),
        cost_usd=pricing.cost(role, t, cache=False, batch=False),
        cost_with_cache_usd=pricing.cost(role, t, cache=True, batch=False),
        cost_with_batch_and_cache_usd=pricing.cost(role, t, cache=True, batch=batch),
    ) for role, t in totals.items() if t.calls]
    unpriced = sorted({m for r in roles for m in r.models if prices.lookup(m) is None
                       and not m.startswith("mock:")})
    samples = len(scenarios) * epochs
    duration, basis = _duration(totals, samples, concurrency or config.execution.concurrency,
                                measured_ids == len(scenarios) and measured is not None)
    duration, basis = _within_rate_limits(duration, basis, totals, pricing.models,
                                          rate_limits or {})
    return CostEstimate(
        scenarios=len(scenarios), epochs=epochs, samples=samples,
        measured_scenarios=measured_ids,
        measured_from=str(measured.run_dir) if measured is not None and measured_ids else None,
        roles=roles, cost_usd=_sum([r.cost_usd for r in roles]),
        cost_with_cache_usd=_sum([r.cost_with_cache_usd for r in roles]),
        cost_with_batch_and_cache_usd=_sum([r.cost_with_batch_and_cache_usd for r in roles]),
        unpriced_models=unpriced, duration_s=duration, duration_basis=basis,
    )


def _duration(totals: Mapping[Role, Shape], samples: int, concurrency: int,
              measured: bool) -> tuple[float, str]:
    """Seconds the run should take: its samples' calls one after another within a sample,
    ``concurrency`` samples at a time."""
    lanes = max(1, min(concurrency, samples))
    latency = sum(t.latency_s for t in totals.values())
    if measured and latency:
        return latency / lanes, f"measured call times, {lanes} samples at a time"
    calls = sum(t.calls for t in totals.values())
    return (calls * DEFAULT_LATENCY_S / lanes,
            f"{DEFAULT_LATENCY_S:g} s a call, {lanes} samples at a time")


def _within_rate_limits(seconds: float, basis: str, totals: Mapping[Role, Shape],
                        models: Mapping[Role, Sequence[str]],
                        limits: Mapping[str, RateLimits]) -> tuple[float, str]:
    """``seconds`` raised to what the rate limits allow, when they allow less: a provider's
    calls over its requests per minute, and its tokens (input and output, what a request
    costs once its usage is settled) over its tokens per minute. The basis then says which
    limit bounds the time."""
    calls: dict[str, float] = {}
    tokens: dict[str, float] = {}
    for role, shape in totals.items():
        names = list(models.get(role) or [])
        for name in names:  # a panel's judges share the calls evenly
            provider = name.split(":", 1)[0]
            calls[provider] = calls.get(provider, 0.0) + shape.calls / len(names)
            tokens[provider] = tokens.get(provider, 0.0) + (
                shape.input_tokens + shape.output_tokens) / len(names)
    bound, because = seconds, ""
    for provider, limit in limits.items():
        rpm, tpm = limit.requests_per_minute, limit.tokens_per_minute
        for need, per_minute, unit in ((calls.get(provider, 0.0), rpm, "requests"),
                                       (tokens.get(provider, 0.0), tpm, "tokens")):
            if per_minute and need / per_minute * 60.0 > bound:
                bound = need / per_minute * 60.0
                because = f"{provider}'s rate limit of {per_minute:,} {unit} a minute"
    if not because:
        return seconds, basis
    return bound, f"{because} (without it: {basis})"


# --- the decision -----------------------------------------------------------------------------


def gate_design(estimate: CostEstimate, measured: Measured | None, scenario_ids: Sequence[str],
                *, min_pass_rate: float, confidence: float, power: float = 0.8
                ) -> DecisionCost:
    """What ``--min-pass-rate`` needs: the epochs per scenario (with these scenarios) for the
    pass rate's lower bound to clear ``min_pass_rate`` with probability ``power``, if the
    pass rates stay where the previous run measured them; priced at this estimate's cost per
    sample."""
    from harness.stats.power import epochs_for_margin

    decision = f"--min-pass-rate {min_pass_rate:g} on the lower bound"
    method = ("the lower bound clears the threshold with 80% power: (z_{1-a/2} + z_power)^2 "
              "(between + within / K) / C <= margin^2, margin = measured pass rate - threshold")
    passes = {sid: measured.passes[sid] for sid in scenario_ids
              if measured is not None and sid in measured.passes}
    if len(passes) < len(scenario_ids):
        return DecisionCost(
            decision=decision, achievable=False, n_scenarios=len(scenario_ids), epochs=None,
            samples=None, cost_usd=None, cost_with_batch_and_cache_usd=None, method=method,
            reason="needs a previous run of every scenario to measure the pass rates: run "
                   "a pilot (e.g. --epochs 3) and pass --estimate-from RUN_DIR")
    between, within, mean = _pass_variance(passes)
    need = epochs_for_margin(mean - min_pass_rate, n_scenarios=len(passes),
                             between_variance=between, within_variance=within,
                             alpha=1 - confidence, power=power)
    per_sample = _per_sample(estimate)
    samples = None if need.epochs is None else need.epochs * len(passes)
    return DecisionCost(
        decision=decision, achievable=need.achievable, n_scenarios=len(passes),
        epochs=need.epochs, samples=samples,
        cost_usd=None if samples is None or per_sample[0] is None else samples * per_sample[0],
        cost_with_batch_and_cache_usd=None if samples is None or per_sample[1] is None
        else samples * per_sample[1],
        method=method, reason=need.reason)


def _pass_variance(passes: Mapping[str, Sequence[float]]) -> tuple[float, float, float]:
    """``(between, within, mean)`` of the pass verdicts; one scenario has no between part
    (it is gated on its own interval)."""
    values = [x for xs in passes.values() for x in xs]
    mean = sum(values) / len(values)
    if len(passes) == 1:
        return 0.0, mean * (1 - mean), mean
    from harness.stats.variance import variance_components

    try:
        components = variance_components({k: list(v) for k, v in passes.items()})
    except ValueError:
        return 0.0, mean * (1 - mean), mean
    return components.between, components.within, mean


def _per_sample(estimate: CostEstimate) -> tuple[float | None, float | None]:
    if not estimate.samples:
        return None, None
    plain, best = estimate.cost_usd, estimate.cost_with_batch_and_cache_usd
    return (None if plain is None else plain / estimate.samples,
            None if best is None else best / estimate.samples)


def fmt_duration(seconds: float) -> str:
    """``42 s``, ``7 min``, ``3.5 h``."""
    if seconds < 90:
        return f"{math.ceil(seconds)} s"
    if seconds < 5400:
        return f"{math.ceil(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
