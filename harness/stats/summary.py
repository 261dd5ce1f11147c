"""The summary of a suite (contract 2's output) as pydantic models, shared by ``harness
stats --json`` (:class:`StatsReport`) and a run's ``summary.json`` (whose ``score`` is a
:class:`SuiteSummary`), so both are described once, here.

The first keys are the contract: ``n_scenarios``, ``n_samples``, ``mean``, ``stderr``,
``ci_low``, ``ci_high``, ``pass_hat_k`` and ``pass_at_k`` (k as a string -> number, k = 1 ..
the smallest epoch count). The rest are richer figures, each saying how it was computed, among
them ``power`` (the minimum detectable difference of this design) and ``design_for_target``
(the epochs or scenarios needed to detect a target difference, by default half the current
one). Non-finite numbers never appear: they are ``null``.

The per-scenario figures (``scenarios``, with pass@k and pass^k for every k) are the bulk of
a large suite's summary: :func:`summary_head` gives everything else, and
:func:`write_summary_json` streams the scenarios after it one at a time, which is how
``harness stats`` prints a million samples' summary without holding it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import IO, Any

import orjson
from pydantic import BaseModel, ConfigDict

from harness.models.provenance import RoleModels
from harness.stats.columns import UNIT_RANGE
from harness.stats.corrected import CorrectedFigures
from harness.stats.estimate import Estimate
from harness.stats.power import (
    PowerAnalysis,
    TargetDesign,
    design_for_target,
    minimum_detectable_difference,
)
from harness.stats.sampling import ScenarioStats
from harness.stats.suite import BootstrapInterval, SuiteStats
from harness.stats.variance import NestedVarianceComponents, VarianceComponents

OFFLINE_NOTICE = (
    "OFFLINE: these numbers come from samples made with mock: models in at least one role "
    "(the samples do not say which: some roles may have been real models); they say nothing "
    "dependable about any real agent."
)


def offline_notice(n_offline: int, n_samples: int) -> str | None:
    """The notice for samples that say only whether they were made with offline
    (``mock:``) models, not by which role (samples that name their models get
    :func:`harness.models.provenance.roles_notice`): ``None`` when no sample was,
    :data:`OFFLINE_NOTICE` when all were, and a count otherwise."""
    if n_offline <= 0:
        return None
    if n_offline >= n_samples:
        return OFFLINE_NOTICE
    return (f"OFFLINE: {n_offline} of {n_samples} samples were made with mock: models in at "
            "least one role; figures that mix them with real results say nothing dependable "
            "about any real agent.")


def design_power(
    suite: SuiteStats, *, alpha: float = 0.05, power: float = 0.8, correlation: float = 0.0
) -> PowerAnalysis | None:
    """Minimum detectable difference of a paired comparison with this suite's design (its
    scenarios, the harmonic mean of its epoch counts, its variance components). ``None``
    when the variance components could not be estimated, or are both 0 (every score the
    same: a detectable difference of 0 would be a claim, not a measurement). ``correlation``
    0 is cautious: two models usually find the same scenarios hard, which helps a paired
    comparison."""
    if suite.variance is None or suite.variance.between + suite.variance.within == 0:
        return None
    harmonic_epochs = suite.n_scenarios / float(sum(1.0 / suite.scenarios.n_epochs))
    return minimum_detectable_difference(
        n_scenarios=suite.n_scenarios, epochs=harmonic_epochs,
        between_variance=suite.variance.between, within_variance=suite.variance.within,
        alpha=alpha, power=power, paired=True, correlation=correlation,
    )


class EpochRange(BaseModel):
    """The smallest and largest epoch count of a suite's scenarios."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: int
    max: int
    equal: bool


