"""``harness view``'s runs while they run: a running run's status and progress advance and it
reads finished once it ends; a run killed without a word reads interrupted; reading a store
while a run writes it fails neither; the index's cache follows a run's files; the trends
mark a regression; the command prints its URL and stops cleanly on Ctrl-C."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.models.mock import register_mock, unregister_mock
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.runs.summary_model import RunStop
from harness.view.catalog import Catalog, RunEntry, ScenarioPoint, read_entry
from harness.view.runs_pages import progress
from harness.view.status import RunStatus, run_status
from harness.view.trends import trend
from tests.helpers.cli import run_cli
from tests.helpers.report_runs import PageAgent, make_runs
from tests.helpers.run_processes import ended, slow_suite, start_run, stored_count
from tests.helpers.view_server import served


@pytest.fixture(scope="module")
def made_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    register_mock("pageagent", PageAgent)
    try:
        return make_runs(tmp_path_factory.mktemp("made"), epochs=1)
    finally:
        unregister_mock("pageagent")


def _progress(server_request: object, path: str) -> dict[str, object]:
    reply = server_request("GET", path)  # type: ignore[operator]
    assert reply.status == 200, reply.text
    data: dict[str, object] = json.loads(reply.body)
    return data


def test_a_running_runs_progress_advances_and_it_ends_finished(tmp_path: Path) -> None:
    suite = slow_suite(tmp_path, "view_slow_agent")
    root = tmp_path / "runs"
    out = root / "slow"
    process = start_run(suite, out, "--offline", "--epochs", "4", "--concurrency", "1",
                        env={"SLOW_AGENT_S": "0.4", "PYTHONPATH": str(suite)})
    try:
        with served(root) as server:
            deadline = time.monotonic() + 120
            while stored_count(out) == 0:
                assert process.poll() is None, process.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.05)
            first = _progress(server.request, "/api/runs/slow/progress")
            assert first["status"] == "running"
            assert first["samples_planned"] == 8
            listed = json.loads(server.request("GET", "/api/runs").body)["runs"]
            assert [(r["id"], r["status"]) for r in listed] == [("slow", "running")]
            page = server.request("GET", "/runs/slow")
            assert page.status == 200 and 'data-running="true"' in page.text
            assert "connect-src 'self'" in page.headers["Content-Security-Policy"]
            seen = {int(str(first["samples"]))}
            while process.poll() is None:
                seen.add(int(str(_progress(server.request, "/api/runs/slow/progress")
                                 ["samples"])))
                time.sleep(0.1)
            assert process.returncode == 0, ended(process)
            last = _progress(server.request, "/api/runs/slow/progress?since=0")
            assert last["status"] == "finished" and last["samples"] == 8
            assert len(seen) >= 3, seen  # the count advanced while the run went on
            assert len(last["new_samples"]) == 8  # type: ignore[arg-type]
            page = server.request("GET", "/runs/slow")
            assert 'data-running="false"' in page.text
            assert "connect-src 'none'" in page.headers["Content-Security-Policy"]
    finally:
        if process.poll() is None:
            process.kill()
        ended(process)


def test_a_run_killed_without_a_word_reads_interrupted(tmp_path: Path) -> None:
    suite = slow_suite(tmp_path, "view_killed_agent")
    out = tmp_path / "runs" / "killed"
    process = start_run(suite, out, "--offline", "--epochs", "20", "--concurrency", "1",
                        env={"SLOW_AGENT_S": "0.3", "PYTHONPATH": str(suite)})
    try:
        deadline = time.monotonic() + 120
        while stored_count(out) == 0:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert read_entry(tmp_path / "runs", out).status.status == "running"
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
        ended(process)
    entry = read_entry(tmp_path / "runs", out)
    assert entry.status.status == "interrupted"
    assert "ended without recording how" in entry.status.detail
    assert entry.error is None and entry.samples >= 1


def test_a_session_on_another_host_is_taken_as_running_and_said_so() -> None:
    session = {"pid": 1, "host": socket.gethostname() + "-elsewhere", "ended_at": None}
    status = run_status(session, None, False)
    assert status.status == "running" and "not checked" in status.detail
    dead = {"pid": 2 ** 22 + 12345, "host": socket.gethostname(), "ended_at": None}
    assert run_status(dead, None, True).status == "interrupted"
    assert run_status({**dead, "ended_at": 1.0}, None, True).status == "finished"
    assert run_status(None, None, False).status == "unknown"
    ended = {**dead, "ended_at": 1.0}
    budget = RunStop(reason="budget", message="the budget of $1 was reached")
    assert run_status(ended, budget, True) == RunStatus("stopped by budget", budget.message)
    for how in ("interrupted", "terminated"):
        stop = RunStop(reason=how, message=f"{how} by a signal")
        assert run_status(ended, stop, True).status == "interrupted"
    lost = RunStop(reason="worker_lost", message="a worker died")
    assert run_status(ended, lost, True) == RunStatus("stopped", "a worker died")
    # a session that ended without writing its summary (an error on the way out)
    assert run_status(ended, None, False).status == "interrupted"


def _record(sid: str, epoch: int, template: SampleRecord) -> SampleRecord:
    return template.model_copy(update={"scenario_id": sid, "epoch": epoch,
                                       "finished_at": time.time()})


def test_reading_while_a_run_writes_fails_neither(tmp_path: Path,
                                                   made_runs: tuple[Path, Path]) -> None:
    """A writer commits samples as a run does while the catalog and the progress API read
    the store over and over: no lock error on either side, every sample stored."""
    source = made_runs[0]
    with RunStore.open(source, read_only=True) as store:
        template = next(store.iter_samples())
        config = store.config
    root = tmp_path / "runs"
    out = root / "busy"
    writer = RunStore.create(out, config)
    writer.record_session_start(400)
    errors: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        try:
            for i in range(400):
                writer.write_sample(_record(f"s-{i % 20}", i // 20, template))
                time.sleep(0.005)  # a sample at a time, as a run stores them
        except BaseException as err:
            errors.append(err)
        finally:
            done.set()

    catalog = Catalog(root)
    thread = threading.Thread(target=write)
    thread.start()
    reads = 0
    while not done.is_set():
        entry = catalog.entries()[0]
        assert entry.error is None, entry.error
        progress(out, root.resolve(), 0.0)
        reads += 1
    thread.join()
    writer.record_session_end()
    writer.close()
    assert errors == []
    assert reads >= 20, reads
    assert stored_count(out) == 400
    assert catalog.entries()[0].samples == 400


def test_the_catalog_reads_a_run_again_only_when_its_files_change(
        tmp_path: Path, made_runs: tuple[Path, Path]) -> None:
    for run in made_runs:
        shutil.copytree(run, tmp_path / run.name)
    baseline = tmp_path / "baseline"
    catalog = Catalog(tmp_path)
    first = {e.id: e for e in catalog.entries()}
    again = {e.id: e for e in catalog.entries()}
    assert all(again[k] is first[k] for k in first)  # cached: the same objects
    summary = baseline / "summary.json"
    summary.write_text(summary.read_text().replace('"offline": true', '"offline": false', 1))
    changed = {e.id: e for e in catalog.entries()}
    assert changed["baseline"] is not first["baseline"]
    assert changed["candidate"] is first["candidate"]


def _point(rate: float, low: float, high: float) -> ScenarioPoint:
    return ScenarioPoint("s", rate, low, high, 5)


def test_a_trend_breaks_where_an_interval_falls_wholly_below_the_last() -> None:
    runs = [RunEntry(id=f"r{i}", path=Path(f"r{i}"), name=f"r{i}", created_at=i)
            for i in range(4)]
    points = [_point(1.0, 0.57, 1.0), _point(0.9, 0.6, 0.98),  # within noise
              _point(0.0, 0.0, 0.43),  # below the last interval: a regression
              _point(1.0, 0.57, 1.0)]  # above: an improvement
    drawn = trend("s", list(zip(runs, points, strict=True)))
    assert [p.tone for p in drawn.points] == ["", "", "regressed", "improved"]
    assert [s[4] for s in drawn.segments] == [False, True, False]
    assert drawn.regressions == 1
    ys = [p.y for p in drawn.points]
    assert ys[0] < ys[2]  # higher rates are drawn higher (smaller y)


def test_the_command_prints_its_url_once_serving_and_stops_cleanly_on_ctrl_c(
        tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "view", str(tmp_path / "runs"), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "COLUMNS": "80"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        url = lines[1].strip()
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url, lines
        port = int(url.split(":")[2].split("/")[0])
        # printed once listening: a request made right now is answered
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(f"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                         "Connection: close\r\n\r\n".encode())
            assert sock.recv(100).startswith(b"HTTP/1.1 200")
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130
    assert "Traceback" not in stderr and "Traceback" not in stdout
    assert "interrupted: harness view stopped" in stderr


def test_a_taken_port_is_one_line_naming_the_way_out(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("view", str(tmp_path), "--port", str(port))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"--port {port}: the port is taken" in done.stderr and "--port 0" in done.stderr


@pytest.mark.parametrize("make", ["missing", "file"])
def test_a_folder_that_is_not_one_is_one_line(tmp_path: Path, make: str) -> None:
    target = tmp_path / "runs"
    if make == "file":
        target.write_text("x")
    done = run_cli("view", str(target), "--port", "0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert str(target) in done.stderr


def test_off_loopback_the_start_up_says_every_request_needs_the_token(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without listening off loopback in a test: the server is replaced by one that is
    ready at once and then stopped by Ctrl-C."""
    from harness.view.security import Guard

    async def fake_serve(root: Path, *, host: str, port: int,
                         on_ready: Callable[[Guard], None]) -> None:
        guard = Guard(token="tok", host=host, port=8780)
        on_ready(guard)
        raise KeyboardInterrupt

    monkeypatch.setattr("harness.view.serve", fake_serve)
    done = run_cli("view", str(tmp_path), "--host", "0.0.0.0")
    assert done.returncode == 130
    # 0.0.0.0 is no address to open: the machine's name is
    assert done.stdout.splitlines()[-1] == (f"http://{socket.gethostname().lower()}:8780"
                                            "/?token=tok")
    said = " ".join(done.stderr.split())
    assert "every request needs the token, reads included" in said
    assert "not encrypted" in said
    loopback = run_cli("view", str(tmp_path), "--host", "127.0.0.1")
    assert "needs the token" not in loopback.stderr


