"""The small expression language of mocked tools: argument/state matchers, templates and
state paths. Pure functions, used twice: to check a scenario when it is loaded and to answer
tool calls at run time.

Matchers (the values of a rule's ``when`` and ``when_state``):

- a plain JSON value matches an equal value (``1`` equals ``1.0``; ``true`` never equals ``1``);
  a mapping matches a mapping holding those keys (``subset`` mode) or exactly those keys
  (``exact`` mode), recursively; a list matches a list of the same length, item by item;
- an operator mapping, whose keys all start with ``$``: ``$regex`` (a Python regular expression
  searched in a string), ``$in`` (one of the listed values), ``$exists`` (the key is present or
  absent), ``$gt``/``$gte``/``$lt``/``$lte`` (numbers), ``$not`` (negates a matcher). Several
  operators in one mapping must all hold.

Templates (strings in ``returns``, ``error``, ``set_state``, ``append_state`` and in state
paths): ``${args.NAME}`` is an argument, ``${state.PATH}`` a value of the scenario state.
References nest (``${state.orders.${args.order_id}}``). A string that is exactly one reference
is replaced by the referenced value with its JSON type; a reference inside a longer string is
replaced by its text. ``$${`` writes a literal ``${``. Substituted values are never re-read as
templates, so an argument cannot inject references.

State paths are dot-separated keys (``orders.A-1001.status``); a number indexes a list.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.json_values import is_number, json_equal

OPERATORS: frozenset[str] = frozenset(
    {"$regex", "$in", "$exists", "$gt", "$gte", "$lt", "$lte", "$not"}
)
REFERENCE_ROOTS: tuple[str, ...] = ("args", "state")


class TemplateError(ValueError):
    """A template that cannot be parsed (e.g. an unclosed ``${``)."""


class UnresolvedReference(LookupError):
    """A reference whose target does not exist at run time (a missing argument or state key)."""

    def __init__(self, reference: str) -> None:
        self.reference = reference
        super().__init__(f"${{{reference}}} does not resolve")


# --- matchers ------------------------------------------------------------------------------


def is_operator(value: Any) -> bool:
    """True for a mapping whose keys all start with ``$`` (an operator matcher)."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(k, str) and k.startswith("$") for k in value)
    )


def matcher_problems(expected: Any) -> list[str]:
    """Return what is wrong with a matcher (empty when it is valid): unknown operators,
    regular expressions that do not compile, operands of the wrong type, and mappings that
    mix operators with plain keys."""
    problems: list[str] = []
    if isinstance(expected, Mapping):
        keys = [k for k in expected if isinstance(k, str)]
        dollar = [k for k in keys if k.startswith("$")]
        if dollar and len(dollar) != len(expected):
            problems.append(
                f"a matcher mixes operators ({', '.join(dollar)}) with plain keys; "
                "use either operators or a mapping of values"
            )
        elif dollar:
            for op, operand in expected.items():
                problems.extend(_operator_problems(op, operand))
        else:
            for value in expected.values():
                problems.extend(matcher_problems(value))
    elif isinstance(expected, list):
        for value in expected:
            problems.extend(matcher_problems(value))
    return problems


def _operator_problems(op: str, operand: Any) -> list[str]:
    if op not in OPERATORS:
        return [f"unknown matcher operator {op!r}; expected one of {', '.join(sorted(OPERATORS))}"]
    if op == "$regex":
        if not isinstance(operand, str):
            return ["$regex needs a string (a Python regular expression)"]
        try:
            re.compile(operand)
        except re.error as err:
            return [f"$regex {operand!r} is not a valid regular expression: {err}"]
    elif op == "$in" and not isinstance(operand, list):
        return ["$in needs a list of values"]
    elif op == "$exists" and not isinstance(operand, bool):
        return ["$exists needs true or false"]
    elif op in ("$gt", "$gte", "$lt", "$lte") and not is_number(operand):
        return [f"{op} needs a number"]
    elif op == "$not":
        return matcher_problems(operand)
    return []


