"""``harness import personas REAL.jsonl --out DIR``: draft one scenario's simulated user per
real conversation, for a person to review.

Reads real conversations (:mod:`harness.formats.real_conversations`), has a model draft each
one's user block (:mod:`harness.formats.persona_drafts`; offline, ``mock:drafter`` of
:mod:`harness.formats.persona_offline`) and writes each valid draft as a YAML scenario
(:mod:`harness.formats.persona_files`). Exit 0 when every conversation was drafted, 3 when
some were not (the others are written), 4 when none was, 2 for bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli.adk_cmd import import_app
from harness.cli.app import EXIT_BUDGET_STOP, EXIT_NOTHING_SCORED, Verbose, logs_to
from harness.cli.help_format import MODELS_PANEL, OUTPUT_PANEL, examples
from harness.errors import InputError
from harness.safe_text import terminal_console

OFFLINE_DRAFTER = "mock:drafter"


@import_app.command("personas", epilog=examples(
    ("draft the shipped real conversations offline, with no key",
     "harness import personas tests/data/real-conversations/oasst1-en-40.jsonl \\\n"
     "    --out drafts --offline"),
    ("draft them with a model", "harness import personas REAL.jsonl --out drafts "
     "--model openai:gpt-4o")))
def import_personas(
    real_file: Annotated[Path, typer.Argument(
        metavar="REAL.jsonl",
        help="real conversations, one JSON object per line: {id, messages} (OpenAI chat "
        "format, as score-transcripts reads)")],
    out: Annotated[Path, typer.Option(
        "--out", metavar="DIR", rich_help_panel=OUTPUT_PANEL,
        help="a new or empty folder for the scenario files")],
    model: Annotated[str | None, typer.Option(
        "--model", metavar="MODEL", rich_help_panel=MODELS_PANEL,
        help="the drafting model (provider:model)")] = None,
    offline: Annotated[bool, typer.Option(
        "--offline", rich_help_panel=MODELS_PANEL,
        help=f"draft by word rules with {OFFLINE_DRAFTER}: no key, no model")] = False,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", metavar="URL", rich_help_panel=MODELS_PANEL,
        help="base URL of the drafting model (an OpenAI-compatible server or a "
        "gateway)")] = None,
    force: Annotated[bool, typer.Option(
        "--force", rich_help_panel=OUTPUT_PANEL, help="write into a folder that holds "
        "files, replacing drafts of the same name")] = False,
    json_output: Annotated[bool, typer.Option(
        "--json", rich_help_panel=OUTPUT_PANEL, help="print one JSON object")] = False,
    verbose: Verbose = False,
) -> None:
    """Draft scenarios' simulated users from real conversations.

    For each conversation a model drafts the user's persona, goal, the facts they told
    the assistant (known_facts), what they could not say (unknown_facts) and, when the
    conversation shows one, a plan; the opening message is the real first user message,
    exactly. Each draft is validated against the scenario schema (an invalid one is asked
    for again once, then reported) and written as one YAML file named from the
    conversation's id, marked as a draft a person must review. The agent's side (model,
    tools, expectations, rubrics) is left out: a conversation does not show it. A
    conversation whose model call fails is reported, the others are written."""
    from harness.logs import command_log_file

    name = _drafting_model(model, offline)
    with logs_to(command_log_file("import-personas"), verbose=verbose):
        output = personas_output(real_file, out, model=name, base_url=base_url, force=force)
    if json_output:
        typer.echo(json.dumps(output, indent=2))
    else:
        from harness.report.personas_terminal import render_drafts

        render_drafts(output, terminal_console())
    if output["not_drafted"]:
        raise typer.Exit(EXIT_BUDGET_STOP if output["drafted"] else EXIT_NOTHING_SCORED)


def _drafting_model(model: str | None, offline: bool) -> str:
    if offline and model is not None and not model.startswith("mock:"):
        raise InputError("command line", "--offline", f"no --model besides it (--offline "
                         f"drafts with {OFFLINE_DRAFTER}; got --model {model})")
    if model is None and not offline:
        raise InputError("command line", "--model", f"a drafting model (provider:model), or "
                         f"--offline to draft with {OFFLINE_DRAFTER}")
    return model or OFFLINE_DRAFTER


def personas_output(real_file: Path, out: Path, *, model: str, base_url: str | None = None,
                    force: bool = False) -> dict[str, Any]:
    """Draft every conversation of ``real_file``, write the valid drafts into ``out`` and
    return the command's JSON object: ``source``, ``out``, ``model``, ``offline``,
    ``drafted`` (per file: ``id``, ``line``, ``scenario_id``, ``file``, ``goal``,
    ``known_facts``, ``unknown_facts``, ``plan_steps``) and ``not_drafted`` (per
    conversation: ``id``, ``line``, ``reason``). Bad input, names that would clash and an
    output folder that holds files (without ``force``) are refused before any model call
    (:class:`~harness.errors.InputError`)."""
    import asyncio

    from harness.errors import InputErrors
    from harness.files import make_directory, write_text_atomic
    from harness.formats.persona_drafts import Drafted, draft_all
    from harness.formats.persona_files import check_names, check_output_folder, draft_file
    from harness.formats.real_conversations import load_real_conversations
    from harness.models.hub import ModelHub

    conversations = load_real_conversations(real_file)
    check_names(conversations, real_file)
    check_output_folder(out, force=force)

    async def draft() -> list[Any]:
        async with ModelHub() as hub:
            drafter = hub.get(model, base_url=base_url)
            if not drafter.spec.is_offline:  # a missing key: said once, before any call
                hub.endpoint(drafter.spec.provider, drafter.spec.base_url).require_key(model)
            return await draft_all(drafter, conversations)

    outcomes = asyncio.run(draft())
    drafted: list[dict[str, Any]] = []
    not_drafted: list[dict[str, Any]] = []
    for outcome in outcomes:
        conversation = outcome.conversation
        if not isinstance(outcome, Drafted):
            not_drafted.append({"id": conversation.id, "line": conversation.line,
                                "reason": outcome.reason})
            continue
        try:
            written = draft_file(outcome, real_file, out)
        except (InputError, InputErrors) as err:
            not_drafted.append({"id": conversation.id, "line": conversation.line,
                                "reason": "the draft is not a valid scenario: "
                                + "; ".join(str(err).splitlines())})
            continue
        make_directory(out, "a folder for the drafted scenarios")
        write_text_atomic(written.path, written.text)
        user = outcome.draft
        drafted.append({"id": conversation.id, "line": conversation.line,
                        "scenario_id": written.scenario_id, "file": str(written.path),
                        "goal": user.goal, "known_facts": len(user.known_facts),
                        "unknown_facts": len(user.unknown_facts),
                        "plan_steps": len(user.plan)})
    return {"source": str(real_file), "out": str(out), "model": model,
            "offline": model.startswith("mock:"), "drafted": drafted,
            "not_drafted": not_drafted}
