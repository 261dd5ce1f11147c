"""Rubrics: what a judge scores, on which scale, and when a transcript passes.

A rubric is one YAML file (``rubrics/*.yaml`` ships the built-in ones)::

    id: final_response_quality
    version: 1
    description: How good the agent's final answer is for the user.
    target: final_response      # final_response | tool_use | conversation | agent_turn
                                # | simulator_fidelity | user_turn | sentence_grounding:
                                # what the judge is shown and judges
    threshold: 0.75             # pass when the rubric score >= this, on the NORMALISED
                                # [0, 1] score (0 = every criterion at its lowest level,
                                # 1 = every criterion at its highest)
    scales:                     # optional: labelled scales of this rubric's own
      three_level:
        levels:
          - {value: 0, label: poor, meaning: Misses the point.}
          - {value: 1, label: fair, meaning: Partly useful.}
          - {value: 2, label: good, meaning: Fully useful.}
    criteria:
      - id: correctness         # matched by id only; [a-z][a-z0-9_]*
        question: Is the answer factually correct given the tool results?
        scale: ordinal_1_5      # binary | ordinal_1_5 | a name under `scales`
        levels:                 # optional: what each level means for THIS criterion
          1: Wrong or invented.
          5: Fully correct.
        weight: 2               # relative weight in the rubric score (default 1)
        allow_na: false         # may the judge answer "N/A" (not applicable)?
        threshold: 4            # optional: this criterion passes at >= 4, in SCALE units
        turns: [0, 2]           # optional, agent_turn only: judged on these user turns
    samples: 5                  # optional: judge samples per transcript when the command
                                # line does not say (--judge-samples / --samples wins)
    aggregation: majority       # optional: mean | majority, likewise (--judge-aggregation /
                                # --aggregate wins); without either: 1 sample, mean
    requires_reference_answer: false  # true: not scored (no call) without a reference answer

Scores: a criterion's score is normalised to [0, 1] as (score - lowest) / (highest - lowest);
the rubric score is the weight-averaged normalised score over the criteria that applied
(N/A excluded; all N/A means the rubric is explicitly *not scored*). For an ``agent_turn``
rubric a criterion's score is its mean over the turns it was judged on; a criterion with
``turns`` is asked about those turns only (each turn's judge call holds the criteria of that
turn), so giving each criterion the weight of its number of turns makes the rubric score the
mean over every (criterion, turn) verdict, as ADK's rubric-based criteria score. A criterion
passes when its normalised score reaches its own threshold (converted from scale units) or,
without one, the rubric's threshold.

A ``sentence_grounding`` rubric (the built-in ``hallucinations``) has a judge label every
sentence of the agent's final answer (and, with ``include_intermediate: true``, of its
intermediate answers) as supported, unsupported, contradictory, disputed or not applicable;
its one criterion, on the ``binary`` scale, holds the share of applicable sentences that are
supported (see :mod:`harness.judging.grounding`).

A ``user_turn`` rubric (the built-in ``simulator_turns``) judges the simulated user one user
turn at a time: its criteria are some of :data:`USER_TURN_CRITERIA`, each on the ``binary``
scale; a turn passes when all hold, and the rubric score is the share of turns that pass (see
:mod:`harness.judging.user_turns`). Like ``simulator_fidelity`` it never counts toward the
agent's score or pass (:data:`SIMULATOR_TARGETS`).

Loading raises :class:`~harness.errors.InputError` naming the file and the field: no criteria,
a duplicate criterion id, an unknown scale, a threshold outside its scale, a misspelt key.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from harness.choices import AggregationMethod
from harness.errors import InputError, InputErrors, field_path
from harness.files import read_text
from harness.json_values import load_json, load_yaml
from harness.resources import data_dir

RubricTarget = Literal[
    "final_response",  # the agent's final answer, in the light of the conversation
    "tool_use",  # the agent's tool calls, against its tools and system prompt
    "conversation",  # the whole conversation
    "agent_turn",  # each agent turn on its own (one judge call per turn, averaged)
    "simulator_fidelity",  # the simulated user, against its persona and facts
    "user_turn",  # each simulated user turn on its own (one judge call per turn)
    "sentence_grounding",  # each sentence of the agent's answer(s), against the sources
]
RUBRIC_TARGETS: tuple[str, ...] = RubricTarget.__args__  # type: ignore[attr-defined]

SIMULATOR_TARGETS: frozenset[str] = frozenset({"simulator_fidelity", "user_turn"})
"""Targets whose rubrics judge the simulated user, not the agent: their scores are kept and
reported, but never count toward a sample's score or pass (``harness.runs.scoring``)."""


