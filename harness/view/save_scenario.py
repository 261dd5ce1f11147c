"""“Save as scenario”: a stored conversation written as a new scenario file, in a folder the
reviewer picks under the served folder.

``POST /api/scenario/<run id>`` with ``{scenario_id, epoch, folder, id}``: the sample's
transcript and the scenario it was played from become a new scenario
(:func:`~harness.scenarios.from_transcript.scenario_from_transcript`), written as
``<folder>/<id>.yaml`` (:func:`~harness.scenarios.from_transcript.write_scenario_yaml`:
validated as it will be read, from its folder, and never replacing a file). ``folder`` is
relative to the served folder; one that leaves it (``..``, an absolute path, a link
pointing out) is refused. Like every write, it passes the server's token and origin checks.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path, PurePosixPath
from typing import Any

from aiohttp import web

from harness.errors import HarnessError
from harness.runs.store import RunStore
from harness.scenarios.from_transcript import scenario_from_transcript, write_scenario_yaml
from harness.view.catalog import ROOT_ID
from harness.view.pages import run_not_found
from harness.view.state import catalog, in_thread, requested_run

routes = web.RouteTableDef()

DEFAULT_FOLDER = "saved-scenarios"
# A file name the scenario's id gives: the same characters a scenario id may hold.
_FILE_STEM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,120}$")


class SaveRefused(ValueError):
    """Why a scenario was not saved: the one line the page shows (``field: expected``)."""


def target_folder(root: Path, folder: str) -> Path:
    """The folder ``folder`` (relative to ``root``, the served folder) as a path inside
    ``root``. Raises :class:`SaveRefused` for one that would leave it: an absolute path,
    ``..``, or a link to somewhere else."""
    text = folder.strip() or DEFAULT_FOLDER
    parts = PurePosixPath(text.replace("\\", "/"))
    if parts.is_absolute() or ".." in parts.parts or re.match(r"^[A-Za-z]:", text):
        raise SaveRefused(f"folder: {folder!r} leaves the served folder; expected a folder "
                          "inside it, such as saved-scenarios")
    path = (root / parts).resolve()
    if path != root and root not in path.parents:
        raise SaveRefused(f"folder: {folder!r} leads outside the served folder (a link); "
                          "expected a folder inside it")
    if path.exists() and not path.is_dir():
        raise SaveRefused(f"folder: {folder!r} is a file; expected a folder")
    return path


def save_scenario(root: Path, run_dir: Path, body: dict[str, Any]) -> dict[str, Any]:
    """Write the sample ``body`` names as a scenario; return where (relative to ``root``)
    and its id. Raises :class:`SaveRefused` or :class:`HarnessError` (one line each)."""
    scenario_id = body.get("scenario_id")
    epoch = body.get("epoch")
    if not isinstance(scenario_id, str) or not isinstance(epoch, int) or isinstance(epoch,
                                                                                     bool):
        raise SaveRefused("scenario_id and epoch: expected the sample's scenario id (text) "
                          "and epoch (a whole number)")
    new_id = body.get("id") or f"{scenario_id}-epoch-{epoch}"
    if not isinstance(new_id, str) or not _FILE_STEM.match(new_id):
        raise SaveRefused(f"id: {new_id!r} cannot name a file; expected letters, digits, "
                          "'-', '_' or '.'")
    folder = body.get("folder", "")
    if not isinstance(folder, str):
        raise SaveRefused("folder: expected a folder name inside the served folder")
    where = target_folder(root, folder)
    with RunStore.open(run_dir, read_only=True) as store:
        record = store.sample(scenario_id, epoch)
        if record is None:
            raise SaveRefused(f"epoch: scenario {scenario_id!r} has no epoch {epoch} in this "
                              "run")
        original = store.scenario_definitions().get(scenario_id)
        if original is None:
            raise SaveRefused(f"scenario_id: the run recorded no scenario {scenario_id!r}")
        known = set(store.rubrics())
    origin = {"run": run_dir.relative_to(root).as_posix() if run_dir != root else ROOT_ID}
    scenario = scenario_from_transcript(record.transcript, original, new_id=new_id,
                                        origin=origin, known_rubrics=known)
    where.mkdir(parents=True, exist_ok=True)
    path = write_scenario_yaml(scenario, where / f"{new_id}.yaml", known_rubrics=known)
    return {"path": path.relative_to(root).as_posix(), "id": scenario.id}


@routes.post("/api/scenario/")
@routes.post("/api/scenario/{run_id:.+}")
async def api_save_scenario(request: web.Request) -> web.Response:
    found = requested_run(request)
    if found is None:
        return run_not_found(request)
    _, run_dir = found
    root = catalog(request).root
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        return web.json_response({"error": "the request body is not JSON"}, status=400)
    if not isinstance(body, dict):
        return web.json_response({"error": "expected a JSON object"}, status=400)
    try:
        saved = await in_thread(lambda: save_scenario(root, run_dir, body))
    except SaveRefused as err:
        return web.json_response({"error": str(err)}, status=400)
    except (HarnessError, sqlite3.Error) as err:
        return web.json_response({"error": _one_line(str(err))}, status=400)
    return web.json_response(saved)


def _one_line(text: str) -> str:
    """The page shows one line: several problems (``InputErrors``) joined."""
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())
