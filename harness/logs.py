"""Where log records go while a command calls models.

The libraries under the model layer (instructor, openai, anthropic, httpx, ...) log on their
own: an invalid structured answer alone is an instructor ERROR with the whole validation dump,
once per attempt. Left to Python's defaults those lines flood the terminal, ahead of the one
line per problem the harness prints. While :func:`library_logs` is active:

- the libraries' warnings and errors, and the harness's own records from INFO up (retries,
  loggers under ``harness``), go to a log file (the run's or study's ``harness.log``, or a
  file under ``.harness/logs/`` for commands without an output directory), keys removed
  (:func:`redact_secrets`); the libraries' INFO records (one per HTTP request) are not even
  made, so a long run does not pay for them;
- the terminal gets the harness's own warnings, one line each;
- ``verbose`` takes every record from INFO up, the libraries' too, to the file and to the
  terminal;
- Python warnings (``warnings.warn``) are logged, so they follow the same path.

Keys never reach the file or the terminal: each record's text has every key the model layer
was given (:func:`hide_in_logs`), the keys in the environment and anything shaped like a key
replaced by ``[redacted]``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.redact import redact
from harness.safe_text import TerminalLogHandler, visible_controls
from harness.wording import plural

LOG_FILENAME = "harness.log"
LOG_DIR = Path(".harness") / "logs"
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")

_hidden: set[str] = set()


def hide_in_logs(secret: str) -> None:
    """Remove ``secret`` (an API key) from every log record formatted from now on."""
    if secret:
        _hidden.add(secret)


def redact_secrets(text: str) -> str:
    """``text`` without any key given to :func:`hide_in_logs`, any key in the environment
    (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``) or anything shaped like a key."""
    from_env = (os.environ.get(name, "") for name in KEY_VARIABLES)
    return redact(text, [*_hidden, *from_env])


class _RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        # The whole text, traceback included: SDK exceptions can echo request details.
        return redact_secrets(super().format(record))


class _FileFormatter(_RedactingFormatter):
    """One record per line of the log file, its outside text (servers' error messages,
    model output in validation dumps) with control characters shown visibly: the file is read
    with ``cat`` or ``tail -f``, where a raw escape sequence would act on the terminal."""

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(visible_controls(line) for line in super().format(record).splitlines())


class _OwnRecords(logging.Filter):
    """The harness's own records (loggers under ``harness``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name == "harness" or record.name.startswith("harness.")


class _CreatingFileHandler(logging.FileHandler):
    """A file handler that creates the file, and its folder, at the first record: a command
    that logs nothing leaves no file, and one that fails on bad input leaves no folder."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8", delay=True)
        self.problems = 0  # records at WARNING and above

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is None:  # delay=True: opened at the first record
            Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        self.problems += record.levelno >= logging.WARNING
        super().emit(record)


@dataclass
class LogSink:
    """The log file of one command and how many warnings and errors reached it."""

    path: Path
    handler: _CreatingFileHandler

    @property
    def problems(self) -> int:
        return self.handler.problems

    def hint(self) -> str | None:
        """One line naming the file, when warnings or errors were written to it."""
        if not self.problems:
            return None
        return (f"{plural(self.problems, 'warning/error line')} (the harness's and the model "
                f"libraries') {'is' if self.problems == 1 else 'are'} in "
                f"{self.path} (--verbose shows them here)")


def command_log_file(command: str) -> Path:
    """The log file of a command with no output directory: ``.harness/logs/<command>-<time>.log``
    under the current directory."""
    return LOG_DIR / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}.log"


@contextmanager
def library_logs(path: Path, *, verbose: bool = False) -> Iterator[LogSink]:
    """Send log records to ``path`` (see the module docstring) until the block ends; then
    the logging set-up is as it was."""
    root = logging.getLogger()
    file_handler = _CreatingFileHandler(path)
    file_handler.setFormatter(_FileFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    terminal = TerminalLogHandler(logging.NOTSET)
    if verbose:
        terminal.setFormatter(_RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
    else:
        terminal.setLevel(logging.WARNING)
        terminal.addFilter(_OwnRecords())
        terminal.setFormatter(_RedactingFormatter("warning: %(message)s"))
    handlers: list[logging.Handler] = [file_handler, terminal]
    own = logging.getLogger("harness")
    levels = root.level, own.level
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    own.setLevel(logging.INFO)
    for handler in handlers:
        root.addHandler(handler)
    logging.captureWarnings(True)
    try:
        yield LogSink(path=path, handler=file_handler)
    finally:
        logging.captureWarnings(False)
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(levels[0])
        own.setLevel(levels[1])
