"""Offline behaviours for ``mock:agent`` and ``mock:simulator``, so the whole pipeline runs
with no API key. They are deterministic functions of the request (its messages, tools and
``sample_index``) and of what the episode binds them to (``bind_offline`` of
:mod:`harness.models.mock`, a no-op for real models): ``mock:agent`` to the scenario it plays,
``mock:simulator`` to a :class:`UserMoveCase` (the user's profile and the conversation so
far). Nothing of this is in a model request, so a real model never receives it. Their numbers
say nothing about any real model; transcripts from them are marked offline.

``mock:agent`` is a scripted stand-in for an agent, not a model: bound to a scenario, it plays
the scenario's reference (its tool calls and answers). That is what makes the offline demo's
checks pass; it is given the reference once, where the episode binds it, and never through a
request.

- ``mock:agent`` follows the scenario's reference tool calls turn by turn (one call per step;
  calls without a ``turn`` belong to turn 0), then answers with the reference answer when no
  later turn has work left, else with the last tool result. With per-turn reference answers
  (``reference_answers``) each turn that has one answers with it. When it has nothing to call
  yet but a later turn does, it asks for the details by that call's argument names.
- ``mock:agent-flaky`` does the same but, seeded by (scenario, sample_index), sometimes skips a
  reference call or garbles one argument, and then answers from the tool results instead of the
  reference answer, so offline runs show real variance between epochs.
- ``mock:simulator`` sends the opening message (else the goal), then the "quoted sentence" of
  each plan line that has one, answers the agent's questions about known facts, and ends with
  ``goal_met`` when it has nothing left to say. With ``persona_preset: NOVICE`` it first asks
  one clarifying question after the agent's first answer (:data:`NOVICE_QUESTION`); with
  ``EXPERT`` it signs off with one word (:data:`EXPERT_SIGN_OFF`) instead of thanks.
- ``mock:simulator-faulty`` is ``mock:simulator`` that misbehaves in known epochs, for tests
  and demos of the simulator checks and of attribution: in every odd epoch (``sample_index``
  1, 3, 5, ...; :func:`faulty_epoch`) it ends the conversation as ``user_gave_up``
  (:data:`FAULTY_GIVE_UP`) as soon as the agent's last turn waits on the user (a question,
  an offer, an action announced: :func:`~harness.simulation.user_checks.agent_pending`), and
  in its first move (the first user message not given by the scenario) it adds every known
  fact the agent has not asked for ("My order id is A-1002."). Each misbehaviour is exactly
  what the simulator checks flag (``ended_while_agent_pending``, ``fact_volunteered``), so
  in an odd epoch a sample has such a finding exactly when the simulator misbehaved; in even
  epochs it is ``mock:simulator``. It misbehaves only where it can: a scripted user has no
  simulator, and a scenario with no unasked fact and an agent that never waits on the user
  gives it nothing to do wrong.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import InputError, ModelConfigError
from harness.json_values import load_json
from harness.models.base import MockBehaviour
from harness.models.request import ModelRequest
from harness.models.types import Message, T, ToolCall
from harness.scenarios.schema import Scenario, UserSpec
from harness.simulation.profile_text import fact_text, name_words, plan_lines
from harness.simulation.user_checks import agent_pending, agent_said_last, unasked_facts

FLAKY_SKIP_RATE = 0.2
FLAKY_GARBLE_RATE = 0.15


def _variant(name: str, base: str, known: Sequence[str]) -> str:
    """``"agent-flaky"`` -> ``"flaky"``; ``"agent"`` -> ``""``. Raises ModelConfigError for a
    variant this behaviour does not have."""
    if name == base:
        return ""
    prefix = f"{base}-"
    variant = name[len(prefix) :] if name.startswith(prefix) else name
    if variant not in known:
        names = ", ".join([f"mock:{base}", *(f"mock:{base}-{v}" for v in known)])
        raise ModelConfigError(f"unknown offline model 'mock:{name}'; expected one of {names}")
    return variant


def _unbound(who: str, what: str) -> ModelConfigError:
    return ModelConfigError(
        f"{who} needs {what}, which an episode binds it to; it only works inside an episode"
    )


@dataclass(frozen=True)
class UserMoveCase:
    """What a simulator call is about, for binding ``mock:simulator``: the simulated user's
    profile and the conversation so far (history included)."""

    user: UserSpec
    conversation: Sequence[Message]


def _seeded(*parts: object) -> random.Random:
    """A generator seeded from the parts (stable across processes, unlike hash())."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


