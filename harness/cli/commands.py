"""The list of command modules; importing each registers its commands on the app."""

from __future__ import annotations

from harness.cli import (
    adk_cmd,  # noqa: F401
    batches_cmd,  # noqa: F401
    calibrate_cmd,  # noqa: F401
    demo_cmd,  # noqa: F401
    labels_cmd,  # noqa: F401
    merge_cmd,  # noqa: F401
    pairwise_cmd,  # noqa: F401
    personas_cmd,  # noqa: F401
    realism_cmd,  # noqa: F401
    run_cmd,  # noqa: F401
    score_cmd,  # noqa: F401
    serve_cmd,  # noqa: F401
    stats_cmd,  # noqa: F401
    validate_cmd,  # noqa: F401
    view_cmd,  # noqa: F401
)
