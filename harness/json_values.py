"""JSON values: read with limits (from JSON or YAML), and compared as JSON.

Reading: every JSON text the harness parses with Python's parser (eval sets,
``test_config.json``, Vertex and transcript JSONL, sample scores, an HTTP agent's reply, a
model's tool arguments, its own stores) goes through :func:`load_json`, which refuses, before
parsing, a text nested deeper than :data:`MAX_DEPTH` or holding a number of more than
:data:`MAX_INTEGER_DIGITS` digits: Python's parser meets the first with a ``RecursionError``
and the second with a ``ValueError``, and a value nested almost as deep as Python's
recursion limit breaks whatever walks it next. pydantic's own JSON parser
(``model_validate_json``, used for stored samples and the workers' messages) bounds itself
(254 levels; a number past 4,300 digits is "out of range") with a ``ValidationError``, and
orjson (the fast path of ``harness stats``) stops at 1,024 levels and 64-bit integers, a line
it refuses going to :func:`load_json`; neither needs the check, which costs more than their
parse. YAML files
(scenarios, models, rubrics) are read by :func:`load_yaml`, which applies the same two limits
to the parsed document before its values are built, and a third, on what aliases expand to
(:data:`MAX_YAML_VALUES`: a few lines of anchors can stand for billions of values). The
refusal is one :class:`~harness.errors.InputError` naming the source, the line and the limit.

Comparing: numbers by value (``1`` is ``1.0``), booleans apart from numbers (``true`` is not
``1``), objects by keys and values, arrays in order. One behaviour for every place that
compares a tool's arguments, a mocked tool's rule, a state or an exported value, so they
cannot disagree."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError

if TYPE_CHECKING:  # PyYAML is imported when a YAML file is read, not by `harness --help`
    import yaml

# Outside JSON nested deeper than this is refused. Real eval sets, datasets and tool
# arguments stay within a dozen levels; the harness wraps an outside value in at most about
# ten levels of its own (a stored sample's transcript, message, tool call), so its own files
# are read with STORED_DEPTH, which stays under pydantic's JSON parser's limit (254).
MAX_DEPTH = 100
STORED_DEPTH = 200
# Python refuses to turn more digits than this into an int (sys.get_int_max_str_digits()).
MAX_INTEGER_DIGITS = 4300
# Values a YAML document may stand for once its aliases are expanded.
MAX_YAML_VALUES = 1_000_000

# A JSON string, and the tokens the limits look at (for the slow scan that says where).
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_TOKENS = re.compile(rf"{_STRING}|[\[\]{{}}]|\d{{{MAX_INTEGER_DIGITS + 1},}}")
# What is not a bracket or a quote (deleted), and a string once its escapes are gone.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_BARE_STRING = re.compile(rb'"[^"]*"')
# Every digit made "0", a long run of digits is one fast substring search.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"0" * 9)
_LONG_RUN = b"0" * (MAX_INTEGER_DIGITS + 1)


def load_json(text: str | bytes, source: str | Path, *, location: int | str | None = None,
              max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(text)`` once :func:`check_json_limits` has passed it.

    ``source`` (a file, or what the text came from) and ``location`` (the line of a JSONL
    file, or a record id) name it in the error. Raises :class:`InputError` when a limit is
    passed; a text that is not JSON raises :class:`json.JSONDecodeError` as before, for the
    caller to word."""
    check_json_limits(text, source, location=location, max_depth=max_depth)
    return json.loads(text)


