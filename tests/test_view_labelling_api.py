"""Labelling through ``harness view`` without a browser, over real HTTP to a server on
127.0.0.1: a label write needs the token and the server's own origin, a label that does not
fit the run is refused with the field named (nothing stored), a changed label keeps its
history, two reviewers writing at once lose nothing, an export after labelling gives the
labels back, and "save as scenario" stays inside the served folder and never overwrites."""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from harness.runs.labels import random_queue
from harness.runs.store import RunStore
from tests.helpers.cli import run_cli
from tests.helpers.labelled_runs import offline_run
from tests.helpers.view_server import Reply, Served, served

SID = "weather-current-paris"
CRITERION = "criterion:final_response_quality/correctness"
_numbers = itertools.count()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("view-labels") / "runs"
    folder.mkdir()
    return folder


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[Served]:
    with served(root) as s:
        yield s


@pytest.fixture
def run_id(root: Path) -> str:
    """A fresh copy of the labelled run under the served folder, named for this test."""
    name = f"run-{next(_numbers)}"
    offline_run(root / name)
    return name


def post(server: Served, path: str, body: Any, **kwargs: Any) -> Reply:
    kwargs.setdefault("cookie", True)
    return server.request("POST", path, body=json.dumps(body).encode(),
                          headers={"Content-Type": "application/json",
                                   **kwargs.pop("headers", {})}, **kwargs)


def labels_body(*labels: dict[str, Any], annotator: str = "ana", random: bool = False,
                scenario_id: str = SID, epoch: int = 0) -> dict[str, Any]:
    return {"scenario_id": scenario_id, "epoch": epoch, "annotator": annotator,
            "random": random, "labels": list(labels)}


def stored(root: Path, run_id: str, *, history: bool = False) -> list[dict[str, Any]]:
    with RunStore.open(root / run_id, read_only=True) as store:
        return [label.to_json() for label in store.labels(history=history)]


def test_a_label_write_without_the_token_or_from_another_site_is_refused(
        server: Served, root: Path, run_id: str) -> None:
    body = labels_body({"target": "passed", "value": True})
    assert post(server, f"/api/label/{run_id}", body, cookie=False).status == 403
    foreign = post(server, f"/api/label/{run_id}", body,
                   headers={"Origin": "http://evil.example"})
    assert foreign.status == 403
    rebound = post(server, f"/api/label/{run_id}", body, host=f"evil.example:{server.port}")
    assert rebound.status == 403
    assert stored(root, run_id) == []
    # the same request with the token and from the page's own origin is stored
    ok = post(server, f"/api/label/{run_id}", body, headers={"Origin": server.origin})
    assert ok.status == 200, ok.text
    assert [(lb["annotator"], lb["target"], lb["value"]) for lb in stored(root, run_id)] == [
        ("ana", "passed", True)]


@pytest.mark.parametrize(("label", "field", "words"), [
    ({"target": CRITERION, "value": 9}, "value", "expected one of 1, 2, 3, 4, 5"),
    ({"target": "passed", "value": "yes"}, "value", "true or false"),
    ({"target": "score", "value": 1.5}, "value", "from 0 to 1"),
    ({"target": "criterion:final_response_quality/nonsense", "value": 3}, "target",
     "this sample has no"),
    ({"target": "verdict", "value": True}, "target", "expected"),
    ({"target": "passed", "value": True, "mood": "happy"}, "mood", "Extra inputs"),
])
def test_a_label_that_does_not_fit_the_run_is_refused_with_its_field_named(
        server: Served, root: Path, run_id: str, label: dict[str, Any], field: str,
        words: str) -> None:
    # a good label beside the bad one: the request is refused whole
    reply = post(server, f"/api/label/{run_id}",
                 labels_body({"target": "passed", "value": True}, label))
    assert reply.status == 400, reply.text
    error = json.loads(reply.text)["error"]
    assert error.startswith(f"{field}: ") and words in error and "\n" not in error, error
    assert stored(root, run_id) == []