def judges_the_simulator(target: str | None) -> bool:
    """Whether a rubric of ``target`` judges the simulated user rather than the agent."""
    return target in SIMULATOR_TARGETS


USER_TURN_CRITERIA: dict[str, str] = {
    "follows_persona": "speaks as the persona would (style, knowledge, mood), as the user, "
                       "never as the assistant",
    "pursues_goal": "works toward the stated goal and plan, without giving up on it while it "
                    "can still be met",
    "stays_in_scope": "asks only for what the goal covers and gives only what the agent's "
                      "last turn calls for",
    "consistent_with_earlier_turns": "agrees with what the user said before and with the "
                                     "facts of its profile",
    "natural": "reads like a real person's message at this point of the conversation",
}
"""The criteria a ``user_turn`` rubric may use (any of them, each on the ``binary`` scale),
with what each asks of one user turn."""

BUILTIN_RUBRICS_DIR = data_dir("rubrics")
"""Where the built-in rubrics live (``rubrics/`` at the project root, or the installed copy)."""

_ID_PATTERN = r"^[a-z][a-z0-9_]*$"


class RubricProblem(ValueError):
    """A rubric that parses but does not make sense; ``path`` is the field at fault (e.g.
    ``criteria[2].scale``) so the loader can name it exactly."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScaleLevel(_Strict):
    """One level of a scale: the integer the judge answers, a short label, what it means."""

    value: int
    label: str = Field(min_length=1)
    meaning: str = ""


class RubricScale(_Strict):
    """An ordered scale of integer levels (at least two, distinct values)."""

    levels: tuple[ScaleLevel, ...] = Field(min_length=2)

    @field_validator("levels")
    @classmethod
    def _distinct(cls, levels: tuple[ScaleLevel, ...]) -> tuple[ScaleLevel, ...]:
        values = [lv.value for lv in levels]
        if len(set(values)) != len(values):
            raise ValueError(f"level values must be distinct (got {values})")
        return tuple(sorted(levels, key=lambda lv: lv.value))

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(lv.value for lv in self.levels)

    @property
    def lowest(self) -> int:
        return self.levels[0].value

    @property
    def highest(self) -> int:
        return self.levels[-1].value

    def normalise(self, score: float) -> float:
        """Map a score on this scale to [0, 1] (lowest level 0, highest 1)."""
        return (score - self.lowest) / (self.highest - self.lowest)


BUILTIN_SCALES: dict[str, RubricScale] = {
    "binary": RubricScale(
        levels=(
            ScaleLevel(value=0, label="no", meaning="The criterion is not met."),
            ScaleLevel(value=1, label="yes", meaning="The criterion is met."),
        )
    ),
    "ordinal_1_5": RubricScale(
        levels=(
            ScaleLevel(value=1, label="very poor", meaning="Fails the criterion entirely."),
            ScaleLevel(value=2, label="poor", meaning="Mostly fails the criterion."),
            ScaleLevel(value=3, label="acceptable", meaning="Partly meets the criterion."),
            ScaleLevel(value=4, label="good", meaning="Meets the criterion with minor flaws."),
            ScaleLevel(value=5, label="excellent", meaning="Fully meets the criterion."),
        )
    ),
}


def _not_reserved(criterion_id: str) -> str:
    # The judge's reply has one field per criterion id; pydantic reserves these names.
    if criterion_id.startswith("model_") or criterion_id in dir(BaseModel):
        raise ValueError(f"{criterion_id!r} is reserved (it names a pydantic attribute); "
                         "choose another criterion id")
    return criterion_id


class Criterion(_Strict):
    """One question the judge answers on a scale."""

    id: Annotated[str, AfterValidator(_not_reserved)] = Field(pattern=_ID_PATTERN,
                                                               max_length=64)
    question: str = Field(min_length=1)
    scale: str | RubricScale = "ordinal_1_5"
    levels: dict[int, str] = Field(
        default_factory=dict, description="what each level means for this criterion"
    )
    weight: float = Field(default=1.0, gt=0)
    allow_na: bool = False
    threshold: float | None = Field(
        default=None, description="pass at >= this score, in the criterion's scale units"
    )
    turns: tuple[Annotated[int, Field(ge=0)], ...] | None = Field(
        default=None, min_length=1,
        description="agent_turn rubrics only: the user turns (from 0) this criterion is "
        "judged on; without it, every turn",
    )

    def applies_to(self, turn: int | None) -> bool:
        """Whether the criterion is asked about ``turn`` (``None``: a whole transcript)."""
        return self.turns is None or turn is None or turn in self.turns


class Rubric(_Strict):
    """A rubric: see the module docstring for the file format and the scoring rules."""

    id: str = Field(pattern=_ID_PATTERN, max_length=64)
    version: int | str = 1
    description: str = ""
    target: RubricTarget
    threshold: float = Field(
        description="pass when the rubric score >= this, on the normalised [0, 1] score"
    )
    scales: dict[str, RubricScale] = Field(default_factory=dict)
    criteria: tuple[Criterion, ...] = Field(min_length=1)
    samples: int | None = Field(
        default=None, ge=1, le=100,
        description="judge samples per transcript unless the command line gives a number",
    )
    aggregation: AggregationMethod | None = Field(
        default=None, description="how samples combine unless the command line says",
    )
    requires_reference_answer: bool = Field(
        default=False,
        description="not scored (and no judge call) when the scenario has no reference answer",
    )
    include_intermediate: bool = Field(
        default=False,
        description="sentence_grounding only: also label the agent's intermediate answers",
    )
    _source: str | None = PrivateAttr(default=None)

    @property
    def source(self) -> str | None:
        """The file this rubric was loaded from (``None`` when built in code)."""
        return self._source

    @field_validator("threshold")
    @classmethod
    def _threshold_in_unit_range(cls, value: float) -> float:
        if not 0.0 <= value <= 1.0:
            raise RubricProblem(
                "threshold",
                f"{value} is outside [0, 1]: the rubric threshold is on the normalised score "
                "(0 = every criterion at its lowest level, 1 = all at their highest); a "
                "threshold in scale units belongs under criteria[i].threshold",
            )
        return value

    @field_validator("scales")
    @classmethod
    def _no_shadowed_builtin(cls, scales: dict[str, RubricScale]) -> dict[str, RubricScale]:
        for name in scales:
            if name in BUILTIN_SCALES:
                raise RubricProblem(f"scales.{name}", "redefines a built-in scale; rename it")
        return scales

    @model_validator(mode="after")
    def _grounding_shape(self) -> Rubric:
        if self.include_intermediate and self.target != "sentence_grounding":
            raise RubricProblem("include_intermediate",
                                "applies only to target sentence_grounding")
        if self.target == "sentence_grounding" and (
            len(self.criteria) != 1 or self.criteria[0].scale != "binary"
        ):
            raise RubricProblem(
                "criteria",
                "a sentence_grounding rubric has exactly one criterion, on scale binary: it "
                "holds the share of applicable sentences that are supported (0 to 1)",
            )
        return self

    @model_validator(mode="after")
    def _turns_only_per_turn(self) -> Rubric:
        for i, crit in enumerate(self.criteria):
            if crit.turns is not None and self.target != "agent_turn":
                raise RubricProblem(f"criteria[{i}].turns",
                                    "applies only to target agent_turn (one judge call per "
                                    f"agent turn), not {self.target}")
        return self

    def for_turn(self, turn: int | None) -> Rubric:
        """This rubric with only the criteria asked about ``turn`` (itself when all are)."""
        kept = tuple(c for c in self.criteria if c.applies_to(turn))
        return self if len(kept) == len(self.criteria) else self.model_copy(
            update={"criteria": kept})

    @model_validator(mode="after")
    def _user_turn_shape(self) -> Rubric:
        if self.target != "user_turn":
            return self
        for i, crit in enumerate(self.criteria):
            if crit.id not in USER_TURN_CRITERIA:
                raise RubricProblem(
                    f"criteria[{i}].id",
                    f"unknown criterion {crit.id!r} for target user_turn; expected one of "
                    f"{', '.join(USER_TURN_CRITERIA)}",
                )
            if crit.scale != "binary" or crit.allow_na or crit.threshold is not None:
                raise RubricProblem(
                    f"criteria[{i}]",
                    "a user_turn criterion is a yes/no question: scale binary, no allow_na "
                    "and no threshold of its own (a turn passes when every criterion holds)",
                )
        return self

    @model_validator(mode="after")
    def _criteria_consistent(self) -> Rubric:
        seen: dict[str, int] = {}
        for i, crit in enumerate(self.criteria):
            if crit.id in seen:
                raise RubricProblem(
                    f"criteria[{i}].id",
                    f"duplicate criterion id {crit.id!r} (also criteria[{seen[crit.id]}].id); "
                    "criteria are matched by id, so each id must be unique",
                )
            seen[crit.id] = i
            scale = self._resolve_scale(crit, i)
            for level in crit.levels:
                if level not in scale.values:
                    raise RubricProblem(
                        f"criteria[{i}].levels.{level}",
                        f"level {level} is not on the criterion's scale {list(scale.values)}",
                    )
            if crit.threshold is not None and not (
                scale.lowest <= crit.threshold <= scale.highest
            ):
                raise RubricProblem(
                    f"criteria[{i}].threshold",
                    f"{crit.threshold} is outside the criterion's scale "
                    f"[{scale.lowest}, {scale.highest}] (criterion thresholds are in scale "
                    "units)",
                )
        return self

    def _resolve_scale(self, crit: Criterion, index: int) -> RubricScale:
        if isinstance(crit.scale, RubricScale):
            return crit.scale
        if crit.scale in BUILTIN_SCALES:
            return BUILTIN_SCALES[crit.scale]
        if crit.scale in self.scales:
            return self.scales[crit.scale]
        known = [*BUILTIN_SCALES, *self.scales]
        raise RubricProblem(
            f"criteria[{index}].scale",
            f"unknown scale {crit.scale!r}; expected one of {', '.join(known)} "
            "(define your own under `scales`)",
        )

    def scale_of(self, criterion: Criterion | str) -> RubricScale:
        """The resolved :class:`RubricScale` of a criterion (given or named by id)."""
        crit = self.criterion(criterion) if isinstance(criterion, str) else criterion
        return self._resolve_scale(crit, self.criteria.index(crit))

    def criterion(self, criterion_id: str) -> Criterion:
        """The criterion with this id; ``KeyError`` if there is none."""
        for crit in self.criteria:
            if crit.id == criterion_id:
                return crit
        raise KeyError(criterion_id)

    def criterion_threshold(self, criterion: Criterion) -> float:
        """The normalised score at which ``criterion`` passes."""
        if criterion.threshold is None:
            return self.threshold
        return self.scale_of(criterion).normalise(criterion.threshold)

    def level_meanings(self, criterion: Criterion) -> list[tuple[int, str, str]]:
        """``(value, label, meaning)`` per level, the criterion's own meanings first."""
        return [
            (lv.value, lv.label, criterion.levels.get(lv.value, lv.meaning))
            for lv in self.scale_of(criterion).levels
        ]

    @property
    def label(self) -> str:
        """``id@version``, as stored with every judgment."""
        return f"{self.id}@{self.version}"


