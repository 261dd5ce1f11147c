"""The run store: one SQLite file per run directory.

It holds the run's configuration and every sample, each written (and committed) as soon as it
finishes, so a crash loses nothing and ``harness run --resume DIR`` repeats no finished sample.
Opening a store made by another schema version, a file that is not a store, or a damaged one
(SQLite's ``PRAGMA quick_check`` finds a problem) is a clear error and never writes anything.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.files import connect_read_only, make_directory, sqlite_damage
from harness.json_values import STORED_DEPTH, load_json
from harness.models.provenance import RoleCollector, RoleModels
from harness.models.types import SCRUBBED
from harness.runs.config import RunConfig
from harness.runs.sample import SampleRecord
from harness.version import __version__

if TYPE_CHECKING:
    from harness.judging.rubric import Rubric
    from harness.runs.label_model import Label
    from harness.scenarios.schema import Scenario

STORE_FILENAME = "run.sqlite"
SCHEMA_VERSION = 1
_KIND = "agent-eval-harness run"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE config (id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT NOT NULL);
CREATE TABLE samples (
    scenario_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('scored', 'errored', 'unscored')),
    score REAL,
    passed INTEGER,
    record TEXT NOT NULL,
    finished_at REAL NOT NULL,
    PRIMARY KEY (scenario_id, epoch)
);
CREATE TABLE events (
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL
);
"""
# Human labels (contract 10): every version is kept, in the order written; the one that
# counts is chosen when read. Created when first written, so stores made before it exist
# read as having no labels and need no migration (the schema version is unchanged).
_LABELS_SCHEMA = """
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scenario_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    annotator TEXT NOT NULL,
    target TEXT NOT NULL,
    labelled_ts REAL NOT NULL,
    label TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS labels_by_key ON labels (scenario_id, epoch, annotator, target);
"""
# The first record of each sample run again (--rerun-simulator-faults), kept when the rerun
# takes its place in ``samples``; created when first written, as the labels are.
_REPLACED_SCHEMA = """
CREATE TABLE IF NOT EXISTS replaced_samples (
    scenario_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    replaced_at REAL NOT NULL,
    record TEXT NOT NULL
);
"""
# How long a writer waits for another one (the run, a second reviewer) before giving up.
BUSY_TIMEOUT_S = 30.0
_SCENARIOS_KEY = "scenario_definitions"
_RUBRICS_KEY = "rubric_definitions"


class StoreError(HarnessError):
    """The run directory cannot be used as a store (wrong version, corrupted, missing)."""


