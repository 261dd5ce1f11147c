"""The list of command modules; importing each registers its commands on the app."""

from __future__ import annotations

from harness.cli import score_cmd  # noqa: F401
from harness.cli import validate_cmd  # noqa: F401
from harness.cli import calibrate_cmd  # noqa: F401
from harness.cli import stats_cmd  # noqa: F401
from harness.cli import run_cmd  # noqa: F401
from harness.cli import demo_cmd  # noqa: F401
