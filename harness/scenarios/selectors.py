"""Selecting scenarios from the files named on a command line: ``FILE:id1,id2`` keeps only
those scenarios of ``FILE`` (scenario ids; for an ADK eval set also its eval ids), as ADK
selects eval cases with ``file.evalset.json:case_1,case_2``; :class:`ScenarioFilter` is
``--tag``, ``--exclude-tag`` and ``-k``, applied to loaded scenarios and to stored samples
alike. One place parses and applies selectors, so every command selects the same way.

Where the path ends: a path that exists as written is never split, so a file whose name holds
``:`` still works; otherwise the path is the longest part before a ``:`` that names something
that exists, so ids may hold ``:`` (``greeting.evalset.json:greeting:v2`` selects the id
``greeting:v2``). When no such part exists the path ends at the first ``:`` (and is then
reported missing). Ids are split on ``,``, unless the ids so split select nothing and the
whole list names one id (``FILE:a,b`` selects an id ``a,b`` when there is no ``a``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

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
    colons = [i for i, char in enumerate(text) if char == ":"]
    # The longest existing prefix, so that ids may hold ":" (see the module docstring).
    cut = next((i for i in reversed(colons) if Path(text[:i]).exists()), colons[0])
    head, tail = text[:cut], text[cut + 1:]
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
    if missing and ",".join(ids) in known:  # one id holding ",", split by parse_selection
        ids, missing = (",".join(ids),), []
    if missing:
        listed = ", ".join(dict.fromkeys(known)) or "none"
        raise InputError(source, None, f"selector {', '.join(missing)!s} selects nothing; "
                         f"ids in this file: {listed}")
    wanted = set(ids)
    return [item for item in items if wanted & set(ids_of(item))]


class ScenarioFilter(BaseModel):
    """``--tag``, ``--exclude-tag`` and ``-k``: which scenarios (or stored samples) a command
    keeps. A scenario is kept when it has any of ``tags`` (or ``tags`` is empty), none of
    ``exclude_tags``, and its id holds any of ``keywords`` (case-insensitive substrings; or
    ``keywords`` is empty). Stored with a run's configuration, so a resumed run selects the
    same scenarios."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tags: list[str] = Field(default_factory=list, description="keep scenarios with any of these")
    exclude_tags: list[str] = Field(default_factory=list,
                                    description="drop scenarios with any of these")
    keywords: list[str] = Field(default_factory=list,
                                description="keep scenarios whose id holds any of these")

    @property
    def active(self) -> bool:
        """Whether the filter drops anything at all."""
        return bool(self.tags or self.exclude_tags or self.keywords)

    def matches(self, scenario_id: str, tags: Iterable[str]) -> bool:
        """Whether a scenario with this id and these tags is kept."""
        have = set(tags)
        lowered = scenario_id.casefold()
        return ((not self.tags or bool(have.intersection(self.tags)))
                and not have.intersection(self.exclude_tags)
                and (not self.keywords or any(k.casefold() in lowered for k in self.keywords)))

    def describe(self) -> str:
        """The filter as it was written on the command line."""
        return " ".join([*(f"--tag {t}" for t in self.tags),
                         *(f"--exclude-tag {t}" for t in self.exclude_tags),
                         *(f"-k {k}" for k in self.keywords)])


MAX_LISTED_IDS = 20


def _listing(names: Iterable[str], limit: int | None = None) -> str:
    unique = sorted(set(names))
    shown = unique if limit is None else unique[:limit]
    more = len(unique) - len(shown)
    return (", ".join(shown) or "none") + (f" and {more} more" if more > 0 else "")


def apply_filter(
    items: Sequence[T], selector: ScenarioFilter, id_of: Callable[[T], str],
    tags_of: Callable[[T], Iterable[str]], source: str | Path,
) -> list[T]:
    """The items ``selector`` keeps, in their order (all when it is not active).

    Raises :class:`InputError` naming ``source`` in one line, listing the tags and ids that
    exist, when a ``--tag`` or ``--exclude-tag`` names a tag no item has, a ``-k`` matches no
    id, or the filter as a whole keeps nothing."""
    if not selector.active:
        return list(items)
    known_tags = {tag for item in items for tag in tags_of(item)}
    ids = [id_of(item) for item in items]
    exists = (f"tags: {_listing(known_tags)}; ids: {_listing(ids, MAX_LISTED_IDS)}")
    unknown = [t for t in dict.fromkeys([*selector.tags, *selector.exclude_tags])
               if t not in known_tags]
    if unknown:
        raise InputError(source, None, f"no scenario has the tag {', '.join(unknown)} "
                         f"({exists})")
    unmatched = [k for k in selector.keywords
                 if not any(k.casefold() in i.casefold() for i in ids)]
    if unmatched:
        raise InputError(source, None, f"-k {', '.join(unmatched)} matches no scenario id "
                         f"({exists})")
    kept = [item for item in items if selector.matches(id_of(item), tags_of(item))]
    if not kept:
        raise InputError(source, None, f"{selector.describe()} selects no scenario ({exists})")
    return kept


def select_stored(tags_by_scenario: Mapping[str, Sequence[str]], selector: ScenarioFilter,
                  source: str | Path) -> set[str]:
    """The ids of the stored scenarios ``selector`` keeps (``tags_by_scenario``: each
    scenario id in a run's store with the tags its samples carry).

    Raises :class:`InputError` naming ``source`` when a tag filter is given and no stored
    sample has a tag (a store written before samples kept their scenario's tags, or a suite
    without tags), and as :func:`apply_filter` does."""
    if (selector.tags or selector.exclude_tags) and not any(tags_by_scenario.values()):
        raise InputError(source, None, "no stored sample has a tag (the store was written "
                         "before samples kept their scenario's tags, or no scenario has one), "
                         "so --tag and --exclude-tag cannot select; use -k or FILE:id "
                         "selectors, or run the suite again")
    items = list(tags_by_scenario.items())
    return {sid for sid, _ in apply_filter(items, selector, lambda it: it[0],
                                           lambda it: it[1], source)}
