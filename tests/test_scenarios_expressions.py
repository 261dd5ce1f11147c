"""The mock-tool expression language: matchers, templates and state paths."""

from __future__ import annotations

import pytest

from harness.scenarios.expressions import (
    TemplateError,
    UnresolvedReference,
    append_path,
    get_path,
    json_equal,
    mapping_matches,
    matcher_problems,
    render,
    set_path,
    template_problems,
    value_matches,
)

# --- matchers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual", "result"),
    [
        (1, 1.0, True),
        (True, 1, False),  # booleans are not numbers in JSON
        (0, False, False),
        ("Paris", "paris", False),
        ({"$regex": "(?i)^paris$"}, "PARIS", True),
        ({"$regex": "^par"}, "Paris", False),
        ({"$regex": "\\d"}, 5, False),  # a regex never matches a non-string
        ({"$in": ["a", "b"]}, "b", True),
        ({"$in": ["a", "b"]}, "c", False),
        ({"$gt": 3}, 4, True),
        ({"$gte": 3, "$lt": 5}, 5, False),
        ({"$lte": 2}, "1", False),
        ({"$not": {"$in": [1, 2]}}, 3, True),
        ([1, {"$gt": 1}], [1, 2], True),
        ([1, 2], [1, 2, 3], False),
        ({"a": 1}, {"a": 1, "b": 2}, True),  # nested mappings: subset by default
    ],
)
def test_value_matchers(expected: object, actual: object, result: bool) -> None:
    assert value_matches(expected, actual) is result


def test_subset_and_exact_argument_matching() -> None:
    args = {"city": "Paris", "days": 3}
    assert mapping_matches({"city": "Paris"}, args, exact=False)
    assert not mapping_matches({"city": "Paris"}, args, exact=True)
    assert mapping_matches({"city": "Paris", "days": 3}, args, exact=True)
    # nested mappings follow the mode too
    assert not value_matches({"a": 1}, {"a": 1, "b": 2}, exact=True)


def test_exists_operator_and_absent_keys() -> None:
    assert mapping_matches({"unit": {"$exists": False}}, {"city": "x"}, exact=False)
    assert not mapping_matches({"unit": {"$exists": False}}, {"unit": "c"}, exact=False)
    assert mapping_matches({"unit": {"$exists": True}}, {"unit": None}, exact=False)
    # an expected-absent key does not count against exact mode
    assert mapping_matches({"city": "x", "unit": {"$exists": False}}, {"city": "x"}, exact=True)
    # a missing key never equals a value, not even null
    assert not mapping_matches({"unit": None}, {}, exact=False)


def test_matcher_problems_name_what_is_wrong() -> None:
    assert matcher_problems({"city": {"$regex": "Par"}, "n": {"$in": [1]}}) == []
    assert "unknown matcher operator '$regx'" in matcher_problems({"x": {"$regx": "a"}})[0]
    assert "not a valid regular expression" in matcher_problems({"x": {"$regex": "("}})[0]
    assert "$in needs a list" in matcher_problems({"x": {"$in": "ab"}})[0]
    assert "$gt needs a number" in matcher_problems({"x": {"$gt": "3"}})[0]
    assert "mixes operators" in matcher_problems({"x": {"$in": [1], "y": 2}})[0]
    assert "$exists needs true or false" in matcher_problems({"x": {"$not": {"$exists": 1}}})[0]


def test_json_equal_is_structural() -> None:
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not json_equal({"a": [1]}, {"a": [1], "b": None})
    assert not json_equal([True], [1])


# --- templates -----------------------------------------------------------------------------

SCOPE = {
    "args": {"order_id": "A-1", "qty": 2, "note": "${state.secret}"},
    "state": {"orders": {"A-1": {"status": "pending", "total": 9.5}}, "secret": "s3cret"},
}


def test_whole_reference_keeps_its_json_type() -> None:
    assert render("${args.qty}", SCOPE) == 2
    assert render("${state.orders.${args.order_id}}", SCOPE) == {"status": "pending", "total": 9.5}


def test_reference_inside_text_is_interpolated() -> None:
    assert render("order ${args.order_id} costs ${state.orders.A-1.total}", SCOPE) == (
        "order A-1 costs 9.5"
    )
    assert render({"k_${args.order_id}": ["${args.qty}", "x"]}, SCOPE) == {"k_A-1": [2, "x"]}


def test_substituted_values_are_not_templates_again() -> None:
    # An argument holding "${state.secret}" must not read the state.
    assert render("note: ${args.note}", SCOPE) == "note: ${state.secret}"
    assert render("$${args.qty}", SCOPE) == "${args.qty}"


def test_rendered_values_are_copies() -> None:
    value = render("${state.orders.A-1}", SCOPE)
    value["status"] = "changed"
    assert SCOPE["state"]["orders"]["A-1"]["status"] == "pending"


def test_unresolved_and_malformed_templates() -> None:
    with pytest.raises(UnresolvedReference, match="state.orders.B-2"):
        render("${state.orders.B-2}", SCOPE)
    with pytest.raises(UnresolvedReference):
        render("${args.missing}", SCOPE)
    with pytest.raises(TemplateError, match="unclosed"):
        render("${args.qty", SCOPE)


def test_template_problems_check_roots_arguments_and_state() -> None:
    assert template_problems("${args.city}", argument_names={"city"}, has_state=False) == []
    assert (
        "must start with 'args.' or 'state.'"
        in template_problems("${city}", argument_names=None, has_state=False)[0]
    )
    assert (
        "names argument 'cty'"
        in template_problems({"a": "${args.cty}"}, argument_names={"city"}, has_state=False)[0]
    )
    assert (
        "declares no 'state'"
        in template_problems("${state.x}", argument_names=None, has_state=False)[0]
    )
    assert "unclosed" in template_problems(["${args.x"], argument_names=None, has_state=True)[0]


# --- state paths ---------------------------------------------------------------------------


def test_state_paths_get_set_append() -> None:
    state: dict[str, object] = {"orders": {"A": {"status": "pending"}}, "log": [{"n": 1}]}
    assert get_path(state, "log.0.n") == 1
    set_path(state, "orders.A.status", "cancelled")
    set_path(state, "orders.B.status", "new")  # intermediate mappings are created
    append_path(state, "log", {"n": 2})
    append_path(state, "events", "x")  # a missing list is created
    assert state == {
        "orders": {"A": {"status": "cancelled"}, "B": {"status": "new"}},
        "log": [{"n": 1}, {"n": 2}],
        "events": ["x"],
    }
    with pytest.raises(KeyError):
        get_path(state, "orders.C")
    with pytest.raises(KeyError):
        set_path(state, "orders.A.status.deeper", 1)  # a string has no keys
    with pytest.raises(KeyError):
        append_path(state, "orders", 1)  # not a list
