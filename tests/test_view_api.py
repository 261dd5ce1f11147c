"""``harness view`` without a browser: the token, Host and Origin rules, paths that would
leave the served folder, the headers every response carries, and ``GET /api/runs``
(contract 11), over real HTTP to a server on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp.test_utils import TestClient, TestServer

from harness.models.mock import register_mock, unregister_mock
from harness.view import make_app
from harness.view.security import TOKEN_COOKIE, Guard
from tests.helpers.report_runs import PageAgent, make_runs
from tests.helpers.view_server import Served, served


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``runs/`` holding two runs (one nested), a damaged store, a half-written one and a
    link to a run outside it."""
    register_mock("pageagent", PageAgent)
    try:
        base = tmp_path_factory.mktemp("view")
        baseline, candidate = make_runs(base, epochs=2)
    finally:
        unregister_mock("pageagent")
    root = base / "runs"
    (root / "nested").mkdir(parents=True)
    shutil.copytree(baseline, root / "baseline")
    shutil.copytree(candidate, root / "nested" / "candidate")
    (root / "damaged").mkdir()
    (root / "damaged" / "run.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xff" * 300)
    (root / "half").mkdir()
    (root / "half" / "run.sqlite").write_bytes(b"")
    (root / "escape").symlink_to(baseline, target_is_directory=True)
    (root / "linked-store").mkdir()
    (root / "linked-store" / "run.sqlite").symlink_to(baseline / "run.sqlite")
    shutil.copytree(baseline, root / "bad-summary")
    (root / "bad-summary" / "summary.json").write_text('{"schema": "something else"}')
    return root


@pytest.fixture(scope="module")
def server(runs_folder: Path) -> Iterator[Served]:
    with served(runs_folder) as s:
        yield s


def _cookie_header(reply_headers: object) -> str:
    cookies = [v for k, v in reply_headers.items()  # type: ignore[attr-defined]
               if k.lower() == "set-cookie"]
    assert len(cookies) == 1, cookies
    return str(cookies[0])


def test_the_printed_url_sets_the_token_as_a_strict_httponly_cookie_and_drops_it(
        server: Served) -> None:
    parts = urlsplit(server.url)
    assert parts.hostname == "127.0.0.1" and parts.query == f"token={server.token}"
    reply = server.request("GET", f"{parts.path}?{parts.query}")
    assert reply.status == 303
    assert reply.headers["Location"] == "/"
    cookie = _cookie_header(reply.headers)
    assert cookie.startswith(f"{TOKEN_COOKIE}_{server.port}={server.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    # other query parameters stay
    reply = server.request("GET", f"/compare?a=x&token={server.token}&b=y")
    assert reply.status == 303 and reply.headers["Location"] == "/compare?a=x&b=y"
    # the redirect never leaves the server ("//host" is another site to a browser)
    for path in ("//evil.example/x", "///evil.example", "/%2F%2Fevil.example"):
        reply = server.request("GET", f"{path}?token={server.token}")
        location = reply.headers["Location"]
        assert reply.status == 303 and location.startswith("/") and not location.startswith(
            "//"), location


def test_a_wrong_token_in_the_url_is_refused(server: Served) -> None:
    reply = server.request("GET", "/?token=guess")
    assert reply.status == 403
    assert "set-cookie" not in {k.lower() for k in reply.headers}


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_a_request_that_changes_something_needs_the_token(server: Served, method: str) -> None:
    assert server.request(method, "/api/runs").status == 403
    assert server.request(method, "/api/runs",
                          headers={"X-Harness-Token": "not-it"}).status == 403
    # with the token (cookie or header) the request passes the guard: the route then
    # answers that it takes no such method
    assert server.request(method, "/api/runs", cookie=True).status == 405
    assert server.request(method, "/api/runs",
                          headers={"X-Harness-Token": server.token}).status == 405


def test_only_this_servers_cookie_counts(server: Served) -> None:
    """Cookies are shared by every port of 127.0.0.1: another server's token cookie (named
    with its own port) is not this one's."""
    other = f"{TOKEN_COOKIE}_{server.port + 1}={server.token}"
    assert server.request("POST", "/api/runs", headers={"Cookie": other}).status == 403
    ours = f"{TOKEN_COOKIE}_{server.port}={server.token}"
    assert server.request("POST", "/api/runs",
                          headers={"Cookie": f"{other}; {ours}"}).status == 405


def test_a_missing_run_is_a_page_for_people_and_json_for_the_api(server: Served) -> None:
    page = server.request("GET", "/runs/no-such-run")
    assert page.status == 404 and "No such run." in page.text
    assert page.headers["Content-Type"].startswith("text/html")
    api = server.request("GET", "/api/runs/no-such-run/progress")
    assert api.status == 404 and json.loads(api.body) == {
        "error": "no run with this id under the served folder"}


def test_reads_on_loopback_need_no_token(server: Served) -> None:
    assert server.request("GET", "/").status == 200
    assert server.request("GET", "/api/runs").status == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1",
                                    "https://127.0.0.1:{port}", "http://127.0.0.1:{port}.evil",
                                    "http://localhost:1"])
