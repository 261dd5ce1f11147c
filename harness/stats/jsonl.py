"""Read a JSONL file of sample scores (contract 2) into columns grouped by scenario.

One JSON object per line: ``{"scenario_id": str, "epoch": int, "score": number}`` with an
optional ``"passed": bool`` (default: the score reaches the top of the score range, ``score
>= 1 - 1e-6`` on [0, 1]) and an optional ``"judge_scores": [number, ...]`` (the scores of
repeated judgings of this transcript, used to separate judge noise from agent noise) and an
optional ``"offline": bool`` (the sample came from offline ``mock:`` models, as a run's
``samples.jsonl`` records; the output then says so), with optional ``"models"`` (role ->
model names) and ``"usage"`` (role -> calls and cost) saying which roles were offline and
which real. Scores must lie in the score range,
[0, 1] unless the caller declares another, and epochs must be integers >= 0. A line with
``"status"`` other than ``"scored"`` (a run's ``samples.jsonl`` also lists errored and
unscored samples) is skipped and counted in the notes, never read as a score; only when
asked (``errors_as_failures``, the policy of a run made with ``--errors-as-failures``) is an
``"errored"`` line read as a failure (the bottom of the score range, not passed), and
counted as such in the notes. Blank lines are skipped. Other keys are ignored (so richer
exports can be analysed) unless they look like a misspelling of a known key, which is an
error rather than a silently dropped field.

The file is read line by line into a few flat arrays, so a million lines take tens of
megabytes rather than a million Python objects. Well-formed lines are parsed with orjson and
checked on a fast path; any line that fails it is parsed again with the standard library and
checked field by field, so every problem gets the same one-line message naming the file, the
line and the field.
"""

from __future__ import annotations

import difflib
import json
import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from harness.errors import InputError, InputErrors
from harness.files import not_utf8, open_binary
from harness.json_values import load_json
from harness.models.provenance import RoleCollector, RoleModels
from harness.stats.columns import UNIT_RANGE, ScoreColumns, pass_threshold
from harness.wording import plural

KNOWN_FIELDS = ("scenario_id", "epoch", "score", "passed", "judge_scores", "status", "offline",
                "models", "usage")
USAGE_FIELDS = ("calls", "cached_calls", "cost_usd", "unpriced_calls")
# A key close to one of these is taken for a misspelling. Not "models" and "usage": they
# only describe a run's samples, and a "model" key of another export is not a typo of them.
TYPO_TARGETS = KNOWN_FIELDS[:7]
SAMPLE_STATUSES = ("scored", "errored", "unscored")
MAX_REPORTED_ERRORS = 20
MAX_EPOCH = 2**63 - 1  # epochs are kept as 64-bit integers
_NO_FLAG = object()  # a record without "passed"
EXPECTED_FILE = "a JSONL file of sample scores"


@dataclass(frozen=True)
class SampleTable:
    """Samples grouped by scenario (in order of first appearance), epochs sorted.

    ``columns`` holds the scores and pass flags, ``epoch_values`` the epoch of each of its
    samples; ``scores``, ``passed`` and ``epochs`` give the same as plain dicts (scenario id
    -> list). ``judge_scores`` is set only when every line carried ``judge_scores``.
    ``n_offline`` counts the samples marked ``"offline": true`` (made with offline mock
    models); ``roles`` says, from the lines' ``models`` and ``usage``, which models played
    each role.
    """

    source: str
    n_samples: int
    columns: ScoreColumns
    epoch_values: np.ndarray
    judge_scores: dict[str, list[list[float]]] | None
    n_offline: int = 0
    roles: dict[str, RoleModels] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    score_range: tuple[float, float] = UNIT_RANGE

    @property
    def scores(self) -> dict[str, list[float]]:
        return self.columns.scenario_scores()

    @property
    def passed(self) -> dict[str, list[bool]]:
        return self.columns.scenario_passed()

    @property
    def epochs(self) -> dict[str, list[int]]:
        offsets = self.columns.offsets
        return {sid: self.epoch_values[a:b].tolist()
                for sid, a, b in zip(self.columns.ids, offsets[:-1], offsets[1:], strict=True)}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _range_text(score_range: tuple[float, float]) -> str:
    return f"[{score_range[0]:g}, {score_range[1]:g}]"


