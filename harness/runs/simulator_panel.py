"""A simulator panel: one suite run under several user simulators, as judges sit in panels.

``harness run --simulator A --simulator B ...`` makes ``RUN_DIR/simulators/<slug>/`` an
ordinary, complete run directory per simulator (same scenarios, epochs, seed, agent and
judges), then ``RUN_DIR/simulator_panel.json`` (:class:`SimulatorPanel`): each simulator's
suite figures as its ``summary.json`` has them; for each simulator after the first, the
paired difference against the first exactly as ``harness compare`` computes it
(:func:`~harness.runs.comparison.compare_run_dirs`); the variance of a sample's score split
into scenario, simulator, their interaction and the epoch residual
(:func:`~harness.stats.crossed_variance.crossed_components`), when the design is balanced;
and one line when the run's conclusion changes with the simulator.

``RUN_DIR/simulator_panel_plan.json`` (:class:`PanelPlan`) is written before the first
sub-run starts: the simulators in order and the configuration they share, so that
``--resume RUN_DIR`` finds every sub-run, started or not. Nothing here runs a suite; the
commands run each sub-run with :func:`~harness.runs.api.run_suite`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import InputError
from harness.files import read_text, write_text_atomic
from harness.json_values import STORED_DEPTH, load_json
from harness.runs.comparison import compare_run_dirs
from harness.runs.config import RunConfig
from harness.runs.gate import GateResult
from harness.runs.store import RunStore
from harness.runs.summary import read_summary, sample_scores
from harness.runs.summary_model import RunSummary
from harness.stats.crossed_variance import crossed_components
from harness.stats.estimate import Estimate, InsufficientDataError
from harness.version import __version__
from harness.wording import plural

PANEL_FILENAME = "simulator_panel.json"
PLAN_FILENAME = "simulator_panel_plan.json"
SIMULATORS_DIR = "simulators"
PANEL_SCHEMA = "agent-eval-harness/simulator-panel"
PLAN_SCHEMA = "agent-eval-harness/simulator-panel-plan"
FLIP_LEAD = "the conclusion flips with the simulator"
VARIANCE_METHOD = (
    "method of moments on the balanced scenarios x simulators x epochs array of sample "
    "scores (two-way random-effects ANOVA with replication), each component cut at 0; the "
    "residual is the spread between epochs of one scenario under one simulator")


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PanelSimulator(_Part):
    """One simulator of the panel and the name of its sub-run's directory."""

    model: str
    slug: str = Field(description="RUN_DIR/simulators/<slug> holds its run")


class PanelPlan(_Part):
    """``simulator_panel_plan.json``: what ``--resume`` needs before any figure exists."""

    model_config = ConfigDict(extra="forbid", frozen=True, serialize_by_alias=True)

    schema_: Literal["agent-eval-harness/simulator-panel-plan"] = Field(alias="schema")
    schema_version: Literal[1]
    harness_version: str
    simulators: list[PanelSimulator] = Field(min_length=2)
    config: RunConfig = Field(description="what every sub-run shares (its simulator aside)")

    def run_dir(self, panel_dir: Path, simulator: PanelSimulator) -> Path:
        return panel_dir / SIMULATORS_DIR / simulator.slug

    def config_for(self, simulator: PanelSimulator) -> RunConfig:
        return self.config.with_design(simulator=simulator.model)


class PanelMember(_Part):
    """One simulator's run: where it is and its suite figures, read from its
    ``summary.json`` (``None`` when no sample was scored)."""

    simulator: str
    slug: str
    run_dir: str = Field(description="relative to the panel's directory")
    offline: bool
    samples: int
    scored: int
    errored: int
    mean: Estimate | None
    pass_rate: Estimate | None
    gate: GateResult | None = None