def test_a_foreign_origin_is_refused_even_with_the_token(server: Served, origin: str) -> None:
    headers = {"Origin": origin.format(port=server.port), "X-Harness-Token": server.token}
    assert server.request("POST", "/api/runs", headers=headers, cookie=True).status == 403
    assert server.request("GET", "/api/runs", headers=headers).status == 403


def test_the_servers_own_origin_passes(server: Served) -> None:
    headers = {"Origin": server.origin}
    assert server.request("GET", "/api/runs", headers=headers).status == 200
    assert server.request("POST", "/api/runs", headers=headers, cookie=True).status == 405


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1",
                                  "127.0.0.1:{other}", "127.0.0.2:{port}", "",
                                  "localhost.evil.example:{port}", "[::2]:{port}"])
def test_a_foreign_host_is_refused_dns_rebinding(server: Served, host: str) -> None:
    header = host.format(port=server.port, other=server.port + 1)
    assert server.request("GET", "/api/runs", host=header).status == 403
    assert server.request("POST", "/api/runs", host=header, cookie=True).status == 403


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}",
                                  "[::1]:{port}"])
def test_the_bound_address_by_ip_or_loopback_name_passes(server: Served, host: str) -> None:
    assert server.request("GET", "/api/runs", host=host.format(port=server.port)).status == 200


@pytest.mark.parametrize("path", [
    "/runs/../../../etc/passwd", "/runs/..%2f..%2fetc%2fpasswd", "/runs/%2e%2e/%2e%2e/etc",
    "/runs//etc/passwd", "/runs/%2Fetc%2Fpasswd", "/runs/escape", "/runs/escape/",
    "/runs/nested/../baseline", "/runs/nested/%2e%2e/baseline", "/runs/baseline/../baseline",
    "/runs/no-such-run", "/runs/nested", "/api/runs/..%2f..%2fetc/progress",
    "/api/runs/escape/progress", "/runs/linked-store", "/runs/%00", "/runs/baseline%00",
    "/compare?a=../baseline&b=nested/candidate", "/compare?a=/etc&b=baseline",
    "/compare?a=escape&b=baseline",
])
def test_a_path_that_leaves_the_folder_or_names_no_run_is_404(server: Served, path: str) -> None:
    assert server.request("GET", path).status == 404


def test_a_run_nested_or_not_is_served_by_its_id(server: Served) -> None:
    for path in ("/runs/baseline", "/runs/nested/candidate",
                 "/api/runs/nested/candidate/progress"):
        assert server.request("GET", path).status == 200, path


@pytest.mark.parametrize("path", ["/", "/api/runs", "/runs/baseline", "/trends",
                                  "/runs/nope", "/no-such-page", "/?token=wrong",
                                  "/compare?a=baseline&b=nested/candidate"])
def test_every_response_carries_a_policy_and_nosniff(server: Served, path: str) -> None:
    reply = server.request("GET", path)
    policy = reply.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "http" not in policy and "*" not in policy  # nothing from outside
    assert reply.headers["X-Content-Type-Options"] == "nosniff"
    assert reply.headers["Referrer-Policy"] == "no-referrer"


def test_a_finished_runs_page_does_not_connect_anywhere(server: Served) -> None:
    policy = server.request("GET", "/runs/baseline").headers["Content-Security-Policy"]
    assert "connect-src 'none'" in policy
    assert "script-src 'sha256-" in policy and "unsafe" not in policy.split("script-src")[1]


def test_api_runs_lists_every_run_newest_first_and_the_unreadable_with_why(
        server: Served, runs_folder: Path) -> None:
    reply = server.request("GET", "/api/runs")
    assert reply.headers["Content-Type"].startswith("application/json")
    data = json.loads(reply.body)
    runs = {r["id"]: r for r in data["runs"]}
    assert set(runs) == {"baseline", "nested/candidate", "damaged", "half", "bad-summary"}
    for run in data["runs"]:
        assert Path(run["path"]).resolve().is_relative_to(runs_folder.resolve())
    assert [r["created_at"] for r in data["runs"]] == sorted(
        (r["created_at"] for r in data["runs"]), reverse=True)
    good = runs["baseline"]
    assert good["error"] is None and good["status"] == "finished"
    summary = json.loads((runs_folder / "baseline" / "summary.json").read_text())
    assert good["mean"] == {"value": summary["score"]["mean"],
                            "ci_low": summary["score"]["ci_low"],
                            "ci_high": summary["score"]["ci_high"]}
    assert good["pass_rate"]["value"] == summary["score"]["pass_rate"]["value"]
    assert good["scenarios"] == 7 and good["samples"] == 14 and good["samples_planned"] == 14
    assert good["models"]["agent"] == ["mock:pageagent"]
    assert good["offline"] is True
    for broken in ("damaged", "half", "bad-summary"):
        error = runs[broken]["error"]
        assert runs[broken]["status"] == "unreadable"
        assert error and "\n" not in error, error
    assert runs["damaged"]["error"].startswith("run.sqlite: ")
    assert runs["half"]["error"].startswith("run.sqlite: ")
    # the summary's own error: the file and the field
    assert "summary.json" in runs["bad-summary"]["error"]
    assert "schema" in runs["bad-summary"]["error"]