def _check_record(
    obj: dict[str, Any], source: str, line: int, score_range: tuple[float, float],
    near_misses: dict[str, str | None],
) -> tuple[list[InputError], dict[str, Any]]:
    errors: list[InputError] = []

    def bad(field: str, expected: str) -> None:
        errors.append(InputError(source, field, expected, location=line))

    for key in obj:
        close = _near_miss(key, near_misses)
        if close is not None and close not in obj:
            bad(key, f"unknown field; did you mean {close!r}?")
    out: dict[str, Any] = {}
    sid = obj.get("scenario_id")
    if "scenario_id" not in obj:
        bad("scenario_id", "missing; expected a non-empty string")
    elif not isinstance(sid, str) or not sid:
        bad("scenario_id", f"expected a non-empty string, got {json.dumps(sid)}")
    else:
        out["scenario_id"] = sid
    epoch = obj.get("epoch")
    if "epoch" not in obj:
        bad("epoch", "missing; expected an integer >= 0")
    elif not isinstance(epoch, int) or isinstance(epoch, bool):
        bad("epoch", f"expected an integer >= 0, got {json.dumps(epoch)}")
    elif epoch < 0:
        bad("epoch", f"expected an integer >= 0, got {epoch}")
    elif epoch > MAX_EPOCH:
        bad("epoch", f"expected an integer below 2^63, got {epoch}")
    else:
        out["epoch"] = epoch
    score: Any = obj.get("score")
    low, high = score_range
    if "score" not in obj:
        bad("score", "missing; expected a number")
    elif not _is_number(score) or not math.isfinite(score):
        # json.loads accepts NaN and Infinity; a score must be a finite number.
        bad("score", f"expected a finite number, got {json.dumps(score)}")
    elif not low <= score <= high:
        declare = ("declare another with --score-range LOW:HIGH" if score_range == UNIT_RANGE
                   else "as declared by --score-range")
        bad("score", f"expected a number in the score range {_range_text(score_range)} "
            f"({declare}), got {json.dumps(score)}")
    else:
        out["score"] = float(score)
    if "passed" in obj:
        if not isinstance(obj["passed"], bool):
            bad("passed", f"expected true or false, got {json.dumps(obj['passed'])}")
        else:
            out["passed"] = obj["passed"]
    if "judge_scores" in obj:
        js = obj["judge_scores"]
        if (
            not isinstance(js, list) or not js
            or not all(_is_number(v) and math.isfinite(v) for v in js)
        ):
            bad("judge_scores", "expected a non-empty list of finite numbers")
        else:
            out["judge_scores"] = [float(v) for v in js]
    if "offline" in obj:
        if not isinstance(obj["offline"], bool):
            bad("offline", f"expected true or false, got {json.dumps(obj['offline'])}")
        else:
            out["offline"] = obj["offline"]
    if "models" in obj:
        if _role_models(obj["models"]) is None:
            bad("models", "expected an object of role -> list of model names, as a run's "
                "samples.jsonl writes")
        else:
            out["models"] = obj["models"]
    if "usage" in obj:
        if _role_usage(obj["usage"]) is None:
            bad("usage", "expected an object of role -> {calls, cached_calls, cost_usd, ...} "
                "numbers, as a run's samples.jsonl writes")
        else:
            out["usage"] = obj["usage"]
    return errors, out


def _role_models(models: Any) -> dict[str, list[str]] | None:
    """``models`` when it is role -> list of model names, else ``None``."""
    if type(models) is dict and all(
            type(names) is list and all(type(n) is str for n in names)
            for names in models.values()):
        return models
    return None


def _role_usage(usage: Any) -> dict[str, dict[str, Any]] | None:
    """``usage`` when it is role -> {calls, cached_calls, cost_usd, unpriced_calls} numbers
    (any of them may be missing), else ``None``."""
    if type(usage) is dict and all(
            type(u) is dict and all(_is_number(u.get(k, 0)) for k in USAGE_FIELDS)
            for u in usage.values()):
        return usage
    return None


