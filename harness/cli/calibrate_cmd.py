"""``harness calibrate --judgments FILE [--json]``: agreement of judges with people, from
judgment records that already exist (contract 3); no model calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from harness.calibration.analysis import analyse
from harness.calibration.judgments import load_judgments
from harness.calibration.render import render_report
from harness.calibration.report import AnalysisOptions
from harness.calibration.scale import Scale
from harness.cli.app import app
from harness.errors import InputError

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


@app.command()
def calibrate(
    judgments: Annotated[
        Path,
        typer.Option(
            "--judgments",
            help="JSONL/CSV of judgment records (contract 3): pointwise {item_id, human, judge} "
            "or pairwise {item_id, gold, verdict, swapped}.",
        ),
    ],
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the report as one JSON object.")
    ] = False,
    pass_threshold: Annotated[
        float | None,
        typer.Option(help="A score at or above this passes (pass/fail statistics, PPI pass rate)."),
    ] = None,
    threshold_criterion: Annotated[
        str, typer.Option(help="Best judge threshold by max 'kappa' or max 'alignment'.")
    ] = "kappa",
    scale: Annotated[
        str | None,
        typer.Option(help="Rating scale MIN:MAX[:STEP|:continuous]; overrides the file's."),
    ] = None,
    alpha_level: Annotated[
        str | None,
        typer.Option(help="Level of the headline krippendorff_alpha: nominal, ordinal, interval."),
    ] = None,
    missing_verdict: Annotated[
        str, typer.Option(help="Pairwise: a missing verdict counts as 'wrong' or is 'exclude'd.")
    ] = "wrong",
    ppi_lambda: Annotated[
        float | None, typer.Option(help="Fix PPI++'s lambda (default: power-tuned).")
    ] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples (0: no intervals).")] = 2000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    confidence: Annotated[float, typer.Option(help="Confidence level of the intervals.")] = 0.95,
) -> None:
    """Measure how well judges agree with people: correlations, kappa, Krippendorff's alpha,
    bias, pass/fail and threshold calibration, pairwise position consistency, the human
    baseline and PPI, each with a seeded bootstrap interval over items."""
    raw = {
        "n_resamples": resamples,
        "confidence": confidence,
        "seed": seed,
        "pass_threshold": pass_threshold,
        "threshold_criterion": threshold_criterion,
        "alpha_level": alpha_level,
        "missing_verdict": missing_verdict,
        "ppi_lambda": ppi_lambda,
        "scale": parse_scale(scale) if scale is not None else None,
    }
    try:
        options = AnalysisOptions.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        raise InputError(_OPTION_NAMES.get(field, field), None, first["msg"]) from err
    data = load_judgments(judgments, scale=options.scale)
    report = analyse(data, options)
    if json_output:
        typer.echo(json.dumps(report.to_json_dict(), indent=2, allow_nan=False))
        return
    render_report(report, Console(highlight=False))