def test_an_unknown_sample_or_a_blank_reviewer_is_named(server: Served, run_id: str) -> None:
    for body, field in [(labels_body({"target": "passed", "value": True},
                                     scenario_id="no-such"), "scenario_id"),
                        (labels_body({"target": "passed", "value": True}, epoch=7), "epoch"),
                        (labels_body({"target": "passed", "value": True}, annotator=" "),
                         "annotator"),
                        ({**labels_body(), "labels": []}, "labels")]:
        reply = post(server, f"/api/label/{run_id}", body)
        assert reply.status == 400 and json.loads(reply.text)["error"].startswith(field), \
            reply.text
    garbage = server.request("POST", f"/api/label/{run_id}", body=b"{not json", cookie=True)
    assert garbage.status == 400 and "not JSON" in garbage.text


def test_a_changed_label_counts_and_its_history_is_kept_and_export_gives_them_back(
        server: Served, root: Path, run_id: str, tmp_path: Path) -> None:
    first = post(server, f"/api/label/{run_id}",
                 labels_body({"target": CRITERION, "value": 2, "comment": "wrong city"},
                             {"target": "passed", "value": False}))
    assert first.status == 200 and json.loads(first.text)["stored"] == 2
    second = post(server, f"/api/label/{run_id}", labels_body({"target": CRITERION, "value": 4,
                                                               "labelled_at": "1999-01-01"}))
    state = json.loads(second.text)["state"]
    now = {lb["target"]: lb for lb in state["labels"]}
    assert now[CRITERION]["value"] == 4 and "comment" not in now[CRITERION]
    assert [lb["value"] for lb in state["history"] if lb["target"] == CRITERION] == [2, 4]
    # the server's clock decides which version is the last, not the client's
    assert not now[CRITERION]["labelled_at"].startswith("1999")
    out = tmp_path / "labels.jsonl"
    assert run_cli("labels", "export", root / run_id, "--out", out).returncode == 0
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert exported == stored(root, run_id)
    assert sorted((lb["target"], lb["value"], lb["random"]) for lb in exported) == [
        (CRITERION, 4, False), ("passed", False, False)]


def test_random_labels_and_the_queue_progress(server: Served, root: Path, run_id: str) -> None:
    page = server.request("GET", f"/label/{run_id}?queue=random&at=2")
    assert page.status == 200
    with RunStore.open(root / run_id, read_only=True) as store:
        queue = random_queue(store)  # the seed the page recorded
    sid, epoch = queue[2]
    assert f"<strong>{sid}</strong> · epoch {epoch}" in page.text
    reply = post(server, f"/api/label/{run_id}", labels_body(
        {"target": "passed", "value": True}, random=True, scenario_id=sid, epoch=epoch))
    progress = json.loads(reply.text)["state"]["progress"]
    assert progress == {"total": len(queue), "done": {"ana": 1}}


def test_two_reviewers_writing_at_once_lose_no_label_and_their_agreement_shows(
        server: Served, root: Path, run_id: str) -> None:
    samples = [(SID, 0), (SID, 1), ("weather-forecast-tokyo", 0), ("weather-forecast-tokyo", 1)]
    given = {"ana": [5, 4, 2, 1], "bo": [5, 3, 2, 1]}

    def write(job: tuple[str, int]) -> int:
        name, i = job
        sid, epoch = samples[i]
        return post(server, f"/api/label/{run_id}", labels_body(
            {"target": CRITERION, "value": given[name][i]}, annotator=name,
            scenario_id=sid, epoch=epoch)).status

    jobs = [(name, i) for i in range(len(samples)) for name in given]
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(write, jobs * 3)) == [200] * len(jobs) * 3
    assert len(stored(root, run_id, history=True)) == len(jobs) * 3
    assert len(stored(root, run_id)) == len(jobs)
    state = json.loads(server.request(
        "GET", f"/api/label/{run_id}?scenario={SID}&epoch=0").text)
    agreement = state["agreement"][CRITERION]
    assert agreement["n_samples"] == 4 and agreement["reviewers"] == ["ana", "bo"]
    assert agreement["level"] == "ordinal" and 0.5 < agreement["alpha"] <= 1
    assert agreement["ci_low"] <= agreement["alpha"] <= agreement["ci_high"]