class SuiteFigures(BaseModel):
    """The suite figures without the per-scenario ones: contract 2's keys first
    (``pass_hat_k`` and ``pass_at_k`` keyed by k, written as strings), then the richer
    figures, each saying how it was computed. ``mean``, ``stderr``, ``ci_low``, ``ci_high``,
    ``df``, ``method`` and ``ci_clipped`` are the parts of :attr:`mean_estimate`, kept flat
    as the contract has them.

    Fields added after version 1 of a run's ``summary.json`` was first written
    (``ci_clipped``, ``score_range``, ``design_for_target``) have defaults, so earlier
    summaries still read.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_scenarios: int
    n_samples: int
    mean: float
    stderr: float | None
    ci_low: float | None
    ci_high: float | None
    pass_hat_k: dict[int, float]
    pass_at_k: dict[int, float]
    ci_clipped: bool = False
    confidence: float
    score_range: tuple[float, float] = UNIT_RANGE
    df: int | None
    method: str
    epochs: EpochRange
    bootstrap: BootstrapInterval | None
    pass_rate: Estimate
    pass_at_k_detail: dict[int, Estimate]
    pass_hat_k_detail: dict[int, Estimate]
    variance_components: VarianceComponents | None
    judge_variance_components: NestedVarianceComponents | None
    power: PowerAnalysis | None
    design_for_target: TargetDesign | None = None
    flaky_scenarios: list[str]
    notes: list[str]

    @property
    def mean_estimate(self) -> Estimate:
        """The mean score as one :class:`Estimate` (its ``n`` is the sample count)."""
        return Estimate(value=self.mean, stderr=self.stderr, ci_low=self.ci_low,
                        ci_high=self.ci_high, confidence=self.confidence, df=self.df,
                        n=self.n_samples, n_clusters=self.n_scenarios, method=self.method,
                        clipped=self.ci_clipped)


class SuiteSummary(SuiteFigures):
    """The suite figures with every scenario's own (a run summary's ``score``)."""

    scenarios: list[ScenarioStats]


class StatsReport(SuiteFigures):
    """``harness stats --json``'s output before its ``scenarios`` (which are streamed after
    it, see :func:`write_summary_json`): the suite figures, the file they came from, and
    which samples and roles were offline (``mock:`` models), with the notice that says so,
    and, with ``--labels``, the figures corrected by the human labels (contract 10).
    Contract 2 fixes a minimum set of keys, not the whole set."""

    source: str
    offline: bool
    offline_samples: int
    roles: dict[str, RoleModels]
    notice: str | None
    corrected: CorrectedFigures | None = None


def _figures(suite: SuiteStats, power: PowerAnalysis | None,
             target_difference: float | None) -> dict[str, Any]:
    design = None if power is None else design_for_target(power, target_difference)
    return {
        "n_scenarios": suite.n_scenarios,
        "n_samples": suite.n_samples,
        "mean": suite.mean.value,
        "stderr": suite.mean.stderr,
        "ci_low": suite.mean.ci_low,
        "ci_high": suite.mean.ci_high,
        "pass_hat_k": {k: e.value for k, e in suite.pass_hat_k.items()},
        "pass_at_k": {k: e.value for k, e in suite.pass_at_k.items()},
        "ci_clipped": suite.mean.clipped,
        "confidence": suite.confidence,
        "score_range": suite.score_range,
        "df": suite.mean.df,
        "method": suite.mean.method,
        "epochs": EpochRange(min=suite.min_epochs, max=suite.max_epochs,
                             equal=suite.min_epochs == suite.max_epochs),
        "bootstrap": suite.bootstrap,
        "pass_rate": suite.pass_rate,
        "pass_at_k_detail": suite.pass_at_k,
        "pass_hat_k_detail": suite.pass_hat_k,
        "variance_components": suite.variance,
        "judge_variance_components": suite.judge_variance,
        "power": power,
        "design_for_target": design,
        "flaky_scenarios": suite.flaky_scenarios,
        "notes": suite.notes,
    }


def summary_head(
    suite: SuiteStats, *, power: PowerAnalysis | None = None,
    target_difference: float | None = None,
) -> SuiteFigures:
    """The figures of ``suite`` without its ``scenarios`` (see :func:`stats_summary`).

    Raises ``ValueError`` on a ``target_difference`` that is not a positive number."""
    return SuiteFigures(**_figures(suite, power, target_difference))


def stats_summary(
    suite: SuiteStats, *, power: PowerAnalysis | None = None,
    target_difference: float | None = None,
) -> SuiteSummary:
    """The figures of ``suite`` (see :class:`SuiteFigures`) with every scenario's figures
    under ``scenarios``. ``power`` adds a design power section (see :func:`design_power`)
    and, from it, the epochs or scenarios needed to detect ``target_difference`` (default:
    half the current minimum detectable difference; see
    :func:`~harness.stats.power.design_for_target`).

    Raises ``ValueError`` on a ``target_difference`` that is not a positive number."""
    return SuiteSummary(**_figures(suite, power, target_difference),
                        scenarios=[ScenarioStats.model_validate(row)
                                   for row in suite.scenarios.rows()])


def write_summary_json(head: SuiteFigures, scenarios: Iterable[dict[str, Any]],
                       stream: IO[bytes]) -> None:
    """Write ``head`` as indented JSON with ``scenarios`` (rows of
    :meth:`~harness.stats.sampling.ScenarioColumns.rows`, the fields of
    :class:`~harness.stats.sampling.ScenarioStats`) added as its last key, one scenario per
    line, each encoded as it comes (so they are never all in memory). NaN and infinities are
    written as ``null``. Like ``json.dumps``'s default, every non-ASCII
    character is written as a ``\\u`` escape: ids from outside may hold C1 controls or
    bidirectional overrides, which must not reach a terminal raw."""
    text = _json_bytes(head.model_dump(mode="json"), indent=True)
    stream.write(text[:-2] + b',\n  "scenarios": [')
    first = True
    for row in scenarios:
        stream.write(b"\n    " if first else b",\n    ")
        stream.write(_json_bytes(row))
        first = False
    stream.write(b"]\n}\n" if first else b"\n  ]\n}\n")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


_NON_ASCII = re.compile("[^\x00-\x7f]")


def _escape_non_ascii(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON writes characters past the BMP
    return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"


def _json_bytes(value: Any, *, indent: bool = False) -> bytes:
    """``value`` as JSON in ASCII: by orjson (fast), its non-ASCII characters then escaped
    (they can only be inside strings, so the value is unchanged). A string that is not valid
    Unicode (a lone surrogate, which a JSON ``"\\ud800"`` escape can bring in) is beyond
    orjson; the standard library writes that value, escaped as it came."""
    try:
        data = orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else None)
    except orjson.JSONEncodeError:
        return json.dumps(_finite(value), indent=2 if indent else None,
                          separators=None if indent else (",", ":")).encode("ascii")
    if data.isascii():
        return data
    return _NON_ASCII.sub(_escape_non_ascii, data.decode("utf-8")).encode("ascii")