def _near_miss(key: str, cache: dict[str, str | None]) -> str | None:
    """The known field ``key`` looks like a misspelling of, or ``None`` (cached: a file
    repeats its keys on every line)."""
    if key not in cache:
        close = (None if key in KNOWN_FIELDS
                 else difflib.get_close_matches(key, TYPO_TARGETS, n=1, cutoff=0.8))
        cache[key] = close[0] if close else None
    return cache[key]


class _Reader:
    """Accumulates one file's samples line by line (see :func:`parse_sample_lines`)."""

    def __init__(self, source: str, errors_as_failures: bool,
                 score_range: tuple[float, float]) -> None:
        self.source = source
        self.errors_as_failures = errors_as_failures
        self.score_range = score_range
        self.near_misses: dict[str, str | None] = {}
        self.plain_keys = set(KNOWN_FIELDS)  # keys seen that are not near misses
        self.ids: dict[str, int] = {}
        self.codes = array("q")
        self.epochs = array("q")
        self.scores = array("d")
        self.flags = array("b")  # 1 passed, 0 failed, -1 no flag: the default rule decides
        self.lines = array("q")
        self.judges: list[tuple[int, list[float]]] = []
        self.n_offline = 0
        self.roles = RoleCollector()
        self.skipped: dict[str, int] = {}
        self.as_failures = 0
        self.errors: list[InputError] = []
        self.n_errors = 0

    def feed(self, lines: Iterable[str | bytes]) -> None:
        """Read every line. Records in the common shape are taken here, in one tight loop
        (this is where a large file's time goes); any other line, blank ones included, goes
        to :meth:`_slow`."""
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        low, high = self.score_range
        plain = self.plain_keys
        ids = self.ids
        code_of = ids.setdefault
        codes, epochs = self.codes.append, self.epochs.append
        scores, flags, numbers = self.scores.append, self.flags.append, self.lines.append
        n_offline = 0
        for number, raw in enumerate(lines, start=1):
            try:
                obj = loads(raw)
            except decode_error:
                obj = None
            if type(obj) is dict:
                sid = obj.get("scenario_id")
                epoch = obj.get("epoch")
                score = obj.get("score")
                passed = obj.get("passed", _NO_FLAG)
                offline = obj.get("offline", False)
                if (type(sid) is str and sid and type(epoch) is int
                        and 0 <= epoch <= MAX_EPOCH
                        and (type(score) is float or type(score) is int)
                        and low <= score <= high
                        and (passed is _NO_FLAG or type(passed) is bool)
                        and type(offline) is bool
                        and obj.get("status", "scored") == "scored"
                        and (obj.keys() <= plain or self._plain(obj))
                        and ("judge_scores" not in obj or self._judges(obj["judge_scores"]))
                        and (("models" not in obj and "usage" not in obj)
                             or self._roles(obj))):
                    codes(code_of(sid, len(ids)))
                    epochs(epoch)
                    scores(score)
                    flags(-1 if passed is _NO_FLAG else bool(passed))
                    numbers(number)
                    n_offline += offline
                    continue
            self._slow(number, raw)
        self.n_offline += n_offline

    def _plain(self, obj: dict[str, Any]) -> bool:
        """Whether none of ``obj``'s keys looks like a misspelt known field (then the line
        goes to the field-by-field checks, which say so)."""
        for key in obj.keys() - self.plain_keys:
            if _near_miss(key, self.near_misses) is not None:
                return False
            self.plain_keys.add(key)
        return True

    def _judges(self, judges: Any) -> bool:
        """Keep a well-formed ``judge_scores`` list for the record being taken."""
        if not (type(judges) is list and judges and all(
                (type(v) is float or type(v) is int) and math.isfinite(v) for v in judges)):
            return False
        self.judges.append((len(self.scores), [float(v) for v in judges]))
        return True

    def _roles(self, obj: dict[str, Any]) -> bool:
        """Count a well-formed ``models`` (with its ``usage``) for the record being taken."""
        models, usage = _role_models(obj.get("models", {})), _role_usage(obj.get("usage", {}))
        if models is None or usage is None:
            return False
        for role, names in models.items():
            self.roles.add(role, names, usage.get(role))
        return True

    def _keep(self, sid: str, epoch: int, score: float, passed: bool | None, offline: bool,
              number: int) -> None:
        self.codes.append(self.ids.setdefault(sid, len(self.ids)))
        self.epochs.append(epoch)
        self.scores.append(score)
        self.flags.append(-1 if passed is None else int(passed))
        self.lines.append(number)
        self.n_offline += offline

    def _slow(self, number: int, raw: str | bytes) -> None:
        if not raw.strip():
            return
        source = self.source
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise not_utf8(source, bytes(err.object), err.start, EXPECTED_FILE,
                               line=number) from None
        line_errors: list[InputError] = []
        try:
            obj = load_json(raw, source, location=number)
        except json.JSONDecodeError as err:
            line_errors = [InputError(source, None, f"not valid JSON ({err.msg})",
                                      location=number)]
        except InputError as err:
            line_errors = [err]
        else:
            if not isinstance(obj, dict):
                line_errors = [InputError(
                    source, None, f"expected a JSON object, got {type(obj).__name__}",
                    location=number)]
            elif obj.get("status", "scored") != "scored" and not (
                    self.errors_as_failures and obj["status"] == "errored"):
                status = obj["status"]
                if status in SAMPLE_STATUSES:
                    self.skipped[status] = self.skipped.get(status, 0) + 1
                    return
                line_errors = [InputError(
                    source, "status",
                    f"expected one of {', '.join(SAMPLE_STATUSES)}, got {json.dumps(status)}",
                    location=number)]
            else:
                if obj.get("status") == "errored":  # with errors_as_failures: a failure
                    self.as_failures += 1
                    obj = {k: obj[k] for k in ("scenario_id", "epoch", "offline", "models",
                                               "usage") if k in obj}
                    obj |= {"score": self.score_range[0], "passed": False}
                line_errors, rec = _check_record(obj, source, number, self.score_range,
                                                 self.near_misses)
                if not line_errors:
                    if "judge_scores" in rec:
                        self.judges.append((len(self.scores), rec["judge_scores"]))
                    self._roles(rec)
                    self._keep(rec["scenario_id"], rec["epoch"], rec["score"],
                               rec.get("passed"), rec.get("offline", False), number)
        self.n_errors += len(line_errors)
        self.errors.extend(line_errors[: max(0, MAX_REPORTED_ERRORS - len(self.errors))])

    def _duplicates(self, order: np.ndarray, codes: np.ndarray, epochs: np.ndarray,
                    lines: np.ndarray) -> tuple[list[InputError], int]:
        """Samples whose (scenario, epoch) an earlier line already gave: the first few as
        errors naming that line, and how many there are."""
        c, e = codes[order], epochs[order]
        repeat = np.zeros(order.size, dtype=bool)
        repeat[1:] = (c[1:] == c[:-1]) & (e[1:] == e[:-1])
        if not repeat.any():
            return [], 0
        # Sorted by line within each (scenario, epoch): a run's first entry is the original.
        first = np.maximum.accumulate(np.where(repeat, 0, np.arange(order.size)))
        first_line = lines[order][first]
        dup = np.flatnonzero(repeat)
        dup = dup[np.argsort(lines[order][dup], kind="stable")]
        names = list(self.ids)
        errors = [InputError(
            self.source, "epoch",
            f"duplicate sample: scenario {names[int(c[i])]!r} epoch {int(e[i])} already on "
            f"line {int(first_line[i])}", location=int(lines[order][i]))
            for i in dup[:MAX_REPORTED_ERRORS]]
        return errors, int(dup.size)

    def finish(self) -> SampleTable:
        """The table, or the errors found (raised)."""
        codes = np.frombuffer(self.codes, dtype=np.int64)
        epochs = np.frombuffer(self.epochs, dtype=np.int64)
        lines = np.frombuffer(self.lines, dtype=np.int64)
        order = np.lexsort((lines, epochs, codes))
        dup_errors, n_dups = self._duplicates(order, codes, epochs, lines)
        n_errors = self.n_errors + n_dups
        errors = sorted(self.errors + dup_errors,
                        key=lambda err: err.location if isinstance(err.location, int) else 0)
        errors = errors[:MAX_REPORTED_ERRORS]
        source = self.source
        if n_errors > len(errors):
            errors.append(InputError(source, None, f"... and {n_errors - len(errors)} more "
                                     "problems not shown"))
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise InputErrors(errors)
        if not order.size:
            if self.skipped:
                raise InputError(source, None, "no scored samples: every line has status "
                                 + " or ".join(sorted(self.skipped)))
            raise InputError(source, None, "no samples: the file is empty; expected one JSON "
                             "object per line with scenario_id, epoch and score")

        scores = np.frombuffer(self.scores, dtype=float)[order]
        flags = np.frombuffer(self.flags, dtype=np.int8)[order]
        passed = np.where(flags < 0, scores >= pass_threshold(self.score_range), flags == 1)
        counts = np.bincount(codes, minlength=len(self.ids))
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        columns = ScoreColumns(ids=list(self.ids), offsets=offsets, scores=scores,
                               passed=passed)
        n = int(order.size)
        notes = [f"{plural(k, status + ' sample')} skipped (status {status!r}): not scores"
                 for status, k in sorted(self.skipped.items())]
        if self.as_failures:
            notes.append(f"{plural(self.as_failures, 'errored sample')} counted as failures (score "
                         f"{self.score_range[0]:g}, not passed)")
        with_judges = len(self.judges)
        if 0 < with_judges < n:
            notes.append(
                f"judge_scores on {with_judges} of {n} samples: judge noise is "
                "separated only when every sample has them"
            )
        judge_scores = None
        if with_judges == n:
            by_record = [js for _, js in self.judges]
            judge_scores = {
                sid: [by_record[i] for i in order[a:b].tolist()]
                for sid, a, b in zip(columns.ids, offsets[:-1], offsets[1:], strict=True)}
        return SampleTable(
            source=source, n_samples=n, columns=columns, epoch_values=epochs[order],
            judge_scores=judge_scores, n_offline=self.n_offline, roles=self.roles.roles(),
            notes=notes,
            score_range=self.score_range,
        )


