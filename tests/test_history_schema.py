"""``user.history`` in scenario files: the three forms read into the same messages, and every
malformed history named by file, line and field (``harness validate`` exits 2 with one line)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.models.types import Message, ToolCall
from harness.scenarios import parse_scenario, validate_paths
from harness.scenarios.history import HistoryError, detect_format, parse_history
from tests.helpers.cli import run_cli
from tests.helpers.history_forms import ANTHROPIC, OPENAI, OURS

# What each form of tests/helpers/history_forms.py reads into.
EXPECTED = [
    Message(role="user", content="Is order A-1 shipped?"),
    Message(role="assistant", content="Let me look.", tool_calls=(
        ToolCall(id="h1", name="get_order", arguments={"order_id": "A-1"}),)),
    Message(role="tool", tool_call_id="h1", name="get_order", content='{"status": "pending"}'),
    Message(role="assistant", content="Order A-1 is still pending."),
]

SCENARIO: dict[str, Any] = {
    "id": "orders",
    "user": {"goal": "know when order A-1 ships", "history": OURS},
    "agent": {"model": "mock:agent"},
    "tools": [{"name": "get_order",
               "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
               "returns": {"status": "shipped"}}],
}


def with_history(history: Any, **user: Any) -> dict[str, Any]:
    data = copy.deepcopy(SCENARIO)
    data["user"]["history"] = history
    data["user"].update(user)
    return data


@pytest.mark.parametrize(("history", "form"), [
    (OURS, "transcript"), (OPENAI, "openai"), (ANTHROPIC, "anthropic"),
])
def test_each_form_reads_into_the_same_messages(history: list[dict[str, Any]],
                                                form: str) -> None:
    assert detect_format(history) == form
    scenario = parse_scenario(with_history(history), check_imports=False)
    assert scenario.user.history_messages() == EXPECTED
    assert scenario.user.history_opening() is None
    assert scenario.user.history == history  # kept as written (for export)


def test_samples_jsonl_messages_are_a_history() -> None:
    # A transcript's messages as samples.jsonl writes them (every field, raw_arguments too).
    dumped = [m.model_dump(mode="json") for m in EXPECTED]
    assert parse_history(json.loads(json.dumps(dumped))) == EXPECTED


def test_plain_text_messages_need_no_form_and_a_final_user_message_opens_the_turn() -> None:
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
               {"role": "user", "content": "Where is order A-1?"}]
    user = parse_scenario(with_history(history), check_imports=False).user
    assert user.history_messages() == [Message(role="user", content="Hi"),
                                       Message(role="assistant", content="Hello!")]
    assert user.history_opening() == "Where is order A-1?"


def test_anthropic_results_and_text_in_one_user_turn_keep_their_order() -> None:
    history = [*ANTHROPIC[:2], {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "h1", "content": [{"type": "text", "text": "x"}],
         "is_error": True},
        {"type": "text", "text": "And A-2?"}]}, {"role": "assistant", "content": "Checking."}]
    messages = parse_history(history)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert messages[2] == Message(role="tool", tool_call_id="h1", name="get_order",
                                  content="x", is_error=True)


BAD: list[tuple[str, Any, dict[str, Any], str, str]] = [
    # (case, history, other user fields, field path, what the message says)
    ("empty", [], {}, "user.history", "an empty history"),
    ("not a list", {"role": "user"}, {}, "user.history", "Input should be a valid list"),
    ("unknown role", [{"role": "bot", "content": "hi"}], {},
     "user.history[0].role", "unknown role 'bot'"),
    ("system message", [{"role": "system", "content": "Be terse."}], {},
     "user.history[0].role", "put it in agent.system_prompt"),
    ("result without its call", [OURS[0], OURS[2]], {},
     "user.history[1].tool_call_id", "no earlier assistant message makes that call"),
    ("call id used twice",
     [OURS[0], {"role": "assistant", "tool_calls": [
         {"id": "h1", "name": "get_order"}, {"id": "h1", "name": "get_order"}]}], {},
     "user.history[1].tool_calls[1].id",
     "'h1' is used twice (first at history[1].tool_calls[0].id)"),
    ("call without its result", [*OURS[:2], OURS[3]], {},
     "user.history[1].tool_calls[0].id", "has no result before history[2]"),
    ("result answered twice", [*OURS[:3], OURS[2], OURS[3]], {},
     "user.history[3].tool_call_id", "already has a result"),
    ("mixed forms", [*OPENAI[:1], OPENAI[1], OURS[2], ANTHROPIC[3], ANTHROPIC[1]], {},
     "user.history[4].content[1].type",
     "a tool_use block is Anthropic form, but history[1].tool_calls[0].function"),
    ("unknown key", [{"role": "user", "content": "hi", "speaker": "me"}], {},
     "user.history[0].speaker", "unknown key 'speaker'"),
    ("anthropic block field", [ANTHROPIC[0], {"role": "assistant", "content": [
        {"type": "tool_use", "name": "get_order", "input": {}}]}], {},
     "user.history[1].content[0].id", "required field is missing"),
    ("empty assistant message", [OURS[0], {"role": "assistant", "content": ""}], {},
     "user.history[1]", "an assistant message needs text or tool calls"),
    ("empty anthropic message", [{"role": "user", "content": []},
                                 {"role": "assistant", "content": [ANTHROPIC[1]["content"][1]]}],
     {}, "user.history[0].content", "an empty message"),
    ("final user message and an opening message", [OURS[0]], {"opening_message": "Hi"},
     "user", "the history ends with a user message"),
    ("final user message and a script", [OURS[0]], {"script": ["Hi"]},
     "user", "drop script"),
]


@pytest.mark.parametrize(("history", "user", "field", "expected"),
                         [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_bad_histories_name_the_field(tmp_path: Path, history: Any, user: dict[str, Any],
                                      field: str, expected: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(with_history(history, **user), sort_keys=False),
                    encoding="utf-8")
    errors = validate_paths([path], check_imports=False).errors
    assert len(errors) == 1, [str(e) for e in errors]
    assert errors[0].field == field
    assert expected in errors[0].expected


def test_the_line_named_is_the_faulty_field(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(with_history([OURS[0], OURS[2]]), sort_keys=False),
                    encoding="utf-8")
    [error] = validate_paths([path], check_imports=False).errors
    assert isinstance(error.location, int)
    line = path.read_text(encoding="utf-8").splitlines()[error.location - 1]
    assert line.strip() == "tool_call_id: h1"


@pytest.mark.parametrize("command", ["validate", "run"])
def test_cli_prints_one_line_and_exits_2(tmp_path: Path, command: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(with_history([OURS[0], OURS[2]]), sort_keys=False),
                    encoding="utf-8")
    args = [command, path] + (["--offline", "--out", tmp_path / "run"] if command == "run" else [])
    result = run_cli(*args)
    assert result.returncode == 2
    output = result.stdout + result.stderr
    problem = [line for line in output.splitlines() if "user.history" in line]
    assert len(problem) == 1
    assert problem[0].endswith(
        f"{path}:8: user.history[1].tool_call_id: a tool result for call 'h1', but no earlier "
        "assistant message makes that call")
    assert "Traceback" not in output


def test_a_history_error_alone_is_a_history_error() -> None:
    with pytest.raises(HistoryError) as caught:
        parse_history([{"role": "tool", "tool_call_id": "x", "content": ""}])
    assert caught.value.path == (0, "tool_call_id")
    assert str(caught.value).startswith("history[0].tool_call_id: ")


def test_the_docs_examples_of_each_form_read_into_the_same_messages() -> None:
    docs = Path(__file__).resolve().parents[1] / "docs"
    page = (docs / "scenarios.md").read_text(encoding="utf-8")
    section = page[page.index("## Starting mid-conversation"):]
    blocks = re.findall(r"```yaml\n(history:.*?)```", section, flags=re.S)
    assert len(blocks) == 3
    read = []
    for block in blocks:
        history = yaml.safe_load(block)["history"]
        scenario = parse_scenario(with_history(history), check_imports=False)
        read.append(scenario.user.history_messages())
    assert [detect_format(yaml.safe_load(b)["history"]) for b in blocks] == [
        "transcript", "openai", "anthropic"]
    assert read[0] == read[1] == read[2] and len(read[0]) == 4
