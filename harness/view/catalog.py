"""The runs under the served folder: found, read read-only, and cached.

A run is any folder under the root holding ``run.sqlite`` (nested too). Its id is its path
relative to the root, with ``/`` between parts (``.`` for the root itself); an id is only
ever looked up among the runs found, never joined onto a path, so no id leaves the root.
Folders and files that are symbolic links are not followed.

Each run's index entry is cached on its files' modification times and sizes (``run.sqlite``,
its ``-wal``, ``summary.json``), so listing 500 runs reads only the runs that changed. A
store is read through a connection that writes nothing (:func:`harness.files.connect_read_only`)
and holds no lock a running run waits on; a store or summary that cannot be read makes its
entry unreadable, with one line saying why, and leaves the others alone.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.files import connect_read_only
from harness.models.provenance import RoleModels
from harness.runs.store import STORE_FILENAME, RunStore
from harness.runs.summary import read_summary
from harness.runs.summary_model import RunSummary
from harness.view.status import RunStatus, run_status

SUMMARY_FILENAME = "summary.json"
ROOT_ID = "."
_KIND = "agent-eval-harness run"


@dataclass(frozen=True)
class Figure:
    """A headline figure with its interval (``None`` ends when it has none)."""

    value: float
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class ScenarioPoint:
    """One scenario's pass rate in one run, with its interval, for the trends."""

    scenario_id: str
    pass_rate: float
    ci_low: float
    ci_high: float
    epochs: int


