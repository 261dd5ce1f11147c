"""Where the data that ships with the harness lives: the built-in rubrics, the example
scenarios and the calibration examples.

In a source checkout (and an editable install) they are the project's own folders
(``rubrics/``, ``scenarios/``, ``examples/calibration/``); a wheel carries copies under
``harness/_data/`` (see ``setup.py``), which win when present.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder ``name`` (e.g. ``"rubrics"``, ``"examples/calibration"``): the installed
    copy when the package carries one, else the one in the source tree."""
    installed = _PACKAGE / "_data" / name
    return installed if installed.is_dir() else _PACKAGE.parent / name
