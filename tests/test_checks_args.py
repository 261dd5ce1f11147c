"""Argument matching: JSON equality, the four modes, per-key overrides, custom matchers."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from harness.checks.args import (
    CheckConfigError,
    compile_matching,
    json_equal,
    load_matcher,
    merge_matching,
)
from harness.checks.spec import ArgMatching, ArgOverride


@pytest.mark.parametrize(
    ("expected", "actual", "kwargs", "equal"),
    [
        (1, 1.0, {}, True),  # JSON has one number type
        (True, 1, {}, False),  # but a boolean is not a number
        (1, True, {}, False),
        (False, 0, {}, False),
        ("1", 1, {}, False),
        (None, None, {}, True),
        (None, "", {}, False),
        ({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, {}, True),  # key order is irrelevant
        ([1, 2], [2, 1], {}, False),  # array order matters
        ([1, 2], [1, 2, 3], {}, False),
        ({"a": 1}, {"a": 1, "b": 2}, {}, False),
        ("Paris", "paris", {}, False),
        ("Paris", "PARIS", {"casefold": True}, True),
        ({"cities": ["Paris", "Rome"]}, {"cities": ["paris", "ROME"]}, {"casefold": True}, True),
        (2.0, 2.05, {"tolerance": 0.1}, True),
        (2.0, 2.1, {"tolerance": 0.1}, True),  # boundary despite float noise
        (2.0, 2.2, {"tolerance": 0.1}, False),
        ({"loc": [48.85, 2.35]}, {"loc": [48.8566, 2.3522]}, {"tolerance": 0.01}, True),
        (True, True, {"tolerance": 1.0}, True),
        (True, 1, {"tolerance": 1.0}, False),
    ],
)
def test_json_equal(expected: object, actual: object, kwargs: dict, equal: bool) -> None:
    assert json_equal(expected, actual, **kwargs) is equal


REF = {"city": "Paris", "days": 3}


@pytest.mark.parametrize(
    ("mode", "actual", "matched", "missing", "unexpected", "different"),
    [
        ("exact", {"city": "Paris", "days": 3}, True, [], [], []),
        ("exact", {"city": "Paris", "days": 3.0}, True, [], [], []),
        ("exact", {"city": "Paris"}, False, ["days"], [], []),
        ("exact", {"city": "Paris", "days": 3, "units": "C"}, False, [], ["units"], []),
        ("exact", {"city": "Rome", "days": 3}, False, [], [], ["city"]),
        ("subset", {"city": "Paris", "days": 3, "units": "C"}, True, [], [], []),
        ("subset", {"city": "Paris"}, False, ["days"], [], []),
        ("subset", {"city": "Rome", "days": 3, "units": "C"}, False, [], [], ["city"]),
        ("superset", {"city": "Paris"}, True, [], [], []),
        ("superset", {}, True, [], [], []),
        ("superset", {"city": "Paris", "units": "C"}, False, [], ["units"], []),
        ("superset", {"city": "Rome"}, False, [], [], ["city"]),
        ("ignore", {"anything": [1, 2]}, True, [], [], []),
        ("ignore", {}, True, [], [], []),
    ],
)
def test_modes(mode: str, actual: dict, matched: bool, missing: list, unexpected: list,
               different: list) -> None:
    diff = compile_matching(ArgMatching(mode=mode)).compare(REF, actual)  # type: ignore[arg-type]
    assert (diff.matched, diff.missing, diff.unexpected, diff.different) == (
        matched, missing, unexpected, different)


@pytest.mark.parametrize(
    ("override", "actual", "matched"),
    [
        (ArgOverride(ignore=True), {"city": "Paris"}, True),  # ignored key may be absent
        (ArgOverride(ignore=True), {"city": "Paris", "days": 99}, True),  # or differ
        (ArgOverride(tolerance=1), {"city": "Paris", "days": 4}, True),
        (ArgOverride(tolerance=1), {"city": "Paris", "days": 5}, False),
        (ArgOverride(case_insensitive=True), {"city": "Paris", "days": 3}, True),
    ],
)
def test_override_on_days(override: ArgOverride, actual: dict, matched: bool) -> None:
    matching = compile_matching(ArgMatching(mode="exact", overrides={"days": override}))
    assert matching.compare(REF, actual).matched is matched


def test_case_insensitive_applies_only_to_its_key() -> None:
    matching = compile_matching(
        ArgMatching(overrides={"city": ArgOverride(case_insensitive=True)}))
    assert matching.compare({"city": "Paris", "unit": "C"}, {"city": "PARIS", "unit": "C"}).matched
    assert not matching.compare({"city": "Paris", "unit": "C"},
                                {"city": "PARIS", "unit": "c"}).matched


@pytest.fixture
def matcher_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"custom_matchers_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        IMPORTS = []
        IMPORTS.append(1)

        def same_city(expected, actual):
            return expected.split(",")[0].strip().lower() == actual.split(",")[0].strip().lower()

        def explodes(expected, actual):
            raise RuntimeError("boom")

        NOT_CALLABLE = 3
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_custom_matcher_is_used_and_imported_once(matcher_module: str) -> None:
    spec = f"{matcher_module}:same_city"
    matching = compile_matching(ArgMatching(overrides={"city": ArgOverride(matcher=spec)}))
    assert matching.compare({"city": "Paris"}, {"city": "paris, France"}).matched
    assert not matching.compare({"city": "Paris"}, {"city": "Rome, Italy"}).matched
    assert load_matcher(spec) is load_matcher(spec)
    compile_matching(ArgMatching(overrides={"city": ArgOverride(matcher=spec)}))
    assert sys.modules[matcher_module].IMPORTS == [1]


def test_raising_matcher_counts_as_non_match_with_warning(matcher_module: str) -> None:
    matching = compile_matching(
        ArgMatching(overrides={"city": ArgOverride(matcher=f"{matcher_module}:explodes")}))
    diff = matching.compare({"city": "Paris"}, {"city": "Paris"})
    assert not diff.matched
    assert diff.different == ["city"]
    assert "RuntimeError" in diff.warnings[0] and "explodes" in diff.warnings[0]


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("no_such_module_xyz:f", "does not import"),
        ("math:no_such_function", "no attribute"),
        ("math", "package.module:function"),
        ("math:pi", "not callable"),
    ],
)
def test_matcher_that_does_not_load_is_a_clear_error(spec: str, fragment: str) -> None:
    with pytest.raises(CheckConfigError) as info:
        compile_matching(ArgMatching(overrides={"city": ArgOverride(matcher=spec)}),
                         field="tool_calls[2].match")
    assert info.value.field == "tool_calls[2].match.overrides.city.matcher"
    assert fragment in str(info.value) and spec in str(info.value)


def test_merge_matching_call_refines_scenario() -> None:
    base = ArgMatching(mode="subset", overrides={"city": ArgOverride(case_insensitive=True),
                                                 "days": ArgOverride(tolerance=1)})
    only_overrides = ArgMatching(overrides={"days": ArgOverride(ignore=True)})
    merged = merge_matching(base, only_overrides)
    assert merged.mode == "subset"  # the call did not set a mode
    assert merged.overrides["city"].case_insensitive and merged.overrides["days"].ignore
    assert merge_matching(base, ArgMatching(mode="exact")).mode == "exact"
    assert merge_matching(base, None) is base


@pytest.mark.parametrize(
    ("expected", "actual", "kwargs", "equal"),
    [
        (0.3, 0.1 + 0.2, {}, True),  # float noise is not a difference, even with no tolerance
        (0.3, 0.3 + 1e-9, {}, False),
        ("x", 5, {"casefold": True}, False),  # a wrong type is a miss, not a crash
        ({"a": 1}, [1], {}, False),
        ([1], {"a": 1}, {}, False),
        ([1], 1, {}, False),
        (1, [1], {}, False),
    ],
)
def test_json_equal_edges(expected: object, actual: object, kwargs: dict, equal: bool) -> None:
    assert json_equal(expected, actual, **kwargs) is equal


def test_ignore_mode_compares_names_only_even_for_shared_keys() -> None:
    diff = compile_matching(ArgMatching(mode="ignore")).compare({"a": 1, "b": 2}, {"a": 3})
    assert (diff.matched, diff.faulty_keys) == (True, [])


def test_an_override_without_tolerance_compares_numbers_exactly() -> None:
    matching = compile_matching(ArgMatching(overrides={"n": ArgOverride(case_insensitive=True)}))
    assert matching.values_match("n", 1, 1.5) == (False, None)
    assert matching.values_match("n", 1, 1.0) == (True, None)


def test_load_matcher_names_its_default_field() -> None:
    with pytest.raises(CheckConfigError) as raised:
        load_matcher("no_colon")
    assert raised.value.field == "matcher"
    assert str(raised.value) == (
        "matcher: custom matcher 'no_colon': expected 'package.module:function'")
