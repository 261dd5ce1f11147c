"""``harness serve-tools SCENARIO``: a scenario's mocked tools served over MCP by themselves,
for an agent developed or tested outside a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from harness.choices import McpTransport
from harness.cli.app import app
from harness.cli.help_format import examples
from harness.cli.interrupts import exit_code, run_async, signal_name
from harness.errors import InputError
from harness.safe_text import terminal_console, terminal_text
from harness.wording import plural

if TYPE_CHECKING:
    from harness.scenarios.schema import Scenario
    from harness.transcript import ToolCallRecord

DEFAULT_PORT = 8765
LOGGED_CHARS = 300  # of each argument list and result in the log line; --record keeps all


@app.command("serve-tools", epilog=examples(
    ("the weather scenario's tools on http://127.0.0.1:8765/mcp",
     "harness serve-tools scenarios/weather.yaml:weather-current-paris"),
    ("for an agent that starts its tool server itself, every call kept",
     "harness serve-tools scenarios/files.yaml --transport stdio \\\n"
     "    --record calls.jsonl")))
def serve_tools(
    scenario: Annotated[str, typer.Argument(
        metavar="SCENARIO", help="a scenario file, or FILE:id when the file holds several")],
    transport: Annotated[McpTransport, typer.Option(
        help="http: streamable HTTP on 127.0.0.1; stdio: for an agent that starts its tool "
        "server as a subprocess")] = "http",
    port: Annotated[int, typer.Option(
        metavar="PORT", min=0, max=65535,
        help="the HTTP port on 127.0.0.1 (0: any free port)")] = DEFAULT_PORT,
    record: Annotated[Path | None, typer.Option(
        metavar="FILE.jsonl", help="append each call's record (arguments, result, error, "
        "latency) to this file as a JSON line")] = None,
) -> None:
    """Serve a scenario's mocked tools over MCP, as a run does.

    Each call is answered by the scenario's mocks (state, sequences, errors, handlers) and
    logged on stderr; over http each MCP session starts from a fresh state. Ctrl-C stops
    it."""
    selected = _one_scenario(scenario)
    out = _record_file(record) if record is not None else None
    err = terminal_console(stderr=True, soft_wrap=True)
    calls = 0

    def on_call(call: ToolCallRecord) -> None:
        nonlocal calls
        calls += 1
        err.print(terminal_text(_log_line(call)))
        if out is not None:
            out.write(json.dumps(call.model_dump(mode="json"), ensure_ascii=False) + "\n")
            out.flush()

    tools = len(selected.agent_tools())
    what = f"{plural(tools, 'mocked tool')} of scenario {selected.id}"
    try:
        if transport == "stdio":
            from harness.mcp.standalone import serve_stdio

            err.print(f"serving {terminal_text(what)} over MCP on stdio")
            run_async(serve_stdio(selected, on_call=on_call))
        else:
            from harness.mcp.standalone import serve_http

            def ready(url: str) -> None:
                typer.echo(f"serving {what} over MCP at {url}")

            run_async(serve_http(selected, port=port, on_call=on_call, on_ready=ready))
    except KeyboardInterrupt as stop:
        err.print(f"[yellow]{signal_name(stop)}: stopped after {plural(calls, 'call')}[/]")
        raise typer.Exit(exit_code(stop)) from None
    finally:
        if out is not None:
            out.close()


def _one_scenario(raw: str) -> Scenario:
    """The scenario ``raw`` names (``FILE`` holding one, or ``FILE:id``). Raises InputError
    for a missing or bad file, and for a file of several without an id (listing them)."""
    from harness.formats import load_scenarios
    from harness.scenarios.selectors import parse_selection

    scenarios = load_scenarios([raw])
    if len(scenarios) != 1:
        ids = ", ".join(s.id for s in scenarios)
        raise InputError(parse_selection(raw).path, None,
                         f"holds {len(scenarios)} scenarios; name one as FILE:id (ids: {ids})")
    return scenarios[0]


def _record_file(path: Path) -> TextIO:
    from harness.files import check_output_file

    check_output_file(path, "the call records (--record, JSON lines)")
    try:
        return path.open("a", encoding="utf-8")
    except OSError as err:
        raise InputError(path, None, f"cannot be opened for appending ({err.strerror or err})"
                         ) from None


def _log_line(call: ToolCallRecord) -> str:
    """``tool {"arg": 1} -> result (0.4 ms)``, or ``-> error (kind): message``."""
    args = _short(json.dumps(call.arguments, ensure_ascii=False))
    if call.is_error:
        message = call.result.get("error") if isinstance(call.result, dict) else call.result
        outcome = f"error ({call.error}): {_short(str(message))}"
    else:
        outcome = _short(json.dumps(call.result, ensure_ascii=False))
    return f"{call.name} {args} -> {outcome} ({call.latency_s * 1000:.1f} ms)"


def _short(text: str) -> str:
    return text if len(text) <= LOGGED_CHARS else text[:LOGGED_CHARS] + "…"