def test_a_summary_older_than_the_last_sample_is_not_shown(
        tmp_path: Path, made_runs: tuple[Path, Path]) -> None:
    """A run killed after a resume keeps the summary of the session before: its page is
    summarised from the store instead."""
    import re

    run = tmp_path / "runs" / "resumed"
    shutil.copytree(made_runs[0], run)
    with RunStore.open(run) as store:
        record = next(store.iter_samples())
        stored = store.count()
        store.write_sample(record.model_copy(update={"scenario_id": "added-later",
                                                     "finished_at": time.time() + 5}))
    with served(tmp_path / "runs") as server:
        page = server.request("GET", "/runs/resumed").text
    shown = re.search(r'data-figure="samples">(\d+)<', page)
    assert shown is not None and int(shown.group(1)) == stored + 1


def test_hidden_and_package_folders_are_not_walked(tmp_path: Path,
                                                   made_runs: tuple[Path, Path]) -> None:
    from harness.view.catalog import find_run_dirs

    for where in ("kept/run", ".hidden/run", "node_modules/pkg/run", "a/__pycache__/run",
                  "venv/lib/site-packages/run"):
        shutil.copytree(made_runs[0], tmp_path / where)
    found = [d.relative_to(tmp_path).as_posix() for d in find_run_dirs(tmp_path)]
    assert found == ["kept/run"]
