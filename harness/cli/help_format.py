"""How ``harness ... --help`` is laid out, so that it reads whole in an 80-column terminal.

Typer's own rich layout gives every option six columns (long name, short name, negative long
name, negative short name, type, help) and lets rich shrink them all to fit: at 80 columns it
cut option names (``--judge-tempera…``), choices and defaults, and squeezed the help into
a column some 17 characters wide. It also prints, beside every option, a placeholder built
from the parameter's Python annotation (``<bool>``, ``<list[Path]>``), flags and ``--help``
included, as if a flag took a value.

Here each option is one row of two columns: its names with the value it takes
(``--offline / --no-offline``, ``--epochs K``, ``--gate-on mean|lower-bound``) and what it
does, with its default. The names are never cut: a name wider than its column stands on a
line of its own and its help starts on the next. Options are grouped into the panels named
by ``rich_help_panel``, and a command's ``epilog`` (rich markup, see :func:`examples`) ends
the page. :func:`use_harness_help` gives every command and group this layout.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

import typer
from typer import _click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import DefaultPlaceholder

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

# Panel titles shared by the commands (each command may add its own).
INPUT_PANEL = "Input"
DATASET_PANEL = "Run judges on DATASET"
SELECT_PANEL = "Select scenarios"
MODELS_PANEL = "Models"
JUDGES_PANEL = "Judges"
CACHE_PANEL = "Model configuration and cache"
SAMPLING_PANEL = "Sampling and statistics"
EXECUTION_PANEL = "Execution"
LIMITS_PANEL = "Limits"
GATE_PANEL = "CI gate"
STATS_PANEL = "Statistics"
OUTPUT_PANEL = "Output"
OPTIONS_PANEL = "Options"  # anything not given a panel: --json, --verbose, --help
# The order of the panels on a page; a panel not named here follows them, "Options" comes last.
PANEL_ORDER = (INPUT_PANEL, DATASET_PANEL, SELECT_PANEL, MODELS_PANEL, JUDGES_PANEL,
               CACHE_PANEL, SAMPLING_PANEL, STATS_PANEL, GATE_PANEL, EXECUTION_PANEL,
               LIMITS_PANEL, OUTPUT_PANEL)
ARGUMENTS_PANEL = "Arguments"

NAME_STYLE = "bold cyan"
VALUE_STYLE = "yellow"
EXTRA_STYLE = "dim"
BORDER_STYLE = "dim"
GAP = 2  # spaces between the name column and the help

Row = tuple["Text", "Text", "Text | None"]  # names, help, and a note such as [default: 5]


class HarnessCommand(TyperCommand):
    """A typer command whose ``--help`` is laid out by :func:`print_help`."""

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        print_help(self, ctx)


class HarnessGroup(TyperGroup):
    """A typer group whose ``--help`` is laid out by :func:`print_help`."""

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        print_help(self, ctx)


def use_harness_help(group: typer.Typer) -> None:
    """Give ``group``, its commands and its sub-groups (recursively) the layout of
    :func:`print_help`, unless one already names a class of its own."""
    if group.info.cls in (None, TyperGroup) or isinstance(group.info.cls, DefaultPlaceholder):
        group.info.cls = HarnessGroup
    for command in group.registered_commands:
        if command.cls in (None, TyperCommand):
            command.cls = HarnessCommand
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            use_harness_help(sub.typer_instance)


def examples(*pairs: tuple[str, str]) -> str:
    """An epilog of examples in rich markup: each pair is (what it does, the command)."""
    from rich.markup import escape

    lines = ["[bold]Examples[/]"]
    for what, command in pairs:
        lines += [f"  [dim]# {escape(what)}[/]", f"  {escape(command)}"]
    return "\n".join(lines)


def print_help(command: _click.Command, ctx: _click.Context) -> None:
    """Print ``command``'s help on stdout: usage, description, one panel per
    ``rich_help_panel`` (arguments first, the unnamed "Options" last), the sub-commands of a
    group, and the epilog."""
    from rich.console import Console
    from rich.padding import Padding
    from rich.text import Text

    console = Console(highlight=False, emoji=False, width=ctx.terminal_width)
    console.print()
    usage = Text("Usage: ", style="yellow")
    usage.append(command.get_usage(ctx).removeprefix("Usage: "), style="bold")
    console.print(Padding(usage, (0, 1)))
    description = _description(command.help or "")
    if description:
        console.print(Padding(description, (1, 1, 0, 1)))
    console.print()
    panels: list[tuple[str, list[Row]]] = [
        (title, [(_names(param, ctx), *_param_help(param, ctx)) for param in params])
        for title, params in _panels(command.get_params(ctx))]
    if isinstance(command, TyperGroup):
        rows: list[Row] = []
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                rows.append((Text(name, style=NAME_STYLE),
                             Text(sub.short_help or sub.get_short_help_str(limit=1000)), None))
        panels.append(("Commands", rows))
    # One name column for the whole page, so that the panels line up: as wide as the longest
    # name up to a third of the width (24 at least, half in a very narrow terminal); a longer
    # name stands on a line of its own.
    inner = console.width - 4  # a panel's border and one space of padding on each side
    cap = max(inner // 3, min(24, inner // 2))
    name_width = max((len(row[0]) for _, panel in panels for row in panel
                      if len(row[0]) <= cap), default=cap)
    for title, panel in panels:
        _print_panel(console, title, panel, name_width)
    if command.epilog:
        console.print(Padding(Text.from_markup(command.epilog.strip("\n"), emoji=False),
                              (1, 1)))


def _description(help_text: str) -> Text:
    """The command's docstring, each paragraph rewrapped (its source line breaks dropped),
    up to a form feed (what follows one is for the source reader only)."""
    from rich.text import Text

    text = inspect.cleandoc(help_text).partition("\f")[0]
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    return Text("\n\n".join(paragraphs))


def _panels(params: Iterable[_click.Parameter]) -> list[tuple[str, list[_click.Parameter]]]:
    """Parameters grouped by panel: the arguments' panels first, then the options' in the
    order of :data:`PANEL_ORDER`, then any other in the order of its first option, and the
    unnamed "Options" panel last."""
    arguments: dict[str, list[_click.Parameter]] = {}
    options: dict[str, list[_click.Parameter]] = {}
    for param in params:
        if getattr(param, "hidden", False):
            continue
        is_argument = isinstance(param, TyperArgument)
        default = ARGUMENTS_PANEL if is_argument else OPTIONS_PANEL
        panel = getattr(param, "rich_help_panel", None) or default
        (arguments if is_argument else options).setdefault(panel, []).append(param)
    unnamed = options.pop(OPTIONS_PANEL, [])
    known = {title: i for i, title in enumerate(PANEL_ORDER)}
    options = dict(sorted(options.items(), key=lambda item: known.get(item[0], len(known))))
    return [*arguments.items(), *options.items(), *([(OPTIONS_PANEL, unnamed)] if unnamed else [])]


def _names(param: _click.Parameter, ctx: _click.Context) -> Text:
    """The first column of a parameter's row: ``--name / --no-name`` for a flag,
    ``--name VALUE`` for an option that takes one, ``NAME`` or ``NAME...`` for an
    argument."""
    from rich.text import Text

    if isinstance(param, TyperArgument):
        name = param.metavar or (param.name or "").upper()
        return Text(name + ("..." if param.nargs == -1 and not param.metavar else ""),
                    style=NAME_STYLE)
    names = Text(" / ".join([*param.opts, *param.secondary_opts]), style=NAME_STYLE)
    if isinstance(param, TyperOption) and not param.is_flag and not param.count:
        names.append(" ")
        names.append(_value_placeholder(param, ctx), style=VALUE_STYLE)
    return names


def _value_placeholder(param: TyperOption, ctx: _click.Context) -> str:
    """What an option's value is shown as: its ``metavar`` when it declares one, else its
    choices (``mean|lower-bound``), else its type in capitals (``INT``, ``PATH``), from
    typer's ``<int>``, ``<list[Path]>`` or ``<float range>``."""
    if param.metavar:
        return param.metavar
    shown = (param.display_type_rich(ctx) or "").removesuffix("...").strip("<>")
    listed = re.fullmatch(r"list\[(.*)\]", shown)
    shown = (listed.group(1) if listed else shown).removesuffix(" range")
    return shown if "|" in shown else shown.upper()


