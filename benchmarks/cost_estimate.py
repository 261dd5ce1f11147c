"""How close is ``harness run --dry-run`` to what the run then costs (issue 30, item 4)?

The example suite runs against the loopback model server (the real OpenAI and Anthropic
SDKs, the server playing the providers' prompt caches) with list prices: an
``openai:gpt-4.1`` agent, an ``openai:gpt-4.1-mini`` simulator and an
``anthropic:claude-sonnet-4-5`` judge asked for ``--judge-samples`` samples. The server's
replies are scripted by who asks: the agent answers in a sentence or two, the simulated user
speaks ``--user-turns`` times and then ends the conversation, the judge gives a valid verdict
(built from its schema).

Three figures, each an estimate against the measured cost of the same run:

1. **from the scenarios**: the dry run's estimate with no earlier run, against a run of
   ``--epochs`` epochs;
2. **measured**: the dry run's estimate for a second run of ``2 x --epochs`` epochs, measured
   on the first (``--estimate-from``), against that second run;
3. per role, the calls and tokens of (1), so a reader sees where the heuristic is off.

Printed: the relative error of each cost (with the providers' prompt caches, as billed).

Usage: python benchmarks/cost_estimate.py [--epochs 2] [--judge-samples 3] [--user-turns 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.cli import main as harness_main
from harness.testing.hub import loopback_environ
from harness.testing.replies import RecordedRequest, Reply, auto_reply
from harness.testing.server import LoopbackServer

SUITE = Path(__file__).resolve().parents[1] / "scenarios"
MODELS = ["--agent", "openai:gpt-4.1", "--simulator", "openai:gpt-4.1-mini",
          "--judge", "anthropic:claude-sonnet-4-5"]
ANSWER = ("I have looked into it for you: everything is in order, and I have noted what you "
          "asked. Is there anything else I can do?")


def _system(request: RecordedRequest) -> str:
    system = request.body.get("system")
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system)
    if isinstance(system, str):
        return system
    first = request.messages[0] if request.messages else {}
    return str(first.get("content") or "") if first.get("role") == "system" else ""


def responder(user_turns: int) -> Any:
    """Replies by who asks: the simulator (its system prompt says it plays a user), the judge
    (it asks for a verdict through a tool), else the agent."""

    def reply(request: RecordedRequest) -> Reply:
        system = _system(request)
        if "role-playing a user" in system:
            said = json.dumps(request.messages[-1]).count("You: ")
            if said >= user_turns:
                return Reply.json({"message": "", "done": True, "stop_reason": "goal_met"})
            return Reply.json({"message": "Thanks, and one more thing about my request.",
                               "done": False})
        if "impartial evaluator" in system:
            return auto_reply(request)
        return Reply.text_reply(ANSWER)

    return reply


def harness(*args: str) -> tuple[int, str]:
    """``harness ARGS`` in this process: its exit code and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["harness", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                harness_main()
                code = 0
            except SystemExit as exit_:
                code = int(exit_.code or 0)
    finally:
        sys.argv = argv
    return code, out.getvalue() + err.getvalue() if code not in (0, 1) else out.getvalue()


def run_cost(run_dir: Path) -> dict[str, Any]:
    usage = json.loads((run_dir / "summary.json").read_text())["usage"]
    return {role: u for role, u in usage["by_role"].items()}


def error(estimated: float | None, actual: float) -> str:
    if estimated is None or not actual:
        return "—"
    return f"{100 * (estimated - actual) / actual:+.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--judge-samples", type=int, default=3)
    parser.add_argument("--user-turns", type=int, default=3)
    args = parser.parse_args()
    common = [str(SUITE), *MODELS, "--judge-samples", str(args.judge_samples),
              "--cache-mode", "off", "--json"]
    with tempfile.TemporaryDirectory() as scratch, LoopbackServer(prompt_cache=True) as server:
        os.environ.update(loopback_environ(server))
        server.set_responder(responder(args.user_turns))
        first, second = Path(scratch) / "first", Path(scratch) / "second"
        rows = []
        for label, run_dir, epochs, measured in (
                ("from the scenarios", first, args.epochs, None),
                ("measured on the first run", second, 2 * args.epochs, first)):
            extra = ["--estimate-from", str(measured)] if measured else []
            code, text = harness("run", *common, "--epochs", str(epochs), "--dry-run", *extra)
            if code:
                sys.exit(f"the dry run failed ({code}): {text}")
            estimate = json.loads(text)
            server.play_prompt_caches()  # each run meets cold caches, as a new day's would
            code, _ = harness("run", *common, "--epochs", str(epochs), "--out", str(run_dir))
            if code not in (0, 1):
                sys.exit(f"the run failed ({code})")
            actual = run_cost(run_dir)
            rows.append((label, epochs, estimate, actual))
        print(f"example suite, {args.judge_samples} judge samples, {args.user_turns} user "
              "turns, the loopback server playing the prompt caches")
        print(f"{'estimate':<28}{'epochs':>7}{'estimated':>12}{'actual':>12}{'error':>9}")
        for label, epochs, estimate, actual in rows:
            spent = sum(u["cost_usd"] for u in actual.values())
            print(f"{label:<28}{epochs:>7}{estimate['cost_with_cache_usd']:>12.4f}"
                  f"{spent:>12.4f}{error(estimate['cost_with_cache_usd'], spent):>9}")
        label, _, estimate, actual = rows[0]
        print(f"\nper role, {label}: calls and tokens, estimated / actual (error)")
        for role in estimate["roles"]:
            used = actual.get(role["role"], {})
            parts = []
            for key in ("calls", "input_tokens", "output_tokens"):
                parts.append(f"{key} {role[key]} / {used.get(key, 0)} "
                             f"({error(role[key], used.get(key, 0))})")
            print(f"  {role['role']:<10} " + "; ".join(parts))
        final = rows[-1]
        spent = sum(u["cost_usd"] for u in final[3].values())
        print(f"\ndry-run estimate error (measured): "
              f"{error(final[2]['cost_with_cache_usd'], spent)}")


if __name__ == "__main__":
    main()
