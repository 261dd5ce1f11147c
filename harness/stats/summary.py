"""The JSON summary of a suite (contract 2's output), shared by ``harness stats`` and
anything else that writes suite figures (e.g. a run's ``summary.json``).

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

from harness.stats.power import PowerAnalysis, design_for_target, minimum_detectable_difference
from harness.stats.suite import SuiteStats

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


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def summary_head(
    suite: SuiteStats, *, source: str | None = None, power: PowerAnalysis | None = None,
    target_difference: float | None = None,
) -> dict[str, Any]:
    """The JSON-ready summary of ``suite`` without its ``scenarios`` (see
    :func:`stats_summary`).

    Raises ``ValueError`` on a ``target_difference`` that is not a positive number."""
    design = None if power is None else design_for_target(power, target_difference)
    dumped = suite.model_dump(mode="json", exclude={"scenarios"})
    out: dict[str, Any] = {
        "n_scenarios": suite.n_scenarios,
        "n_samples": suite.n_samples,
        "mean": suite.mean.value,
        "stderr": suite.mean.stderr,
        "ci_low": suite.mean.ci_low,
        "ci_high": suite.mean.ci_high,
        "pass_hat_k": {str(k): e.value for k, e in suite.pass_hat_k.items()},
        "pass_at_k": {str(k): e.value for k, e in suite.pass_at_k.items()},
        "ci_clipped": suite.mean.clipped,
        "confidence": suite.confidence,
        "score_range": list(suite.score_range),
        "df": suite.mean.df,
        "method": suite.mean.method,
        "epochs": {
            "min": suite.min_epochs,
            "max": suite.max_epochs,
            "equal": suite.min_epochs == suite.max_epochs,
        },
        "bootstrap": dumped["bootstrap"],
        "pass_rate": dumped["pass_rate"],
        "pass_at_k_detail": dumped["pass_at_k"],
        "pass_hat_k_detail": dumped["pass_hat_k"],
        "variance_components": dumped["variance"],
        "judge_variance_components": dumped["judge_variance"],
        "power": None if power is None else power.model_dump(mode="json"),
        "design_for_target": None if design is None else design.model_dump(mode="json"),
        "flaky_scenarios": suite.flaky_scenarios,
        "notes": suite.notes,
    }
    if source is not None:
        out["source"] = source
    result: dict[str, Any] = _finite(out)
    return result


def stats_summary(
    suite: SuiteStats, *, source: str | None = None, power: PowerAnalysis | None = None,
    target_difference: float | None = None,
) -> dict[str, Any]:
    """The JSON-ready summary of ``suite`` (see the module docstring for its keys), with
    every scenario's figures under ``scenarios``. ``power`` adds a design power section
    (see :func:`design_power`) and, from it, the epochs or scenarios needed to detect
    ``target_difference`` (default: half the current minimum detectable difference; see
    :func:`~harness.stats.power.design_for_target`).

    Raises ``ValueError`` on a ``target_difference`` that is not a positive number."""
    out = summary_head(suite, source=source, power=power, target_difference=target_difference)
    out["scenarios"] = list(suite.scenarios.rows())
    return out


def write_summary_json(head: dict[str, Any], scenarios: Iterable[dict[str, Any]],
                       stream: IO[bytes]) -> None:
    """Write ``head`` as indented JSON with ``scenarios`` added as its last key, one
    scenario per line, each encoded as it comes (so they are never all in memory). NaN and
    infinities are written as ``null``. Like ``json.dumps``'s default, every non-ASCII
    character is written as a ``\\u`` escape: ids from outside may hold C1 controls or
    bidirectional overrides, which must not reach a terminal raw."""
    text = _json_bytes(head, indent=True)
    if not text.endswith(b"\n}"):  # an empty head is "{}"
        stream.write(b"{\n  \"scenarios\": [")
    else:
        stream.write(text[:-2] + b',\n  "scenarios": [')
    first = True
    for row in scenarios:
        stream.write(b"\n    " if first else b",\n    ")
        stream.write(_json_bytes(row))
        first = False
    stream.write(b"]\n}\n" if first else b"\n  ]\n}\n")


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
