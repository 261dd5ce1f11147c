"""``harness calibrate``: how well judges agree with people.

Two ways in, one report (terminal or ``--json``):

- ``harness calibrate --judgments FILE``: judgment records that already exist (contract 3);
  no model calls.
- ``harness calibrate DATASET --judge MODEL --rubric ID``: run the judges on a labelled
  dataset first (:func:`harness.calibration.study.run_calibration`), ``--samples`` times per
  item, pairwise in both orders, through the response cache, writing every judgment to
  ``--out DIR`` as it comes (re-running with the same ``--out`` resumes), and the report to
  ``DIR/report.json`` and ``DIR/report.html``. ``--rubric`` repeated compares prompts: each
  (model, rubric) pair is a judge named ``MODEL@RUBRIC``.

``--html [FILE]`` also writes the report as a page (:mod:`harness.report.html.
calibration_page`); without FILE, beside the judgments file (``FILE.html``) or, for a study,
in its directory (``DIR/report.html``, written anyway).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.choices import CacheMode
from harness.cli.app import Verbose, app, counting_progress, judge_models, logs_to
from harness.cli.help_format import (
    CACHE_PANEL,
    DATASET_PANEL,
    INPUT_PANEL,
    OUTPUT_PANEL,
    STATS_PANEL,
    examples,
)
from harness.cli.interrupts import exit_code, run_async, signal_name
from harness.cli.rate_limit_option import RateLimitOption, parse_rate_limits
from harness.errors import InputError
from harness.files import default_output_directory, read_text
from harness.json_values import STORED_DEPTH, load_json
from harness.logs import LOG_FILENAME
from harness.safe_text import terminal_console, terminal_text

# The calibration code (numpy, scipy) is imported when the command runs, not when the CLI
# starts.
if TYPE_CHECKING:
    from harness.calibration.report import AnalysisOptions, CalibrationReport
    from harness.calibration.scale import Scale
    from harness.models.config import RateLimits

_OPTION_NAMES = {
    "n_resamples": "--resamples",
    "confidence": "--confidence",
    "seed": "--seed",
    "pass_threshold": "--pass-threshold",
    "threshold_criterion": "--threshold-criterion",
    "alpha_level": "--alpha-level",
    "missing_verdict": "--missing-verdict",
    "ppi_lambda": "--ppi-lambda",
}


def parse_scale(text: str) -> Scale:
    """``MIN:MAX`` (step 1), ``MIN:MAX:STEP``, or ``MIN:MAX:continuous``. Raises InputError."""
    from pydantic import ValidationError

    from harness.calibration.scale import Scale

    parts = text.split(":")
    expected = "MIN:MAX, MIN:MAX:STEP or MIN:MAX:continuous, e.g. 1:5"
    if len(parts) not in (2, 3):
        raise InputError("--scale", None, f"expected {expected}, got {text!r}")
    try:
        low, high = float(parts[0]), float(parts[1])
        step = None if len(parts) == 3 and parts[2] == "continuous" else (
            float(parts[2]) if len(parts) == 3 else 1.0)
        return Scale(min=low, max=high, step=step)
    except (ValueError, ValidationError) as err:
        raise InputError("--scale", None, f"expected {expected}, got {text!r}") from err


def _analysis_options(raw: dict[str, Any]) -> AnalysisOptions:
    from pydantic import ValidationError

    from harness.calibration.report import AnalysisOptions

    try:
        return AnalysisOptions.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        raise InputError(_OPTION_NAMES.get(field, field), None, first["msg"]) from err


def _warn_off_scale(report: CalibrationReport) -> None:
    """One stderr warning per label off the scale (they are missing labels, not errors), when
    the report itself goes out as JSON (the terminal report lists them in its notes)."""
    from harness.calibration.analysis import off_scale_notes

    if not report.off_scale_labels:
        return
    err = terminal_console(stderr=True, soft_wrap=True)
    for note in off_scale_notes(report.off_scale_labels):
        err.print(f"[yellow]warning:[/] {terminal_text(note)}")


def _html_target(html: str | None, source: Path) -> Path | None:
    """Where ``--html`` writes the page: FILE, or beside the judgments file (``FILE.html``)
    when no FILE is given (``None``: not asked). Checked before any work; raises InputError
    when it cannot be written or would replace the input file."""
    from harness.files import check_output_file

    if html is None:
        return None
    path = Path(html) if html else source.with_name(source.stem + ".html")
    if path.resolve() == source.resolve():
        raise InputError(path, None, "is the input file; give --html another file")
    return check_output_file(path, "the HTML report")


def _wrote(path: Path) -> None:
    terminal_console(stderr=True, soft_wrap=True).print(f"wrote {terminal_text(path)}")


def _print(report: CalibrationReport, json_output: bool) -> None:
    from harness.report.calibration_terminal import render_report

    if json_output:
        _warn_off_scale(report)
        typer.echo(json.dumps(report.to_json_dict(), indent=2, allow_nan=False))
        return
    render_report(report, terminal_console())


@app.command(epilog=examples(
    ("analyse judgments already made (no model calls)",
     "harness calibrate --judgments examples/calibration/pointwise_judgments.jsonl"),
    ("a run's judges against its reviewers' labels, every labelled target",
     "harness calibrate --from-run runs/nightly"),
    ("run a judge on labelled items, 3 samples each, and write the HTML page",
     "harness calibrate examples/calibration/pointwise_items.jsonl --offline \\\n"
     "    --rubric final_response_quality --samples 3 --out runs/calibration --html")))
def calibrate(
    dataset: Annotated[
        Path | None,
        typer.Argument(
            help="labelled items to run judges on (JSONL/CSV): pointwise {item_id, text, "
            "human} or pairwise {item_id, input, output_a, output_b, gold}; needs --judge "
            "(or --offline) and --rubric; not with --judgments",
            show_default=False,
        ),
    ] = None,
    judgments: Annotated[
        Path | None,
        typer.Option(
            "--judgments", metavar="FILE", rich_help_panel=INPUT_PANEL,
            help="JSONL/CSV of judgment records (contract 3), pointwise {item_id, human, "
            "judge} or pairwise {item_id, gold, verdict, swapped}: no model calls; not with "
            "DATASET",
        ),
    ] = None,
    from_run: Annotated[
        Path | None,
        typer.Option(
            "--from-run", metavar="RUN_DIR", rich_help_panel=INPUT_PANEL,
            help="a run's judge verdicts against its reviewers' labels (harness labels "
            "import, harness view), per labelled target; no model calls",
        ),
    ] = None,
    target: Annotated[list[str] | None, typer.Option(
        "--target", metavar="TARGET", rich_help_panel=INPUT_PANEL,
        help="--from-run: only this labelled target (passed, score, rubric:ID, "
        "criterion:ID/CRITERION); repeat for several (default: every one)")] = None,
    json_output: Annotated[
        bool, typer.Option("--json", rich_help_panel=OUTPUT_PANEL,
                           help="print the report as one JSON object")
    ] = False,
    judge: Annotated[list[str] | None, typer.Option(
        "--judge", metavar="MODEL", rich_help_panel=DATASET_PANEL,
        help="judge model (provider:model); repeat to compare judges; mock:judge (and "
        "mock:judge-strict, -lenient, -first) run offline")] = None,
    rubric: Annotated[list[str] | None, typer.Option(
        "--rubric", metavar="ID", rich_help_panel=DATASET_PANEL,
        help="the rubric the judges use; repeat to compare prompts (each judge×rubric is "
        "then reported as MODEL@RUBRIC)")] = None,
    criterion: Annotated[str | None, typer.Option(
        metavar="NAME", rich_help_panel=DATASET_PANEL,
        help="the criterion compared (pointwise; default: the rubric's first) or compared "
        "on (pairwise; default: the whole rubric)")] = None,
    samples: Annotated[int | None, typer.Option(
        metavar="K", rich_help_panel=DATASET_PANEL,
        help="judge samples per item (default: 1)")] = None,
    swap: Annotated[bool | None, typer.Option(
        "--swap/--no-swap", rich_help_panel=DATASET_PANEL,
        help="pairwise: judge every sample in both orders (the default: position "
        "consistency needs both) or only the original order")] = None,
    ties: Annotated[bool | None, typer.Option(
        "--ties/--no-ties", rich_help_panel=DATASET_PANEL,
        help="pairwise: may the judge answer 'tie' (default: --ties)")] = None,
    scale_map: Annotated[str | None, typer.Option(
        metavar="LEVEL=VALUE,...", rich_help_panel=DATASET_PANEL,
        help="pointwise: map each judge level onto the human scale (e.g. 1=1,2=1,3=2,4=3,"
        "5=3) when the labels are on another scale than the criterion's")] = None,
    temperature: Annotated[float | None, typer.Option(
        metavar="T", rich_help_panel=DATASET_PANEL,
        help="judge temperature (default: the provider's)", min=0, max=2)] = None,
    out: Annotated[Path | None, typer.Option(
        metavar="DIR", rich_help_panel=DATASET_PANEL,
        help="study directory, written as judgments come; the same --out again resumes "
        "(default: runs/calibrate-<time>)")] = None,
    concurrency: Annotated[int | None, typer.Option(
        metavar="N", rich_help_panel=DATASET_PANEL,
        help="judge samples in flight (default: 8)")] = None,
    judge_batch: Annotated[bool, typer.Option(
        "--judge-batch", rich_help_panel=DATASET_PANEL,
        help="DATASET: send OpenAI and Anthropic judges' requests through their batch APIs "
        "(half the price); the same command again collects what a stopped one sent")] = False,
    offline: Annotated[bool, typer.Option(
        rich_help_panel=DATASET_PANEL,
        help="judge with mock:judge when no --judge is given; refuse non-mock judges (no "
        "keys, no network)")] = False,
    cache: Annotated[Path | None, typer.Option(
        metavar="FILE", rich_help_panel=CACHE_PANEL,
        help="DATASET: response cache file (default: .harness/cache.sqlite)")] = None,
    cache_mode: Annotated[CacheMode, typer.Option(
        rich_help_panel=CACHE_PANEL,
        help="DATASET: how the cache is used (replay: cached answers only)")
    ] = "read-write",
    models_config: Annotated[Path | None, typer.Option(
        metavar="FILE", rich_help_panel=CACHE_PANEL,
        help="DATASET: models YAML (keys, base URLs, retries, concurrency)")] = None,
    judge_base_url: Annotated[str | None, typer.Option(
        metavar="URL", rich_help_panel=CACHE_PANEL,
        help="DATASET: base URL for non-mock judges (an OpenAI-compatible server)")] = None,
    rate_limit: RateLimitOption = None,
    rubrics_dir: Annotated[list[Path] | None, typer.Option(
        "--rubrics-dir", metavar="PATH", rich_help_panel=DATASET_PANEL,
        help="more rubric files or directories")] = None,
    pass_threshold: Annotated[
        float | None,
        typer.Option(metavar="SCORE", rich_help_panel=STATS_PANEL,
                     help="a score at or above this passes (pass/fail statistics, PPI pass "
                     "rate)"),
    ] = None,
    threshold_criterion: Annotated[
        str, typer.Option(metavar="kappa|alignment", rich_help_panel=STATS_PANEL,
                          help="the best judge threshold is the one of highest kappa or "
                          "alignment")
    ] = "kappa",
    scale: Annotated[
        str | None,
        typer.Option(metavar="MIN:MAX[:STEP]", rich_help_panel=STATS_PANEL,
                     help="rating scale (STEP a number or 'continuous'); overrides the "
                     "file's"),
    ] = None,
    alpha_level: Annotated[
        str | None,
        typer.Option(metavar="nominal|ordinal|interval", rich_help_panel=STATS_PANEL,
                     help="level of the headline krippendorff_alpha (default: ordinal on a "
                     "discrete scale, else interval)"),
    ] = None,
    missing_verdict: Annotated[
        str, typer.Option(metavar="wrong|exclude", rich_help_panel=STATS_PANEL,
                          help="pairwise: a missing verdict counts as wrong, or is left out")
    ] = "wrong",
    ppi_lambda: Annotated[
        float | None, typer.Option(metavar="LAMBDA", rich_help_panel=STATS_PANEL,
                                   help="fix PPI++'s lambda (default: power-tuned)")
    ] = None,
    resamples: Annotated[int, typer.Option(
        metavar="N", rich_help_panel=STATS_PANEL,
        help="bootstrap resamples (0: no intervals)")] = 2000,
    seed: Annotated[int, typer.Option(
        metavar="N", rich_help_panel=STATS_PANEL, help="bootstrap seed")] = 0,
    confidence: Annotated[float, typer.Option(
        metavar="LEVEL", rich_help_panel=STATS_PANEL,
        help="confidence level of the intervals")] = 0.95,
    html: Annotated[str | None, typer.Option(
        "--html", metavar="[FILE]", rich_help_panel=OUTPUT_PANEL,
        help="also write the report as one HTML page (plots, the items where judge and "
        "people disagree most, the judge's reasoning); without FILE: FILE.html beside "
        "--judgments, or the study directory's report.html")] = None,
    verbose: Verbose = False,
) -> None:
    """Measure how well judges agree with people.

    Correlations, kappa, Krippendorff's alpha, bias, pass/fail and threshold calibration,
    pairwise position consistency, the human baseline and PPI, each with a seeded bootstrap
    interval over items. Analyse existing judgments (--judgments FILE), or run judges on a
    labelled DATASET first, or compare a run's judges with its reviewers' labels (--from-run
    RUN_DIR)."""
    study_options = {
        "--judge": judge, "--rubric": rubric, "--criterion": criterion, "--samples": samples,
        "--swap/--no-swap": swap, "--ties/--no-ties": ties, "--scale-map": scale_map,
        "--temperature": temperature, "--out": out, "--concurrency": concurrency,
        "--judge-batch": judge_batch or None,
        "--offline": offline or None, "--cache": cache, "--models-config": models_config,
        "--judge-base-url": judge_base_url, "--rate-limit": rate_limit,
        "--rubrics-dir": rubrics_dir,
        "--verbose": verbose or None,
    }
    if from_run is not None and (dataset is not None or judgments is not None):
        raise InputError("command line", "--from-run", "compares a run's judges with its "
                         "reviewers' labels; give it without DATASET or --judgments (only one "
                         "of them)")
    if from_run is None and (dataset is None) == (judgments is None):
        raise InputError("command line", "DATASET / --judgments",
                         "give a labelled DATASET to run judges on, or --judgments FILE to "
                         "analyse judgments that already exist" +
                         (" (not both)" if dataset is not None else
                          ", or --from-run RUN_DIR to compare a run's judges with its "
                          "reviewers' labels"))
    if target and from_run is None:
        raise InputError("command line", "--target", "chooses labelled targets of "
                         "--from-run RUN_DIR")
    options = _analysis_options({
        "n_resamples": resamples,
        "confidence": confidence,
        "seed": seed,
        "pass_threshold": pass_threshold,
        "threshold_criterion": threshold_criterion,
        "alpha_level": alpha_level,
        "missing_verdict": missing_verdict,
        "ppi_lambda": ppi_lambda,
        "scale": parse_scale(scale) if scale is not None else None,
    })
    if judgments is not None or from_run is not None:
        given = [name for name, value in study_options.items() if value not in (None, [])]
        if given:
            raise InputError("command line", given[0], "runs judges on a DATASET; "
                             f"{'--judgments' if judgments is not None else '--from-run'} "
                             "analyses judgments that already exist, with no model calls")
    if from_run is not None:
        _from_run(from_run, target or [], options, json_output, html)
        return
    if judgments is not None:
        from harness.calibration.analysis import analyse
        from harness.calibration.judgments import load_judgments

        data = load_judgments(judgments, scale=options.scale)
        page = _html_target(html, judgments)
        report = analyse(data, options)
        _print(report, json_output)
        if page is not None:
            from harness.report.html.calibration_page import write_calibration_page

            _wrote(write_calibration_page(page, report, data))
        return
    assert dataset is not None
    judges = judge_models(judge or [], offline, needed_for="running judges on a DATASET")
    limits = parse_rate_limits(rate_limit)
    if not rubric:
        raise InputError("command line", "--rubric", "running judges on a DATASET needs "
                         "--rubric ID (the rubric the judges use)")
    page = _html_target(html, dataset) if html else None  # bare: the study's own page
    with default_output_directory(out, "runs", "calibrate",
                                  "a calibration directory") as study_dir:
        _run_study(
            dataset, judges, rubric, options, json_output, page,
            criterion=criterion, samples=1 if samples is None else samples,
            swap=True if swap is None else swap, allow_ties=True if ties is None else ties,
            scale_map=scale_map, temperature=temperature, out=study_dir,
            concurrency=8 if concurrency is None else concurrency,
            cache=cache or Path(".harness/cache.sqlite"), cache_mode=cache_mode,
            models_config=models_config, base_url=judge_base_url,
            rate_limits=limits, rubric_dirs=rubrics_dir or [], verbose=verbose,
            judge_batch=judge_batch,
        )


def _from_run(run_dir: Path, targets: list[str], options: AnalysisOptions, json_output: bool,
              html: str | None) -> None:
    """``--from-run``: one report per labelled target, each with every statistic of
    ``--judgments``; the first line says how many labels and reviewers it rests on."""
    from harness.calibration.analysis import analyse
    from harness.calibration.run_labels import run_label_judgments

    data = run_label_judgments(run_dir, options, targets)
    pages = _from_run_pages(html, run_dir, [t.target for t in data.targets])
    reports = []
    for entry in data.targets:
        report = analyse(entry.judgments, entry.options)
        reports.append(report.model_copy(update={"notes": [
            *entry.notes, *report.notes, f"labels: {data.summary()}"]}))
    if json_output:
        for report in reports:
            _warn_off_scale(report)
        typer.echo(json.dumps({
            "source": str(run_dir), "labels": _label_figures(data),
            "targets": {entry.target: report.to_json_dict()
                        for entry, report in zip(data.targets, reports, strict=True)},
        }, indent=2, allow_nan=False))
    else:
        from harness.report.calibration_terminal import render_report

        console = terminal_console()
        console.print(terminal_text(data.summary()))
        for entry, report in zip(data.targets, reports, strict=True):
            console.rule(terminal_text(entry.target))
            render_report(report, console)
    if pages:
        from harness.report.html.calibration_page import calibration_page
        from harness.report.html.page import write_page

        for page, entry, report in zip(pages, data.targets, reports, strict=True):
            title = f"Judge calibration: {run_dir.name}, {entry.target}"
            _wrote(write_page(page, calibration_page(report, entry.judgments, title=title)))


def _label_figures(data: Any) -> dict[str, Any]:
    from harness.runs.label_files import label_counts, reviewers

    return {**label_counts(data.used), "reviewer_names": reviewers(data.used),
            "left_out": len(data.left_out)}


def _from_run_pages(html: str | None, run_dir: Path, targets: list[str]) -> list[Path]:
    """Where ``--html`` writes the pages of ``--from-run``: FILE (default
    RUN_DIR/labels-calibration.html) for one target; for several, one page each, named
    after FILE with the target added (``-criterion-ID-CRITERION``)."""
    import re

    from harness.files import check_output_file

    if html is None:
        return []
    base = Path(html) if html else run_dir / "labels-calibration.html"
    if len(targets) == 1:
        return [check_output_file(base, "the HTML report")]
    return [check_output_file(base.with_name(
        f"{base.stem}-{re.sub(r'[^a-z0-9_]+', '-', t)}{base.suffix or '.html'}"),
        "the HTML report") for t in targets]


def _run_study(dataset: Path, judges: list[str], rubric: list[str], options: AnalysisOptions,
               json_output: bool, page: Path | None, *, criterion: str | None, samples: int,
               swap: bool, allow_ties: bool, scale_map: str | None, temperature: float | None,
               out: Path, concurrency: int, cache: Path, cache_mode: CacheMode,
               models_config: Path | None, base_url: str | None,
               rate_limits: dict[str, RateLimits], rubric_dirs: list[Path],
               verbose: bool, judge_batch: bool) -> None:
    from harness.calibration.study import run_calibration
    from harness.calibration.study_dir import JUDGMENTS_FILE, REPORT_PAGE_FILE, STUDY_FILE
    from harness.calibration.study_records import parse_scale_map
    from harness.models.config import ModelsConfig, with_rate_limits
    from harness.report.html.calibration_page import write_calibration_page

    err = terminal_console(stderr=True, soft_wrap=True)
    mapping = parse_scale_map(scale_map) if scale_map is not None else None
    config = ModelsConfig.from_yaml(models_config) if models_config is not None else None
    if rate_limits:
        config = with_rate_limits(config or ModelsConfig(), rate_limits)
    progress, advance = counting_progress("judging", err)

    try:
        with logs_to(out / LOG_FILENAME, verbose=verbose), progress:
            report = run_async(run_calibration(
                dataset, judges, rubric, samples=samples, out_dir=out, criterion=criterion,
                scale_map=mapping, swap=swap, allow_ties=allow_ties, temperature=temperature,
                concurrency=concurrency, options=options, rubric_dirs=rubric_dirs,
                models=config, cache_path=cache, cache_mode=cache_mode, base_url=base_url,
                progress=advance, write_page=write_calibration_page, judge_batch=judge_batch))
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM
        err.print(f"[yellow]{signal_name(stop)}: the finished judgments are in "
                  f"{terminal_text(out / JUDGMENTS_FILE)}; run the same command to resume[/]")
        raise typer.Exit(exit_code(stop)) from None
    offline = [n for n in report.notes if n.startswith("OFFLINE")]
    if offline and not json_output:
        terminal_console().print(f"[bold yellow]{terminal_text(offline[0])}[/]")
    _print(report, json_output)
    counts = load_json(read_text(out / STUDY_FILE, "a study file (JSON)"), out / STUDY_FILE,
                       max_depth=STORED_DEPTH)["counts"]
    usage = counts["usage"]
    err.print(
        f"[dim]study {terminal_text(out)}: {counts['units_judged']} judge×item judged, "
        f"{counts['units_resumed']} resumed; {usage.get('calls', 0)} model calls "
        f"({usage.get('cached_calls', 0)} cached), {counts['failed_calls']} failed; wrote "
        f"{JUDGMENTS_FILE}, report.json, {REPORT_PAGE_FILE}, {STUDY_FILE}[/]")
    if page is not None:
        from harness.report.html.page import write_page

        _wrote(write_page(page, (out / REPORT_PAGE_FILE).read_text(encoding="utf-8")))
