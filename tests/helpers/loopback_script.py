"""Both sides of an episode scripted on the loopback model server: :class:`Script` routes each
request to the agent's or the simulator's queue of replies by who is asking (the simulator's
system prompt says it is role-playing a user)."""

from __future__ import annotations

from collections.abc import Iterable

from harness.testing.replies import RecordedRequest, Reply
from harness.testing.server import LoopbackServer


def _system_text(request: RecordedRequest) -> str:
    if request.api == "gemini":
        instruction = request.body.get("systemInstruction") or {}
        return "".join(str(p.get("text", "")) for p in instruction.get("parts") or ())
    if request.api == "anthropic":
        system = request.body.get("system") or ""
        if isinstance(system, list):
            return "".join(b.get("text", "") for b in system if isinstance(b, dict))
        return str(system)
    first = request.messages[0] if request.messages else {}
    return str(first.get("content") or "") if first.get("role") == "system" else ""


def is_simulator(request: RecordedRequest) -> bool:
    return "role-playing a user" in _system_text(request)


class Script:
    """Scripted replies for the two sides, routed by who is asking."""

    def __init__(self, agent: Iterable[Reply], simulator: Iterable[Reply] = ()) -> None:
        self.agent, self.simulator = list(agent), list(simulator)

    def __call__(self, request: RecordedRequest) -> Reply:
        queue = self.simulator if is_simulator(request) else self.agent
        assert queue, (
            f"no scripted reply left for {'simulator' if is_simulator(request) else 'agent'}"
        )
        return queue.pop(0)


def goal_met(message: str = "Thanks!") -> Reply:
    return Reply.json({"message": message, "done": True, "stop_reason": "goal_met"})


def say(message: str) -> Reply:
    return Reply.json({"message": message, "done": False})


def agent_requests(server: LoopbackServer) -> list[RecordedRequest]:
    return [r for r in server.requests if not is_simulator(r)]