@dataclass(frozen=True)
class RunEntry:
    """What the index shows of one run. ``error`` is set (one line) when the run cannot be
    read (its status is then ``unreadable``); the figures are then empty."""

    id: str
    path: Path
    name: str
    created_at: float
    status: RunStatus = field(default_factory=lambda: RunStatus("unknown"))
    error: str | None = None
    scenarios: int | None = None
    samples: int = 0
    planned: int | None = None
    models: dict[str, list[str]] = field(default_factory=dict)
    mean: Figure | None = None
    pass_rate: Figure | None = None
    confidence: float | None = None
    offline: bool = False
    scenario_points: tuple[ScenarioPoint, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The entry as ``GET /api/runs`` lists it (contract 11: ``id`` and ``path`` first)."""
        def figure(f: Figure | None) -> dict[str, float | None] | None:
            return None if f is None else {"value": f.value, "ci_low": f.ci_low,
                                           "ci_high": f.ci_high}

        return {"id": self.id, "path": str(self.path), "name": self.name,
                "url": run_url(self.id), "created_at": self.created_at,
                "status": self.status.status, "status_detail": self.status.detail,
                "error": self.error, "scenarios": self.scenarios, "samples": self.samples,
                "samples_planned": self.planned, "models": self.models,
                "mean": figure(self.mean), "pass_rate": figure(self.pass_rate),
                "confidence": self.confidence, "offline": self.offline}


def run_url(run_id: str) -> str:
    """The page of the run ``run_id`` (the root's own run is ``/runs/``)."""
    from urllib.parse import quote

    return "/runs/" + ("" if run_id == ROOT_ID else quote(run_id))


# Folders that hold packages, never runs: not walked (a DIR that is a whole project stays
# quick to list).
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages"})


def find_run_dirs(root: Path) -> Iterator[Path]:
    """Every folder under ``root`` (``root`` included) holding a ``run.sqlite`` that is a
    regular file, not following links; hidden folders and :data:`SKIPPED_FOLDERS` are
    skipped."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and d not in SKIPPED_FOLDERS
                             and not (here / d).is_symlink())
        if STORE_FILENAME in filenames and _holds_store(here):
            yield here


def _holds_store(folder: Path) -> bool:
    """Whether ``folder`` holds a ``run.sqlite`` that is a regular file, not a link."""
    store = folder / STORE_FILENAME
    return store.is_file() and not store.is_symlink()


def _signature(run_dir: Path) -> tuple[tuple[int, int], ...]:
    out = []
    for name in (STORE_FILENAME, STORE_FILENAME + "-wal", SUMMARY_FILENAME):
        try:
            st = (run_dir / name).stat()
            out.append((st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((0, -1))
    return tuple(out)


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text or type(err).__name__


def _models(roles: dict[str, RoleModels]) -> dict[str, list[str]]:
    return {role: [*r.real_models, *r.offline_models, *r.callables]
            for role, r in sorted(roles.items())}


def _from_summary(summary: RunSummary) -> dict[str, Any]:
    score = summary.score
    return dict(
        scenarios=summary.counts.scenarios_loaded or summary.counts.scenarios,
        samples=summary.counts.samples, planned=summary.counts.samples_planned,
        models=_models(summary.roles), offline=summary.offline,
        mean=None if score is None else Figure(score.mean, score.ci_low, score.ci_high),
        pass_rate=None if score is None else Figure(
            score.pass_rate.value, score.pass_rate.ci_low, score.pass_rate.ci_high),
        confidence=None if score is None else score.confidence,
        scenario_points=() if score is None else tuple(
            ScenarioPoint(s.scenario_id, s.pass_rate, s.pass_rate_ci_low, s.pass_rate_ci_high,
                          s.n_epochs) for s in score.scenarios),
    )


def _summary(run_dir: Path) -> RunSummary:
    """The run's summary, parsed and checked by pydantic straight from the file's bytes (a
    third of the time of :func:`~harness.runs.summary.read_summary`, which counts when 500
    runs are listed); a file that does not pass is read again by ``read_summary``, whose
    error names the file and the field."""
    try:
        return RunSummary.model_validate_json((run_dir / SUMMARY_FILENAME).read_bytes())
    except (ValueError, OSError):
        return read_summary(run_dir)


def read_entry(root: Path, run_dir: Path) -> RunEntry:
    """The index entry of the run in ``run_dir`` (under ``root``), never raising for a run
    that cannot be read: its entry then carries ``error``."""
    rel = run_dir.relative_to(root).as_posix()
    run_id = ROOT_ID if rel in ("", ".") else rel
    name = run_dir.name or str(run_dir)
    store_path = run_dir / STORE_FILENAME
    try:
        created_at = store_path.stat().st_mtime
    except OSError:
        created_at = 0.0
    try:
        db = connect_read_only(store_path)
        try:
            # the keys it needs only: the meta table may hold large entries beside them
            meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN "
                                   "('kind', 'created_at')").fetchall())
            if meta.get("kind") != _KIND:
                raise HarnessError(f"{STORE_FILENAME}: not a harness run store")
            store = RunStore(store_path, db)
            count = store.count()
            session = store.session()
            created_at = float(meta.get("created_at", created_at))
            has_summary = (run_dir / SUMMARY_FILENAME).is_file()
            summary = _summary(run_dir) if has_summary else None
            if summary is not None:
                figures = _from_summary(summary)
            else:
                ids = store.scenario_ids()
                roles = store.model_roles()
                figures = dict(scenarios=None if ids is None else len(ids), samples=count,
                               models=_models(roles),
                               offline=any(r.offline for r in roles.values()))
            planned = (session or {}).get("planned")
            if isinstance(planned, int):
                figures["planned"] = planned
            figures["samples"] = count  # the store's count is the live one
            status = run_status(session, None if summary is None else summary.stopped,
                                has_summary)
        finally:
            db.close()
    except sqlite3.Error as err:  # SQLite's message does not name the file
        why = f"{STORE_FILENAME}: {_one_line(err)}"
    except (HarnessError, ValueError, OSError) as err:
        why = _one_line(err)
    else:
        return RunEntry(id=run_id, path=run_dir, name=name, created_at=created_at,
                        status=status, **figures)
    return RunEntry(id=run_id, path=run_dir, name=name, created_at=created_at,
                    status=RunStatus("unreadable", why), error=why)


class Catalog:
    """The runs under ``root``, each entry read again only when its files changed. Safe to
    use from several threads."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._cache: dict[Path, tuple[tuple[tuple[int, int], ...], RunEntry]] = {}
        self._lock = threading.Lock()

    def entries(self) -> list[RunEntry]:
        """Every run, newest first (by when its store was created)."""
        found = []
        for run_dir in find_run_dirs(self.root):
            signature = _signature(run_dir)
            with self._lock:
                cached = self._cache.get(run_dir)
            # A running run's entry is read again each time: its process may have died.
            if cached is None or cached[0] != signature or cached[1].status.running:
                entry = read_entry(self.root, run_dir)
                with self._lock:
                    self._cache[run_dir] = (signature, entry)
            else:
                entry = cached[1]
            found.append(entry)
        with self._lock:  # forget runs deleted since
            for gone in set(self._cache) - {e.path for e in found}:
                del self._cache[gone]
        return sorted(found, key=lambda e: (-e.created_at, e.id))

    def run_dir(self, run_id: str) -> Path | None:
        """The folder of the run ``run_id`` (as :meth:`entries` names it), or ``None`` when no
        run under the root has that id: an id is looked up, never joined onto a path."""
        if run_id in ("", ROOT_ID):
            return self.root if _holds_store(self.root) else None
        with self._lock:  # a run listed before: no walk of the whole folder
            known = [path for path, (_, entry) in self._cache.items() if entry.id == run_id]
        if known and _holds_store(known[0]):
            return _inside(self.root, known[0])
        for run_dir in find_run_dirs(self.root):
            if run_dir.relative_to(self.root).as_posix() == run_id:
                return _inside(self.root, run_dir)
        return None


def _inside(root: Path, path: Path) -> Path | None:
    """``path`` when it resolves inside ``root`` (a folder reached through no link), else
    ``None``."""
    resolved = path.resolve()
    return resolved if resolved == root or root in resolved.parents else None