# --- the agent -----------------------------------------------------------------------------


class MockAgent(MockBehaviour):
    """The offline agent (``mock:agent``, ``mock:agent-flaky``)."""

    VARIANTS = ("flaky",)

    def __init__(self, name: str = "agent") -> None:
        self.name = name
        self.flaky = _variant(name, "agent", self.VARIANTS) == "flaky"
        self.scenario_id: str | None = None
        self.expectations: dict[str, Any] = {}
        self.history_user_turns = 0

    def bind(self, context: object) -> MockBehaviour:
        """This agent playing ``context`` when it is a scenario: its id (seeding the flaky
        variant), its expectations (the reference it plays) and how many user messages its
        history holds (so the user turn can be counted from a request's messages)."""
        if not isinstance(context, Scenario):
            return self
        bound = MockAgent(self.name)
        bound.scenario_id = context.id
        bound.expectations = context.expectations.model_dump(mode="json")
        bound.history_user_turns = sum(
            1 for m in context.user.history_messages() if m.role == "user")
        return bound

    def _turn(self, messages: Sequence[Message]) -> int:
        """The user turn being answered: the user messages after the history, less one."""
        users = sum(1 for m in messages if m.role == "user")
        return max(0, users - self.history_user_turns - 1)

    async def chat(self, request: ModelRequest) -> Message:
        if self.scenario_id is None:
            raise _unbound(f"mock:{self.name}", "the scenario it plays")
        messages, tools = request.messages, request.tools
        expectations = self.expectations
        scenario_id, turn = self.scenario_id, self._turn(messages)
        sample_index = request.sample_index
        reference = [c for c in expectations.get("tool_calls") or [] if isinstance(c, dict)]
        planned, perturbed = self._plan(reference, scenario_id, sample_index, turn)
        this_turn = _since_last_user(messages)
        made = sum(len(m.tool_calls) for m in this_turn if m.role == "assistant")
        if made < len(planned) and tools and request.tool_choice != "none":
            name, args = planned[made]
            return Message(
                role="assistant",
                tool_calls=(ToolCall(id=f"call_{turn}_{made}", name=name, arguments=args),),
            )
        return Message(
            role="assistant",
            content=self._reply(expectations, reference, turn, this_turn, perturbed),
        )

    def _plan(
        self, reference: list[dict[str, Any]], scenario_id: str, sample_index: int, turn: int
    ) -> tuple[list[tuple[str, dict[str, Any]]], bool]:
        """This turn's calls (name, args) and whether the flaky variant changed any."""
        planned: list[tuple[str, dict[str, Any]]] = []
        perturbed = False
        for k, call in enumerate(reference):
            if (call.get("turn") or 0) != turn:
                continue
            name, args = str(call.get("name", "")), dict(call.get("args") or {})
            if self.flaky:
                roll = _seeded(scenario_id, sample_index, turn, k).random()
                if roll < FLAKY_SKIP_RATE:
                    perturbed = True
                    continue
                if roll < FLAKY_SKIP_RATE + FLAKY_GARBLE_RATE and args:
                    args = _garble(args)
                    perturbed = True
            planned.append((name, args))
        return planned, perturbed

    def _reply(
        self,
        expectations: Mapping[str, Any],
        reference: list[dict[str, Any]],
        turn: int,
        this_turn: list[Message],
        perturbed: bool,
    ) -> str:
        results = [m for m in this_turn if m.role == "tool"]
        per_turn = {a.get("turn"): a.get("answer") for a in
                    expectations.get("reference_answers") or [] if isinstance(a, dict)}
        if per_turn.get(turn) and not perturbed:
            return str(per_turn[turn])
        later = [c for c in reference if (c.get("turn") or 0) > turn]
        if later and not results:
            # The reference does the work in a later turn: ask for what that call needs.
            needed = [" ".join(name_words(a)) for a in (later[0].get("args") or {})]
            if needed:
                return f"I can help with that. Could you tell me your {_join(needed)}?"
            return "I can help with that. Could you tell me a bit more?"
        answer = expectations.get("reference_answer")
        if answer and not later and not perturbed:
            return str(answer)
        if results and results[-1].is_error:
            return f"Sorry, that did not work: {_error_text(results[-1].content)}"
        if results:
            return f"Here is what I found: {results[-1].content}"
        return str(answer) if answer else "Happy to help. Is there anything else you need?"

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        raise ModelConfigError(
            f"mock:{self.name} plays the agent under test and gives no structured answers; "
            "use mock:simulator or mock:judge"
        )


