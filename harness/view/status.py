"""Whether a run is finished, stopped by its budget, interrupted, or still running.

A run records its session in the store when it starts (pid, host, samples planned) and when
it ends, however it ends (:meth:`harness.runs.store.RunStore.record_session_start`); how it
ended is in ``summary.json`` (``stopped``). A session with no end whose process is gone was
killed (or crashed) without a word: interrupted. Stores written before sessions were
recorded, or by ``harness merge``, are told by their summary alone.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any, Literal

from harness.runs.summary_model import RunStop

Status = Literal["finished", "stopped by budget", "stopped", "interrupted", "running",
                 "unknown", "unreadable"]


@dataclass(frozen=True)
class RunStatus:
    """A run's status and one line saying why (empty when there is nothing to add)."""

    status: Status
    detail: str = ""

    @property
    def running(self) -> bool:
        return self.status == "running"


def process_alive(pid: int) -> bool:
    """Whether a process with id ``pid`` exists on this machine (a pid reused since by
    another process reads as alive: the status then says running until that one ends)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return True


def run_status(session: dict[str, Any] | None, stopped: RunStop | None,
               has_summary: bool) -> RunStatus:
    """The status of a run from its recorded session (``None`` in a store written before
    sessions were), the ``stopped`` part of its summary and whether it has a summary."""
    if session is not None and session.get("ended_at") is None:
        pid, host = session.get("pid"), session.get("host")
        if host != socket.gethostname():
            return RunStatus("running", f"on {host} (not checked from this machine)")
        if isinstance(pid, int) and process_alive(pid):
            return RunStatus("running")
        return RunStatus("interrupted", f"its process ({pid}) ended without recording how "
                         "(killed, or the machine stopped)")
    if not has_summary:
        if session is not None:
            return RunStatus("interrupted", "stopped before writing summary.json")
        return RunStatus("unknown", "no summary.json (written by an older harness: still "
                         "running, or stopped without one)")
    if stopped is None:
        return RunStatus("finished")
    if stopped.reason == "budget":
        return RunStatus("stopped by budget", stopped.message)
    if stopped.reason in ("interrupted", "terminated"):
        return RunStatus("interrupted", stopped.message)
    return RunStatus("stopped", stopped.message)
