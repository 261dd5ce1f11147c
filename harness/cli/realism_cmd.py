"""``harness simulator-realism REAL.jsonl RUN_DIR [--json]``: how far a run's simulated users
are from real ones.

Reads real conversations (:mod:`harness.formats.real_conversations`) and the run's simulated
ones (:mod:`harness.runs.simulated_users`), computes each conversation's features
(:mod:`harness.stats.user_turn_features`) and compares the two sets
(:func:`harness.stats.realism.compare_users`). No model call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli.app import app
from harness.cli.help_format import OUTPUT_PANEL, examples
from harness.errors import InputError
from harness.safe_text import terminal_console


@app.command("simulator-realism", epilog=examples(
    ("the run's simulated users against the shipped real conversations",
     "harness simulator-realism \\\n"
     "    tests/data/real-conversations/oasst1-en-40.jsonl runs/demo"),))
# The defaults are harness.stats.realism's DEFAULT_RESAMPLES and DEFAULT_SEED, written out:
# importing that module here would load numpy for every `harness --help`.
def simulator_realism(
    real_file: Annotated[Path, typer.Argument(
        metavar="REAL.jsonl",
        help="real conversations, one JSON object per line: {id, messages} (OpenAI chat "
        "format, as score-transcripts reads)")],
    run_dir: Annotated[Path, typer.Argument(
        metavar="RUN_DIR", help="a run directory (its run.sqlite)")],
    json_output: Annotated[bool, typer.Option(
        "--json", rich_help_panel=OUTPUT_PANEL, help="print one JSON object")] = False,
    resamples: Annotated[int, typer.Option(
        "--resamples", metavar="N", min=1, max=100_000,
        help="bootstrap resamples for the intervals")] = 1000,
    seed: Annotated[int, typer.Option(
        "--seed", metavar="S", help="seed of the bootstrap")] = 0,
) -> None:
    """Compare a run's simulated users with real users.

    Features of the user's side: turns per conversation, words, questions and new facts per
    turn, lexical diversity, corrections of the agent, and how conversations end. Each
    feature's real and simulated distributions are compared by the Kolmogorov-Smirnov
    statistic and the Wasserstein distance, each with a bootstrap interval (conversations
    resampled within each set); the realism score is 1 minus the mean KS statistic: 1 when
    simulated users look like the real ones on every feature, 0 when no feature overlaps.
    Samples with scripted users, and errored ones, are left out. No model call."""
    output = realism_output(real_file, run_dir, resamples=resamples, seed=seed)
    if json_output:
        typer.echo(json.dumps(output, indent=2))
    else:
        from harness.report.realism_terminal import render_realism

        render_realism(output, terminal_console())


def realism_output(real_file: Path, run_dir: Path, *, resamples: int, seed: int
                   ) -> dict[str, Any]:
    """The command's JSON object: ``real_file``, ``run_dir``, ``simulated`` (the samples
    read and left out, the simulator models), ``comparison``
    (:class:`~harness.stats.realism.RealismComparison`) and ``notes``. Raises
    :class:`~harness.errors.InputError` naming the file or run for bad input."""
    from harness.formats.real_conversations import load_real_conversations
    from harness.runs.simulated_users import simulated_users
    from harness.stats.realism import MIN_CONVERSATIONS, compare_users
    from harness.stats.user_turn_features import conversation_features, utterances

    real = load_real_conversations(real_file)
    if len(real) < MIN_CONVERSATIONS:
        raise InputError(real_file, None, f"at least {MIN_CONVERSATIONS} conversations: a "
                         "distance between distributions needs two in each set (the file "
                         f"has {len(real)})")
    simulated = simulated_users(run_dir)
    if len(simulated.conversations) < MIN_CONVERSATIONS:
        raise InputError(run_dir, None, f"at least {MIN_CONVERSATIONS} samples with simulated "
                         "users: a distance between distributions needs two in each set (the "
                         f"run has {len(simulated.conversations)})")
    comparison = compare_users(
        [conversation_features(utterances(c.messages)) for c in real],
        [conversation_features(turns) for _, turns in simulated.conversations],
        resamples=resamples, seed=seed)
    notes = []
    left_out = simulated.n_scripted + simulated.n_errored
    if left_out:
        notes.append(f"{left_out} of the run's {simulated.n_samples} samples left out "
                     f"({simulated.n_scripted} with scripted users, {simulated.n_errored} "
                     "errored)")
    if comparison.features_left_out:
        notes.append("not in the score, one set having no value: "
                     + ", ".join(comparison.features_left_out))
    offline = [m for m in simulated.simulator_models if m.startswith("mock:")]
    if offline:
        notes.append(f"the simulated users come from offline models ({', '.join(offline)}), "
                     "not from a model that writes like a person")
    return {"real_file": str(real_file), "run_dir": str(run_dir),
            "simulated": {"n_samples": simulated.n_samples,
                          "n_conversations": len(simulated.conversations),
                          "n_scripted_left_out": simulated.n_scripted,
                          "n_errored_left_out": simulated.n_errored,
                          "simulator_models": simulated.simulator_models},
            "comparison": comparison.model_dump(mode="json"), "notes": notes}