def value_matches(expected: Any, actual: Any, *, present: bool = True, exact: bool = False) -> bool:
    """Whether ``actual`` satisfies the matcher ``expected``. ``present`` is false when the
    value is missing altogether (only ``{$exists: false}`` or ``{$not: ...}`` can match then).
    ``exact`` makes mappings match only with exactly the same keys."""
    if is_operator(expected):
        return all(_operator_holds(op, arg, actual, present, exact) for op, arg in expected.items())
    if not present:
        return False
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return False
        return mapping_matches(expected, actual, exact=exact)
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(value_matches(e, a, exact=exact) for e, a in zip(expected, actual, strict=True))
        )
    return json_equal(expected, actual)


def mapping_matches(expected: Mapping[str, Any], actual: Mapping[str, Any], *, exact: bool) -> bool:
    """Every key of ``expected`` matches in ``actual``; with ``exact``, ``actual`` has no other
    keys (keys expected to be absent, ``{$exists: false}``, do not count)."""
    for key, matcher in expected.items():
        if not value_matches(matcher, actual.get(key), present=key in actual, exact=exact):
            return False
    if exact:
        allowed = {k for k, m in expected.items() if not _expects_absent(m)}
        if set(actual) - allowed:
            return False
    return True


def _expects_absent(matcher: Any) -> bool:
    return is_operator(matcher) and matcher.get("$exists") is False


def _operator_holds(op: str, arg: Any, actual: Any, present: bool, exact: bool) -> bool:
    if op == "$exists":
        return present is bool(arg)
    if op == "$not":
        return not value_matches(arg, actual, present=present, exact=exact)
    if not present:
        return False
    if op == "$regex":
        return isinstance(actual, str) and re.search(arg, actual) is not None
    if op == "$in":
        return any(json_equal(option, actual) for option in arg)
    if not is_number(actual):
        return False
    if op == "$gt":
        return bool(actual > arg)
    if op == "$gte":
        return bool(actual >= arg)
    if op == "$lt":
        return bool(actual < arg)
    return bool(actual <= arg)  # $lte


# --- templates -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """``${...}``: its path is itself template parts, so references can nest."""

    parts: tuple[str | Reference, ...]


Template = tuple[str | Reference, ...]


def parse_template(text: str) -> Template:
    """Split a string into literal text and references. Raises :class:`TemplateError` on an
    unclosed ``${`` or an empty reference."""
    parts, end = _parse(text, 0, nested=False)
    assert end == len(text)
    return parts


def _parse(text: str, i: int, *, nested: bool) -> tuple[Template, int]:
    parts: list[str | Reference] = []
    buf: list[str] = []

    def flush() -> None:
        if buf:
            parts.append("".join(buf))
            buf.clear()

    while i < len(text):
        if text.startswith("$${", i):
            buf.append("${")
            i += 3
        elif text.startswith("${", i):
            flush()
            inner, i = _parse(text, i + 2, nested=True)
            if not inner:
                raise TemplateError(f"empty reference '${{}}' in {text!r}")
            parts.append(Reference(inner))
        elif nested and text[i] == "}":
            flush()
            return tuple(parts), i + 1
        else:
            buf.append(text[i])
            i += 1
    if nested:
        raise TemplateError(f"unclosed '${{' in {text!r}")
    flush()
    return tuple(parts), i


def template_problems(value: Any, *, argument_names: set[str] | None, has_state: bool) -> list[str]:
    """Check every template string inside ``value`` (keys included): syntax, roots
    (``args``/``state``), arguments the tool declares (when ``argument_names`` is known) and
    that ``state`` exists when it is referenced."""
    problems: list[str] = []
    for text in _strings(value):
        try:
            parts = parse_template(text)
        except TemplateError as err:
            problems.append(str(err))
            continue
        for ref in _references(parts):
            problems.extend(_reference_problems(ref, argument_names, has_state))
    return problems


def template_references(value: Any) -> list[Reference]:
    """Every reference in the template strings inside ``value`` (mapping keys included),
    nested ones too, in order. Raises :class:`TemplateError` when a string does not parse."""
    return [ref for text in _strings(value) for ref in _references(parse_template(text))]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _references(parts: Template) -> list[Reference]:
    out: list[Reference] = []
    for part in parts:
        if isinstance(part, Reference):
            out.append(part)
            out.extend(_references(part.parts))
    return out