def test_a_hostile_scenario_id_or_run_id_is_a_404_page_that_shows_it_as_text(
        server: Served, run_id: str) -> None:
    hostile = "<script>alert(1)</script>"
    page = server.request("GET", f"/label/{run_id}?scenario={hostile}&epoch=0")
    assert page.status == 404
    assert "<script>alert(1)" not in page.text and "&lt;script&gt;alert(1)" in page.text
    assert server.request("GET", "/label/..%2F..%2Fetc").status == 404
    assert server.request("GET", f"/label/{run_id}?scenario={SID}&epoch=x").status == 404


def test_save_as_scenario_writes_a_valid_file_under_the_served_folder_and_never_replaces_it(
        server: Served, root: Path, run_id: str) -> None:
    body = {"scenario_id": SID, "epoch": 1, "folder": f"saved/{run_id}"}
    assert post(server, f"/api/scenario/{run_id}", body, cookie=False).status == 403
    reply = post(server, f"/api/scenario/{run_id}", body)
    assert reply.status == 200, reply.text
    saved = json.loads(reply.text)
    assert saved == {"path": f"saved/{run_id}/{SID}-epoch-1.yaml", "id": f"{SID}-epoch-1"}
    written = root / saved["path"]
    checked = run_cli("validate", written)
    assert checked.returncode == 0, checked.stderr
    before = written.read_text()
    again = post(server, f"/api/scenario/{run_id}", body)
    assert again.status == 400 and "exists already" in json.loads(again.text)["error"]
    assert written.read_text() == before


@pytest.mark.parametrize("folder", ["../outside", "/tmp", "saved/../../outside", "link-out",
                                    "a-file.txt", "link-out/deeper"])
def test_save_as_scenario_refuses_a_folder_that_leaves_the_served_one(
        server: Served, root: Path, run_id: str, folder: str) -> None:
    elsewhere = root.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    if not (root / "link-out").is_symlink():
        (root / "link-out").symlink_to(elsewhere, target_is_directory=True)
    (root / "a-file.txt").write_text("not a folder")
    reply = post(server, f"/api/scenario/{run_id}",
                 {"scenario_id": SID, "epoch": 0, "folder": folder})
    assert reply.status == 400, reply.text
    assert json.loads(reply.text)["error"].startswith("folder: ")
    assert list(elsewhere.iterdir()) == [] and not (root.parent / "outside").exists()


def test_save_as_scenario_names_a_bad_id_or_sample(server: Served, run_id: str) -> None:
    for body, field in [({"scenario_id": SID, "epoch": 0, "id": "../x"}, "id"),
                        ({"scenario_id": SID, "epoch": 9}, "epoch"),
                        ({"scenario_id": SID, "epoch": "0"}, "scenario_id and epoch")]:
        reply = post(server, f"/api/scenario/{run_id}", body)
        assert reply.status == 400 and json.loads(reply.text)["error"].startswith(field), \
            reply.text


def test_a_label_saved_while_the_run_holds_the_write_lock_waits_its_turn(
        server: Served, root: Path, run_id: str) -> None:
    """The run writing a sample (its write transaction held for a moment) and a reviewer
    saving at that moment: the label waits for the lock, then is stored."""
    run = sqlite3.connect(root / run_id / "run.sqlite", isolation_level=None,
                          check_same_thread=False)
    run.execute("BEGIN IMMEDIATE")
    run.execute("UPDATE meta SET value = value WHERE key = 'kind'")
    release = threading.Timer(1.0, run.execute, args=("COMMIT",))
    started = time.monotonic()
    release.start()
    try:
        reply = post(server, f"/api/label/{run_id}", labels_body(
            {"target": "passed", "value": True}))
    finally:
        release.join()
        run.close()
    assert reply.status == 200, reply.text
    assert time.monotonic() - started >= 0.9  # it waited for the run's transaction
    assert [lb["target"] for lb in stored(root, run_id)] == ["passed"]
