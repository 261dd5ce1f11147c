"""Read a JSONL file of sample scores (contract 2) into per-scenario lists.

One JSON object per line: ``{"scenario_id": str, "epoch": int, "score": number}`` with an
optional ``"passed": bool`` (default ``score >= 1 - 1e-6``) and an optional
``"judge_scores": [number, ...]`` (the scores of repeated judgings of this transcript, used
to separate judge noise from agent noise) and an optional ``"offline": bool`` (the sample
came from offline ``mock:`` models, as a run's ``samples.jsonl`` records; the output then
says so), with optional ``"models"`` (role -> model names) and ``"usage"`` (role -> calls and
cost) saying which roles were offline and which real. A line with ``"status"`` other than
``"scored"`` (a run's ``samples.jsonl`` also lists errored and unscored samples) is skipped
and counted in the notes, never read as a score; only when asked (``errors_as_failures``,
the policy of a run made with ``--errors-as-failures``) is an ``"errored"`` line read as a
failure (score 0, not passed), and counted as such in the notes. Blank lines are skipped.
Other keys are ignored (so richer exports can be analysed) unless they look like a
misspelling of a known key, which is an error rather than a silently dropped field.
"""

from __future__ import annotations

import difflib
import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.errors import InputError, InputErrors
from harness.models.provenance import RoleCollector, RoleModels
from harness.stats.sampling import default_passed

KNOWN_FIELDS = ("scenario_id", "epoch", "score", "passed", "judge_scores", "status", "offline",
                "models", "usage")
USAGE_FIELDS = ("calls", "cached_calls", "cost_usd", "unpriced_calls")
# A key close to one of these is taken for a misspelling. Not "models" and "usage": they
# only describe a run's samples, and a "model" key of another export is not a typo of them.
TYPO_TARGETS = KNOWN_FIELDS[:7]
SAMPLE_STATUSES = ("scored", "errored", "unscored")
MAX_REPORTED_ERRORS = 20


class SampleTable(BaseModel):
    """Samples grouped by scenario (in order of first appearance), epochs sorted.

    ``scores[sid][i]``, ``passed[sid][i]`` and ``epochs[sid][i]`` describe the same sample.
    ``judge_scores`` is set only when every line carried ``judge_scores``. ``n_offline``
    counts the samples marked ``"offline": true`` (made with offline mock models); ``roles``
    says, from the lines' ``models`` and ``usage``, which models played each role.
    """

    model_config = ConfigDict(extra="forbid")

    source: str
    n_samples: int
    scores: dict[str, list[float]]
    passed: dict[str, list[bool]]
    epochs: dict[str, list[int]]
    judge_scores: dict[str, list[list[float]]] | None
    n_offline: int = 0
    roles: dict[str, RoleModels] = Field(default_factory=dict)
    notes: list[str]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_record(
    obj: dict[str, Any], source: str, line: int
) -> tuple[list[InputError], dict[str, Any]]:
    errors: list[InputError] = []

    def bad(field: str, expected: str) -> None:
        errors.append(InputError(source, field, expected, location=line))

    for key in obj:
        if key in KNOWN_FIELDS:
            continue
        close = difflib.get_close_matches(key, TYPO_TARGETS, n=1, cutoff=0.8)
        if close and close[0] not in obj:
            bad(key, f"unknown field; did you mean {close[0]!r}?")
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
        bad("epoch", "missing; expected an integer")
    elif not isinstance(epoch, int) or isinstance(epoch, bool):
        bad("epoch", f"expected an integer, got {json.dumps(epoch)}")
    else:
        out["epoch"] = epoch
    score: Any = obj.get("score")
    if "score" not in obj:
        bad("score", "missing; expected a number")
    elif not _is_number(score) or not math.isfinite(score):
        # json.loads accepts NaN and Infinity; a score must be a finite number.
        bad("score", f"expected a finite number, got {json.dumps(score)}")
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
    models = obj.get("models")
    if "models" in obj:
        if not (isinstance(models, dict) and all(
                isinstance(names, list) and all(isinstance(n, str) for n in names)
                for names in models.values())):
            bad("models", "expected an object of role -> list of model names, as a run's "
                "samples.jsonl writes")
        else:
            out["models"] = models
    usage = obj.get("usage")
    if "usage" in obj:
        if not (isinstance(usage, dict) and all(
                isinstance(u, dict) and all(_is_number(u.get(k, 0)) for k in USAGE_FIELDS)
                for u in usage.values())):
            bad("usage", "expected an object of role -> {calls, cached_calls, cost_usd, ...} "
                "numbers, as a run's samples.jsonl writes")
        else:
            out["usage"] = usage
    return errors, out