def check_json_limits(text: str | bytes, source: str | Path, *,
                      location: int | str | None = None, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`InputError` naming ``source``, the line (``location`` when given, else
    the line in ``text``), the column and the limit when ``text`` nests arrays and objects
    more than ``max_depth`` deep or holds a number with more than
    :data:`MAX_INTEGER_DIGITS` digits in a row; return otherwise. Costs a few passes over
    the bytes in C (a fraction of the parse), the nesting measured only when the text has
    more brackets than ``max_depth``; the token-by-token scan runs only to say where."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    too_deep = (raw.count(b"[") + raw.count(b"{") > max_depth
                and _depth(_structure(raw)) > max_depth)
    if not too_deep and _LONG_RUN not in raw.translate(_DIGITS_AS_ZERO):
        return
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    depth = 0
    for match in _TOKENS.finditer(text):  # the slow scan, only to say where
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > max_depth:
                raise _limit_error(text, match.start(), source, location,
                                   f"JSON nested more than {max_depth} levels deep")
        elif token in ("]", "}"):
            depth -= 1
        elif not token.startswith('"'):
            raise _limit_error(text, match.start(), source, location,
                               f"a number of {len(token)} digits (at most "
                               f"{MAX_INTEGER_DIGITS})")


def _structure(raw: bytes) -> bytes:
    """The brackets of ``raw`` (JSON as bytes) that are outside strings, in order: escaped
    backslashes and quotes dropped, then all but brackets and quotes, then every pair of
    adjacent quotes (an empty string, or the end of one string and the start of the next:
    either way each bracket keeps the parity of the quotes before it), then the strings
    left. Each step is one pass in C, where a regular expression over every string of a large
    text took longer than parsing it."""
    raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    return _BARE_STRING.sub(b"", raw.translate(None, _NOT_STRUCTURE).replace(b'""', b""))


def _depth(brackets: bytes) -> int:
    """The deepest nesting of a string of brackets alone."""
    return max(itertools.accumulate(1 if c in b"[{" else -1 for c in brackets), default=0)


def _limit_error(text: str, at: int, source: str | Path, location: int | str | None,
                 limit: str) -> InputError:
    column = at - text.rfind("\n", 0, at)
    if location is None:
        location = text.count("\n", 0, at) + 1
    return InputError(source, None, f"{limit} at column {column}; refused before parsing",
                      location=location)


_YAML_INT = "tag:yaml.org,2002:int"


def load_yaml(text: str, source: str | Path, *, loader: type[yaml.SafeLoader] | None = None
              ) -> tuple[yaml.Node | None, Any]:
    """``(node, data)`` of the single YAML document in ``text``: the parsed node tree (for
    lines) and the values built from it by ``loader`` (a :class:`yaml.SafeLoader`), ``(None,
    None)`` for an empty document.

    Raises :class:`InputError` naming ``source`` and the line when the document nests more
    than :data:`MAX_DEPTH` deep, holds an integer of more than :data:`MAX_INTEGER_DIGITS`
    digits, or expands through aliases to more than :data:`MAX_YAML_VALUES` values, before
    any value is built; :class:`yaml.YAMLError` for text that is not YAML, as PyYAML does.
    ``loader`` defaults to libyaml's safe loader when PyYAML was built with it (its wheels
    are), else PyYAML's."""
    import yaml

    if loader is None:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    instance = loader(text)
    try:
        node = instance.get_single_node()
        if node is None:
            return None, None
        check_yaml_limits(node, source)
        return node, instance.construct_document(node)
    finally:
        instance.dispose()


def check_yaml_limits(root: yaml.Node, source: str | Path) -> None:
    """The limits of :func:`load_yaml` on a parsed YAML node tree. Each node is visited once
    (an alias is the node it names), so a document of anchors costs its size, not what it
    stands for."""
    import yaml

    height: dict[int, int] = {}  # levels of collections from a node down
    values: dict[int, int] = {}  # values it stands for, aliases expanded
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in height:
            continue
        kids = _children(node)
        if not children_done:
            stack.append((node, True))
            stack.extend((kid, False) for kid in kids if id(kid) not in height)
            continue
        if (isinstance(node, yaml.ScalarNode) and node.tag == _YAML_INT
                and sum(c.isdigit() for c in node.value) > MAX_INTEGER_DIGITS):
            raise _yaml_error(node, source, f"an integer of {len(node.value)} digits (at most "
                              f"{MAX_INTEGER_DIGITS})")
        # Levels of collections, as JSON counts them: a scalar adds none.
        height[key] = (0 if isinstance(node, yaml.ScalarNode)
                       else 1 + max((height[id(k)] for k in kids), default=0))
        values[key] = 1 + sum(values[id(k)] for k in kids)
        if values[key] > MAX_YAML_VALUES:
            raise _yaml_error(node, source, f"a YAML document that stands for more than "
                              f"{MAX_YAML_VALUES:,} values once its aliases are expanded")
    if height[id(root)] > MAX_DEPTH:
        raise _yaml_error(_deepest(root, height), source,
                          f"YAML nested more than {MAX_DEPTH} levels deep")


def _children(node: yaml.Node) -> list[yaml.Node]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _deepest(root: yaml.Node, height: dict[int, int]) -> yaml.Node:
    """The node :data:`MAX_DEPTH` + 1 levels down the deepest path from ``root``."""
    node = root
    for _ in range(MAX_DEPTH):
        node = max(_children(node), key=lambda kid: height[id(kid)])
    return node


def _yaml_error(node: yaml.Node, source: str | Path, limit: str) -> InputError:
    return InputError(source, None, f"{limit}; refused before reading its values",
                      location=node.start_mark.line + 1)


def is_number(value: Any) -> bool:
    """Whether ``value`` is a JSON number (a bool is not one, though Python says it is)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(
    expected: Any, actual: Any, *, tolerance: float = 0.0, casefold: bool = False
) -> bool:
    """JSON equality, with an optional absolute numeric ``tolerance`` and string
    ``casefold`` applied at every depth. ``true`` is not ``1``; ``1`` is ``1.0``."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if is_number(expected) and is_number(actual):
        diff = abs(expected - actual)
        # isclose absorbs float noise such as abs(2.1 - 2.0) = 0.10000000000000009 > 0.1
        return diff <= tolerance or math.isclose(diff, tolerance, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.casefold() == actual.casefold() if casefold else expected == actual
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(
            json_equal(v, actual[k], tolerance=tolerance, casefold=casefold)
            for k, v in expected.items()
        )
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        return len(expected) == len(actual) and all(
            json_equal(e, a, tolerance=tolerance, casefold=casefold)
            for e, a in zip(expected, actual, strict=True)
        )
    if type(expected) is not type(actual):
        return False
    return bool(expected == actual)