def _since_last_user(messages: Sequence[Message]) -> list[Message]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return list(messages[i + 1 :])
    return list(messages)


def _garble(args: dict[str, Any]) -> dict[str, Any]:
    """Change one argument (the first in sorted order) to a plausible wrong value."""
    key = sorted(args)[0]
    value = args[key]
    if isinstance(value, bool):
        wrong: Any = not value
    elif isinstance(value, int | float):
        wrong = value + 1
    elif isinstance(value, str) and len(value) > 1:
        wrong = value[:-1]
    else:
        wrong = f"{value}?"
    return {**args, key: wrong}


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


def _error_text(content: str) -> str:
    try:
        data = load_json(content, "a tool result")
    except (ValueError, InputError):
        return content
    return str(data.get("error", content)) if isinstance(data, dict) else content


# --- the simulator -------------------------------------------------------------------------


class MockSimulator(MockBehaviour):
    """The offline simulated user (``mock:simulator``, ``mock:simulator-faulty``)."""

    VARIANTS = ("faulty",)

    def __init__(self, name: str = "simulator") -> None:
        self.name = name
        self.faulty = _variant(name, "simulator", self.VARIANTS) == "faulty"
        self.case: UserMoveCase | None = None

    def bind(self, context: object) -> MockBehaviour:
        """This simulator for one move of ``context`` when it is a :class:`UserMoveCase`."""
        if not isinstance(context, UserMoveCase):
            return self
        bound = MockSimulator(self.name)
        bound.case = context
        return bound

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        if self.case is None:
            raise _unbound(f"mock:{self.name}", "the user's profile and the conversation")
        visible = [{"role": m.role, "content": m.content} for m in self.case.conversation
                   if m.role in ("user", "assistant") and m.content.strip()]
        move = next_user_move(self.case.user.model_dump(mode="json"), visible)
        if self.faulty and faulty_epoch(request.sample_index):
            move = faulty_user_move(self.case, move)
        return response_model.model_validate(move)

    async def chat(self, request: ModelRequest) -> Message:
        raise ModelConfigError(
            f"mock:{self.name} answers only structured requests (the simulator's next move)"
        )


def plan_steps(user: Mapping[str, Any]) -> list[str]:
    """What the offline user says, in order: the opening message (else the goal), then the
    quoted sentence of each plan line that has one (``Then ask: "Will it rain?"``). Plan lines
    without a quotation are instructions only a real simulator can follow; they are skipped."""
    opening = str(user.get("opening_message") or user.get("goal") or "").strip()
    plan = user.get("plan")
    return [opening or "Hello.",
            *(line.quoted for line in plan_lines(plan if isinstance(plan, str) else None)
              if line.quoted)]