def rubric_json_schema() -> dict[str, Any]:
    """The JSON Schema of a rubric file (for editors and for validating rubrics elsewhere)."""
    schema = Rubric.model_json_schema(mode="validation")
    schema["title"] = "Rubric"
    return schema


# --- loading -----------------------------------------------------------------------------


def _input_error(path: Path, err: ValidationError) -> InputError:
    """The first problem of a rubric's validation error, naming the field exactly. A misspelt
    key shows up as an unknown field plus a missing one: report the unknown one first, with
    the likely intended name."""
    problems = err.errors()
    if any(len(e["loc"]) > 1 and e["loc"][0] == "criteria" for e in problems):
        # pydantic adds "at least 1 item" when the only criterion is invalid: noise here
        problems = [e for e in problems if e["loc"] != ("criteria",)]
    problems.sort(key=lambda e: e["type"] != "extra_forbidden")
    first = problems[0]
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, RubricProblem):
        field, expected = cause.path, cause.message
    elif isinstance(cause, ValueError):
        field, expected = field_path(first["loc"]), str(cause)
    else:
        field = field_path(first["loc"])
        if first["type"] == "missing":
            expected = "required field is missing"
        elif first["type"] == "extra_forbidden":
            expected = "unknown field"
            missing = [str(e["loc"][-1]) for e in problems
                       if e["type"] == "missing" and e["loc"][:-1] == first["loc"][:-1]]
            close = difflib.get_close_matches(str(first["loc"][-1]), missing, n=1)
            expected += f" (did you mean {close[0]!r}?)" if close else " (misspelt?)"
        elif first["loc"] == ("criteria",) and first["type"] == "too_short":
            expected = "at least one criterion is required"
        else:
            expected = first["msg"]
    if len(problems) > 1:
        expected += f" (and {len(problems) - 1} more problem(s) in this file)"
    return InputError(path, field or None, expected)