def parse_sample_lines(
    lines: list[str], source: str, *, errors_as_failures: bool = False
) -> SampleTable:
    """Parse JSONL ``lines`` (line numbers start at 1) read from ``source``.

    ``errors_as_failures`` reads a line with status ``"errored"`` as a failure (score 0, not
    passed), the policy of a run made with ``--errors-as-failures``, instead of skipping it.

    Raises :class:`InputError` for a single problem and :class:`InputErrors` for several
    (up to 20 reported), each naming the source, line and field: a line that is not a JSON
    object, a missing or mistyped field, a duplicate (scenario_id, epoch), or no samples.
    """
    errors: list[InputError] = []
    seen: dict[tuple[str, int], int] = {}
    records: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    as_failures = 0
    n_errors = 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as err:
            line_errors = [InputError(source, None, f"not valid JSON ({err.msg})",
                                      location=number)]
        else:
            if not isinstance(obj, dict):
                line_errors = [InputError(
                    source, None, f"expected a JSON object, got {type(obj).__name__}",
                    location=number)]
            elif obj.get("status", "scored") != "scored" and not (
                    errors_as_failures and obj["status"] == "errored"):
                status = obj["status"]
                if status in SAMPLE_STATUSES:
                    skipped[status] = skipped.get(status, 0) + 1
                    continue
                line_errors = [InputError(
                    source, "status",
                    f"expected one of {', '.join(SAMPLE_STATUSES)}, got {json.dumps(status)}",
                    location=number)]
            else:
                if obj.get("status") == "errored":  # with errors_as_failures: a failure
                    as_failures += 1
                    obj = {k: obj[k] for k in ("scenario_id", "epoch", "offline", "models",
                                               "usage") if k in obj}
                    obj |= {"score": 0.0, "passed": False}
                line_errors, rec = _check_record(obj, source, number)
                if not line_errors:
                    key = (rec["scenario_id"], rec["epoch"])
                    if key in seen:
                        line_errors = [InputError(
                            source, "epoch",
                            f"duplicate sample: scenario {key[0]!r} epoch {key[1]} already on "
                            f"line {seen[key]}", location=number)]
                    else:
                        seen[key] = number
                        records.append(rec)
        n_errors += len(line_errors)
        errors.extend(line_errors[: max(0, MAX_REPORTED_ERRORS - len(errors))])
    if n_errors > len(errors):
        errors.append(InputError(source, None, f"... and {n_errors - len(errors)} more "
                                 "problems not shown"))
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputErrors(errors)
    if not records:
        if skipped:
            raise InputError(source, None, "no scored samples: every line has status "
                             + " or ".join(sorted(skipped)))
        raise InputError(source, None, "no samples: the file is empty; expected one JSON "
                         "object per line with scenario_id, epoch and score")

    grouped: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        grouped.setdefault(rec["scenario_id"], []).append(rec)
    for recs in grouped.values():
        recs.sort(key=lambda r: r["epoch"])
    with_judges = sum("judge_scores" in r for r in records)
    notes = [f"{n} {status} sample(s) skipped (status {status!r}): not scores"
             for status, n in sorted(skipped.items())]
    if as_failures:
        notes.append(f"{as_failures} errored sample(s) counted as failures (score 0, not "
                     "passed)")
    if 0 < with_judges < len(records):
        notes.append(
            f"judge_scores on {with_judges} of {len(records)} samples: judge noise is "
            "separated only when every sample has them"
        )
    return SampleTable(
        source=source,
        n_samples=len(records),
        scores={s: [r["score"] for r in rs] for s, rs in grouped.items()},
        passed={s: [r.get("passed", default_passed(r["score"])) for r in rs]
                for s, rs in grouped.items()},
        epochs={s: [r["epoch"] for r in rs] for s, rs in grouped.items()},
        judge_scores=(
            {s: [r["judge_scores"] for r in rs] for s, rs in grouped.items()}
            if with_judges == len(records) else None
        ),
        n_offline=sum(bool(r.get("offline")) for r in records),
        roles=_roles(records),
        notes=notes,
    )


def _roles(records: list[dict[str, Any]]) -> dict[str, RoleModels]:
    """Each role's models and usage over the samples read (lines with ``models``)."""
    collector = RoleCollector()
    for record in records:
        usage = record.get("usage", {})
        for role, names in record.get("models", {}).items():
            collector.add(role, names, usage.get(role))
    return collector.roles()


def read_sample_scores(path: str | Path, *, errors_as_failures: bool = False) -> SampleTable:
    """Read a sample-score JSONL file (contract 2); ``errors_as_failures`` as in
    :func:`parse_sample_lines`.

    Raises :class:`InputError` / :class:`InputErrors` naming the file, line and field for
    bad content, and :class:`InputError` when the file cannot be read or is not UTF-8.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(p, None, "file not found") from None
    except IsADirectoryError:
        raise InputError(p, None, "is a directory; expected a JSONL file") from None
    except PermissionError:
        raise InputError(p, None, "permission denied") from None
    except UnicodeDecodeError as err:
        raise InputError(p, None, f"not UTF-8 text (byte {err.start})") from None
    # Split on newlines only: str.splitlines would also split on U+2028 and other separators
    # that JSON allows raw inside strings, and would shift line numbers.
    return parse_sample_lines(text.split("\n"), str(p), errors_as_failures=errors_as_failures)
