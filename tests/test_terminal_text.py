"""`terminal_text`: every control, format and separator character shown as its escape, rich
markup kept literal, everything else kept; checked by printing through a real rich console."""

from __future__ import annotations

import io
import logging
import unicodedata

import pytest
from rich.console import Console

from harness.safe_text import TerminalLogHandler, terminal_console, terminal_text


def printed(text: str) -> str:
    """What a rich console (markup on, as the harness prints) shows for ``text``, alone (a
    table cell) and inside the harness's own markup (a styled line), which must agree."""
    shown = []
    for markup in (text, f"[bold]{text}[/bold] [red]ok[/]"):
        out = io.StringIO()
        Console(file=out, width=1000, highlight=False, emoji=False).print(markup, end="")
        shown.append(out.getvalue())
    assert shown[1] == shown[0] + " ok"
    return shown[0]


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b]2;PWNED\x1b\\", "\\x1b]2;PWNED\\x1b\\"),  # OSC: sets the window title
    ("\x1b[2J", "\\x1b[2J"),  # CSI: clears the screen
    ("\x9b2J", "\\x9b2J"),  # the 8-bit CSI (C1)
    ("\x00\x07\x08\x7f\x80\x9f", "\\x00\\x07\\x08\\x7f\\x80\\x9f"),  # NUL, BEL, BS, DEL, C1
    ("a\rb", "a\\rb"),  # carriage return would overwrite the line
    ("\u202aa\u202bb\u202cc\u202dd\u202ee", "\\u202aa\\u202bb\\u202cc\\u202dd\\u202ee"),
    ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),  # bidi isolates
    ("\u200e\u200f\u061c", "\\u200e\\u200f\\u061c"),  # bidi marks
    ("a\u200bb\ufeff", "a\\u200bb\\ufeff"),  # zero-width space, byte-order mark
    ("\U000e0041\U000e007f", "\\U000e0041\\U000e007f"),  # invisible tag characters
    ("\u2028\u2029", "\\u2028\\u2029"),  # line and paragraph separators
    ("\ud800", "\\ud800"),  # a lone surrogate (from JSON "\ud800") cannot even be encoded
    ("one\ntwo\tthree", "one\\ntwo\\tthree"),  # a cell or a line stays one line
])
def test_hidden_characters_are_shown_as_escapes(raw: str, shown: str) -> None:
    assert printed(terminal_text(raw)) == shown


@pytest.mark.parametrize("markup", [
    "[red]x[/red]", "[bold]", "[/]", "[link=https://example.com]click[/link]", "[@click]x[/]",
    "\\[bold]", "ends with a backslash\\", "two\\\\", "[b]\\", "\\", "[#ff0000]x", "a[b]c",
])
def test_rich_markup_stays_literal(markup: str) -> None:
    assert printed(terminal_text(markup)) == markup


@pytest.mark.parametrize("text", [
    "plain ASCII: ~!@#$%^&*()_+{}|:\"<>?`-=[];',./",
    "Grüße, Привет, 你好, こんにちは, مرحبا, שלום, नमस्ते",
    "👩‍💻 🏳️‍🌈 e\u0301",  # joiners, variation selectors and combining marks are kept
    "می\u200cخواهم",  # the zero-width non-joiner belongs to Persian words
])
def test_ordinary_text_is_kept(text: str) -> None:
    assert printed(terminal_text(text)) == text


def test_no_hidden_character_survives() -> None:
    # Every code point of the BMP and the tag block, against Unicode's own categories.
    every = "".join(chr(c) for c in [*range(0x10000), *range(0xE0000, 0xE0080)])
    shown = terminal_text(every)
    left = {ch for ch in shown
            if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")
            and ch not in "\u200c\u200d"}
    assert left == set()


def test_other_values_are_shown_as_their_text() -> None:
    assert terminal_text(None) == "None"
    assert terminal_text(3) == "3"


def test_the_console_keeps_emoji_codes_and_does_not_highlight() -> None:
    console = terminal_console()
    console.file = io.StringIO()
    console.print(terminal_text("a:thumbs_up:b 1.5 'q'"), end="")
    assert console.file.getvalue() == "a:thumbs_up:b 1.5 'q'"


def test_log_records_are_printed_through_terminal_text(
        capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("tests.terminal_text")
    record = logger.makeRecord(logger.name, logging.ERROR, __file__, 1,
                               "API call failed: %s", ("\x1b]2;PWNED\x1b\\[red]x[/red]",), None)
    TerminalLogHandler().handle(record)
    assert capsys.readouterr().err == "API call failed: \\x1b]2;PWNED\\x1b\\[red]x[/red]\n"
    assert TerminalLogHandler().level == logging.WARNING  # as Python's own last resort