def parse_rubric(data: Any, source: str | Path) -> Rubric:
    """Validate a rubric given as parsed YAML/JSON data. Raises :class:`InputError` naming
    ``source`` and the field at fault."""
    path = Path(source)
    if not isinstance(data, dict):
        raise InputError(path, None, "a rubric must be a mapping with id, target, threshold "
                                     f"and criteria (got {type(data).__name__})")
    try:
        rubric = Rubric.model_validate(data)
    except ValidationError as err:
        raise _input_error(path, err) from None
    rubric._source = str(path)
    return rubric


def load_rubric_file(path: str | Path) -> Rubric:
    """Read one rubric YAML (or JSON) file. Raises :class:`InputError` naming the file, and
    the line for YAML syntax errors or the field for invalid content."""
    path = Path(path)
    text = read_text(path, "a rubric file (YAML or JSON)")
    try:
        data = (load_json(text, path) if path.suffix == ".json"
                else load_yaml(text, path)[1])
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError(path, None, f"not valid YAML ({getattr(err, 'problem', err)})",
                         location=line) from None
    except ValueError as err:
        raise InputError(path, None, f"not valid JSON ({err})") from None
    return parse_rubric(data, path)


def _rubric_files(directory: Path) -> list[Path]:
    try:
        entries = list(directory.iterdir())
    except OSError as err:
        raise InputError(directory, None, f"cannot list the rubric directory "
                         f"({err.strerror or err})") from None
    return sorted(p for p in entries if p.is_file() and p.suffix in (".yaml", ".yml", ".json"))


