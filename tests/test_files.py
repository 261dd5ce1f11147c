"""harness.files: reading a user's text file, making output directories and replacing files
in one step, each failure one InputError naming the path and what was expected."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.files import (
    atomic_write,
    check_output_file,
    connect_read_only,
    make_directory,
    new_output_directory,
    read_text,
    sqlite_damage,
    write_text_atomic,
)

WHAT = "a models YAML file"


def _error(call: object, *args: object) -> InputError:
    assert callable(call)
    with pytest.raises(InputError) as caught:
        call(*args)
    assert "\n" not in str(caught.value)
    return caught.value


# -- reading -------------------------------------------------------------------------------

def test_read_text_decodes_utf8_and_drops_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(b"\xef\xbb\xbfname: caf\xc3\xa9\n")
    assert read_text(path, WHAT) == "name: café\n"


@pytest.mark.parametrize(("content", "line", "column"), [
    (b"openai:\n  api_key: \xff\xfe\n", 2, 12),
    (b"\xef\xbb\xbfa: \x80", 1, 4),  # columns count from after the byte-order mark
])
def test_text_that_is_not_utf8_names_the_file_line_and_byte(
        tmp_path: Path, content: bytes, line: int, column: int) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(content)
    err = _error(read_text, path, WHAT)
    assert err.location == line
    assert str(err) == (f"{path}:{line}: not UTF-8 text (byte 0x{content.split(b': ')[-1][0]:02x}"
                        f" at column {column}); expected {WHAT}, encoded as UTF-8")


def test_a_missing_file_or_a_directory_says_what_was_expected(tmp_path: Path) -> None:
    assert str(_error(read_text, tmp_path / "nope.yaml", WHAT)) == (
        f"{tmp_path / 'nope.yaml'}: file not found; expected {WHAT}")
    assert str(_error(read_text, tmp_path, WHAT)) == f"{tmp_path}: is a directory; expected {WHAT}"


def test_an_unreadable_file_is_permission_denied(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests may run as root, which chmod cannot stop, so the refusal is simulated.
    path = tmp_path / "m.yaml"
    path.write_text("a: 1\n")

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    assert str(_error(read_text, path, WHAT)) == f"{path}: permission denied; cannot read {WHAT}"


# -- directories and output files ----------------------------------------------------------

def test_make_directory_creates_parents_and_accepts_an_existing_one(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    assert make_directory(target, "a run directory") == target and target.is_dir()
    assert make_directory(target, "a run directory") == target


def test_a_file_where_a_directory_is_needed(tmp_path: Path) -> None:
    blocker = tmp_path / "f.txt"
    blocker.write_text("keep me")
    assert str(_error(make_directory, blocker, "a run directory")) == (
        f"{blocker}: exists and is not a directory; expected a run directory")
    assert str(_error(make_directory, blocker / "sub" / "run", "a run directory")) == (
        f"{blocker / 'sub' / 'run'}: cannot be created: {blocker} is a file, not a directory; "
        "expected a run directory")
    assert blocker.read_text() == "keep me"


def test_a_directory_that_cannot_be_written(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    assert "permission denied; cannot write into a run directory" in str(
        _error(make_directory, tmp_path, "a run directory"))

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    assert str(_error(make_directory, tmp_path / "new", "a run directory")) == (
        f"{tmp_path / 'new'}: cannot be created: permission denied; expected a run directory")


def test_check_output_file(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "pairs.jsonl"
    assert check_output_file(out, "the output") == out and out.parent.is_dir()
    assert str(_error(check_output_file, tmp_path, "the output")) == (
        f"{tmp_path}: is a directory; expected the output")
    (tmp_path / "file").write_text("")
    assert "file is a file, not a directory" in str(
        _error(check_output_file, tmp_path / "file" / "pairs.jsonl", "the output"))


# -- replacing a file in one step ----------------------------------------------------------

def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("interrupt", [RuntimeError("boom"), KeyboardInterrupt()])
def test_a_write_failing_midway_leaves_the_old_file_and_no_temporary(
        tmp_path: Path, interrupt: BaseException) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text("old\n")
    with pytest.raises(type(interrupt)), atomic_write(path) as handle:
        handle.write("half of the new")
        raise interrupt
    assert path.read_text() == "old\n"
    assert _listing(tmp_path) == ["samples.jsonl"]


def test_a_full_disk_midway_is_an_input_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text("old\n")
    with pytest.raises(InputError) as caught, atomic_write(path) as handle:
        handle.write("half")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert str(caught.value) == f"{path}: cannot be written (No space left on device)"
    assert path.read_text() == "old\n" and _listing(tmp_path) == ["samples.jsonl"]


def test_a_replace_that_fails_is_an_input_error_and_leaves_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "summary.json"
    path.write_text("{}")

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    assert str(_error(write_text_atomic, path, '{"new": 1}')) == (
        f"{path}: cannot be written (No space left on device)")
    assert path.read_text() == "{}" and _listing(tmp_path) == ["summary.json"]


def test_write_text_atomic_replaces_the_file(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text("old")
    write_text_atomic(path, "new ✓")
    assert path.read_text(encoding="utf-8") == "new ✓" and _listing(tmp_path) == ["summary.json"]


def test_atomic_write_into_a_missing_directory(tmp_path: Path) -> None:
    assert "cannot be written (No such file or directory)" in str(
        _error(write_text_atomic, tmp_path / "gone" / "x.json", "{}"))


# -- SQLite damage -------------------------------------------------------------------------

def test_sqlite_damage_is_empty_for_an_intact_file_and_reading_writes_nothing(
        tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x TEXT PRIMARY KEY)")
    db.executemany("INSERT INTO t VALUES (?)", [(str(i) * 50,) for i in range(200)])
    db.commit()
    db.close()
    before = path.read_bytes()
    probe = connect_read_only(path)
    try:
        assert sqlite_damage(probe) == ""
    finally:
        probe.close()
    assert path.read_bytes() == before and _listing(tmp_path) == ["db.sqlite"]


def test_a_default_output_directory_is_new_even_within_one_second(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two commands without --out in the same second used to get the same runs/<time>, and
    the second refused it ("already holds a run")."""
    import harness.files

    monkeypatch.setattr(harness.files.time, "strftime", lambda _: "20261127-120000")
    made = [new_output_directory(tmp_path / "runs", "demo", "a demo directory")
            for _ in range(3)]
    assert [p.name for p in made] == ["demo-20261127-120000", "demo-20261127-120000-2",
                                      "demo-20261127-120000-3"]
    assert all(p.is_dir() and p.parent == tmp_path / "runs" for p in made)
    bare = new_output_directory(tmp_path / "runs", "", "a run directory")
    assert bare.name == "20261127-120000"


def test_a_default_output_directory_under_a_file_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "runs").write_text("not a folder")
    with pytest.raises(InputError, match="runs"):
        new_output_directory(tmp_path / "runs", "demo", "a demo directory")