def check_score_range(score_range: tuple[float, float], source: str = "command line",
                      field: str = "--score-range") -> None:
    """Refuse a score range that is not two finite numbers, the first below the second."""
    low, high = score_range
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise InputError(source, field, f"expected LOW:HIGH with LOW < HIGH, got {low:g}:"
                         f"{high:g}")


def parse_sample_lines(
    lines: Iterable[str | bytes], source: str, *, errors_as_failures: bool = False,
    score_range: tuple[float, float] = UNIT_RANGE,
) -> SampleTable:
    """Parse JSONL ``lines`` (line numbers start at 1) read from ``source``.

    ``errors_as_failures`` reads a line with status ``"errored"`` as a failure (the bottom
    of the score range, not passed), the policy of a run made with ``--errors-as-failures``,
    instead of skipping it. ``score_range`` is the range every score must lie in.

    Raises :class:`InputError` for a single problem and :class:`InputErrors` for several
    (up to 20 reported), each naming the source, line and field: a line that is not a JSON
    object, a missing or mistyped field, a score outside the range, a negative epoch, a
    duplicate (scenario_id, epoch), or no samples.
    """
    check_score_range(score_range)
    reader = _Reader(source, errors_as_failures, score_range)
    reader.feed(lines)
    return reader.finish()


def read_sample_scores(path: str | Path, *, errors_as_failures: bool = False,
                       score_range: tuple[float, float] = UNIT_RANGE) -> SampleTable:
    """Read a sample-score JSONL file (contract 2), streaming it line by line (a leading
    byte-order mark is dropped); ``errors_as_failures`` and ``score_range`` as in
    :func:`parse_sample_lines`.

    Raises :class:`InputError` / :class:`InputErrors` naming the file, line and field for
    bad content, and :class:`InputError` naming the file when it is missing, a directory,
    unreadable, or not UTF-8 (with the line and column of the first bad byte).
    """
    check_score_range(score_range)
    p = Path(path)
    reader = _Reader(str(p), errors_as_failures, score_range)
    with open_binary(p, EXPECTED_FILE) as stream:
        # Binary lines split on b"\n" only: U+2028 and other separators that JSON allows raw
        # inside strings stay inside their line, and line numbers hold.
        reader.feed(stream)
    return reader.finish()