def _reference_problems(
    ref: Reference, argument_names: set[str] | None, has_state: bool
) -> list[str]:
    head = ref.parts[0]
    if not isinstance(head, str):
        return ["a reference must start with 'args.' or 'state.'"]
    root, _, rest = head.partition(".")
    if root not in REFERENCE_ROOTS:
        return [f"reference '${{{head}...}}' must start with 'args.' or 'state.'"]
    if root == "state" and not has_state:
        return [f"'${{{head}...}}' reads the state, but the scenario declares no 'state'"]
    if root == "args" and argument_names is not None and len(ref.parts) == 1:
        name = rest.split(".", 1)[0]
        if name and name not in argument_names:
            return [
                f"'${{{head}}}' names argument {name!r}, which the tool's parameters do not "
                f"declare ({', '.join(sorted(argument_names)) or 'none'})"
            ]
    return []


def render(value: Any, scope: Mapping[str, Any]) -> Any:
    """Substitute references in every string of ``value`` (mapping keys included) from
    ``scope`` (``{"args": ..., "state": ...}``). Returns new containers; referenced values are
    deep-copied. Raises :class:`UnresolvedReference` or :class:`TemplateError`."""
    if isinstance(value, str):
        return render_string(value, scope)
    if isinstance(value, Mapping):
        return {str(render_string(k, scope)): render(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, scope) for v in value]
    return value


def render_string(text: str, scope: Mapping[str, Any]) -> Any:
    """Render one template string (see :func:`render`)."""
    if "${" not in text:
        return text
    parts = parse_template(text)
    if len(parts) == 1 and isinstance(parts[0], Reference):
        return copy.deepcopy(_resolve(parts[0], scope))
    return "".join(_as_text(p, scope) for p in parts)


def _as_text(part: str | Reference, scope: Mapping[str, Any]) -> str:
    if isinstance(part, str):
        return part
    value = _resolve(part, scope)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _resolve(ref: Reference, scope: Mapping[str, Any]) -> Any:
    path = "".join(_as_text(p, scope) for p in ref.parts)
    root, _, rest = path.partition(".")
    if root not in scope:
        raise UnresolvedReference(path)
    try:
        return get_path(scope[root], rest) if rest else scope[root]
    except KeyError:
        raise UnresolvedReference(path) from None


# --- state paths ---------------------------------------------------------------------------


def split_path(path: str) -> list[str]:
    """``"a.b.0"`` -> ``["a", "b", "0"]``."""
    return path.split(".") if path else []


def get_path(root: Any, path: str) -> Any:
    """The value at a dotted path; raises ``KeyError`` naming the path when it is missing."""
    node = root
    for segment in split_path(path):
        if isinstance(node, Mapping) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and _is_index(segment, node):
            node = node[int(segment)]
        else:
            raise KeyError(path)
    return node


def has_path(root: Any, path: str) -> bool:
    try:
        get_path(root, path)
    except KeyError:
        return False
    return True


def set_path(root: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at a dotted path, creating missing mappings on the way. Raises
    ``KeyError`` when the path runs through a value that is not a mapping or list."""
    segments = split_path(path)
    if not segments:
        raise KeyError("an empty path cannot be set")
    node: Any = root
    for segment in segments[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(segment, {})
        elif isinstance(node, list) and _is_index(segment, node):
            node = node[int(segment)]
        else:
            raise KeyError(path)
    last = segments[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and _is_index(last, node):
        node[int(last)] = value
    else:
        raise KeyError(path)


def append_path(root: dict[str, Any], path: str, value: Any) -> None:
    """Append to the list at a dotted path (created when missing). Raises ``KeyError`` when
    the value there is not a list."""
    if not has_path(root, path):
        set_path(root, path, [])
    target = get_path(root, path)
    if not isinstance(target, list):
        raise KeyError(path)
    target.append(value)


def _is_index(segment: str, node: list[Any]) -> bool:
    return segment.isdigit() and int(segment) < len(node)
