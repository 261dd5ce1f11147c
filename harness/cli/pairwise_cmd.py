"""``harness pairwise RUN_A RUN_B``: judge two runs' transcripts against each other, pair by
pair, in both orders (:mod:`harness.runs.pairwise_runs`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from harness.choices import CacheMode
from harness.cli.app import (
    EXIT_GATE_FAILED,
    ExcludeTags,
    Keywords,
    Tags,
    Verbose,
    app,
    counting_progress,
    html_output,
    judge_models,
    logs_to,
    scenario_filter,
)
from harness.cli.help_format import CACHE_PANEL, GATE_PANEL, JUDGES_PANEL, OUTPUT_PANEL, examples
from harness.cli.interrupts import exit_code, run_async, signal_name
from harness.cli.rate_limit_option import RateLimitOption, parse_rate_limits
from harness.errors import InputError
from harness.files import atomic_write, check_output_file
from harness.logs import command_log_file
from harness.safe_text import terminal_console, terminal_text


@app.command(epilog=examples(
    ("two runs judged pair by pair with the offline mock judge",
     "harness pairwise runs/main runs/branch --offline \\\n"
     "    --rubric final_response_quality"),
    ("a real judge, 3 samples a pair; exit 1 when B is significantly worse",
     "harness pairwise runs/main runs/branch --judge openai:gpt-4.1 \\\n"
     "    --rubric final_response_quality --samples 3 --fail-on-regression")))
def pairwise(
    run_a: Annotated[Path, typer.Argument(help="run directory A (the baseline)")],
    run_b: Annotated[Path, typer.Argument(help="run directory B (the candidate)")],
    judge: Annotated[list[str] | None, typer.Option(
        "--judge", metavar="MODEL", rich_help_panel=JUDGES_PANEL,
        help="judge model (provider:model); repeat for a panel; mock:judge (and "
        "mock:judge-strict, -lenient, -first) run offline")] = None,
    rubric: Annotated[str | None, typer.Option(
        "--rubric", metavar="ID", rich_help_panel=JUDGES_PANEL,
        help="the rubric the transcripts are compared under")] = None,
    rubrics: Annotated[list[Path] | None, typer.Option(
        metavar="PATH", rich_help_panel=JUDGES_PANEL,
        help="extra rubric files or folders beside the built-ins")] = None,
    samples: Annotated[int, typer.Option(
        metavar="K", rich_help_panel=JUDGES_PANEL,
        help="judge samples per pair and judge", min=1)] = 1,
    concurrency: Annotated[int, typer.Option(
        metavar="N", rich_help_panel=JUDGES_PANEL,
        help="comparisons in flight (two calls each)", min=1)] = 8,
    judge_batch: Annotated[bool, typer.Option(
        "--judge-batch", rich_help_panel=JUDGES_PANEL,
        help="send OpenAI and Anthropic judges' requests through their batch APIs (half "
        "the price); the same command again collects what a stopped one sent")] = False,
    offline: Annotated[bool, typer.Option(
        rich_help_panel=JUDGES_PANEL,
        help="judge with mock:judge when no --judge is given; refuse non-mock judges")
    ] = False,
    models_config: Annotated[Path | None, typer.Option(
        metavar="FILE", rich_help_panel=CACHE_PANEL,
        help="models YAML (keys, base URLs, retries, concurrency)")] = None,
    judge_base_url: Annotated[str | None, typer.Option(
        metavar="URL", rich_help_panel=CACHE_PANEL,
        help="base URL for non-mock judges (an OpenAI-compatible server)")] = None,
    rate_limit: RateLimitOption = None,
    cache: Annotated[Path, typer.Option(
        metavar="FILE", rich_help_panel=CACHE_PANEL, help="response cache file")] = Path(
        ".harness/cache.sqlite"),
    cache_mode: Annotated[CacheMode, typer.Option(
        rich_help_panel=CACHE_PANEL,
        help="how the cache is used (replay: cached answers only)")] = "read-write",
    as_json: Annotated[bool, typer.Option(
        "--json", rich_help_panel=OUTPUT_PANEL, help="print the report as JSON")] = False,
    out: Annotated[Path | None, typer.Option(
        metavar="FILE", rich_help_panel=OUTPUT_PANEL,
        help="write one JSON line per (scenario, epoch) here: verdict, votes, comparisons, "
        "or why it was not compared")] = None,
    fail_on_regression: Annotated[bool, typer.Option(
        rich_help_panel=GATE_PANEL,
        help="exit 1 when B is significantly worse than A (the interval of B's win rate "
        "lies below 0.5)")] = False,
    html: Annotated[str | None, typer.Option(
        "--html", metavar="FILE", rich_help_panel=OUTPUT_PANEL,
        help="also write the comparison as one HTML page (win rates, every pair's verdicts "
        "and reasoning in both orders, both transcripts)")] = None,
    tag: Tags = None,
    exclude_tag: ExcludeTags = None,
    keyword: Keywords = None,
    verbose: Verbose = False,
) -> None:
    """Judge two runs' transcripts against each other in pairs.

    Every (scenario, epoch) present and not errored in both is judged A against B under a
    rubric by every judge, --samples times, in both orders (a winner only when both orders
    agree). Reports wins, ties, the inconsistency
    rate and B's win rate with an interval clustered by scenario. --tag, --exclude-tag and
    -k compare only the scenarios they select."""
    from harness.models.config import ModelsConfig, with_rate_limits
    from harness.report.pairwise_runs import render_pairwise
    from harness.runs.pairwise_runs import compare_runs_pairwise

    judges = judge_models(judge or [], offline, needed_for="comparing runs pairwise")
    if rubric is None:
        raise InputError("command line", "--rubric", "comparing runs pairwise needs --rubric "
                         "ID (the rubric the transcripts are compared under)")
    config = ModelsConfig.from_yaml(models_config) if models_config is not None else None
    limits = parse_rate_limits(rate_limit)
    if limits:
        config = with_rate_limits(config or ModelsConfig(), limits)
    if out is not None:  # refuse an unwritable --out before any judge is called
        check_output_file(out, "the pairwise output file (--out, JSONL)")
    html_path = html_output(html, "a pairwise comparison")
    err = terminal_console(stderr=True, soft_wrap=True)
    progress, advance = counting_progress("judging pairs", err)

    try:
        with logs_to(command_log_file("pairwise"), verbose=verbose), progress:
            result = run_async(compare_runs_pairwise(
                run_a, run_b, judges, rubric, samples=samples, concurrency=concurrency,
                rubric_dirs=rubrics or [], models=config, cache_path=cache,
                cache_mode=cache_mode, base_url=judge_base_url, progress=advance,
                selector=scenario_filter(tag, exclude_tag, keyword), judge_batch=judge_batch))
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM
        cached = cache_mode in ("read-write", "replay")
        err.print(f"[yellow]{signal_name(stop)}: nothing was written" + (
            "; judged comparisons are in the response cache, so running the same command "
            "again repeats no call" if cached else "") + "[/]")
        raise typer.Exit(exit_code(stop)) from None
    data = result.report.model_dump(mode="json")
    if out is not None:
        with atomic_write(out) as handle:
            for line in result.lines:
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    if as_json:
        typer.echo(json.dumps(data, indent=2, allow_nan=False))
    else:
        render_pairwise(data, terminal_console())
    if out is not None:
        err.print(f"[dim]wrote {terminal_text(out)} ({len(result.lines)} lines)[/]")
    if html_path is not None:
        from harness.report.html.pairwise_page import write_pairwise_report

        write_pairwise_report(data, result.lines, html_path)
        err.print(f"[dim]wrote {terminal_text(html_path)}[/]")
    if fail_on_regression and result.report.significant_regression:
        raise typer.Exit(EXIT_GATE_FAILED)