class PanelDifference(_Part):
    """A simulator's paired difference against the first (this one minus the first), on the
    agent's mean score, per scenario paired as ``harness compare`` pairs two runs; its
    ``difference`` and the t test's ``p_value`` are those of ``harness compare FIRST THIS``.
    ``None`` figures come with ``reason``."""

    simulator: str
    baseline: str
    n_scenarios: int | None = None
    difference: Estimate | None = None
    p_value: float | None = None
    test: str | None = None
    reason: str | None = None

    @property
    def excludes_zero(self) -> bool:
        d = self.difference
        return (d is not None and d.ci_low is not None and d.ci_high is not None
                and (d.ci_low > 0 or d.ci_high < 0))


class PanelVariance(_Part):
    """The variance of one sample's score split into its parts, with each part's share."""

    scenario: float
    simulator: float
    interaction: float
    residual: float
    shares: dict[str, float]
    n_scenarios: int
    n_simulators: int
    n_epochs: int
    method: str = VARIANCE_METHOD


class PanelGate(_Part):
    """The panel's gate: it passes only when it passes under every simulator."""

    passed: bool
    failed_under: list[str]


class SimulatorPanel(_Part):
    """``simulator_panel.json`` (docs/simulated-users.md, "Simulator panel")."""

    model_config = ConfigDict(extra="forbid", frozen=True, serialize_by_alias=True)

    schema_: Literal["agent-eval-harness/simulator-panel"] = Field(alias="schema")
    schema_version: Literal[1]
    harness_version: str
    confidence: float
    members: list[PanelMember] = Field(min_length=2)
    differences: list[PanelDifference]
    variance: PanelVariance | None
    gate: PanelGate | None = None
    flip: str | None = Field(description="one line when the conclusion changes with the "
                             "simulator, else None")
    scripted_scenarios: list[str] = Field(
        description="scenarios whose user is scripted: the same under every simulator")
    offline: bool
    notes: list[str]


# --- the plan ------------------------------------------------------------------------------


def simulator_slug(model: str, taken: set[str]) -> str:
    """A directory name for ``model`` (``mock:simulator`` -> ``mock-simulator``): letters,
    digits, ``.``, ``_`` and ``-``, others made ``-``; ``-2``, ``-3``, ... appended when
    ``taken`` already holds it."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.") or "simulator"
    slug, n = base, 1
    while slug.lower() in {t.lower() for t in taken}:
        n += 1
        slug = f"{base}-{n}"
    return slug


def panel_simulators(models: list[str]) -> list[PanelSimulator]:
    """The panel's simulators, in the order given, each with its slug. Raises
    :class:`InputError` naming ``--simulator`` when a model is given twice."""
    seen: set[str] = set()
    out: list[PanelSimulator] = []
    for model in models:
        if model in seen:
            raise InputError("command line", "--simulator", f"{model!r} is given twice; a "
                             "panel compares different simulators, each given once")
        seen.add(model)
        out.append(PanelSimulator(model=model, slug=simulator_slug(
            model, {s.slug for s in out})))
    return out


def is_panel(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a simulator panel (its plan), rather than one run."""
    return (run_dir / PLAN_FILENAME).is_file()


def write_plan(run_dir: Path, plan: PanelPlan) -> Path:
    path = run_dir / PLAN_FILENAME
    write_text_atomic(path, plan.model_dump_json(indent=2) + "\n")
    return path


def read_plan(run_dir: Path) -> PanelPlan:
    """The panel's plan. Raises :class:`InputError` naming the file when it is missing or
    not a plan this harness wrote."""
    return _read(run_dir / PLAN_FILENAME, PanelPlan, "a simulator panel's plan")


def new_plan(config: RunConfig, models: list[str]) -> PanelPlan:
    """The plan of a panel of ``models`` sharing ``config`` (stored as resolved: absolute
    paths, so a resume finds them from any working directory)."""
    return PanelPlan.model_validate({
        "schema": PLAN_SCHEMA, "schema_version": 1, "harness_version": __version__,
        "simulators": panel_simulators(models), "config": config})


# --- the figures ---------------------------------------------------------------------------