def _param_help(param: _click.Parameter, ctx: _click.Context) -> tuple[Text, Text | None]:
    """The second column: the help text, and the note that follows it, dim:
    ``[default: ...]`` (not for a flag that is off by default: every flag is), the range,
    ``[required]``."""
    from rich.text import Text

    own = " ".join((getattr(param, "help", None) or "").split())
    note = ""
    if isinstance(param, TyperOption):
        record = param.get_help_record(ctx)
        full = record[1] if record else ""
        tail = full[len(param.help or ""):].strip() if full.startswith(param.help or "") else ""
        off_flag = param.is_flag and not param.default
        note = "" if off_flag else tail
    elif param.required:
        note = "[required]"
    return Text(own), Text(note, style=EXTRA_STYLE) if note else None


def _print_panel(console: Console, title: str, rows: list[Row], name_width: int) -> None:
    """One bordered panel of two-column rows, the names ``name_width`` wide; a longer name
    stands on its own line, its help below. A note (``[default: 5]``) is never broken: it
    ends the help's last line, or has a line of its own."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.text import Text

    if not rows:
        return
    inner = console.width - 4
    help_width = max(inner - name_width - GAP, 10)
    indent = " " * (name_width + GAP)
    lines: list[Text] = []
    for name, help_text, note in rows:
        help_lines = list(help_text.wrap(console, help_width)) if help_text.plain else []
        if note is not None:
            if help_lines and help_lines[-1].cell_len + 1 + note.cell_len <= help_width:
                help_lines[-1] = Text.assemble(help_lines[-1], " ", note)
            else:
                help_lines.extend(note.wrap(console, help_width))
        if len(name) > name_width:
            lines.extend(name.wrap(console, inner))
        else:
            first = help_lines.pop(0) if help_lines else Text("")
            lines.append(Text.assemble(name, " " * (name_width - len(name) + GAP), first))
        lines.extend(Text.assemble(indent, line) for line in help_lines)
    console.print(Panel(Group(*lines), title=title, title_align="left", border_style=BORDER_STYLE,
                        padding=(0, 1)))


__all__ = ["HarnessCommand", "HarnessGroup", "examples", "print_help", "use_harness_help"]