NOVICE_QUESTION = "Sorry, I'm new to this. Could you explain that in simpler words?"
EXPERT_SIGN_OFF = "Done."
SIGN_OFF = "Thanks, that's all I needed."


def next_user_move(
    user: Mapping[str, Any], conversation: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The offline user's next move as a ``SimulatorTurn``-shaped dict: reveal a known fact the
    agent just asked about, else (a NOVICE, once, after an answer) ask for a simpler
    explanation, else say the next unsaid plan step, else end with ``goal_met``."""
    said = [str(m.get("content", "")) for m in conversation if m.get("role") == "user"]
    last_agent = next(
        (str(m.get("content", "")) for m in reversed(conversation) if m.get("role") == "assistant"),
        "",
    )
    asked = _asked_fact(last_agent, user.get("known_facts") or {}, said)
    if asked is not None:
        key, value = asked
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return {"message": f"My {' '.join(name_words(key))} is {text}.", "done": False}
    preset = user.get("persona_preset")
    if (preset == "NOVICE" and last_agent.strip() and "?" not in last_agent
            and NOVICE_QUESTION not in said):
        return {"message": NOVICE_QUESTION, "done": False}
    for step in plan_steps(user):
        if not any(step in line for line in said):
            return {"message": step, "done": False}
    sign_off = EXPERT_SIGN_OFF if preset == "EXPERT" else SIGN_OFF
    return {"message": sign_off, "done": True, "stop_reason": "goal_met"}


def _asked_fact(
    agent_text: str, facts: Mapping[str, Any], said: Sequence[str]
) -> tuple[str, Any] | None:
    """The first known fact the agent's question names (all words of its key appear) and the
    user has not given yet."""
    if "?" not in agent_text:
        return None
    words = set(re.findall(r"[a-z0-9]+", agent_text.lower()))
    for key, value in facts.items():
        key_words = name_words(str(key))
        given = any(
            (value if isinstance(value, str) else json.dumps(value)) in line for line in said
        )
        if key_words and set(key_words) <= words and not given:
            return str(key), value
    return None


FAULTY_GIVE_UP = "Never mind, I'll sort it out myself."


def faulty_epoch(sample_index: int) -> bool:
    """Whether ``mock:simulator-faulty`` misbehaves in this epoch: every odd one."""
    return sample_index % 2 == 1


def _first_move(user: UserSpec, conversation: Sequence[Message]) -> bool:
    """Whether no user message of the conversation is the simulator's yet (the history's and
    the scenario's opening message are not)."""
    given = sum(1 for m in user.history_messages() if m.role == "user")
    given += int(user.history_opening() is not None) + int(user.opening_message is not None)
    return sum(1 for m in conversation if m.role == "user") <= given


def faulty_user_move(case: UserMoveCase, move: dict[str, Any]) -> dict[str, Any]:
    """``mock:simulator-faulty``'s move in an epoch where it misbehaves, from the move
    ``mock:simulator`` would make: it walks out (``user_gave_up``, :data:`FAULTY_GIVE_UP`)
    as soon as the agent's last turn waits on the user, and in its first move it also gives
    every known fact the agent has not asked for. Each is exactly what
    :func:`~harness.simulation.user_checks.simulator_findings` flags
    (``ended_while_agent_pending``, ``fact_volunteered``)."""
    user, conversation = case.user, case.conversation
    if any(m.role == "user" for m in conversation) and agent_pending(
            agent_said_last(conversation)):
        return {"message": FAULTY_GIVE_UP, "done": True, "stop_reason": "user_gave_up"}
    if move["done"] or not _first_move(user, conversation):
        return move
    blurted = unasked_facts(user, conversation)
    if not blurted:
        return move
    facts = " ".join(f"My {' '.join(name_words(key))} is {fact_text(user.known_facts[key])}."
                     for key in blurted)
    return {**move, "message": f"{move['message']} {facts}"}
