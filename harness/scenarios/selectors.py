"""Selecting scenarios from the files named on a command line: ``FILE:id1,id2`` keeps only
those scenarios of ``FILE`` (scenario ids; for an ADK eval set also its eval ids), as ADK
selects eval cases with ``file.evalset.json:case_1,case_2``. One place parses and applies
selectors, so every command that takes scenario files selects the same way.

A path that exists as written is never split, so a file whose name holds ``:`` still works.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from harness.errors import InputError

T = TypeVar("T")


@dataclass(frozen=True)
class Selection:
    """A path and the ids selected in it (``None``: every scenario)."""

    path: Path
    ids: tuple[str, ...] | None = None


def parse_selection(raw: str | Path) -> Selection:
    """``"x.yaml:a,b"`` -> ``Selection(Path("x.yaml"), ("a", "b"))``; a path without a
    selector (or one that exists as written) selects everything. Raises
    :class:`InputError` for a selector with no id or on a directory."""
    text = str(raw)
    if ":" not in text or Path(text).exists():
        return Selection(Path(text))
    head, _, tail = text.rpartition(":")
    ids = tuple(dict.fromkeys(part.strip() for part in tail.split(",") if part.strip()))
    if not ids:
        raise InputError(text, None, "expected FILE:id1,id2 (at least one id after ':')")
    if Path(head).is_dir():
        raise InputError(text, None, "a selector applies to a file, not a directory")
    return Selection(Path(head), ids)


def merge_selections(selections: Iterable[Selection]) -> list[Selection]:
    """One selection per path, in first-seen order; a path named both whole and with ids is
    selected whole, and ids named twice are kept once."""
    merged: dict[Path, tuple[str, ...] | None] = {}
    for sel in selections:
        if sel.path not in merged:
            merged[sel.path] = sel.ids
        else:
            before = merged[sel.path]
            merged[sel.path] = None if before is None or sel.ids is None else tuple(
                dict.fromkeys([*before, *sel.ids]))
    return [Selection(path, ids) for path, ids in merged.items()]


def select(
    items: Sequence[T], ids: tuple[str, ...] | None, ids_of: Callable[[T], Iterable[str]],
    source: str | Path,
) -> list[T]:
    """The items ``ids`` select (all when ``None``), in file order. ``ids_of(item)`` gives the
    ids an item answers to. Raises :class:`InputError` naming ``source`` when an id selects
    nothing, listing the ids that exist."""
    if ids is None:
        return list(items)
    known = [i for item in items for i in ids_of(item)]
    missing = [i for i in ids if i not in known]
    if missing:
        listed = ", ".join(dict.fromkeys(known)) or "none"
        raise InputError(source, None, f"selector {', '.join(missing)!s} selects nothing; "
                         f"ids in this file: {listed}")
    wanted = set(ids)
    return [item for item in items if wanted & set(ids_of(item))]
