"""The summary JSON byte for byte against the standard library's ``json``: orjson's output
with every non-ASCII character escaped as ``json.dumps`` escapes it (surrogate pairs past
the BMP), the standard library's own output for strings orjson cannot write, and the
streamed ``scenarios`` layout."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from harness.stats import suite_stats
from harness.stats.summary import (
    _json_bytes,
    design_power,
    stats_summary,
    summary_head,
    write_summary_json,
)

# Below, on and past the end of the BMP (U+FFFF, U+10000), an emoji, a C1 control and a
# bidirectional override: json.dumps writes each as \u escapes.
TEXT = "caf\u00e9 \uffff \U00010000 \U0001f600 \u0085 \u202e"


@pytest.mark.parametrize("value", [
    {"id": TEXT, "x": [1, 2.5, None, True], "nested": {"k": "\u00e9"}},
    {"id": "\ud800 lone surrogate, beyond orjson", "x": [1, 2.5]},
])
def test_json_bytes_equal_the_standard_library(value: dict[str, Any]) -> None:
    assert _json_bytes(value) == json.dumps(value, separators=(",", ":")).encode()
    assert _json_bytes(value, indent=True) == json.dumps(value, indent=2).encode()
    assert _json_bytes(value).isascii()


def _suite() -> Any:
    return suite_stats({"a": [1.0, 0.0, 1.0], "b": [0.0, 0.5, 1.0], TEXT: [1.0, 0.25, 0.0]},
                       bootstrap_resamples=0)


def test_write_summary_json_layout() -> None:
    suite = _suite()
    head = summary_head(suite)
    head_text = _json_bytes(head.model_dump(mode="json"), indent=True).decode()
    rows = list(suite.scenarios.rows())
    out = io.BytesIO()
    write_summary_json(head, rows, out)
    lines = ",\n    ".join(json.dumps(r, separators=(",", ":")) for r in rows)
    assert out.getvalue().decode() == (head_text[:-2] + ',\n  "scenarios": [\n    ' + lines
                                       + "\n  ]\n}\n")
    assert json.loads(out.getvalue())["scenarios"][2]["scenario_id"] == TEXT
    empty = io.BytesIO()
    write_summary_json(head, [], empty)
    assert empty.getvalue().decode() == head_text[:-2] + ',\n  "scenarios": []\n}\n'


def test_a_given_target_difference_reaches_the_design() -> None:
    suite = _suite()
    summary = stats_summary(suite, power=design_power(suite), target_difference=0.3)
    assert summary.design_for_target is not None
    assert summary.design_for_target.target_difference == 0.3
    assert summary.design_for_target.target_source == "given"
