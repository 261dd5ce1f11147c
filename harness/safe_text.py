"""Outside text made safe for the terminal.

Ids, required phrases, file paths, and text from models, tools, scenarios, datasets and
servers are data. Printed raw, an escape sequence in them acts on the user's terminal
(``\\x1b]2;…\\x1b\\\\`` sets the window title, ``\\x1b[2J`` clears the screen, ``\\x9b`` is the
8-bit form of ``\\x1b[``), a bidirectional override reorders what is shown ("Trojan Source"),
and ``[red]`` is read as rich markup. Every such string goes through :func:`terminal_text`
before it reaches a console, and the consoles come from :func:`terminal_console`. Where
outside text is written for a browser or an editor (the HTML reports, imported YAML), the
bidirectional controls are shown as their escapes too (:func:`visible_bidi`). Log
records that would otherwise reach the terminal raw (Python's handler of last resort prints
them as they are; instructor logs a failed call with the server's error text) go through
:class:`TerminalLogHandler`.
"""

from __future__ import annotations

import logging
import re
import unicodedata

from rich.console import Console
from rich.markup import escape

# Characters never printed as themselves: controls (C0, DEL, C1), format characters
# (bidirectional embeddings, overrides, isolates and marks, zero-width and invisible "tag"
# characters), lone surrogates (a JSON "\ud800" decodes to one; printing it would raise) and
# the line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Format characters that ordinary text needs: the joiners inside emoji sequences and in
# Persian and Indic words.
_JOINERS = frozenset({"\u200c", "\u200d"})
_NOT_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e]")
# The bidirectional embeddings, overrides, isolates and marks: each reorders the text shown
# around it ("Trojan Source"), in a browser and an editor as in a terminal.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                          "\u200e\u200f\u061c")
_BIDI_ESCAPES = str.maketrans({c: f"\\u{ord(c):04x}" for c in BIDI_CONTROLS})


def visible_bidi(text: str) -> str:
    """``text`` with each bidirectional control (:data:`BIDI_CONTROLS`) shown as its escape
    (U+202E as the six characters ``\\u202e``) and nothing else changed: for outside text
    on a web page, where newlines and any script are kept, or in a YAML double-quoted
    scalar, where the escape reads back as the character."""
    return text.translate(_BIDI_ESCAPES)


def terminal_text(value: object) -> str:
    """``str(value)`` ready to print on a rich console with markup on, showing exactly what
    the text holds and doing nothing to the terminal.

    Every control character (C0 including ESC, DEL, C1 such as the 8-bit CSI ``\\x9b``),
    format character (the bidirectional controls U+202A-U+202E, U+2066-U+2069, U+200E,
    U+200F, U+061C; zero-width spaces; tag characters), lone surrogate and line or paragraph
    separator is shown as its Python escape (``\\x1b``, ``\\x9b``, ``\\u202e``), and rich
    markup is escaped, so ``[bold]`` prints as ``[bold]``. The zero-width joiners U+200C and
    U+200D are kept (emoji and many scripts need them); other text, any script, is kept.

    Newline, tab and carriage return are shown as ``\\n``, ``\\t`` and ``\\r`` too: outside
    text is printed in a table cell or on one line (an error, a warning, a note), which it
    must neither break nor follow with a fake line of our own, nor overwrite. Text meant to
    span lines is split by the caller and each line passed alone (as the CLI does for the
    problems of an :class:`~harness.errors.InputErrors`).

    A backslash already in the text is kept as it is: the display is for reading, and the
    JSON output (``--json``) gives the exact value. Never raises.
    """
    text = visible_controls(str(value))
    body = text.rstrip("\\")
    if body == text:
        return escape(text)
    # rich reads backslashes before a tag as escapes, so a trailing run would hide our own
    # closing tag or (escaped by rich's rule) show doubled in a cell. Doubled and followed by
    # an empty span, it prints as itself wherever the text is put.
    return escape(body) + "\\" * (2 * (len(text) - len(body))) + "[dim][/dim]"


def visible_controls(text: str) -> str:
    """``text`` with every character :func:`terminal_text` hides shown as its Python escape,
    newlines included, and nothing else changed (no markup escaping): for plain-text files a
    user reads in a terminal (``cat``, ``tail -f``), such as a command's log file."""

    def visible(match: re.Match[str]) -> str:
        char = match.group()
        if char in _JOINERS or unicodedata.category(char) not in _HIDDEN_CATEGORIES:
            return char
        return char.encode("unicode_escape").decode("ascii")

    return _NOT_PRINTABLE_ASCII.sub(visible, text)



def terminal_console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """The rich console the commands print on (stdout, or stderr with ``stderr=True``).

    Markup stays on for the harness's own styling; emoji codes are off, so an id such as
    ``a:thumbs_up:b`` keeps its colons (rich has no way to escape them in one string), and
    automatic highlighting is off. ``soft_wrap=True`` leaves long lines to the terminal
    instead of breaking them (for one-line messages)."""
    return Console(stderr=stderr, highlight=False, emoji=False, soft_wrap=soft_wrap)


class TerminalLogHandler(logging.Handler):
    """Prints each log record on stderr, each of its lines (a traceback has several) through
    :func:`terminal_text`. The CLI makes it Python's handler of last resort
    (:data:`logging.lastResort`, used when no handler is configured), and the commands that
    call models print their own records with it (:func:`harness.logs.library_logs`), so a
    library that logs a server's error text cannot send its escape sequences to the
    terminal."""

    def __init__(self, level: int = logging.WARNING) -> None:
        super().__init__(level)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            console = terminal_console(stderr=True, soft_wrap=True)
            for line in self.format(record).splitlines():
                console.print(terminal_text(line))
        except Exception:
            self.handleError(record)