class RunStore:
    """A run directory's SQLite store. Use :meth:`create` for a new run and :meth:`open` to
    resume or read one."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection

    # -- opening -----------------------------------------------------------------------

    @classmethod
    def create(cls, run_dir: Path, config: dict[str, Any]) -> RunStore:
        """Create a new store in ``run_dir`` (created if needed). Refuses to touch a directory
        that already holds a store: resume it or choose another ``--out``. Raises
        :class:`~harness.errors.InputError` when ``run_dir`` is a file or cannot be written."""
        make_directory(run_dir, "a run directory (for run.sqlite, summary.json and "
                       "samples.jsonl)")
        path = run_dir / STORE_FILENAME
        if path.exists():
            raise StoreError(
                f"{run_dir} already holds a run ({STORE_FILENAME}); resume it with "
                f"`harness run --resume {run_dir}` or choose another --out directory"
            )
        try:
            db = _connect(path)
        except sqlite3.Error as err:
            raise StoreError(f"{path}: cannot create the run store ({err})") from None
        with db:
            db.executescript(_SCHEMA)
            db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("kind", _KIND),
                    ("schema_version", str(SCHEMA_VERSION)),
                    ("harness_version", __version__),
                    ("created_at", str(time.time())),
                ],
            )
            db.execute("INSERT INTO config (id, json) VALUES (1, ?)", (json.dumps(config),))
        return cls(path, db)

    @classmethod
    def open(cls, run_dir: Path, *, read_only: bool = False) -> RunStore:
        """Open an existing store (to resume or read it), checking that it is one, that its
        schema is ours and that SQLite finds it intact (``PRAGMA quick_check``). Raises
        :class:`StoreError` naming the file otherwise, having written nothing.

        ``read_only``: for readers (reports, ``harness view``): the store is read through a
        connection that writes nothing, not even the ``-wal``/``-shm`` files, so a reader
        never changes a run's folder nor takes a lock a running run would wait on."""
        path = run_dir / STORE_FILENAME if run_dir.is_dir() else run_dir
        if not path.exists():
            raise StoreError(f"{run_dir}: no run store found (expected {STORE_FILENAME})")
        # Check read-only first: a file that is not ours, or a damaged one, must not be
        # changed, not even its journal mode.
        try:
            probe = connect_read_only(path)
            try:
                meta = dict(probe.execute("SELECT key, value FROM meta").fetchall())
                damage = sqlite_damage(probe) if meta.get("kind") == _KIND else ""
            finally:
                probe.close()
        except sqlite3.DatabaseError as err:
            raise StoreError(
                f"{path}: not a readable run store ({err}); nothing was changed"
            ) from err
        if damage:
            kept = path.with_name("samples.jsonl")
            raise StoreError(
                f"{path}: the run store is damaged (SQLite quick_check: {damage}); nothing was "
                "changed" + (f"; {kept} still holds the samples as last summarised"
                             if kept.is_file() else "")
            )
        if meta.get("kind") != _KIND:
            raise StoreError(f"{path}: not a harness run store; nothing was changed")
        version = meta.get("schema_version")
        if version != str(SCHEMA_VERSION):
            raise StoreError(
                f"{path}: store schema version {version} (harness {meta.get('harness_version')}) "
                f"differs from this harness's version {SCHEMA_VERSION}; use the matching harness "
                "version to read it; nothing was changed"
            )
        if read_only:
            return cls(path, connect_read_only(path))
        try:
            db = _connect(path)
        except sqlite3.Error as err:  # e.g. a read-only directory: WAL mode needs to write
            raise StoreError(f"{path}: cannot open the run store ({err})") from None
        return cls(path, db)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- contents ----------------------------------------------------------------------

    @property
    def config(self) -> dict[str, Any]:
        row = self._db.execute("SELECT json FROM config WHERE id = 1").fetchone()
        if row is None:
            raise StoreError(f"{self.path}: the run configuration is missing (corrupted store)")
        config: dict[str, Any] = load_json(row[0], self.path, max_depth=STORED_DEPTH)
        return config

    def run_config(self) -> RunConfig:
        """The stored run configuration. Raises :class:`StoreError` naming the file when it
        is missing or does not parse (a store of another harness version, or damaged)."""
        try:
            return RunConfig.model_validate(self.config["run"])
        except (KeyError, ValueError) as err:
            raise StoreError(f"{self.path}: the stored run configuration does not parse "
                             f"({err})") from None

    @property
    def meta(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT key, value FROM meta").fetchall())

    def meta_value(self, key: str) -> str | None:
        """One entry of :attr:`meta` (``None`` when absent), without reading the others (the
        recorded scenario and rubric definitions can be large)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def record_scenarios(self, scenario_ids: list[str]) -> None:
        """Record the ids of the scenarios the run was given (the grid's rows, in the
        suite's order), so that ``harness merge`` knows the whole grid without the scenario
        files. A resumed run records them again. Raises :class:`StoreError` when the write
        fails."""
        self._commit("INSERT OR REPLACE INTO meta (key, value) VALUES ('scenario_ids', ?)",
                     (json.dumps(scenario_ids),))

    def scenario_ids(self) -> list[str] | None:
        """The scenario ids recorded by :meth:`record_scenarios` (``None`` in a store
        written before they were)."""
        text = self.meta_value("scenario_ids")
        if text is None:
            return None
        ids: list[str] = load_json(text, self.path, max_depth=STORED_DEPTH)
        return ids

    def record_session_start(self, planned: int | None) -> None:
        """Record that a process is running the run now (its pid and host, when it started,
        how many samples the run plans: ``None`` for an adaptive design), so a reader such
        as ``harness view`` can tell a running run from one that stopped without a word (a
        killed process). A resumed run records its own session. Raises :class:`StoreError`
        when the write fails."""
        session = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": time.time(),
                   "planned": planned, "ended_at": None}
        self._commit("INSERT OR REPLACE INTO meta (key, value) VALUES ('session', ?)",
                     (json.dumps(session),))

    def record_session_end(self) -> None:
        """Record that the session of :meth:`record_session_start` ended, however it ended
        (finished, stopped, interrupted, failed). Raises :class:`StoreError` when the write
        fails."""
        session = self.session()
        if session is not None:
            self._commit("INSERT OR REPLACE INTO meta (key, value) VALUES ('session', ?)",
                         (json.dumps({**session, "ended_at": time.time()}),))

    def session(self) -> dict[str, Any] | None:
        """The last session recorded (see :meth:`record_session_start`), or ``None`` in a
        store written before sessions were recorded or by ``harness merge``."""
        # this key only: the meta table may hold large entries beside it
        row = self._db.execute("SELECT value FROM meta WHERE key = 'session'").fetchone()
        if row is None:
            return None
        session: dict[str, Any] = load_json(row[0], self.path, max_depth=STORED_DEPTH)
        return session

    def write_sample(self, record: SampleRecord) -> None:
        """Store one finished sample and commit at once. Re-writing a (scenario, epoch) replaces
        it (used when errored samples are retried). Raises :class:`StoreError` when the write
        fails (see :meth:`_commit`)."""
        self._commit(_UPSERT_SAMPLE, _sample_row(record))

    def replace_sample(self, record: SampleRecord) -> None:
        """Store ``record`` (a rerun) in place of the sample at its key, keeping the record it
        replaces in ``replaced_samples``, in one transaction. Raises :class:`StoreError`
        when the write fails; nothing is then changed."""
        db = self._db
        try:
            db.executescript(_REPLACED_SCHEMA)
            with db:
                db.execute(
                    "INSERT INTO replaced_samples (scenario_id, epoch, replaced_at, record) "
                    "SELECT scenario_id, epoch, ?, record FROM samples "
                    "WHERE scenario_id = ? AND epoch = ?",
                    (time.time(), record.scenario_id, record.epoch))
                db.execute(_UPSERT_SAMPLE, _sample_row(record))
        except sqlite3.Error as err:
            raise StoreError(f"{self.path}: cannot store the rerun of {record.scenario_id} "
                             f"epoch {record.epoch} ({err}); the first record is kept") from None

    def replaced_samples(self) -> list[SampleRecord]:
        """The records that reruns replaced, in the order replaced (none in a store without
        reruns). Raises :class:`StoreError` when one does not parse."""
        try:
            rows = self._db.execute("SELECT record FROM replaced_samples ORDER BY rowid").fetchall()
        except sqlite3.OperationalError:  # never written: the table does not exist
            return []
        try:
            return [SampleRecord.model_validate_json(r[0], context=SCRUBBED) for r in rows]
        except ValueError as err:
            raise StoreError(f"{self.path}: a replaced sample does not parse ({err})") from err

    def log_event(self, kind: str, detail: dict[str, Any]) -> None:
        """Record a run-level event (budget reached, interrupted, adaptive round ...). Raises
        :class:`StoreError` when the write fails."""
        self._commit("INSERT INTO events (at, kind, detail) VALUES (?, ?, ?)",
                     (time.time(), kind, json.dumps(detail)))

    # -- what the run was given, as it was --------------------------------------------

    def record_definitions(self, scenarios: list[Scenario], rubrics: dict[str, Rubric]) -> None:
        """Record the run's scenarios and rubrics as they are now (their validated fields, as
        written), so that the labelling pages, ``calibrate --from-run`` and "save as
        scenario" read what the run ran even after the files change. A resumed run records
        them again. Raises :class:`StoreError` when the write fails."""
        scenario_data = [{"source": None if s.source is None else str(s.source),
                          "scenario": s.model_dump(mode="json", exclude_unset=True)}
                         for s in scenarios]
        rubric_data = {rid: {"source": r.source,
                             "rubric": r.model_dump(mode="json", exclude_unset=True)}
                       for rid, r in rubrics.items()}
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [(_SCENARIOS_KEY, json.dumps(scenario_data)),
                     (_RUBRICS_KEY, json.dumps(rubric_data))])
        except sqlite3.Error as err:
            raise StoreError(f"{self.path}: cannot write to the run store ({err})") from None

    def scenario_definitions(self) -> dict[str, Scenario]:
        """The run's scenarios by id, in the suite's order, as they were when it ran. A store
        written before they were recorded reads them from the stored scenario paths instead.
        Raises :class:`StoreError` naming the file when neither works."""
        from harness.scenarios.schema import Scenario

        text = self.meta_value(_SCENARIOS_KEY)
        if text is None:
            return self._scenarios_from_paths()
        out = {}
        try:
            for entry in load_json(text, self.path, max_depth=STORED_DEPTH):
                scenario = Scenario.model_validate(entry["scenario"])
                source = entry.get("source")
                out[scenario.id] = scenario.with_source(None if source is None else Path(source))
        except (KeyError, TypeError, ValueError) as err:
            raise StoreError(f"{self.path}: the recorded scenarios do not parse ({err})") from None
        return out

    def rubrics(self) -> dict[str, Rubric]:
        """The rubrics the run loaded (built-in ones and its ``--rubrics-dir``), by id, as
        they were when it ran; a scenario's inline rubrics are in its definition. A store
        written before they were recorded reads the stored rubric paths instead. Raises
        :class:`StoreError` naming the file when neither works."""
        from harness.judging.rubric import parse_rubric

        text = self.meta_value(_RUBRICS_KEY)
        if text is None:
            return self._rubrics_from_paths()
        try:
            return {rid: parse_rubric(entry["rubric"], entry.get("source") or f"{self.path}")
                    for rid, entry in load_json(text, self.path,
                                                max_depth=STORED_DEPTH).items()}
        except (KeyError, TypeError, AttributeError, HarnessError) as err:
            raise StoreError(f"{self.path}: the recorded rubrics do not parse ({err})") from None

    def _rubrics_from_paths(self) -> dict[str, Rubric]:
        from harness.judging.rubric import load_rubrics

        design = self.run_config().design
        try:
            return load_rubrics(design.rubric_paths)
        except HarnessError as err:
            raise StoreError(
                f"{self.path}: the run's rubrics were not recorded (a store from an older "
                f"harness), and reading them from the stored paths failed: {err}") from None

    def _scenarios_from_paths(self) -> dict[str, Scenario]:
        from harness.formats import load_scenarios

        design = self.run_config().design
        try:
            rubrics = self._rubrics_from_paths()
            loaded = load_scenarios(design.scenario_paths, known_rubrics=set(rubrics),
                                    selector=design.select)
        except HarnessError as err:
            raise StoreError(
                f"{self.path}: the run's scenarios were not recorded (a store from an older "
                f"harness), and reading them from the stored paths failed: {err}") from None
        wanted = self.scenario_ids()
        return {s.id: s for s in loaded if wanted is None or s.id in wanted}

    def copy_definitions(self, source: RunStore) -> None:
        """Record ``source``'s recorded scenarios and rubrics here (``harness merge``); a
        source without them leaves this store without them too. Raises :class:`StoreError`."""
        for key in (_SCENARIOS_KEY, _RUBRICS_KEY):
            value = source.meta_value(key)
            if value is not None:
                self._commit("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                             (key, value))

    def record_meta(self, key: str, value: str) -> None:
        """Record ``value`` under ``key``, replacing what was there. Raises
        :class:`StoreError` when the write fails."""
        self._commit("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def record_meta_once(self, key: str, value: str) -> str:
        """Record ``value`` under ``key`` unless a value is there already; return the value
        that is (so two processes racing to record it agree). Raises :class:`StoreError`."""
        self._commit("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
        recorded = self.meta_value(key)
        assert recorded is not None
        return recorded

    # -- human labels ------------------------------------------------------------------

    def add_labels(self, labels: Sequence[Label]) -> None:
        """Store labels, all or none, in one transaction. Safe while the run writes samples
        and other reviewers write labels: the transaction takes the write lock at once
        (``BEGIN IMMEDIATE``) and waits up to :data:`BUSY_TIMEOUT_S` for it. Checking that
        each label fits its sample is the caller's (:func:`harness.runs.labels.check_label`).
        Raises :class:`StoreError` when the write fails; nothing is then stored."""
        from harness.runs.label_model import labelled_timestamp

        rows = [(label.scenario_id, label.epoch, label.annotator, label.target,
                 labelled_timestamp(label.labelled_at), json.dumps(label.to_json()))
                for label in labels]
        db = self._db
        try:
            db.executescript(_LABELS_SCHEMA)
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT INTO labels (scenario_id, epoch, annotator, target, labelled_ts, "
                    "label) VALUES (?, ?, ?, ?, ?, ?)", rows)
            except BaseException:
                db.rollback()
                raise
            db.commit()
        except sqlite3.Error as err:
            raise StoreError(f"{self.path}: cannot write the labels ({err}); none was "
                             "stored") from None

    def labels(self, *, history: bool = False) -> list[Label]:
        """The run's labels: the one that counts for each (scenario, epoch, annotator, target),
        the last labelled (by ``labelled_at``, then the order written), ordered by scenario,
        epoch, annotator and target; with ``history``, every version, oldest first. A store
        without labels (or written before they existed) has none. Raises
        :class:`StoreError` when a stored label does not parse."""
        from harness.runs.label_model import Label

        try:
            rows = self._db.execute(
                "SELECT label FROM labels ORDER BY labelled_ts, id").fetchall()
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):
                return []
            raise StoreError(f"{self.path}: cannot read the labels ({err})") from None
        try:
            every = [Label.model_validate_json(text) for (text,) in rows]
        except ValueError as err:
            raise StoreError(f"{self.path}: a stored label does not parse ({err})") from None
        if history:
            return every
        by_key = {label.key: label for label in every}  # later versions replace earlier
        return [by_key[key] for key in sorted(by_key)]

    def sample(self, scenario_id: str, epoch: int) -> SampleRecord | None:
        """One stored sample, or ``None`` when there is none. Raises :class:`StoreError` when
        it does not parse."""
        row = self._db.execute("SELECT record FROM samples WHERE scenario_id = ? AND epoch = ?",
                               (scenario_id, epoch)).fetchone()
        if row is None:
            return None
        try:
            return SampleRecord.model_validate_json(row[0], context=SCRUBBED)
        except ValueError as err:
            raise StoreError(f"{self.path}: a stored sample does not parse ({err})") from err

    def _commit(self, sql: str, parameters: tuple[Any, ...]) -> None:
        """Run one write and commit it. A failure (a full disk, a file damaged meanwhile) is
        rolled back and raised as a :class:`StoreError` naming the file; what was committed
        before stays."""
        try:
            with self._db:
                self._db.execute(sql, parameters)
        except sqlite3.Error as err:
            raise StoreError(
                f"{self.path}: cannot write to the run store ({err}); the samples stored "
                f"before are kept: fix the cause, then continue with `harness run --resume "
                f"{self.path.parent}`"
            ) from None

    def copy_from(self, source: RunStore, *, shard: str) -> None:
        """Copy every sample of ``source`` as it is stored, and its events with
        ``"shard": shard`` added to each, in one transaction (``harness merge``). Raises
        :class:`StoreError` when one of the samples is here already or the write fails;
        nothing of ``source`` is then kept."""
        samples = source._db.execute(
            "SELECT scenario_id, epoch, status, score, passed, record, finished_at FROM samples "
            "ORDER BY scenario_id, epoch")
        events = [(at, kind, json.dumps({**load_json(detail, source.path, max_depth=STORED_DEPTH),
                                           "shard": shard}))
                  for at, kind, detail in source._db.execute(
                      "SELECT at, kind, detail FROM events ORDER BY rowid")]
        try:
            with self._db:
                self._db.executemany(
                    "INSERT INTO samples (scenario_id, epoch, status, score, passed, record, "
                    "finished_at) VALUES (?, ?, ?, ?, ?, ?, ?)", samples)
                self._db.executemany("INSERT INTO events (at, kind, detail) VALUES (?, ?, ?)",
                                     events)
        except sqlite3.IntegrityError as err:
            raise StoreError(f"{self.path}: a sample of {source.path} is stored here already "
                             f"({err})") from None
        except sqlite3.Error as err:
            raise StoreError(f"{self.path}: cannot write to the run store ({err})") from None

    def events(self) -> list[dict[str, Any]]:
        return [
            {"at": at, "kind": kind, **load_json(detail, self.path, max_depth=STORED_DEPTH)}
            for at, kind, detail in self._db.execute(
                "SELECT at, kind, detail FROM events ORDER BY rowid"
            )
        ]

    def finished_keys(self, *, include_errored: bool = True) -> set[tuple[str, int]]:
        """The (scenario_id, epoch) pairs already stored."""
        query = "SELECT scenario_id, epoch FROM samples"
        if not include_errored:
            query += " WHERE status = 'scored'"
        return {(s, int(e)) for s, e in self._db.execute(query)}

    def iter_samples(self) -> Iterator[SampleRecord]:
        """Every stored sample, ordered by scenario and epoch, parsed one at a time."""
        for (text,) in self._db.execute(
            "SELECT record FROM samples ORDER BY scenario_id, epoch"
        ):
            try:
                # pydantic's own parser bounds nesting and numbers (harness.json_values)
                yield SampleRecord.model_validate_json(text, context=SCRUBBED)
            except ValueError as err:
                raise StoreError(f"{self.path}: a stored sample does not parse ({err})") from err

    def score_rows(self) -> list[tuple[str, int, str, float | None, bool | None]]:
        """``(scenario_id, epoch, status, score, passed)`` of every sample, without parsing
        the stored records (cheap enough to call between adaptive rounds)."""
        return [
            (sid, int(epoch), status, score, None if passed is None else bool(passed))
            for sid, epoch, status, score, passed in self._db.execute(
                "SELECT scenario_id, epoch, status, score, passed FROM samples "
                "ORDER BY scenario_id, epoch"
            )
        ]

    def offline_count(self) -> int:
        """How many stored samples were made with offline ``mock:`` models (read from the
        stored records without parsing them)."""
        try:
            row = self._db.execute(
                "SELECT COUNT(*) FROM samples WHERE json_extract(record, '$.offline') = 1"
            ).fetchone()
        except sqlite3.OperationalError:  # an SQLite built without the JSON functions
            return sum(record.offline for record in self.iter_samples())
        return int(row[0])

    def model_roles(self) -> dict[str, RoleModels]:
        """Each role's models (offline or real) and usage over the stored samples, read
        without parsing whole records (see :mod:`harness.models.provenance`)."""
        collector = RoleCollector()
        try:
            rows = [(load_json(models or "{}", self.path, max_depth=STORED_DEPTH),
                     load_json(usage or "{}", self.path, max_depth=STORED_DEPTH))
                    for models, usage in self._db.execute(
                        "SELECT json_extract(record, '$.models'), json_extract(record, '$.usage') "
                        "FROM samples")]
        except sqlite3.OperationalError:  # an SQLite built without the JSON functions
            rows = [(r.models, {role: u.model_dump() for role, u in r.usage.items()})
                    for r in self.iter_samples()]
        for models, usage in rows:
            for role, names in models.items():
                collector.add(role, names, usage.get(role))
        return collector.roles()

    def scenario_tags(self) -> dict[str, list[str]]:
        """Each stored scenario id with its tags (empty in samples stored before tags were
        kept), read without parsing whole records."""
        try:
            rows = [(sid, load_json(tags or "[]", self.path, max_depth=STORED_DEPTH))
                    for sid, tags in self._db.execute(
                "SELECT scenario_id, json_extract(record, '$.tags') FROM samples "
                "ORDER BY scenario_id, epoch")]
        except sqlite3.OperationalError:  # an SQLite built without the JSON functions
            rows = [(r.scenario_id, r.tags) for r in self.iter_samples()]
        out: dict[str, list[str]] = {}
        for sid, tags in rows:
            out.setdefault(sid, [])
            out[sid] = list(dict.fromkeys([*out[sid], *tags]))
        return out

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM samples").fetchone()[0])


_UPSERT_SAMPLE = ("INSERT OR REPLACE INTO samples "
                  "(scenario_id, epoch, status, score, passed, record, finished_at) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?)")


def _sample_row(record: SampleRecord) -> tuple[Any, ...]:
    """The ``samples`` row of ``record``, in :data:`_UPSERT_SAMPLE`'s column order."""
    return (record.scenario_id, record.epoch, record.status, record.score,
            None if record.passed is None else int(record.passed), record.model_dump_json(),
            record.finished_at)


def _connect(path: Path) -> sqlite3.Connection:
    # The busy timeout lets the run, `harness view` and `harness labels import` write the
    # same store at once: a writer waits for the lock rather than failing.
    db = sqlite3.connect(path, isolation_level="DEFERRED", check_same_thread=False,
                         timeout=BUSY_TIMEOUT_S)
    # WAL + NORMAL: a commit per sample stays cheap and a crash loses at most the sample in
    # flight, never the file.
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db