def write_panel(run_dir: Path, panel: SimulatorPanel) -> Path:
    """Write ``simulator_panel.json`` atomically."""
    path = run_dir / PANEL_FILENAME
    write_text_atomic(path, panel.model_dump_json(indent=2) + "\n")
    return path


def read_panel(run_dir: Path) -> SimulatorPanel:
    """``run_dir``'s ``simulator_panel.json``. Raises :class:`InputError` naming the file
    (and the field) when it is missing or malformed."""
    return _read(run_dir / PANEL_FILENAME, SimulatorPanel, "a simulator panel's figures")


_Model = TypeVar("_Model", bound=BaseModel)


def _read(path: Path, model: type[_Model], expected: str) -> _Model:
    data = load_json(read_text(path, expected), path, max_depth=STORED_DEPTH)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        raise InputError(path, where, f"{first['msg'].lower()} (not {expected} this "
                         f"harness, {__version__}, reads)") from None


def summarise_panel(run_dir: Path, plan: PanelPlan,
                    summaries: dict[str, RunSummary] | None = None) -> SimulatorPanel:
    """The panel's figures from its sub-runs' stores and summaries (``summaries`` by slug,
    when the caller has them with their gates; else each ``summary.json`` is read)."""
    summaries = summaries or {}
    sims = plan.simulators
    dirs = [plan.run_dir(run_dir, s) for s in sims]
    read = [summaries.get(s.slug) or read_summary(d) for s, d in zip(sims, dirs, strict=True)]
    confidence = plan.config.design.confidence
    members = [_member(s, summary) for s, summary in zip(sims, read, strict=True)]
    # compare's default alpha is 0.05; rounding keeps 1 - 0.95 from being 0.050000000000000044
    alpha = round(1.0 - confidence, 12)
    differences = [_difference(dirs[0], d, sims[0].model, s.model, alpha)
                   for s, d in zip(sims[1:], dirs[1:], strict=True)]
    notes: list[str] = []
    variance, why = _variance(dirs, [summary.config.design.error_policy for summary in read])
    if why:
        notes.append(f"no variance components: {why}")
    notes += [f"{d.simulator} against {d.baseline}: {d.reason}" for d in differences
              if d.reason]
    scripted = _scripted(dirs[0])
    if scripted:
        notes.append(
            f"{plural(len(scripted), 'scenario')} with a scripted user "
            f"({', '.join(scripted)}) {'plays' if len(scripted) == 1 else 'play'} the same "
            "under every simulator: included in every figure, they add no simulator "
            "difference of their own")
    gate = _gate(members)
    return SimulatorPanel.model_validate({
        "schema": PANEL_SCHEMA, "schema_version": 1, "harness_version": __version__,
        "confidence": confidence, "members": members, "differences": differences,
        "variance": variance, "gate": gate, "flip": flip_line(members, differences, gate),
        "scripted_scenarios": scripted, "offline": any(m.offline for m in members),
        "notes": notes})


def _member(simulator: PanelSimulator, summary: RunSummary) -> PanelMember:
    score = summary.score
    return PanelMember(
        simulator=simulator.model, slug=simulator.slug,
        run_dir=f"{SIMULATORS_DIR}/{simulator.slug}", offline=summary.offline,
        samples=summary.counts.samples, scored=summary.counts.scored,
        errored=summary.counts.errored,
        mean=None if score is None else score.mean_estimate,
        pass_rate=None if score is None else score.pass_rate, gate=summary.gate)


def _difference(baseline: Path, candidate: Path, first: str, this: str,
                alpha: float) -> PanelDifference:
    """``harness compare baseline candidate``'s difference and t test, at ``alpha``."""
    try:
        data = compare_run_dirs(baseline, candidate, alpha=alpha)
    except InsufficientDataError as err:
        return PanelDifference(simulator=this, baseline=first,
                               reason=f"no paired difference ({err})")
    return PanelDifference(
        simulator=this, baseline=first, n_scenarios=data["n_scenarios"],
        difference=Estimate.model_validate(data["difference"]),
        p_value=data["t_test"]["p_value"], test=data["t_test"]["method"])


