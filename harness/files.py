"""Files a user names: reading them, making directories for output, replacing files in one
step, and checking an SQLite file for damage.

Every reader of a user's text file (models config, scenarios, rubrics, calibration data,
transcripts, sample scores, run summaries) goes through :func:`read_text`, and every writer
through :func:`make_directory`, :func:`check_output_file` and :func:`atomic_write`, so a path
that is missing, a directory, unreadable, not UTF-8, a file where a directory is needed, or not
writable is one :class:`~harness.errors.InputError` naming the file and what was expected
(the CLI prints it on one line and exits 2), never a traceback.
"""

from __future__ import annotations

import codecs
import errno
import itertools
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO, TextIO

from harness.errors import InputError


def read_text(path: str | Path, expected: str) -> str:
    """The text of ``path``, decoded as UTF-8 (a leading byte-order mark is dropped).

    ``expected`` says what the file should be (e.g. ``"a models YAML file"``); it ends the
    message of every error. Raises :class:`InputError` naming the file when it is missing, a
    directory, not readable, or not UTF-8 (with the line and column of the first bad byte).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise _unreadable(path, err, expected) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        body, start = bytes(err.object), err.start  # the bytes after any byte-order mark
        line_start = body.rfind(b"\n", 0, start) + 1
        raise not_utf8(path, body[line_start:], start - line_start, expected,
                       line=body.count(b"\n", 0, start) + 1) from None


@contextmanager
def open_binary(path: str | Path, expected: str) -> Iterator[BinaryIO]:
    """``path`` opened for reading bytes, past a leading UTF-8 byte-order mark: for readers
    that stream a large file line by line instead of holding it whole (they report a line
    that is not UTF-8 with :func:`not_utf8`).

    Raises :class:`InputError` naming the file, as :func:`read_text` does, when it cannot be
    opened or read."""
    path = Path(path)
    try:
        with path.open("rb") as stream:
            if stream.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:
                stream.seek(0)
            yield stream
    except OSError as err:
        raise _unreadable(path, err, expected) from None


def not_utf8(path: str | Path, line_bytes: bytes, column: int, expected: str, *,
             line: int) -> InputError:
    """The error for a file whose ``line`` (``line_bytes``) is not UTF-8 from byte index
    ``column`` on."""
    return InputError(
        path, None, f"not UTF-8 text (byte 0x{line_bytes[column]:02x} at column {column + 1}); "
        f"expected {expected}, encoded as UTF-8", location=line)


def _unreadable(path: Path, err: OSError, expected: str) -> InputError:
    if isinstance(err, FileNotFoundError):
        return InputError(path, None, f"file not found; expected {expected}")
    if isinstance(err, IsADirectoryError):
        return InputError(path, None, f"is a directory; expected {expected}")
    if isinstance(err, PermissionError):
        return InputError(path, None, f"permission denied; cannot read {expected}")
    return InputError(path, None, f"cannot be read ({err.strerror or err}); expected {expected}")


def make_directory(path: str | Path, expected: str) -> Path:
    """Make sure ``path`` is a directory this process can write into, creating it and its
    parents when needed; return it.

    ``expected`` says what the directory is for (e.g. ``"a run directory"``). Raises
    :class:`InputError` naming the path when it, or one of its parents, exists and is not a
    directory, or when it cannot be created or written into.
    """
    path = Path(path)
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError(path, None, f"permission denied; cannot write into {expected}")
        return path
    if path.exists() or path.is_symlink():
        raise InputError(path, None, f"exists and is not a directory; expected {expected}")
    blocker = _file_in_the_way(path)
    if blocker is not None:
        raise InputError(path, None, f"cannot be created: {blocker} is a file, not a "
                         f"directory; expected {expected}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        raise InputError(path, None, f"cannot be created: permission denied; expected "
                         f"{expected}") from None
    except OSError as err:
        raise InputError(path, None, f"cannot be created ({err.strerror or err}); expected "
                         f"{expected}") from None
    return path


def new_output_directory(parent: str | Path, stem: str, expected: str) -> Path:
    """A directory under ``parent`` that did not exist, named ``stem-<date>-<time>`` (or
    ``<date>-<time>`` for an empty ``stem``), made and returned: the default output of a
    command given no ``--out``. Two commands started in the same second get ``...-2``,
    ``...-3`` rather than one refusing the other's directory; making the directory claims
    the name, so two processes cannot take the same one. Raises :class:`InputError` as
    :func:`make_directory` does."""
    base = time.strftime("%Y%m%d-%H%M%S")
    name = f"{stem}-{base}" if stem else base
    parent = make_directory(parent, expected.replace("a ", "the parent of a ", 1))
    for n in itertools.count(1):
        path = parent / (name if n == 1 else f"{name}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        except OSError as err:
            raise InputError(path, None, f"cannot be created ({err.strerror or err}); "
                             f"expected {expected}") from None
        return path
    raise AssertionError("unreachable")  # pragma: no cover


@contextmanager
def default_output_directory(given: Path | None, parent: str | Path, stem: str,
                             expected: str) -> Iterator[Path]:
    """``given`` when a command was given one (``--out``), else a new directory as
    :func:`new_output_directory` makes it. A new directory that is still empty when the
    command fails (bad input found after the name was claimed, Ctrl-C before anything was
    written) is removed, so a refused command leaves nothing behind."""
    if given is not None:
        yield given
        return
    path = new_output_directory(parent, stem, expected)
    try:
        yield path
    except BaseException:
        with suppress(OSError):  # not empty: what was written is kept
            path.rmdir()
        raise


def check_output_file(path: str | Path, expected: str) -> Path:
    """Check, before any work is done, that ``path`` can be written as a file later: it is
    not a directory, and its directory exists (it is created) and is writable. Returns it.

    Raises :class:`InputError` naming the path otherwise (see :func:`make_directory`).
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(path, None, f"is a directory; expected {expected}")
    blocker = _file_in_the_way(path)
    if blocker is not None:
        raise InputError(path, None, f"cannot be written: {blocker} is a file, not a "
                         f"directory; expected {expected}")
    make_directory(path.parent, f"the directory of {expected}")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(path, None, f"permission denied; cannot write {expected}")
    return path