def load_rubrics(
    paths: Iterable[str | Path] = (), *, builtin: bool = True
) -> dict[str, Rubric]:
    """Load rubrics from directories and/or files, plus the built-in ones when ``builtin``.

    Returns rubrics by id. Every bad file is reported at once (:class:`InputErrors`); two
    files with the same rubric id is an error naming both (a user rubric may not silently
    replace a built-in one: give it its own id). A path that does not exist is an error.
    """
    files: list[Path] = []
    sources = [BUILTIN_RUBRICS_DIR] if builtin else []
    sources += [Path(p) for p in paths]
    errors: list[InputError] = []
    for source in sources:
        if source.is_dir():
            try:
                files.extend(_rubric_files(source))
            except InputError as err:
                errors.append(err)
        elif source.is_file():
            files.append(source)
        else:
            errors.append(InputError(source, None, "no such rubric file or directory"))
    rubrics: dict[str, Rubric] = {}
    seen: set[Path] = set()
    for file in files:
        if file.resolve() in seen:  # the built-in directory given again, say
            continue
        seen.add(file.resolve())
        try:
            rubric = load_rubric_file(file)
        except InputError as err:
            errors.append(err)
            continue
        if rubric.id in rubrics:
            errors.append(InputError(file, "id", f"rubric id {rubric.id!r} is already defined "
                                                 f"in {rubrics[rubric.id].source}"))
            continue
        rubrics[rubric.id] = rubric
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputErrors(errors)
    return rubrics


class UnknownRubricError(InputError):
    """A rubric id that no loaded rubric has."""


def get_rubric(
    rubrics: Mapping[str, Rubric],
    rubric_id: str,
    *,
    source: str | Path = "rubric",
    field: str | None = None,
) -> Rubric:
    """The rubric with ``rubric_id``. Raises :class:`UnknownRubricError` naming ``source``
    and ``field`` (where the id was written) and listing the known ids."""
    try:
        return rubrics[rubric_id]
    except KeyError:
        known = ", ".join(sorted(rubrics)) or "none loaded"
        raise UnknownRubricError(
            source, field, f"unknown rubric {rubric_id!r}; known rubrics: {known}"
        ) from None


def check_rubric_ids(
    references: Iterable[tuple[str | Path, str, str]], rubrics: Mapping[str, Rubric]
) -> None:
    """Check every rubric id a scenario names, before any model call.

    ``references`` holds ``(source file, field, rubric id)`` triples, e.g.
    ``("scenarios/refund.yaml", "rubrics[1]", "tone")``. Raises :class:`UnknownRubricError`
    for one unknown id, :class:`InputErrors` listing all of them for several.
    """
    errors: list[InputError] = []
    for source, field, rubric_id in references:
        try:
            get_rubric(rubrics, rubric_id, source=source, field=field)
        except UnknownRubricError as err:
            errors.append(err)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputErrors(errors)
