"""Mocked tools at run time: answers, argument validation, state, handlers, limits, records."""

from __future__ import annotations

import itertools
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError
from harness.models.types import ToolCall
from harness.scenarios.schema import Scenario, ToolDef
from harness.tools import Toolbox

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def tool(**fields: Any) -> ToolDef:
    fields.setdefault("name", "t")
    fields.setdefault("parameters", CITY)
    return ToolDef.model_validate(fields)


def box(*tools: ToolDef, **kwargs: Any) -> Toolbox:
    return Toolbox(list(tools), **kwargs)


def test_fixed_value_and_content_text() -> None:
    tb = box(tool(returns={"temp_c": 18}), tool(name="s", returns="plain text"))
    result = tb.call("t", city="Paris")
    assert (result.value, result.is_error, result.content) == (
        {"temp_c": 18},
        False,
        '{"temp_c": 18}',
    )
    assert tb.call("s", city="x").content == "plain text"  # strings go to the model as they are


def test_rules_first_match_wins_with_default() -> None:
    tb = box(
        tool(
            parameters={
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
            rules=[
                {"when": {"city": "Paris", "days": 3}, "match": "exact", "returns": "exact"},
                {"when": {"city": {"$regex": "(?i)^paris$"}}, "returns": "regex"},
                {"when": {"city": "Paris"}, "returns": "never reached"},
                {"when": {"days": {"$gte": 5}}, "returns": "long"},
            ],
            default={"error": "unknown city ${args.city}"},
        )
    )
    assert tb.call("t", city="Paris", days=3).value == "exact"
    assert tb.call("t", city="Paris", days=4).value == "regex"  # exact rule needs exactly these
    assert tb.call("t", city="PARIS").value == "regex"
    assert tb.call("t", city="Oslo", days=6).value == "long"
    missed = tb.call("t", city="Oslo")
    assert missed.is_error and missed.error == "injected"
    assert missed.value == {"error": "unknown city Oslo"}


def test_sequences_repeat_last_cycle_or_error() -> None:
    seq = [{"returns": 1}, {"error": "flaky"}, {"returns": 3}]
    repeat = box(tool(sequence=seq))
    cycle = box(tool(sequence=seq, after_sequence="cycle"))
    error = box(tool(sequence=seq, after_sequence="error"))

    def run(tb: Toolbox) -> list[Any]:
        out = []
        for _ in range(5):
            r = tb.call("t", city="x")
            out.append(r.error or r.value)
        return out

    assert run(repeat) == [1, "injected", 3, 3, 3]
    assert run(cycle) == [1, "injected", 3, 1, "injected"]
    assert run(error) == [1, "injected", 3, "sequence_exhausted", "sequence_exhausted"]


def test_a_sequence_inside_a_rule_counts_only_calls_that_reach_it() -> None:
    tb = box(
        tool(
            rules=[
                {"when": {"city": "Paris"}, "sequence": [{"error": "timeout"}, {"returns": 18}]}
            ],
            default={"returns": 0},
        )
    )
    assert tb.call("t", city="Oslo").value == 0
    assert tb.call("t", city="Paris").error == "injected"
    assert tb.call("t", city="Oslo").value == 0
    assert tb.call("t", city="Paris").value == 18


def test_invalid_arguments_are_a_recorded_tool_error() -> None:
    dates = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "day": {"type": "string", "format": "date"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    tb = box(tool(parameters=dates, returns="ok"))
    missing = tb.call("t", day="2024-01-01")
    assert missing.error == "invalid_arguments"
    assert "'city' is a required property" in missing.value["error"]
    assert tb.call("t", city="x", day="not a date").error == "invalid_arguments"  # formats checked
    assert tb.call("t", city="x", extra=1).error == "invalid_arguments"
    assert tb.call("t", city="x", day="2024-01-01").value == "ok"
    garbled = tb.execute(ToolCall(id="c9", name="t", raw_arguments='{"city": "Par'))
    assert garbled.error == "invalid_arguments" and "not a JSON object" in garbled.value["error"]
    assert [r.error for r in tb.records] == [
        "invalid_arguments",
        "invalid_arguments",
        "invalid_arguments",
        None,
        "invalid_arguments",
    ]
    assert tb.records[-1].raw_arguments == '{"city": "Par'


def test_unknown_and_hidden_tools_answer_with_an_error() -> None:
    tb = box(tool(returns=1), tool(name="hidden", returns=2), visible=["t"])
    assert [s.name for s in tb.specs] == ["t"]
    for name in ("nope", "hidden"):
        result = tb.call(name, city="x")
        assert result.error == "unknown_tool"
        assert "available tools: t" in result.value["error"]


STATE = {
    "orders": {"A-1": {"status": "pending", "total": 9.5}, "A-2": {"status": "shipped"}},
    "log": [],
}
ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}


def orders_scenario() -> Scenario:
    return Scenario.model_validate(
        {
            "id": "orders",
            "user": {"goal": "cancel", "script": ["cancel A-1"]},
            "agent": {"model": "mock:agent"},
            "state": STATE,
            "tools": [
                {
                    "name": "cancel",
                    "parameters": ORDER,
                    "rules": [
                        {
                            "when_state": {"orders.${args.order_id}.status": "pending"},
                            "returns": {"refund": "${state.orders.${args.order_id}.total}"},
                            "set_state": {"orders.${args.order_id}.status": "cancelled"},
                            "append_state": {"log": "cancel ${args.order_id}"},
                        },
                        {
                            "when_state": {"orders.${args.order_id}": {"$exists": True}},
                            "error": "order ${args.order_id} is ${state.orders.${args.order_id}"
                            ".status}",
                        },
                    ],
                    "default": {"error": "no order ${args.order_id}"},
                },
                {"name": "get", "parameters": ORDER, "returns": "${state.orders.${args.order_id}}"},
            ],
            "limits": {"max_tool_calls": 10},
        }
    )


def test_stateful_tools_read_and_change_the_state() -> None:
    scenario = orders_scenario()
    tb = Toolbox.for_scenario(scenario)
    assert tb.call("cancel", order_id="A-1").value == {"refund": 9.5}
    assert tb.call("cancel", order_id="A-1").value == {"error": "order A-1 is cancelled"}
    assert tb.call("cancel", order_id="A-2").value == {"error": "order A-2 is shipped"}
    assert tb.call("cancel", order_id="B-9").value == {"error": "no order B-9"}
    assert tb.state == {
        "orders": {"A-1": {"status": "cancelled", "total": 9.5}, "A-2": {"status": "shipped"}},
        "log": ["cancel A-1"],
    }
    # A missing state path in a fixed answer is a recorded tool error, not a crash.
    assert tb.call("get", order_id="Z-0").error == "unresolved_reference"


def test_state_is_per_episode() -> None:
    scenario = orders_scenario()
    first, second = Toolbox.for_scenario(scenario), Toolbox.for_scenario(scenario)
    first.call("cancel", order_id="A-1")
    result = first.call("get", order_id="A-1")
    result.value["status"] = "tampered"  # results are copies, not views of the state
    assert first.state is not None and first.state["orders"]["A-1"]["status"] == "cancelled"
    assert second.state is not None and second.state["orders"]["A-1"]["status"] == "pending"
    assert scenario.state == STATE and first.initial_state == STATE


@pytest.fixture
def handler_module(tmp_path: Path) -> tuple[str, Path]:
    """A module of tool handlers in a scenario directory, under a unique name."""
    name = f"handlers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            """
            from harness.tools import ToolError

            def counter(state, args):
                state["count"] = state.get("count", 0) + args.get("step", 1)
                return {"count": state["count"]}

            def refuse(state, args):
                state["count"] = 999  # changed, then rolled back because the call fails
                raise ToolError("not allowed for " + args["city"])

            def crash(state, args):
                state["count"] = 999
                return 1 / 0

            def not_json(state, args):
                return {1, 2}
            """
        )
    )
    return name, tmp_path


def test_python_handlers_change_state_and_fail_cleanly(handler_module: tuple[str, Path]) -> None:
    name, directory = handler_module
    params = {
        "type": "object",
        "properties": {"step": {"type": "integer"}, "city": {"type": "string"}},
    }
    tb = Toolbox(
        [
            tool(name="count", parameters=params, handler=f"{name}:counter"),
            tool(name="refuse", handler=f"{name}:refuse"),
            tool(name="crash", parameters=params, handler=f"{name}:crash"),
            tool(name="bad", parameters=params, handler=f"{name}:not_json"),
        ],
        state={"count": 0},
        base_dir=directory,
    )
    assert tb.call("count", step=2).value == {"count": 2}
    refused = tb.call("refuse", city="Oslo")
    assert (refused.error, refused.value) == ("injected", {"error": "not allowed for Oslo"})
    crashed = tb.call("crash")
    assert crashed.error == "handler_error" and "ZeroDivisionError" in crashed.value["error"]
    bad = tb.call("bad")
    assert bad.error == "handler_error" and "not JSON" in bad.value["error"]
    assert tb.state == {"count": 2}  # failed calls left the state as it was


def test_a_handler_that_does_not_import_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not import"):
        Toolbox([tool(handler="no_such_module_xyz:fn")], base_dir=tmp_path)


def test_tool_call_limit_refuses_further_calls() -> None:
    tb = box(tool(returns=1), max_calls=2)
    results = [tb.call("t", city="x") for _ in range(3)]
    assert [r.error for r in results] == [None, None, "tool_call_limit"]
    assert tb.limit_reached
    assert len(tb.records) == 3


def test_records_keep_order_turns_steps_and_timing() -> None:
    ticks = itertools.count()
    tb = box(tool(returns=1), clock=lambda: float(next(ticks)), started_at=0.0)
    tb.execute(ToolCall(id="a", name="t", arguments={"city": "x"}), turn=0, step=0)
    tb.execute(ToolCall(id="b", name="nope", arguments={}), turn=1, step=2)
    first, second = tb.records
    assert (first.call_id, first.turn, first.step, first.result) == ("a", 0, 0, 1)
    assert (second.call_id, second.turn, second.step, second.is_error) == ("b", 1, 2, True)
    # the fake clock ticks once at the start and once at the end of each call
    assert (first.started_s, first.latency_s, second.started_s) == (0.0, 1.0, 2.0)
