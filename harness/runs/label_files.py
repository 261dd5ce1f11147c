"""Label files (contract 10): JSONL, one label a line, checked against the run they label.

:func:`read_label_file` refuses a whole file at its first bad line, with one message naming
the file, the line, the field and what was expected; :func:`label_file_text` writes labels
back in the same form, so an export after an import gives the same labels.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.errors import InputError, field_path
from harness.files import read_text
from harness.json_values import load_json
from harness.judging.rubric import Rubric
from harness.runs.label_model import TARGET_FORMS, Label
from harness.runs.labels import LabelTarget, check_label, label_targets, sample_rubrics, some
from harness.runs.store import RunStore, StoreError

_FIELDS = ("scenario_id, epoch, annotator, target, value, random, and optionally comment "
           "and labelled_at")
_HINTS = {
    "scenario_id": "a scenario id of the run (a string)",
    "epoch": "the sample's epoch, a whole number from 0",
    "annotator": "the reviewer's name, a non-empty string",
    "target": TARGET_FORMS,
    "random": "true (the sample came from the random queue) or false",
    "comment": "a string",
}


def _problem(err: ValidationError) -> tuple[str | None, str]:
    """The field and what was expected, for a line's first validation failure."""
    first = err.errors()[0]
    loc = [str(p) for p in first["loc"]]
    message = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "missing":
        return field_path(loc), "required field is missing"
    if first["type"] == "extra_forbidden":
        return field_path(loc), f"unknown field (a label has {_FIELDS})"
    if not loc and message.startswith("value: "):  # the value does not fit its target
        return "value", message.removeprefix("value: ")
    if loc and loc[0] in _HINTS and first["type"] != "value_error":
        return loc[0], f"expected {_HINTS[loc[0]]}, got {first['input']!r}"
    if loc and loc[0] == "value":
        return "value", f"expected true/false or a number, got {first['input']!r}"
    return field_path(loc) or None, message


def parse_label_lines(path: Path, text: str) -> list[tuple[int, Label]]:
    """Each non-blank line of ``text`` as a :class:`Label`, with its line number. Raises
    :class:`InputError` naming ``path``, the line and the field at the first bad line."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = load_json(line, path, location=number)
        except json.JSONDecodeError as err:
            raise InputError(path, None, f"not valid JSON ({err.msg}); expected one label "
                             "object a line", location=number) from None
        if not isinstance(data, dict):
            raise InputError(path, None, f"expected a JSON object (a label with {_FIELDS}), "
                             f"got {type(data).__name__}", location=number)
        try:
            out.append((number, Label.model_validate(data)))
        except ValidationError as err:
            field, expected = _problem(err)
            raise InputError(path, field, expected, location=number) from None
    return out


class RunLabelChecker:
    """Checks labels against one run: the scenario and epoch exist, the sample has the
    target, the value is on the target's scale. Samples and rubrics are read once each."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._epochs: dict[str, list[int]] = {}
        for sid, epoch, *_ in store.score_rows():
            self._epochs.setdefault(sid, []).append(epoch)
        self._rubrics = store.rubrics()
        try:
            self._scenarios = store.scenario_definitions()
        except StoreError:  # only inline rubrics come from there; the run's rubrics suffice
            self._scenarios = {}
        self._targets: dict[tuple[str, int], list[LabelTarget]] = {}

    def rubrics_for(self, scenario_id: str) -> dict[str, Rubric]:
        """The rubrics the scenario's samples were judged with (its inline ones included)."""
        return sample_rubrics(self._rubrics, self._scenarios.get(scenario_id))

    def targets(self, scenario_id: str, epoch: int) -> list[LabelTarget]:
        """What can be labelled on a stored sample (it must exist)."""
        key = (scenario_id, epoch)
        if key not in self._targets:
            record = self.store.sample(scenario_id, epoch)
            assert record is not None, key
            self._targets[key] = label_targets(record, self.rubrics_for(scenario_id))
        return self._targets[key]

    def problem(self, label: Label) -> tuple[str, str] | None:
        """``(field, what was expected)`` when ``label`` does not fit the run, else None."""
        epochs = self._epochs.get(label.scenario_id)
        if epochs is None:
            return "scenario_id", (f"{label.scenario_id!r} is not a scenario of this run "
                                   f"(it has {some(sorted(self._epochs)) or 'none'})")
        if label.epoch not in epochs:
            return "epoch", (f"scenario {label.scenario_id!r} has no epoch {label.epoch} in "
                             f"this run (it has {some([str(e) for e in sorted(epochs)])})")
        found = check_label(label, self.targets(label.scenario_id, label.epoch))
        if found is None:
            return None
        field, _, expected = found.partition(": ")
        return field, expected


def read_label_file(path: Path, store: RunStore) -> list[Label]:
    """Every label of the JSONL file ``path``, each checked against the run in ``store``.
    Raises :class:`InputError` naming the file, the line and the field at the first line that
    is not valid JSON, not a contract-10 label, or does not fit the run (an unknown scenario,
    epoch or target, a value off the target's scale); and for a file with no labels."""
    text = read_text(path, "a JSONL file of labels (one JSON object a line)")
    parsed = parse_label_lines(path, text)
    if not parsed:
        raise InputError(path, None, f"holds no labels; expected one JSON object a line with "
                         f"{_FIELDS}")
    checker = RunLabelChecker(store)
    for number, label in parsed:
        found = checker.problem(label)
        if found is not None:
            raise InputError(path, found[0], found[1], location=number)
    return [label for _, label in parsed]


def label_file_text(labels: Sequence[Label]) -> str:
    """The JSONL text of ``labels``, one contract-10 object a line."""
    return "".join(json.dumps(label.to_json(), ensure_ascii=False) + "\n" for label in labels)


def reviewers(labels: Sequence[Label]) -> list[str]:
    """The distinct annotators of ``labels``, in the order first met."""
    return list(dict.fromkeys(label.annotator for label in labels))


def label_counts(labels: Sequence[Label]) -> dict[str, Any]:
    """How many labels, reviewers, samples, and random and chosen labels there are."""
    return {
        "labels": len(labels),
        "reviewers": len(reviewers(labels)),
        "samples": len({(lb.scenario_id, lb.epoch) for lb in labels}),
        "random": sum(lb.random for lb in labels),
        "chosen": sum(not lb.random for lb in labels),
    }
