"""A sample's given history in the HTML report: apart from the live conversation, muted,
labelled "given history", and shown as text like all outside text (a real browser)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.report.html.run_page import REPORT_FILENAME, sample_view
from harness.runs.store import RunStore
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli
from tests.helpers.hostile import HOSTILE

Opener = Callable[..., OpenedPage]

SCENARIO: dict[str, Any] = {
    "id": "orders-history",
    "user": {"goal": "know whether order A-1 shipped",
             "history": [
                 {"role": "user", "content": HOSTILE["user"]},
                 {"role": "assistant", "content": "", "tool_calls": [
                     {"id": "h1", "type": "function",
                      "function": {"name": "lookup", "arguments": '{"order_id": "A-1"}'}}]},
                 {"role": "tool", "tool_call_id": "h1", "content": HOSTILE["tool"]},
                 {"role": "assistant", "content": HOSTILE["agent"]},
             ]},
    "agent": {"model": "mock:agent"},
    "tools": [{"name": "get_order",
               "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
               "returns": {"status": "shipped"}}],
    "expectations": {"tool_calls": [{"name": "get_order", "args": {"order_id": "A-1"}}],
                     "reference_answer": "Order A-1 has shipped."},
}


@pytest.fixture(scope="module")
def history_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("history-report")
    (base / "s.yaml").write_text(yaml.safe_dump(SCENARIO, sort_keys=False), encoding="utf-8")
    done = run_cli("run", base / "s.yaml", "--offline", "--cache-mode", "off",
                   "--out", base / "run")
    assert done.returncode == 0, done.stdout + done.stderr
    return base / "run"


def test_the_sample_view_keeps_the_history_apart(history_run: Path) -> None:
    with RunStore.open(history_run) as store:
        record = next(store.iter_samples())
    view = sample_view(record)
    assert [m["role"] for m in view["history"]] == ["user", "assistant", "assistant"]
    assert view["history"][1]["tool_calls"] == [{
        "name": "lookup", "arguments": {"order_id": "A-1"}, "raw": None,
        "result": HOSTILE["tool"], "error": None, "is_error": False, "latency_s": None}]
    assert view["messages"][0]["role"] == "user"
    assert HOSTILE["agent"] not in json.dumps(view["messages"])
    assert [c["name"] for c in view["actual_trajectory"]] == ["get_order"]
    samples = [json.loads(line) for line in
               (history_run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert samples and all(s["status"] == "scored" and s["passed"] for s in samples)


def test_the_drill_down_shows_the_history_muted_labelled_and_as_text(
        history_run: Path, open_report: Opener, tmp_path: Path) -> None:
    opened = open_report(history_run / REPORT_FILENAME)
    page = opened.page
    page.locator("#sample-table a").first.click()
    drill = page.locator("#drill")
    drill.wait_for(state="visible")
    block = drill.locator("section.given-history")
    assert block.count() == 1
    assert block.locator(".history-label").text_content() == "given history"
    history_text = block.text_content() or ""
    for part in ("user", "agent", "tool"):
        assert HOSTILE[part] in history_text  # shown as text, not parsed
    assert block.locator('.call[data-tool="lookup"]').count() == 1
    assert "result (given)" in history_text
    # apart from the live conversation, which comes after it and holds none of it
    order = page.evaluate("""() => {
        const d = document.querySelector('#drill');
        const boxes = [...d.querySelectorAll('.msgbox')];
        return boxes.map(b => b.closest('.given-history') ? 'given' : 'live');
    }""")
    assert order == ["given"] * 3 + ["live"] * (len(order) - 3) and len(order) > 3
    live = page.evaluate("""() => [...document.querySelectorAll('#drill .msgbox')]
        .filter(b => !b.closest('.given-history')).map(b => b.textContent).join(' ')""")
    assert HOSTILE["agent"] not in live and "get_order" in live
    # muted: the history's text is in the muted colour, its boxes dashed
    styles = page.evaluate("""() => {
        const s = document.querySelector('#drill section.given-history');
        const box = s.querySelector('.msgbox');
        const muted = document.querySelector('#drill .muted');
        return [getComputedStyle(s).color, getComputedStyle(muted).color,
                getComputedStyle(box).borderTopStyle,
                getComputedStyle(s).borderLeftStyle];
    }""")
    assert styles[0] == styles[1] and styles[2] == "dashed" and styles[3] == "dashed"
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#drill script, #drill img, #drill iframe, #drill svg").count() == 0
    opened.screenshot(tmp_path / "history.png")
    opened.assert_quiet()
