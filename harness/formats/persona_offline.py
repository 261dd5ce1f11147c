"""``mock:drafter``: drafts a simulated user's profile from a real conversation by word rules,
with no model, so ``harness import personas --offline`` and its tests run with no key.

Bound (``bind_offline``) to the :class:`~harness.formats.real_conversations.RealConversation`
being drafted, it answers a :class:`~harness.formats.persona_drafts.PersonaDraft`
deterministically from the user's own turns:

- ``goal``: the first question of the first user message (else its first sentence), cut to
  :data:`GOAL_WORDS` words;
- ``persona``: how the user writes (short, medium or long messages, words a turn, turns,
  whether they ask questions);
- ``known_facts``: every "my X is Y" (also "are", "was") in the user's turns: ``X`` in
  snake_case, ``Y`` up to the end of its clause;
- ``unknown_facts``: every "I don't know X" (also "do not", "not sure");
- ``plan``: with more than one user turn, one step per later turn, quoting its first
  sentence (``Then say: "..."``), which ``mock:simulator`` then says in turn.

Its drafts describe the conversation's surface, not its user: they show the pipeline, and
say nothing about what a model would draft.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from harness.errors import ModelConfigError, StructuredOutputError
from harness.formats.persona_drafts import MAX_PLAN_STEPS, PersonaDraft
from harness.formats.real_conversations import RealConversation
from harness.models.base import MockBehaviour
from harness.models.request import ModelRequest
from harness.models.types import Message, T

GOAL_WORDS = 30
FACT_VALUE_WORDS = 8
STEP_WORDS = 20

_SENTENCE = re.compile(r"[^.?!\n]+(?:[.?!]+|$)", re.MULTILINE)
# a value runs to the end of its clause; a dot inside a word (an e-mail address) is kept
_MY_FACT = re.compile(r"\bmy ((?:[a-z]+ ){0,3}[a-z]+) (?:is|are|was) "
                      r"((?:[^.,;:!?\n]|\.(?=\S))+)", re.IGNORECASE)
_NOT_KNOWN = re.compile(r"\bI(?: do not| don't| dont| don’t| am not sure|'m not sure|’m not "
                        r"sure)(?: know)? ((?:what|which|how|where|when|who|if|my|the)\b"
                        r"[^.,;:!?\n]*)", re.IGNORECASE)
_WORD = re.compile(r"\S+")


def _words(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed, cut to ``limit`` words (``…`` marks a cut)."""
    words = _WORD.findall(text)
    return " ".join(words[:limit]) + (" …" if len(words) > limit else "")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def _user_turns(conversation: RealConversation) -> list[str]:
    return [m.content for m in conversation.messages if m.role == "user" and m.content.strip()]


def _goal(first: str) -> str:
    sentences = _sentences(first) or [first]
    question = next((s for s in sentences if s.endswith("?")), sentences[0])
    return f"Get help with: {_words(question, GOAL_WORDS)}"


def _persona(turns: list[str]) -> str:
    per_turn = sum(len(_WORD.findall(t)) for t in turns) / len(turns)
    size = "short" if per_turn < 15 else "medium-length" if per_turn < 60 else "long"
    asks = " and asks questions" if any("?" in t for t in turns) else ""
    count = "one turn" if len(turns) == 1 else f"{len(turns)} turns"
    return (f"Someone writing to an AI assistant in {size} messages (about "
            f"{round(per_turn)} words a turn, {count}){asks}.")


def _facts(turns: list[str]) -> list[dict[str, str]]:
    facts: dict[str, str] = {}
    for turn in turns:
        for match in _MY_FACT.finditer(turn):
            name = "_".join(match.group(1).lower().split())[:64]
            value = _words(match.group(2), FACT_VALUE_WORDS)
            if value:
                facts.setdefault(name, value)
    return [{"name": name, "value": value} for name, value in facts.items()]


def _unknowns(turns: list[str]) -> list[str]:
    found = [_words(m.group(1), FACT_VALUE_WORDS) for t in turns for m in _NOT_KNOWN.finditer(t)]
    return list(dict.fromkeys(u for u in found if u))


def _plan(turns: list[str]) -> list[str]:
    steps = []
    for turn in turns[1:MAX_PLAN_STEPS + 1]:
        sentence = (_sentences(turn) or [turn])[0]
        steps.append(f'Then say: "{_words(sentence.replace(chr(34), chr(39)), STEP_WORDS)}"')
    return steps


def draft_from_words(conversation: RealConversation) -> PersonaDraft:
    """The draft of ``conversation`` by the rules of the module docstring. Raises
    :class:`~harness.errors.StructuredOutputError` when the rules make a draft that does not
    validate (a draft is never kept half-valid)."""
    turns = _user_turns(conversation)
    data = {"persona": _persona(turns), "goal": _goal(turns[0]), "known_facts": _facts(turns),
            "unknown_facts": _unknowns(turns), "plan": _plan(turns)}
    try:
        return PersonaDraft.model_validate(data)
    except ValidationError as err:
        raise StructuredOutputError(f"the word rules drafted no valid profile: "
                                    f"{err.errors()[0]['msg']}", model="mock:drafter") from None


class MockDrafter(MockBehaviour):
    """``mock:drafter`` (see the module docstring)."""

    def __init__(self, name: str = "drafter",
                 conversation: RealConversation | None = None) -> None:
        if name != "drafter":
            raise ModelConfigError(f"mock:drafter has no variant {name!r}",
                                   model=f"mock:{name}")
        self.conversation = conversation

    def bind(self, context: object) -> MockBehaviour:
        if isinstance(context, RealConversation):
            return MockDrafter(conversation=context)
        return self

    async def chat(self, request: ModelRequest) -> Message:
        raise ModelConfigError("mock:drafter only drafts personas (structured output); it "
                               "does not chat", model="mock:drafter")

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        if response_model is not PersonaDraft or self.conversation is None:
            raise ModelConfigError(
                "mock:drafter only drafts personas from a real conversation, which "
                "`harness import personas` binds it to", model="mock:drafter")
        draft = draft_from_words(self.conversation)
        assert isinstance(draft, response_model)  # checked above: the same class
        return draft
