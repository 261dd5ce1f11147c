"""The terminal summary of ``harness import personas``: a table of the drafts written (the
conversation, the file, the goal shortened, the facts), then one line per conversation not
drafted, with the reason, and the reminder that every draft awaits review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from harness.report.formatting import ident, make_table, widen_for_identifiers
from harness.safe_text import terminal_text
from harness.wording import plural

GOAL_CHARACTERS = 60


def _shortened(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word to at most ``limit`` characters (``…`` marks it)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0] or flat[: limit - 1]
    return cut + "…"


def render_drafts(output: dict[str, Any], console: Console) -> None:
    """The table and lines described in the module docstring; ``output`` is the command's
    JSON object."""
    drafted, missed = output["drafted"], output["not_drafted"]
    if drafted:
        table = make_table("Drafted scenarios (for review)", "conversation", "file", "goal",
                           "facts", text=("file", "goal"))
        for row in drafted:
            facts = str(row["known_facts"])
            if row["unknown_facts"]:
                facts += f" +{row['unknown_facts']}?"
            table.add_row(ident(row["id"]), ident(Path(row["file"]).name),
                          terminal_text(_shortened(row["goal"], GOAL_CHARACTERS)), facts)
        widen_for_identifiers(table, 0, limit=14)
        widen_for_identifiers(table, 1, limit=14)
        console.print(table)
        console.print("facts: known facts the user told (+N?: things they could not say)",
                      style="dim")
    for row in missed:
        console.print(f"not drafted: {terminal_text(row['id'])} (line {row['line']}): "
                      f"{terminal_text(row['reason'])}", style="yellow", soft_wrap=True)
    if drafted:
        console.print(f"wrote {plural(len(drafted), 'draft')} into "
                      f"{terminal_text(output['out'])}"
                      + (f"; {len(missed)} not drafted" if missed else ""))
    else:
        console.print(f"no draft written: none of the {plural(len(missed), 'conversation')} "
                      "was drafted")
    if drafted:
        console.print("each is a draft: a person must review it before it is used "
                      "(docs/simulated-users.md)", style="dim")
    if output["offline"]:
        console.print(f"note: drafted offline by word rules ({terminal_text(output['model'])}), "
                      "not by a model", style="yellow")
