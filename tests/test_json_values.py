"""One JSON equality for every comparison (checks' arguments, mocked tools' rules, final
state, ADK export): the places that compared on their own used to disagree on float noise and
on mappings that are not dicts."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from harness.json_values import is_number, json_equal
from harness.scenarios.expressions import value_matches


@pytest.mark.parametrize("expected, actual, equal", [
    (1, 1.0, True),
    (True, 1, False),
    (0, False, False),
    (0.1 + 0.2, 0.3, True),  # float noise, not a different number
    (0.3, 0.31, False),
    ({"a": [1, {"b": "x"}]}, {"a": [1.0, {"b": "x"}]}, True),
    ({"a": 1}, {"a": 1, "b": 2}, False),
    ([1, 2], [2, 1], False),
    ("Paris", "paris", False),
    (None, None, True),
    (None, 0, False),
])
def test_json_equality(expected: object, actual: object, equal: bool) -> None:
    assert json_equal(expected, actual) is equal


def test_a_mapping_that_is_not_a_dict_compares_by_its_items() -> None:
    assert json_equal(MappingProxyType({"city": "Paris"}), {"city": "Paris"})


def test_tolerance_and_casefold_reach_every_depth() -> None:
    assert json_equal({"t": [20.0]}, {"t": [20.4]}, tolerance=0.5)
    assert not json_equal({"t": [20.0]}, {"t": [20.6]}, tolerance=0.5)
    assert json_equal({"c": ["PARIS"]}, {"c": ["paris"]}, casefold=True)


def test_a_mocked_tools_rule_and_a_check_agree_on_float_noise() -> None:
    # A rule's literal value is matched with the same equality as a check's arguments.
    assert value_matches({"total": 0.3}, {"total": 0.1 + 0.2})


def test_booleans_are_not_numbers() -> None:
    assert [is_number(v) for v in (1, 1.5, True, "1", None)] == [True, True, False, False, False]
