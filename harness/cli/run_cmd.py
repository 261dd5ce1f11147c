"""``harness run``, ``harness report`` and ``harness compare``: run a suite (or resume one),
show a run's summary again, and compare two runs scenario by scenario."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.choices import (
    AggregationMethod,
    CacheMode,
    ExecutorName,
    PairedTest,
    ReaskMode,
    RunGateBasis,
)
from harness.cli.app import (
    EXIT_GATE_FAILED,
    ExcludeTags,
    Keywords,
    Tags,
    Verbose,
    app,
    check_target_mdd,
    html_output,
    logs_to,
    scenario_filter,
)
from harness.cli.help_format import (
    CACHE_PANEL,
    EXECUTION_PANEL,
    GATE_PANEL,
    JUDGES_PANEL,
    LIMITS_PANEL,
    MODELS_PANEL,
    OUTPUT_PANEL,
    SAMPLING_PANEL,
    STATS_PANEL,
    examples,
)
from harness.cli.rate_limit_option import RateLimitOption, parse_rate_limits
from harness.cli.run_finish import (
    ERR,
    RunProgress,
    finish_run,
    print_summary_json,
    run_to_end,
)
from harness.errors import HarnessError, InputError
from harness.files import default_output_directory
from harness.logs import LOG_FILENAME
from harness.safe_text import terminal_console, terminal_text

# The work of these commands is imported when a command runs, not when the CLI starts (so
# --help and the other commands do not pay for the runner, scipy and the model SDKs).
if TYPE_CHECKING:
    from harness.calibration.run_agreement import RunLabels
    from harness.runs.config import RunConfig
    from harness.runs.summary_model import RunSummary



# The CI gate's options, on `run` and `merge`.
MinPassRate = Annotated[float | None, typer.Option(
    metavar="RATE", rich_help_panel=GATE_PANEL, help="exit 1 below this pass rate")]
MinScore = Annotated[float | None, typer.Option(
    metavar="SCORE", rich_help_panel=GATE_PANEL, help="exit 1 below this mean score")]
GateOn = Annotated[RunGateBasis, typer.Option(
    rich_help_panel=GATE_PANEL,
    help="gate on the figure itself, on the lower end of its interval, or on the lower end "
    "of the figure corrected by the run's random human labels")]
GateLabels = Annotated[Path | None, typer.Option(
    "--labels", metavar="FILE", rich_help_panel=GATE_PANEL,
    help="with --gate-on corrected-lower-bound: human labels of the run's samples (contract "
    "10 JSONL) instead of those stored in the run")]


def check_gate_labels(gate_on: RunGateBasis, labels: Path | None) -> None:
    """Refuse ``--labels`` when the gate does not use it (it would be silently ignored)."""
    if labels is not None and gate_on != "corrected-lower-bound":
        raise InputError("command line", "--labels", "applies only with --gate-on "
                         "corrected-lower-bound (the labels correct the gated figures)")


# Options that may be given with --resume: they change how the run continues or what is
# printed, never what a finished sample means. Everything else is the stored configuration.
RESUME_OPTIONS = frozenset({
    "resume", "concurrency", "workers", "executor", "ray_address", "max_cost", "max_calls",
    "episode_timeout", "rate_limit", "retry_errors", "rerun_simulator_faults", "judge_batch",
    "judge_batch_reask",
    "as_json", "min_pass_rate", "min_score", "gate_on", "labels", "verbose",
})


def _given(ctx: typer.Context, names: set[str]) -> list[str]:
    """The command-line names of the options among ``names`` that the user gave, whatever
    their value (an option repeated with its default value was still asked for)."""
    given = []
    for param in ctx.command.params:
        if param.name is None or param.name not in names:
            continue
        source = ctx.get_parameter_source(param.name)
        # Compared by name: typer ships its own copy of click, whose enum is not click's.
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            names_of = [*param.opts, *getattr(param, "secondary_opts", [])]
            given.append("/".join(names_of) if names_of else param.name)
    return given


def _check_option_combinations(ctx: typer.Context, *, resume: Path | None,
                               paths: list[Path] | None, adaptive: bool,
                               cache_mode: str | None) -> None:
    """Refuse options that would otherwise be silently ignored."""
    if resume is not None:
        if paths:
            raise HarnessError("give scenario paths or --resume DIR, not both")
        params = {p.name for p in ctx.command.params if p.name} - RESUME_OPTIONS - {"paths"}
        fixed = _given(ctx, params)
        if fixed:
            raise HarnessError(
                f"--resume continues {resume} with its stored configuration, so "
                f"{', '.join(fixed)} cannot be given with it. Only --concurrency, --workers, "
                "--executor, --ray-address, --max-cost, --max-calls, --episode-timeout, "
                "--rate-limit, --judge-batch, --judge-batch-reask, "
                "--retry-errors, --rerun-simulator-faults and the output and gate options "
                "(--json, --min-pass-rate, --min-score, --gate-on, --labels) may change; "
                "start a new run (--out DIR) to change the others"
            )
        return
    if _given(ctx, {"retry_errors"}):
        raise HarnessError("--retry-errors applies only with --resume DIR (a new run has no "
                           "errored samples to retry)")
    if _given(ctx, {"agent_base_url"}) and not _given(ctx, {"agent"}):
        # Ignored, the scenarios' own agent models would go to their provider's default URL.
        raise HarnessError("--agent-base-url applies only with --agent MODEL (the model served "
                           "there); a scenario's own agent.model uses its provider's base URL "
                           "(OPENAI_BASE_URL, ANTHROPIC_BASE_URL or --models-config)")
    if cache_mode == "off" and _given(ctx, {"cache"}):
        raise HarnessError("--cache PATH and --cache-mode off disagree: a cache that is off "
                           "has no file; give one or the other")
    if adaptive and _given(ctx, {"shard"}):
        raise HarnessError("--shard cannot be combined with --target-ci-width: adaptive "
                           "sampling's rounds need every scenario's scores")
    if not adaptive:
        orphans = _given(ctx, {"pilot_epochs", "max_epochs"})
        if orphans:
            verb = "applies" if len(orphans) == 1 else "apply"
            raise HarnessError(f"{', '.join(orphans)} {verb} only with --target-ci-width "
                               "(adaptive sampling)")


@app.command(epilog=examples(
    ("the example suite with mock: models (no key, no network)",
     "harness run scenarios/ --offline --epochs 5 --out runs/first"),
    ("a real agent and judge; exit 1 unless the pass rate's lower bound is 0.8",
     "harness run evals/ --agent openai:gpt-4.1 --judge openai:gpt-4.1 \\\n"
     "    --min-pass-rate 0.8 --gate-on lower-bound"),
    ("finish a run that was stopped (Ctrl-C, a budget, a lost worker)",
     "harness run --resume runs/first")))
def run(
    ctx: typer.Context,
    paths: Annotated[list[Path] | None, typer.Argument(
        help="scenario files or folders (not with --resume)")] = None,
    tag: Tags = None,
    exclude_tag: ExcludeTags = None,
    keyword: Keywords = None,
    agent: Annotated[str | None, typer.Option(
        metavar="MODEL", rich_help_panel=MODELS_PANEL,
        help="agent model for every model agent, e.g. anthropic:claude-sonnet-4-5; "
        "adk:package.module:root_agent runs that ADK agent in place of each")] = None,
    agent_base_url: Annotated[str | None, typer.Option(
        metavar="URL", rich_help_panel=MODELS_PANEL,
        help="base URL for --agent (an OpenAI-compatible server)")] = None,
    simulator: Annotated[list[str] | None, typer.Option(
        metavar="MODEL", rich_help_panel=MODELS_PANEL,
        help="user simulator model; repeat for a panel (one run per simulator, compared)")
    ] = None,
    judge: Annotated[list[str] | None, typer.Option(
        metavar="MODEL", rich_help_panel=JUDGES_PANEL,
        help="judge model; repeat for a panel")] = None,
    no_judge: Annotated[bool, typer.Option(
        "--no-judge", rich_help_panel=JUDGES_PANEL, help="skip rubric judging on purpose")
    ] = False,
    judge_samples: Annotated[int | None, typer.Option(
        metavar="N", rich_help_panel=JUDGES_PANEL,
        help="judge samples per transcript, for every rubric (default: each rubric's own "
        "`samples`, else 1)")] = None,
    judge_temperature: Annotated[float | None, typer.Option(
        metavar="T", rich_help_panel=JUDGES_PANEL,
        help="judges' sampling temperature, 0 to 2 (default: the provider's)")] = None,
    judge_aggregation: Annotated[AggregationMethod | None, typer.Option(
        rich_help_panel=JUDGES_PANEL,
        help="how a rubric's judge samples combine, for every rubric (default: each rubric's "
        "own `aggregation`, else mean)")] = None,
    judge_batch: Annotated[bool, typer.Option(
        "--judge-batch", rich_help_panel=JUDGES_PANEL,
        help="send OpenAI and Anthropic judges' requests through their batch APIs: half the "
        "price, scored when each batch ends; --resume collects batches later")] = False,
    judge_batch_reask: Annotated[ReaskMode, typer.Option(
        rich_help_panel=JUDGES_PANEL,
        help="with --judge-batch: where a re-ask of an answer that failed validation "
        "goes")] = "live",
    rubrics: Annotated[list[Path] | None, typer.Option(
        metavar="PATH", rich_help_panel=JUDGES_PANEL,
        help="extra rubric files or folders")] = None,
    offline: Annotated[bool, typer.Option(
        rich_help_panel=MODELS_PANEL,
        help="use mock: models for every model not named (no keys, no network)")] = False,
    epochs: Annotated[int, typer.Option(
        metavar="K", rich_help_panel=SAMPLING_PANEL, help="samples per scenario")] = 5,
    concurrency: Annotated[int, typer.Option(
        metavar="N", rich_help_panel=EXECUTION_PANEL,
        help="episodes in flight, over all workers")] = 8,
    workers: Annotated[str, typer.Option(
        metavar="N|auto", rich_help_panel=EXECUTION_PANEL,
        help="worker processes running the episodes; auto: one per usable core (with "
        "--executor ray: Ray actors, auto one per CPU of the cluster)")] = "1",
    executor: Annotated[ExecutorName, typer.Option(
        rich_help_panel=EXECUTION_PANEL,
        help="what runs the episodes: this machine's processes, or Ray actors (the ray "
        "extra)")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        metavar="ADDRESS", rich_help_panel=EXECUTION_PANEL,
        help="with --executor ray: an existing cluster (auto, ray://HOST:PORT); default: "
        "start a local Ray instance")] = None,
    out: Annotated[Path | None, typer.Option(
        metavar="DIR", rich_help_panel=OUTPUT_PANEL,
        help="run directory (default runs/<time>)")] = None,
    resume: Annotated[Path | None, typer.Option(
        metavar="DIR", rich_help_panel=OUTPUT_PANEL,
        help="continue the run in this directory")] = None,
    retry_errors: Annotated[bool, typer.Option(
        rich_help_panel=OUTPUT_PANEL, help="with --resume, run errored samples again")] = False,
    rerun_simulator_faults: Annotated[bool, typer.Option(
        rich_help_panel=SAMPLING_PANEL,
        help="run samples the simulator spoiled again, once, new seed")] = False,
    errors_as_failures: Annotated[bool, typer.Option(
        rich_help_panel=SAMPLING_PANEL,
        help="count errored samples as failures instead of excluding them")] = False,
    max_cost: Annotated[float | None, typer.Option(
        metavar="USD", rich_help_panel=LIMITS_PANEL, help="stop at this spend")] = None,
    max_calls: Annotated[int | None, typer.Option(
        metavar="N", rich_help_panel=LIMITS_PANEL, help="stop at this many model calls")
    ] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", rich_help_panel=LIMITS_PANEL,
        help="print the calls, tokens, cost and time the run would take; run nothing")
    ] = False,
    estimate_from: Annotated[Path | None, typer.Option(
        metavar="RUN_DIR", rich_help_panel=LIMITS_PANEL,
        help="with --dry-run: measure the calls and tokens on this earlier run")] = None,
    episode_timeout: Annotated[float | None, typer.Option(
        metavar="SECONDS", rich_help_panel=LIMITS_PANEL,
        help="time per episode for scenarios without limits.max_seconds; past it the "
        "sample is an error (time_limit)", min=0.001)] = None,
    rate_limit: RateLimitOption = None,
    target_ci_width: Annotated[float | None, typer.Option(
        metavar="WIDTH", rich_help_panel=SAMPLING_PANEL,
        help="adaptive sampling: stop when the suite interval is narrower than this")] = None,
    pilot_epochs: Annotated[int, typer.Option(
        metavar="N", rich_help_panel=SAMPLING_PANEL, help="adaptive sampling: pilot epochs")
    ] = 3,
    max_epochs: Annotated[int, typer.Option(
        metavar="N", rich_help_panel=SAMPLING_PANEL,
        help="adaptive sampling: most epochs per scenario")] = 50,
    shard: Annotated[str | None, typer.Option(
        metavar="I/N", rich_help_panel=EXECUTION_PANEL,
        help="run only shard I of N of the scenario x epoch grid (CI fan-out; N at most "
        "its samples); harness merge joins the shards")] = None,
    confidence: Annotated[float, typer.Option(
        metavar="LEVEL", rich_help_panel=SAMPLING_PANEL,
        help="confidence level of every interval")] = 0.95,
    seed: Annotated[int, typer.Option(
        metavar="N", rich_help_panel=SAMPLING_PANEL, help="seed of the bootstrap")] = 0,
    models_config: Annotated[Path | None, typer.Option(
        metavar="FILE", rich_help_panel=CACHE_PANEL,
        help="models YAML: keys, base URLs, retries; its cache and budget apply where the "
        "options are not given")] = None,
    cache: Annotated[Path | None, typer.Option(
        metavar="FILE", rich_help_panel=CACHE_PANEL,
        help="response cache file (default: the models YAML's cache.path, else "
        ".harness/cache.sqlite)")] = None,
    cache_mode: Annotated[CacheMode | None, typer.Option(
        rich_help_panel=CACHE_PANEL,
        help="how the cache is used (default: the models YAML's cache.mode, else "
        "read-write)")] = None,
    min_pass_rate: MinPassRate = None,
    min_score: MinScore = None,
    gate_on: GateOn = "mean",
    labels: GateLabels = None,
    as_json: Annotated[bool, typer.Option(
        "--json", rich_help_panel=OUTPUT_PANEL,
        help="print summary.json instead of the tables")] = False,
    verbose: Verbose = False,
) -> None:
    """Run scenarios x epochs and score every transcript.

    Every transcript is checked and judged, every sample stored, and each figure reported
    with its confidence interval. Exit 1 when a gate is missed, 2 on bad input or
    configuration, 3 when a budget stopped the run early, 4 when no sample was scored, 5
    when a worker process or Ray actor died or stopped answering; Ctrl-C and SIGTERM keep
    what finished (exit 130, 143)."""
    _check_option_combinations(ctx, resume=resume, paths=paths,
                               adaptive=target_ci_width is not None, cache_mode=cache_mode)
    check_gate_labels(gate_on, labels)
    if resume is None and not paths:
        raise HarnessError("give at least one scenario file or folder (or --resume DIR)")
    simulators = simulator or []
    panel = len(simulators) > 1 or (resume is not None and _is_panel(resume))
    if panel:
        from harness.cli.run_panel import check_panel_options

        check_panel_options({"shard": shard is not None,
                             "target_ci_width": target_ci_width is not None,
                             "labels": labels is not None}, simulators)
    from harness.runs.shards import parse_shard

    shard_spec = None if shard is None else parse_shard(shard)
    rate_limits = parse_rate_limits(rate_limit)
    if estimate_from is not None and not dry_run:
        raise HarnessError("--estimate-from goes with --dry-run")
    if dry_run and (resume is not None or panel):
        raise HarnessError("--dry-run estimates a new run (one simulator); for the rest of a "
                           "run, pass its directory to --estimate-from")

    def new_config() -> RunConfig:
        assert paths is not None
        return _config(
            paths=paths, select=scenario_filter(tag, exclude_tag, keyword), agent=agent,
            agent_base_url=agent_base_url,
            simulator=simulators[0] if len(simulators) == 1 else None,
            judges=judge or [], no_judge=no_judge, judge_samples=judge_samples,
            judge_temperature=judge_temperature, judge_aggregation=judge_aggregation,
            rubric_paths=[str(p) for p in rubrics or []], offline=offline, epochs=epochs,
            concurrency=concurrency,
            workers=_workers(workers) if _given(ctx, {"workers"}) or executor != "ray"
            else "auto",
            executor=executor, ray_address=ray_address,
            error_policy="as_failures" if errors_as_failures else "exclude",
            confidence=confidence, seed=seed, max_cost_usd=max_cost, max_calls=max_calls,
            episode_timeout_s=episode_timeout, judge_batch=judge_batch,
            judge_batch_reask=judge_batch_reask, rate_limits=rate_limits,
            models_config=None if models_config is None else str(models_config),
            cache_path=None if cache is None else str(cache), cache_mode=cache_mode,
            adaptive=None if target_ci_width is None else {
                "target_width": target_ci_width, "pilot_epochs": pilot_epochs,
                "max_epochs_per_scenario": max_epochs},
            shard=shard_spec,
        )

    if dry_run:
        _dry_run(new_config(), estimate_from, as_json=as_json, min_pass_rate=min_pass_rate)
        return
    from harness.runs.api import resume_run, run_suite

    progress = RunProgress(ERR)
    with (default_output_directory(resume or out, "runs", "", "a run directory") as run_dir,
          logs_to(run_dir / LOG_FILENAME, verbose=verbose)):
        if resume is not None:
            # Only what was given changes: an option left at its default keeps its stored value.
            given: dict[str, Any] = {
                "concurrency": concurrency if _given(ctx, {"concurrency"}) else None,
                "workers": _workers(workers) if _given(ctx, {"workers"})
                else "auto" if executor == "ray" else None,
                "executor": executor if _given(ctx, {"executor"}) else None,
                "ray_address": ray_address,
                "max_cost_usd": max_cost, "max_calls": max_calls,
                "episode_timeout_s": episode_timeout,
                "judge_batch": judge_batch if _given(ctx, {"judge_batch"}) else None,
                "judge_batch_reask": judge_batch_reask
                if _given(ctx, {"judge_batch_reask"}) else None,
                "rate_limits": {provider: limits.model_dump(exclude_none=True)
                                for provider, limits in rate_limits.items()} or None}
            overrides = {name: value for name, value in given.items() if value is not None}
            if panel:
                from harness.cli.run_panel import run_panel
                from harness.runs.simulator_panel import read_plan

                run_panel(read_plan(resume), resume, resume=True, overrides=overrides,
                          retry_errors=retry_errors, as_json=as_json,
                          min_pass_rate=min_pass_rate, min_score=min_score, gate_on=gate_on,
                          rerun_simulator_faults=rerun_simulator_faults)
                return
            coro = resume_run(resume, overrides=overrides, retry_errors=retry_errors,
                              on_start=progress.start, on_sample=progress.sample,
                              tune_collector=True,
                              rerun_simulator_faults=rerun_simulator_faults)
        else:
            config = new_config()
            if panel:
                from harness.cli.run_panel import run_panel, start_panel

                plan = start_panel(config, simulators, run_dir)
                run_panel(plan, run_dir, resume=False, overrides={}, retry_errors=False,
                          as_json=as_json, min_pass_rate=min_pass_rate, min_score=min_score,
                          gate_on=gate_on, rerun_simulator_faults=rerun_simulator_faults)
                return
            # This process exists for the run: its collector is tuned for it (a library
            # caller's is not; see run_suite).
            coro = run_suite(config, run_dir, on_start=progress.start,
                             on_sample=progress.sample, tune_collector=True,
                             rerun_simulator_faults=rerun_simulator_faults)
        result = run_to_end(coro, progress, run_dir)
        finish_run(result.run_dir, result.summary, as_json=as_json,
                   min_pass_rate=min_pass_rate, min_score=min_score, gate_on=gate_on,
                   labels=labels)


def _dry_run(config: RunConfig, measured_from: Path | None, *, as_json: bool,
             min_pass_rate: float | None) -> None:
    """``--dry-run``: the estimate, printed (``--json``: as JSON); nothing is written."""
    from harness.report.cost_terminal import render_estimate
    from harness.runs.api import estimate_cost
    from harness.runs.store import StoreError

    try:
        estimate = estimate_cost(config, measured_from=measured_from,
                                 min_pass_rate=min_pass_rate)
    except StoreError as err:
        raise HarnessError(f"--estimate-from {measured_from}: {err}") from None
    if as_json:
        typer.echo(estimate.model_dump_json(indent=2))
        return
    render_estimate(estimate, terminal_console())


def _is_panel(run_dir: Path) -> bool:
    from harness.runs.simulator_panel import is_panel

    return is_panel(run_dir)


def _workers(value: str) -> int | str:
    """``--workers``: ``auto`` or a whole number of processes, 1 or more. (Not given with
    ``--executor ray``, it is ``auto``: one actor per CPU of the cluster.)"""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        count = int(value)
    except ValueError:
        count = 0
    if not 1 <= count <= 1024:
        raise HarnessError(f"--workers: expected a number of worker processes from 1 to 1024, "
                           f"or auto (one per usable core), not {value!r}")
    return count


def _config(*, paths: list[Path], adaptive: dict[str, Any] | None, **fields: Any) -> RunConfig:
    from pydantic import ValidationError

    from harness.runs.config import AdaptiveSettings, RunConfig, RunDesign, RunExecution

    execution = {k: v for k, v in fields.items() if k in RunExecution.model_fields}
    design = {k: v for k, v in fields.items() if k not in execution}
    try:
        return RunConfig(
            design=RunDesign(
                scenario_paths=[str(p) for p in paths],
                adaptive=None if adaptive is None else AdaptiveSettings(**adaptive),
                **design),
            execution=RunExecution(**execution),
        )
    except ValidationError as err:
        first = err.errors()[0]
        option = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "options"
        raise HarnessError(f"{option}: {first['msg']}") from None


@app.command(epilog=examples(
    ("the tables again", "harness report runs/first"),
    ("the HTML report again, into the run directory", "harness report runs/first --html"),
    ("only the scenarios tagged refusal, figures recomputed",
     "harness report runs/first --tag refusal"),
    ("the judge against a file of human labels, and the figures they correct",
     "harness report runs/first --labels labels.jsonl")))
def report(
    ctx: typer.Context,
    run_dir: Annotated[Path, typer.Argument(help="a run directory (or a simulator panel's)")],
    as_json: Annotated[bool, typer.Option(
        "--json", rich_help_panel=OUTPUT_PANEL, help="print summary.json")] = False,
    target_mdd: Annotated[float | None, typer.Option(
        "--target-mdd", metavar="DIFF",
        help="a difference to detect: the epochs per scenario and the scenarios a paired "
        "comparison needs for it (default: half the run's minimum detectable difference)")
    ] = None,
    html: Annotated[str | None, typer.Option(
        "--html", metavar="[FILE]", rich_help_panel=OUTPUT_PANEL,
        help="write the HTML report (every sample, drill-down included) to FILE (default "
        "RUN_DIR/report.html) instead of printing the tables")] = None,
    tag: Tags = None,
    exclude_tag: ExcludeTags = None,
    keyword: Keywords = None,
    labels: Annotated[Path | None, typer.Option(
        "--labels", metavar="FILE",
        help="human labels of the run's samples (contract 10) to use instead of the stored "
        "ones: the judge's agreement with them and the figures they correct")] = None,
) -> None:
    """Show a finished run's summary again, or its HTML report.

    The summary is read from the run's summary.json (nothing is written); --html writes its
    HTML report again. --tag, --exclude-tag and -k recompute the figures from the store for
    the selected scenarios' samples only. When the run has human labels (or --labels
    gives some), the judge's agreement with them and the corrected figures follow the suite
    figures."""
    from harness.report.terminal import render_run
    from harness.runs.summary import read_summary, summarise_selection

    selector = scenario_filter(tag, exclude_tag, keyword)
    if _is_panel(run_dir) and not (run_dir / "summary.json").exists():
        from harness.cli.run_panel import report_panel

        report_panel(run_dir, as_json=as_json, html=html, refused=_given(
            ctx, {"target_mdd", "tag", "exclude_tag", "keyword", "labels"}))
        return
    if html is not None and selector.active:
        raise HarnessError(f"{selector.describe()} applies to the tables and --json; the "
                           "HTML report always shows the whole run")
    if labels is not None and selector.active:
        raise HarnessError(f"--labels: the labels are measured against the whole run; "
                           f"leave out {selector.describe()}")
    if html is not None:
        from harness.report.html.run_page import write_run_report

        path = write_run_report(run_dir, Path(html) if html else None, labels_file=labels)
        ERR.print(f"wrote {terminal_text(path)}")
        return
    check_target_mdd(target_mdd)
    summary = summarise_selection(run_dir, selector) if selector.active else read_summary(
        run_dir)
    if target_mdd is not None:
        summary = _with_target(summary, target_mdd, run_dir)
    run_labels = None if selector.active else _run_labels(run_dir, labels)
    if as_json:
        print_summary_json(summary, None if run_labels is None else run_labels.to_json())
        return
    render_run(summary, terminal_console(), run_dir=str(run_dir), labels=run_labels)


def _run_labels(run_dir: Path, labels: Path | None) -> RunLabels | None:
    """The run's labels in its report (``labels``' file, else the stored ones), or ``None``
    when it has none (a run directory without its store has none)."""
    from harness.calibration.run_agreement import run_labels_report

    if labels is None and not (run_dir / "run.sqlite").is_file():
        return None
    return run_labels_report(run_dir, labels)


def _with_target(summary: RunSummary, target: float, run_dir: Path) -> RunSummary:
    """``summary`` with ``score.design_for_target`` computed for ``target`` from the stored
    design (its power section holds the variance split, scenarios and epochs)."""
    from harness.errors import InputError
    from harness.stats.power import design_for_target

    score = summary.score
    if score is None or score.power is None:
        vc = None if score is None else score.variance_components
        why = ("every score in the run is the same, so there is no variance to plan from"
               if vc is not None and vc.between == 0 and vc.within == 0
               else "it needs scored samples from at least 2 scenarios")
        raise InputError(run_dir, "score.power", f"no design power in this run ({why}), so "
                         "--target-mdd has nothing to work from")
    design = design_for_target(score.power, target)
    return summary.model_copy(update={
        "score": score.model_copy(update={"design_for_target": design})})


@app.command(epilog=examples(
    ("a branch's run against main's; exit 1 on a significant regression",
     "harness compare runs/main runs/branch --fail-on-regression"),
    ("the permutation test instead of the t test, and an HTML page",
     "harness compare runs/main runs/branch --test permutation --html compare.html")))
def compare(
    baseline: Annotated[Path, typer.Argument(help="the baseline run directory")],
    candidate: Annotated[Path, typer.Argument(help="the candidate run directory")],
    alpha: Annotated[float, typer.Option(
        metavar="LEVEL", rich_help_panel=STATS_PANEL, help="significance level")] = 0.05,
    test: Annotated[PairedTest, typer.Option(
        rich_help_panel=STATS_PANEL, help="the test behind the verdict")] = "t",
    seed: Annotated[int, typer.Option(
        metavar="N", rich_help_panel=STATS_PANEL,
        help="seed of the permutation test's resamples")] = 0,
    fail_on_regression: Annotated[bool, typer.Option(
        rich_help_panel=GATE_PANEL,
        help="exit 1 when the candidate is significantly worse, or when the runs' judges "
        "differ (the difference is then not the agent's alone)")] = False,
    allow_judge_change: Annotated[bool, typer.Option(
        rich_help_panel=GATE_PANEL,
        help="with --fail-on-regression: gate on the figures even when the judges differ "
        "(exit 1 only on a significant regression)")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", rich_help_panel=OUTPUT_PANEL,
        help="print the comparison as JSON instead of the tables")] = False,
    html: Annotated[str | None, typer.Option(
        "--html", metavar="FILE", rich_help_panel=OUTPUT_PANEL,
        help="also write the comparison as one HTML page (per-scenario differences, the "
        "tests, both runs' transcripts side by side)")] = None,
    tag: Tags = None,
    exclude_tag: ExcludeTags = None,
    keyword: Keywords = None,
) -> None:
    """Compare two runs on their common scenarios.

    Per-scenario differences, the mean difference with a clustered interval, paired t /
    permutation tests and McNemar. --tag, --exclude-tag and -k compare only the scenarios
    they select."""
    from harness.runs.comparison import compare_run_dirs

    html_path = html_output(html, "a comparison")
    data = compare_run_dirs(baseline, candidate, alpha=alpha, test=test, seed=seed,
                            selector=scenario_filter(tag, exclude_tag, keyword))
    if data.get("corrected"):
        from harness.calibration.run_agreement import with_compared_agreement

        data = with_compared_agreement(data, baseline, candidate)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        from harness.report.terminal import render_comparison

        render_comparison(data, terminal_console())
    if html_path is not None:
        from harness.report.html.compare_page import write_compare_report

        write_compare_report(data, baseline, candidate, html_path)
        ERR.print(f"[dim]wrote {terminal_text(html_path)}[/]")
    if fail_on_regression:
        compare_gate(data, allow_judge_change=allow_judge_change)


def compare_gate(data: dict[str, Any], *, allow_judge_change: bool) -> None:
    """``--fail-on-regression``: exit 1 on a significant regression; and, unless
    ``allow_judge_change``, when the judges differ, since the comparison cannot then tell
    the agent's change from the judge's. The line printed names the changed judge."""
    judges = data.get("judges") or {}
    drift = judges.get("same") is False
    what = "; ".join(judges.get("differences") or [])
    if drift and not allow_judge_change:
        ERR.print(f"[bold red]gate FAIL[/] the judges differ ({terminal_text(what)}): the "
                  "comparison cannot tell the agent's change from the judge's; judge both runs "
                  "with one judge, or pass --allow-judge-change to gate on these figures")
        raise typer.Exit(EXIT_GATE_FAILED)
    if data["significant_regression"]:
        if drift:
            ERR.print(f"[bold red]gate FAIL[/] significant regression, with a changed judge "
                      f"({terminal_text(what)}; --allow-judge-change)")
        raise typer.Exit(EXIT_GATE_FAILED)