def test_a_folder_that_is_itself_a_run_is_served_as_the_run_dot(runs_folder: Path) -> None:
    with served(runs_folder / "baseline") as server:
        runs = json.loads(server.request("GET", "/api/runs").body)["runs"]
        assert [(r["id"], r["url"]) for r in runs] == [(".", "/runs/")]
        assert server.request("GET", "/runs/").status == 200
        progress = json.loads(server.request("GET", "/api/run/progress").body)
        assert progress["status"] == "finished" and progress["samples"] == 14
        assert 'href="/runs/"' in server.request("GET", "/").text


def test_the_index_page_lists_the_runs_and_escapes_their_names(
        tmp_path: Path, runs_folder: Path) -> None:
    hostile = "<img src=x onerror=alert(1)>"
    root = tmp_path / "runs"
    shutil.copytree(runs_folder / "baseline", root / hostile)
    with served(root) as server:
        page = server.request("GET", "/").text
        url = json.loads(server.request("GET", "/api/runs").body)["runs"][0]["url"]
        run = server.request("GET", url)
    assert hostile not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert run.status == 200 and hostile not in run.text  # its page, by its quoted id


def test_reading_never_changes_a_runs_files(server: Served, runs_folder: Path) -> None:
    run = runs_folder / "baseline"
    before = {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in run.iterdir()}
    for path in ("/", "/api/runs", "/runs/baseline", "/api/runs/baseline/progress",
                 "/compare?a=baseline&b=nested/candidate", "/trends"):
        assert server.request("GET", path).status == 200, path
    after = {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in run.iterdir()}
    assert after == before


async def test_off_loopback_every_request_needs_the_token_reads_included(
        runs_folder: Path) -> None:
    guard = Guard(token="t0ken", host="192.0.2.7")
    async with TestServer(make_app(runs_folder, guard), host="127.0.0.1") as test_server:
        guard.port = test_server.port or 0
        async with TestClient(test_server) as client:
            host = {"Host": f"192.0.2.7:{guard.port}"}
            for path in ("/", "/api/runs", "/runs/baseline", "/trends"):
                assert (await client.get(path, headers=host)).status == 403, path
                ok = await client.get(path, headers={**host, "X-Harness-Token": "t0ken"})
                assert ok.status == 200, path
            # a loopback name is not this server's address when it listens elsewhere
            refused = await client.get("/", headers={"Host": f"localhost:{guard.port}",
                                                     "X-Harness-Token": "t0ken"})
            assert refused.status == 403


def test_a_token_that_is_no_text_is_refused_not_an_error(server: Served) -> None:
    for value in ("\xff\xfe", "t\xe9"):
        reply = server.request("POST", "/api/runs", headers={"X-Harness-Token": value})
        assert reply.status == 403, value
    assert server.request("GET", "/?token=%FF%FE").status == 403


def test_on_port_80_a_host_without_its_port_is_this_server() -> None:
    assert Guard(token="t", host="127.0.0.1", port=80).host_allowed("127.0.0.1")
    assert not Guard(token="t", host="127.0.0.1", port=8080).host_allowed("127.0.0.1")


def test_a_run_whose_name_holds_url_characters_is_polled_at_its_quoted_address(
        tmp_path: Path, runs_folder: Path) -> None:
    import html
    import re

    root = tmp_path / "runs"
    shutil.copytree(runs_folder / "baseline", root / "odd?name#1 %2e")
    with served(root) as server:
        url = json.loads(server.request("GET", "/api/runs").body)["runs"][0]["url"]
        page = server.request("GET", url).text
        found = re.search(r'data-progress-url="([^"]+)"', page)
        assert found is not None
        progress = server.request("GET", html.unescape(found.group(1)))
    assert progress.status == 200
    assert json.loads(progress.body)["id"] == "odd?name#1 %2e"


def test_a_run_whose_stored_sample_does_not_parse_is_one_line_not_a_traceback(
        tmp_path: Path, runs_folder: Path) -> None:
    import sqlite3

    root = tmp_path / "runs"
    shutil.copytree(runs_folder / "baseline", root / "broken-sample")
    with sqlite3.connect(root / "broken-sample" / "run.sqlite") as db:
        db.execute("UPDATE samples SET record = '{\"half\": ' WHERE rowid = 1")
    db.close()
    with served(root) as server:
        listed = json.loads(server.request("GET", "/api/runs").body)["runs"][0]
        page = server.request("GET", "/runs/broken-sample")
    assert listed["error"] is None  # the index reads no whole sample
    assert page.status == 422
    assert "This run cannot be shown." in page.text and "does not parse" in page.text
    assert "Traceback" not in page.text
