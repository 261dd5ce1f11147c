"""The simulator checks (harness.simulation.user_checks.simulator_findings): one hand-written
conversation per kind of finding, flagged with exactly that kind at exactly that turn; clean
conversations and near misses with none; scripted users and histories; and no model call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.models.base import ChatModel
from harness.models.hub import ModelHub
from harness.models.types import Message, ToolCall
from harness.scenarios.schema import UserSpec
from harness.simulation.offline import MockSimulator, faulty_epoch, plan_steps
from harness.simulation.profile_text import plan_lines
from harness.simulation.user_checks import (
    EVIDENCE_CHARS,
    FINDING_KINDS,
    SCRIPTED_KINDS,
    agent_pending,
    declares_goal_met,
    quote,
    simulator_findings,
)

OPENING = "I want to cancel an order."
PLAN = '1. "I want to cancel an order."\n2. Then ask: "When is my refund coming?"'


def user(**fields: Any) -> UserSpec:
    base: dict[str, Any] = {
        "goal": "cancel my order and learn when the refund comes",
        "known_facts": {"order_number": "98765", "email": "jo@example.com"},
        "unknown_facts": ["the date of purchase"],
        "opening_message": OPENING,
        "plan": PLAN,
    }
    base.update(fields)
    return UserSpec.model_validate({k: v for k, v in base.items() if v is not None})


def talk(*turns: str) -> list[Message]:
    """User and agent alternately, the user first."""
    return [Message(role="user" if i % 2 == 0 else "assistant", content=text)
            for i, text in enumerate(turns)]


REFUND = "When is my refund coming?"


def kinds_and_turns(found: list[Any]) -> list[tuple[str, int]]:
    return [(f.kind, f.turn) for f in found]


# --- one conversation per kind, flagged exactly ------------------------------------------

CASES: dict[str, tuple[UserSpec, list[Message], str | None, list[tuple[str, int]]]] = {
    "fact_volunteered": (
        user(), talk(OPENING, "Sure, I can help with that.", f"My order number is 98765. {REFUND}",
                     "Refunds take 3 days."),
        "goal_met", [("fact_volunteered", 1)]),
    "fact_contradicted": (
        user(), talk(OPENING, "What is your order number?", f"My order number is 12345. {REFUND}",
                     "Refunds take 3 days."),
        "goal_met", [("fact_contradicted", 1)]),
    "unknown_fact_invented": (
        user(), talk(OPENING, "What was the date of purchase?", f"It was 2024-03-02. {REFUND}",
                     "Refunds take 3 days."),
        "goal_met", [("unknown_fact_invented", 1)]),
    "turn_after_goal_met": (
        user(), talk(OPENING, "It is cancelled.", f"{REFUND}", "In 3 days.",
                     "Great, that's all I needed.", "You're welcome.", "Actually, one more thing."),
        "goal_met", [("turn_after_goal_met", 3)]),
    "ended_while_agent_pending": (
        user(), talk(OPENING, "It is cancelled.", REFUND, "Let me check the refund status."),
        "goal_met", [("ended_while_agent_pending", 2)]),
    "role_confusion": (
        user(), talk(OPENING, "Done.", f"{REFUND} How can I help you today?", "In 3 days."),
        "goal_met", [("role_confusion", 1)]),
    "plan_step_skipped": (
        user(), talk(OPENING, "It is cancelled."), "goal_met", [("plan_step_skipped", 1)]),
    "opening_mismatch": (  # (a plan quoting the opening would also find its step 1 unsaid)
        user(plan=None), talk("Hi there, cancel something for me.", "Sure.", REFUND, "In 3 days."),
        "goal_met", [("opening_mismatch", 0)]),
}


def test_every_kind_has_a_case() -> None:
    assert sorted(CASES) == sorted(FINDING_KINDS)


@pytest.mark.parametrize("kind", list(CASES))
def test_each_kind_is_flagged_exactly_as_intended(kind: str) -> None:
    spec, messages, stop, expected = CASES[kind]
    found = simulator_findings(spec, messages, stop_reason=stop)
    assert kinds_and_turns(found) == expected
    assert all(f.evidence and len(f.evidence) < 3 * EVIDENCE_CHARS for f in found)


def test_the_evidence_quotes_the_words_and_says_what_they_break() -> None:
    spec, messages, stop, _ = CASES["fact_contradicted"]
    (found,) = simulator_findings(spec, messages, stop_reason=stop)
    assert "order_number" in found.evidence and "12345" in found.evidence
    assert "98765" in found.evidence  # the profile's value, against the one stated
    assert '"My order number is 12345' in found.evidence
    spec, messages, stop, _ = CASES["fact_volunteered"]
    (found,) = simulator_findings(spec, messages, stop_reason=stop)
    assert "did not ask" in found.evidence and "98765" in found.evidence


def test_a_long_turn_is_quoted_shortened_around_the_words_that_matter() -> None:
    text = "word " * 60 + "my order number is 12345 " + "tail " * 60
    at = text.index("12345")
    quoted = quote(text, at, at + 5)
    assert "12345" in quoted and quoted.startswith('"…') and quoted.endswith('…"')
    assert len(quoted) <= EVIDENCE_CHARS + 6


# --- clean conversations and near misses --------------------------------------------------

def test_a_clean_conversation_has_no_finding() -> None:
    messages = talk(OPENING, "Sure. What is your order number?", "It's 98765.",
                    "Order 98765 is cancelled.", REFUND,
                    "Within 3-5 days. Is there anything else I can help with?")
    assert simulator_findings(user(), messages, stop_reason="goal_met") == []


NEAR_MISSES: dict[str, tuple[list[Message], str | None]] = {
    # the fact given after the agent asked for it, in other words ("order id")
    "fact after the agent asked": (
        talk(OPENING, "Could you give me your order ID?", f"Sure, 98765. {REFUND}", "In 3 days."),
        "goal_met"),
    # 98765 inside a longer number, a longer token or a number with a thousands separator
    "a number inside a longer one": (
        talk(OPENING, "OK.", f"My reference is 1987650, or A-98765, or 98,765.2. {REFUND}",
             "In 3 days."), "goal_met"),
    # an ending after the agent's plain answer, and after a courtesy "anything else?"
    "an ending after a plain answer": (
        talk(OPENING, "It is cancelled.", REFUND, "Within 3 days. Anything else?"), "goal_met"),
    # the same value stated again, and the order number right after the key
    "the known value stated": (
        talk(OPENING, "What is your order number?", f"My order number is 98765. {REFUND}",
             "In 3 days."), "goal_met"),
    # the user says they do not know, in a few phrasings, even with a number nearby
    "not knowing": (
        talk(OPENING, "What was the date of purchase?", f"I don't remember, maybe 2 weeks ago? "
             f"{REFUND}", "In 3 days."), "goal_met"),
    # plain thanks is not a sign-off
    "thanks mid-task": (
        talk(OPENING, "It is cancelled.", f"Thanks! {REFUND}", "In 3 days."), "goal_met"),
    # an unsaid plan step when the agent failed: not the simulator's fault
    "an agent error": (talk(OPENING, "It is"), "agent_error"),
    # a key named but followed by words, not a value
    "a key without a value": (
        talk(OPENING, "What is your order number?", f"My order number, placed on 3 May, is "
             f"98765. {REFUND}", "In 3 days."), "goal_met"),
}


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_near_misses_are_not_flagged(name: str) -> None:
    messages, stop = NEAR_MISSES[name]
    assert simulator_findings(user(), messages, stop_reason=stop) == []


@pytest.mark.parametrize("text", ["I'm not sure.", "No idea, sorry.", "I can't remember it.",
                                  "I do not know that", "Honestly, I forgot."])
def test_not_knowing_in_several_phrasings_is_not_an_invention(text: str) -> None:
    messages = talk(OPENING, "What was the date of purchase?", f"{text} Order 98765 maybe? "
                    f"{REFUND}", "In 3 days.")
    found = simulator_findings(user(known_facts={}), messages, stop_reason="goal_met")
    assert found == []


@pytest.mark.parametrize(("text", "pending"), [
    ("Would you like me to cancel it?", True), ("Shall I go ahead.", True),
    ("Can you confirm the address", True), ("Let me check that for you.", True),
    ("One moment please.", True), ("I'll look into it.", True),
    ("Which order is it?", True), ("It is cancelled.", False),
    ("Done. Is there anything else I can help with?", False), ("", False),
])
def test_what_leaves_the_agent_waiting_on_the_user(text: str, pending: bool) -> None:
    assert agent_pending(text) is pending


@pytest.mark.parametrize(("text", "met"), [
    ("Thanks, that's all I needed.", True), ("That solves it!", True),
    ("Problem solved.", True), ("I'm all set, thank you.", True), ("Thanks, bye!", True),
    ("Goodbye.", True), ("Thanks!", False), ("That's all I needed, but can you also check?", False),
    ("Is that all I need to do?", False),
])
def test_what_declares_the_goal_met(text: str, met: bool) -> None:
    assert declares_goal_met(text) is met


def test_an_existing_conversation_ended_by_a_sign_off_while_the_agent_asked() -> None:
    messages = talk(OPENING, "Shall I also cancel the other order?", "Thanks, bye.")
    found = simulator_findings(user(plan=None), messages, stop_reason=None)
    assert kinds_and_turns(found) == [("ended_while_agent_pending", 1)]
    # the same ending after a plain answer is no finding
    calm = talk(OPENING, "Both orders are cancelled.", "Thanks, bye.")
    assert simulator_findings(user(plan=None), calm, stop_reason=None) == []


def test_an_action_announced_and_then_reported_on_is_done() -> None:
    messages = [Message(role="user", content=OPENING),
                Message(role="assistant", content="Let me check that for you.",
                        tool_calls=(ToolCall(id="c", name="get_order", arguments={}),)),
                Message(role="tool", tool_call_id="c", content="{}"),
                Message(role="assistant", content="Your order is cancelled.")]
    assert simulator_findings(user(plan=None), messages, stop_reason="goal_met") == []
    assert agent_pending("Let me check. Your order is cancelled.") is False
    # ... but the same announcement as the agent's last words is pending
    found = simulator_findings(user(plan=None), messages[:2], stop_reason="goal_met")
    assert kinds_and_turns(found) == [("ended_while_agent_pending", 1)]


def test_a_transfer_is_the_agents_ending_not_the_users() -> None:
    messages = talk(OPENING, "Shall I put you through to a person?")
    assert simulator_findings(user(plan=None), messages, stop_reason="transfer_requested") == []


def test_the_scenarios_own_opening_may_hold_a_fact() -> None:
    opening = "Cancel order 98765 please."
    messages = talk(opening, "Done.", REFUND, "In 3 days.")
    assert simulator_findings(user(opening_message=opening), messages, stop_reason="goal_met") == []
    # without an opening message the first turn is the simulator's own, and it is checked
    found = simulator_findings(user(opening_message=None, plan=None), messages,
                               stop_reason="goal_met")
    assert kinds_and_turns(found) == [("fact_volunteered", 0)]
    assert "before the agent's first turn" in found[0].evidence


def test_a_fact_already_said_is_not_volunteered_again() -> None:
    messages = talk(OPENING, "What is your order number?", "98765.", "Cancelled.",
                    f"So 98765 is cancelled? {REFUND}", "Yes. Refund in 3 days.")
    assert simulator_findings(user(), messages, stop_reason="goal_met") == []


def test_tool_calls_count_as_what_the_agent_said_only_when_the_user_sees_them() -> None:
    messages = [Message(role="user", content=OPENING),
                Message(role="assistant", content="",
                        tool_calls=(ToolCall(id="c", name="find", arguments={"q": "98765"}),)),
                Message(role="tool", tool_call_id="c", content="{}"),
                Message(role="assistant", content="Looking."),
                Message(role="user", content=f"It is 98765. {REFUND}"),
                Message(role="assistant", content="In 3 days.")]
    blind = simulator_findings(user(), messages, stop_reason="goal_met")
    assert kinds_and_turns(blind) == [("fact_volunteered", 1)]
    assert simulator_findings(user(sees_tool_calls=True), messages, stop_reason="goal_met") == []


@pytest.mark.parametrize("text", [
    'Assistant: your order is cancelled.', "As an AI, I cannot do that.",
    "I'm an AI assistant here to help.",
    '{"name": "cancel_order", "arguments": {"order_id": "A-1"}}',
    'here: {"tool_calls": []}'])
def test_role_confusion_in_its_forms(text: str) -> None:
    messages = talk(OPENING, "OK.", f"{text} {REFUND}", "In 3 days.")
    assert kinds_and_turns(simulator_findings(user(), messages, stop_reason="goal_met")) == [
        ("role_confusion", 1)]


# --- plans ---------------------------------------------------------------------------------

def test_plan_steps_are_read_as_the_offline_simulator_reads_them() -> None:
    plan = '1. Say hello\n- Then ask: "Will it rain?"\n\n* If told no, say "Thanks!"'
    lines = plan_lines(plan)
    assert [(line.text, line.quoted) for line in lines] == [
        ("Say hello", None), ('Then ask: "Will it rain?"', "Will it rain?"),
        ('If told no, say "Thanks!"', "Thanks!")]
    assert plan_steps({"goal": "g", "plan": plan}) == ["g", "Will it rain?", "Thanks!"]


def test_a_conditional_step_and_an_unquoted_step() -> None:
    plan = ('Mention that you are in a big hurry\nIf told it cannot be cancelled, ask: '
            '"Can you refund me then?"')
    rushed = talk(OPENING, "Cancelled.", "I'm in a big hurry, thanks.", "Done.")
    assert simulator_findings(user(plan=plan), rushed, stop_reason="goal_met") == []
    calm = talk(OPENING, "Cancelled.")
    found = simulator_findings(user(plan=plan), calm, stop_reason="goal_met")
    assert kinds_and_turns(found) == [("plan_step_skipped", 1)]
    assert "big hurry" in found[0].evidence


@pytest.mark.parametrize("stop", ["turn_limit", "agent_error", "time_limit", "tool_call_limit",
                                  "agent_step_limit", "transfer_requested"])
def test_no_plan_step_is_owed_when_the_conversation_ended_for_another_reason(stop: str) -> None:
    assert simulator_findings(user(), talk(OPENING, "Cancelled."), stop_reason=stop) == []


# --- scripted users and histories ----------------------------------------------------------

def test_a_scripted_user_gets_only_the_checks_of_its_profile() -> None:
    scripted = user(opening_message=None, plan=None,
                    script=["My order number is 98765.", "As an AI, thanks, bye."])
    messages = talk("My order number is 98765.", "Shall I cancel it?",
                    "As an AI, thanks, bye.", "Would you like anything else?")
    found = simulator_findings(scripted, messages, stop_reason="script_finished")
    # volunteering and the ending are the author's: only the role confusion is flagged
    assert kinds_and_turns(found) == [("role_confusion", 1)]
    assert {f.kind for f in found} <= SCRIPTED_KINDS
    contradicting = talk("My order number is 11111.", "OK.")
    found = simulator_findings(scripted, contradicting, stop_reason="script_finished")
    assert kinds_and_turns(found) == [("fact_contradicted", 0)]


def test_a_history_is_context_only_and_turns_count_from_the_live_conversation() -> None:
    history = [{"role": "user", "content": "As an AI, my order number is 11111."},
               {"role": "assistant", "content": "What is your order number?"}]
    spec = user(opening_message=None, plan=None, history=history)
    live = talk(f"It's 98765. {REFUND}", "In 3 days.")
    past = spec.history_messages()
    # the agent asked in the history, so the first live turn answers; the history's own
    # role confusion and contradiction are not checked
    assert simulator_findings(spec, live, stop_reason="goal_met", history=past) == []
    unasked = [*past[:1], Message(role="assistant", content="Hello.")]
    found = simulator_findings(spec, live, stop_reason="goal_met", history=unasked)
    assert kinds_and_turns(found) == [("fact_volunteered", 0)]


# --- no model call -------------------------------------------------------------------------

@pytest.fixture
def no_model_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every model class's calls, and the hub that makes models, fail the test."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a model was called")

    def subclasses(cls: type) -> list[type]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    for cls in subclasses(ChatModel):
        for name in ("chat", "structured"):
            if name in vars(cls):
                monkeypatch.setattr(cls, name, refuse)
    monkeypatch.setattr(ModelHub, "__init__", refuse)
    monkeypatch.setattr(MockSimulator, "structured", refuse)
    yield


@pytest.mark.usefixtures("no_model_calls")
def test_the_checks_make_no_model_call() -> None:
    for spec, messages, stop, expected in CASES.values():
        assert kinds_and_turns(simulator_findings(spec, messages, stop_reason=stop)) == expected


def test_the_faulty_simulator_misbehaves_in_odd_epochs() -> None:
    assert [faulty_epoch(i) for i in range(5)] == [False, True, False, True, False]