def panel_scores(dirs: list[Path], policies: list[str]
                 ) -> list[dict[tuple[str, int], float]]:
    """Each sub-run's score per (scenario, epoch), under its error policy."""
    out = []
    for path, policy in zip(dirs, policies, strict=True):
        with RunStore.open(path, read_only=True) as store:
            out.append({(sid, epoch): score
                        for sid, epoch, score, _ in sample_scores(store, policy)})
    return out


def _variance(dirs: list[Path], policies: list[str]
              ) -> tuple[PanelVariance | None, str | None]:
    """The crossed components, or why there are none."""
    import numpy as np

    cells = panel_scores(dirs, policies)
    keys = set(cells[0])
    scenarios = sorted({sid for sid, _ in keys})
    epochs = sorted({epoch for _, epoch in keys})
    if len(scenarios) < 2:
        return None, ("they need scored samples of at least 2 scenarios, and the first "
                      f"simulator's run has {len(scenarios)}")
    grid = len(scenarios) * len(epochs)
    holes = sum(grid - len(set(c) & {(s, e) for s in scenarios for e in epochs})
                for c in cells) + sum(len(set(c) - keys) for c in cells[1:])
    if holes:
        return None, (f"the design is not balanced: {plural(holes, 'sample')} of the "
                      f"{len(scenarios)} scenarios x {len(cells)} simulators x "
                      f"{plural(len(epochs), 'epoch')} grid "
                      f"{'has' if holes == 1 else 'have'} no score (errored, unscored or "
                      "missing), and the decomposition needs every cell")
    y = np.array([[[c[(s, e)] for e in epochs] for c in cells] for s in scenarios])
    parts = crossed_components(y)
    return PanelVariance(scenario=parts.scenario, simulator=parts.simulator,
                         interaction=parts.interaction, residual=parts.residual,
                         shares=parts.shares(), n_scenarios=len(scenarios),
                         n_simulators=len(cells), n_epochs=len(epochs)), None


def _scripted(run_dir: Path) -> list[str]:
    with RunStore.open(run_dir, read_only=True) as store:
        return sorted(sid for sid, s in store.scenario_definitions().items()
                      if s.user.scripted)


def _gate(members: list[PanelMember]) -> PanelGate | None:
    if all(m.gate is None for m in members):
        return None
    failed = [m.simulator for m in members if m.gate is None or not m.gate.passed]
    return PanelGate(passed=not failed, failed_under=failed)


def flip_line(members: list[PanelMember], differences: list[PanelDifference],
              gate: PanelGate | None) -> str | None:
    """One line when the run's conclusion differs between simulators: with a gate, when it
    passes under one simulator and fails under another; without one, when a paired
    difference's interval excludes 0 (the agent's mean score depends on who plays the
    user). ``None`` otherwise."""
    if gate is not None:
        if not gate.failed_under or len(gate.failed_under) == len(members):
            return None
        passing = [m.simulator for m in members if m.simulator not in gate.failed_under]
        return (f"{FLIP_LEAD}: gate PASS under {', '.join(passing)}, FAIL under "
                f"{', '.join(gate.failed_under)}")
    moved = [d for d in differences if d.excludes_zero]
    if not moved:
        return None
    parts = []
    for d in moved:
        assert d.difference is not None and d.difference.ci_low is not None
        assert d.difference.ci_high is not None
        word = "higher" if d.difference.value > 0 else "lower"
        parts.append(f"the agent's mean score is {word} under {d.simulator} than under "
                     f"{d.baseline}: difference {d.difference.value:+.3f} "
                     f"[{d.difference.ci_low:+.3f}, {d.difference.ci_high:+.3f}], an "
                     "interval that excludes 0")
    return f"{FLIP_LEAD}: " + "; ".join(parts)