# What a failing write on an open file raises (with no file name attached).
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest parent of ``path`` that exists and is not a directory, if any."""
    return next((p for p in path.parents if p.exists() and not p.is_dir()), None)


@contextmanager
def atomic_write(path: str | Path) -> Iterator[TextIO]:
    """Write ``path`` in one step: the ``with`` block writes UTF-8 text to ``PATH.tmp`` beside
    it, which replaces ``path`` only when the block finishes. On any error or interrupt the
    temporary file is removed and ``path`` is left as it was.

    Raises :class:`InputError` naming the file when the temporary file cannot be created,
    written (the disk is full, read-only or failing) or cannot replace ``path``; any other
    error raised inside the block propagates unchanged.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        handle = tmp.open("w", encoding="utf-8")
    except OSError as err:
        raise InputError(path, None, f"cannot be written ({err.strerror or err})") from None
    try:
        with handle:
            yield handle
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename is None and err.errno in _WRITE_ERRNOS:
            raise InputError(path, None, f"cannot be written ({err.strerror or err})") from None
        raise
    try:
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise InputError(path, None, f"cannot be written ({err.strerror or err})") from None


def write_text_atomic(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (:func:`atomic_write`). Raises
    :class:`InputError` when it cannot be written."""
    with atomic_write(path) as handle:
        handle.write(text)


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection to the SQLite file ``path`` that writes nothing: neither the file nor, when
    it has no ``-wal`` file beside it, the ``-wal``/``-shm`` files SQLite would otherwise
    create. (With a ``-wal`` file, left by a crash or by a process writing now, the file is
    read read-only together with it.)"""
    uri = path.resolve().as_uri()
    wal = path.with_name(path.name + "-wal")
    return sqlite3.connect(f"{uri}?{'mode=ro' if wal.exists() else 'immutable=1'}", uri=True)


def sqlite_damage(db: sqlite3.Connection) -> str:
    """What SQLite's ``PRAGMA quick_check`` finds wrong with ``db`` (a connection to a user's
    SQLite file: a run store, the response cache) on one line, the first problem and how many
    more, or ``""`` when the file is intact. Reads the whole file; writes nothing."""
    try:
        rows = [str(row[0]) for row in db.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as err:  # damage bad enough to stop the check itself
        return str(err)
    if rows == ["ok"]:
        return ""
    # A row may hold several problems, one per line, under a "*** in database main ***" header.
    lines = [line for row in rows for line in row.splitlines()
             if line.strip() and not line.startswith("***")]
    first = lines[0] if lines else "unknown problem"
    return first + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else "")
