"""A calibration study's directory: what makes a study durable and resumable.

- ``judgments.jsonl``: contract-3 judgment records, a (judge, item)'s lines appended and
  flushed as soon as all its samples are in, so a killed study keeps what it judged; at the
  end rewritten in a fixed order (judges as given, items in dataset order), so
  ``harness calibrate --judgments DIR/judgments.jsonl`` reproduces the report exactly.
- ``study.json``: the :class:`~harness.calibration.study_records.StudySettings` (a list of
  them, one per rubric, when the study compares several rubrics), the judges, the status
  (``running``/``finished``) and the counts.
- ``report.json``: the report, written at the end, and ``report.html``, the same report as a
  page (:mod:`harness.report.html.calibration_page`) with the items where the judge and the
  people disagree most and the judge's reasoning.

Opening a directory again resumes it: the settings must match (the same rubrics, in the same
order, each with the same settings), a last line cut off by a kill
is dropped, units with a failed call or missing samples are dropped (to be judged again), and
everything else, other judges' records included, is kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from harness.calibration.files import parse_record
from harness.calibration.judgments import PairwiseJudgment, PointwiseJudgment
from harness.calibration.scale import rating_values
from harness.calibration.study_records import (
    Record,
    StudyCounts,
    StudySettings,
    has_error,
    record_line,
)
from harness.errors import InputError
from harness.files import make_directory, read_text, write_text_atomic
from harness.json_values import STORED_DEPTH, load_json

JUDGMENTS_FILE = "judgments.jsonl"
STUDY_FILE = "study.json"
REPORT_FILE = "report.json"
REPORT_PAGE_FILE = "report.html"

Unit = tuple[str, str]  # (judge id, item id)


def canonical_order(records: Iterable[Record], judges: Sequence[str], items: Sequence[str]
                    ) -> list[Record]:
    """Records in a fixed order: judges as given (then any others by id), items in dataset
    order, the original order before the swapped one, samples ascending. The report's judge
    order and bootstrap draws depend on record order, so they must not depend on which call
    finished first."""
    judge_rank = {j: i for i, j in enumerate(judges)}
    item_rank = {item: i for i, item in enumerate(items)}

    def key(record: Record) -> tuple[int, str, int, int, int]:
        jid = record.judge_id or ""
        swapped = isinstance(record, PairwiseJudgment) and record.swapped
        sample = record.sample if isinstance(record, PairwiseJudgment) else None
        return (judge_rank.get(jid, len(judges)), jid, item_rank.get(record.item_id, 0),
                int(swapped), sample or 0)

    return sorted(records, key=key)


def complete_units(records: Sequence[Record], settings: StudySettings) -> dict[Unit, list[Record]]:
    """The units whose records are complete (every sample, every order asked) and hold no
    failed call. ``settings`` gives the samples and orders (shared by every rubric)."""
    units: dict[Unit, list[Record]] = {}
    for record in records:
        units.setdefault((record.judge_id or "", record.item_id), []).append(record)
    orders = 2 if settings.swap else 1
    done = {}
    for key, unit in units.items():
        if any(has_error(r) for r in unit):
            continue
        if isinstance(unit[0], PointwiseJudgment):
            complete = len(unit) == 1 and len(rating_values(unit[0].judge)) == settings.samples
        else:
            cells = {(r.swapped, r.sample) for r in unit if isinstance(r, PairwiseJudgment)}
            complete = len(cells) == len(unit) == settings.samples * orders
        if complete:
            done[key] = unit
    return done


class StudyDirectory:
    """One study directory, opened for a run (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.judgments = path / JUDGMENTS_FILE
        self.kept: list[Record] = []
        self._log: IO[str] | None = None

    def open(self, settings: Sequence[StudySettings], judges: Sequence[str],
             items: Sequence[str]) -> set[Unit]:
        """Check the directory's settings (one per rubric), keep its finished records
        (rewriting the file without the dropped ones) and return the units of ``judges``
        already done. Raises InputError for other settings, a stray judgments file or a bad
        line."""
        if not settings:
            raise ValueError("a study has settings for at least one rubric")
        make_directory(self.path, "a calibration study directory")
        existing = self._read(list(settings))
        wanted, known_items = set(judges), set(items)
        done = {key: unit for key, unit in complete_units(existing, settings[0]).items()
                if key[0] in wanted and key[1] in known_items}
        self.kept = [r for r in existing if (r.judge_id or "") not in wanted]
        self.kept += [r for unit in done.values() for r in unit]
        self.rewrite(self.kept, judges, items)
        self._log = self.judgments.open("a", encoding="utf-8")
        return set(done)

    def _read(self, settings: list[StudySettings]) -> list[Record]:
        study = self.path / STUDY_FILE
        if study.is_file():
            self._check_settings(study, settings)
        elif self.judgments.exists():
            raise InputError(self.judgments, None, f"found without {STUDY_FILE}: not a study "
                             "directory written by harness calibrate; use another --out")
        if not self.judgments.is_file():
            return []
        text = read_text(self.judgments, "the study's judgment records (JSONL)")
        lines = text.splitlines()
        records: list[Record] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                data = load_json(line, self.judgments, location=number,
                                 max_depth=STORED_DEPTH)
            except ValueError:
                if number == len(lines) and not text.endswith("\n"):
                    continue  # cut off by a kill mid-write: that unit is judged again
                raise InputError(self.judgments, None, "invalid JSON", location=number) from None
            if not isinstance(data, dict):
                raise InputError(self.judgments, None, "expected a JSON object", location=number)
            if settings[0].kind == "pointwise":
                records.append(parse_record(PointwiseJudgment, self.judgments, number, data))
            else:
                records.append(parse_record(PairwiseJudgment, self.judgments, number, data))
        return records

    @staticmethod
    def _check_settings(study: Path, settings: list[StudySettings]) -> None:
        try:
            raw = load_json(read_text(study, "a study file (JSON)"), study,
                            max_depth=STORED_DEPTH)["settings"]
            stored = [StudySettings.model_validate(one)
                      for one in (raw if isinstance(raw, list) else [raw])]
        except (ValueError, KeyError, TypeError, ValidationError) as err:
            raise InputError(study, "settings", f"not a readable study file ({err}); use "
                             "another --out") from None
        if len(stored) != len(settings):
            theirs_r = ", ".join(s.rubric for s in stored)
            ours_r = ", ".join(s.rubric for s in settings)
            raise InputError(study, "settings.rubric", f"this directory holds a study with "
                             f"rubric(s) {theirs_r}, not {ours_r}; resume with the same "
                             "rubrics or use another --out")
        for mine, stored_one in zip(settings, stored, strict=True):
            for name in StudySettings.model_fields:
                ours, theirs = getattr(mine, name), getattr(stored_one, name)
                if name != "dataset" and ours != theirs:
                    raise InputError(study, f"settings.{name}", f"this directory holds a study "
                                     f"with {name}={theirs!r}, not {ours!r}; resume with the "
                                     "same settings or use another --out")

    def append(self, records: Sequence[Record]) -> None:
        """Append one unit's records and flush them to the OS, so a kill cannot lose them."""
        assert self._log is not None, "open the study directory first"
        self._log.write("".join(record_line(r) + "\n" for r in records))
        self._log.flush()

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def rewrite(self, records: Iterable[Record], judges: Sequence[str], items: Sequence[str]
                ) -> None:
        """Replace ``judgments.jsonl`` with ``records`` in canonical order."""
        ordered = canonical_order(records, judges, items)
        write_text_atomic(self.judgments, "".join(record_line(r) + "\n" for r in ordered))

    def write_study(self, settings: Sequence[StudySettings],
                    judges: Sequence[str], counts: StudyCounts, status: str) -> None:
        """Write ``study.json``: one settings object, or a list of them for several rubrics."""
        every = [one.model_dump(mode="json") for one in settings]
        payload = {"settings": every[0] if len(every) == 1 else every, "judges": list(judges),
                   "status": status, "counts": counts.model_dump(mode="json")}
        write_text_atomic(self.path / STUDY_FILE,
                          json.dumps(payload, indent=2, allow_nan=False) + "\n")

    def write_report(self, report_json: dict[str, Any]) -> None:
        write_text_atomic(self.path / REPORT_FILE,
                          json.dumps(report_json, indent=2, allow_nan=False) + "\n")


