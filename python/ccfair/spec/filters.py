"""Sweep filters: a small expression language over the grid values, evaluated at bounded cost.

A filter is a Python-like expression (``"not (delay == '100ms' and alpha > 8)"``) over the grid
keys, ``p["dotted.key"]`` and the functions ``seconds()``, ``bps()`` and ``len()``. It is parsed
once, checked node by node, and evaluated by :func:`evaluate`, an interpreter of the allowed
nodes only (no ``eval``): arithmetic takes numbers only, so no filter can build a huge list or
string (``[0] * 400000000`` is an error, not 3 GB), and the expression's length and depth are
bounded, so the cost of a filter is bounded by its text and the grid values.

Example:
    >>> f = compile_filter(0, "alpha <= 8 and seconds(delay) < 0.1", ["alpha", "delay"])
    >>> evaluate(f, {"alpha": 4, "delay": "18ms"})
    True
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ccfair.errors import SpecError, close_matches, show
from ccfair.units import parse_duration, parse_rate

__all__ = ["Filter", "compile_filter", "evaluate", "MAX_FILTER_CHARS", "MAX_FILTER_DEPTH"]

#: Characters of one filter expression.
MAX_FILTER_CHARS = 1000
#: Depth of a filter's syntax tree.
MAX_FILTER_DEPTH = 40
#: Largest magnitude of an integer a filter may compute.
_MAX_INT = 2**128
#: Longest string a filter may build with ``+``.
_MAX_STR = 10_000


def _seconds(value: Any) -> float:
    ns = parse_duration(value)
    if ns is None:
        raise ValueError(f"seconds({show(value)}): not a duration")
    return ns / 1e9


def _bps(value: Any) -> float:
    bps = parse_rate(value)
    if bps is None:
        raise ValueError(f"bps({show(value)}): not a rate")
    return float(bps)


def _len(value: Any) -> int:
    if not isinstance(value, str | list | tuple | dict):
        raise ValueError(f"len({show(value)}): not a list, string or table")
    return len(value)


FUNCTIONS: dict[str, Callable[[Any], Any]] = {"seconds": _seconds, "bps": _bps, "len": _len}

_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_ARITH: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_ALLOWED = (
    ast.Expression,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.Compare,
    ast.BinOp,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Subscript,
    ast.Call,
    *_COMPARE,
    *_ARITH,
)


@dataclass(frozen=True)
class Filter:
    """A checked filter: its position, text and syntax tree."""

    index: int
    text: str
    tree: ast.Expression

    @property
    def where(self) -> str:
        return f"filters[{self.index}]"


def _depth(node: ast.AST) -> int:
    deepest = 0
    stack = [(node, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(n))
    return deepest


def compile_filter(index: int, text: Any, names: Sequence[str]) -> Filter:
    """Parse and check filter ``index``; ``names`` are the grid keys it may use.

    Example:
        >>> compile_filter(0, "__import__('os')", ["alpha"])
        Traceback (most recent call last):
        ccfair.errors.SpecError: filters[0]: "__import__('os')" calls a function other than ...
    """
    where = f"filters[{index}]"
    if not isinstance(text, str):
        raise SpecError(where, text, 'is not an expression string, e.g. "alpha <= 8"')
    if len(text) > MAX_FILTER_CHARS:
        raise SpecError(where, text, f"is longer than {MAX_FILTER_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise SpecError(where, text, f"is not a valid expression ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise SpecError(where, text, "is not a valid expression (nested too deeply)") from None
    if _depth(tree) > MAX_FILTER_DEPTH:
        raise SpecError(where, text, f"nests deeper than {MAX_FILTER_DEPTH} levels")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise SpecError(
                where,
                text,
                f"uses {type(node).__name__}; filters allow comparisons, and/or/not, "
                "arithmetic, lists, indexing and seconds()/bps()/len()",
            )
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name)
            and node.func.id in FUNCTIONS
            and len(node.args) == 1
            and not node.keywords
        ):
            raise SpecError(where, text, "calls a function other than seconds(), bps(), len()")
        if isinstance(node, ast.Name) and node.id not in names and node.id not in FUNCTIONS:
            if node.id == "p":
                continue
            hint = close_matches(node.id, names)
            more = f'; did you mean "{hint[0]}"?' if hint else ""
            raise SpecError(
                where,
                text,
                f"uses {show(node.id)}, which is not a grid key{more} "
                f'(grid keys: {", ".join(names)}; p["dotted.key"] reads any key)',
            )
    return Filter(index, text, tree)


class _FilterFailure(Exception):
    """A filter cannot be evaluated at a point (its message says why)."""


def evaluate(flt: Filter, env: Mapping[str, Any]) -> bool:
    """Whether the point with grid values ``env`` passes ``flt``.

    Raises :class:`SpecError` naming the filter if it cannot be evaluated there.

    Example:
        >>> f = compile_filter(0, "len([0] * 400000000) > 0", [])
        >>> evaluate(f, {})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ccfair.errors.SpecError: filters[0]: ... arithmetic takes numbers ...
    """
    scope = {**FUNCTIONS, "p": dict(env), **env}
    try:
        return bool(_eval(flt.tree.body, scope))
    except (_FilterFailure, ValueError, TypeError, KeyError, IndexError, ZeroDivisionError) as exc:
        raise SpecError(
            flt.where,
            flt.text,
            f"fails at point {show(dict(env))}: {_failure(exc)}",
        ) from None


def _failure(exc: Exception) -> str:
    """What went wrong: the filter's own words, or Python's with the kind of error."""
    return str(exc) if isinstance(exc, _FilterFailure) else f"{type(exc).__name__}: {exc}"


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _eval(node: ast.AST, scope: Mapping[str, Any]) -> Any:
    """The value of an allowed node (compile_filter checked the kinds) at ``scope``."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in scope:
            raise _FilterFailure(f"{node.id} is not defined")
        return scope[node.id]
    if isinstance(node, ast.List | ast.Tuple):
        return [_eval(e, scope) for e in node.elts]
    if isinstance(node, ast.BoolOp):
        return _eval_bool_op(node, scope)
    if isinstance(node, ast.UnaryOp):
        return _eval_unary_op(node, scope)
    if isinstance(node, ast.BinOp):
        return _eval_bin_op(node, scope)
    if isinstance(node, ast.Compare):
        return _eval_compare(node, scope)
    if isinstance(node, ast.Subscript):
        return _eval_subscript(node, scope)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return FUNCTIONS[node.func.id](_eval(node.args[0], scope))
    raise _FilterFailure(f"{type(node).__name__} is not allowed")  # pragma: no cover


def _eval_bool_op(node: ast.BoolOp, scope: Mapping[str, Any]) -> Any:
    """``and``/``or`` as Python's: short-circuit, the value of the last operand evaluated."""
    is_and = isinstance(node.op, ast.And)
    value: Any = is_and
    for v in node.values:
        value = _eval(v, scope)
        if bool(value) != is_and:
            return value
    return value


def _eval_unary_op(node: ast.UnaryOp, scope: Mapping[str, Any]) -> Any:
    """``not`` of anything; unary minus and plus of numbers only."""
    v = _eval(node.operand, scope)
    if isinstance(node.op, ast.Not):
        return not v
    if not _number(v):
        raise _FilterFailure(f"unary minus/plus takes a number, not {show(v)}")
    return -v if isinstance(node.op, ast.USub) else +v


def _eval_bin_op(node: ast.BinOp, scope: Mapping[str, Any]) -> Any:
    """Arithmetic of numbers and ``+`` of strings, each bounded so that no filter can build
    a huge value."""
    a, b = _eval(node.left, scope), _eval(node.right, scope)
    if isinstance(node.op, ast.Add) and isinstance(a, str) and isinstance(b, str):
        if len(a) + len(b) > _MAX_STR:
            raise _FilterFailure("the string grows too long")
        return a + b
    if not (_number(a) and _number(b)):
        raise _FilterFailure(
            f"arithmetic takes numbers (and + joins strings); got {show(a)} and {show(b)}"
        )
    out = _ARITH[type(node.op)](a, b)
    if isinstance(out, int) and abs(out) > _MAX_INT:
        raise _FilterFailure("an integer grows beyond 2^128")
    return out


def _eval_compare(node: ast.Compare, scope: Mapping[str, Any]) -> bool:
    """A comparison chain as Python's: ``a < b < c`` stops at the first false link."""
    left = _eval(node.left, scope)
    for op, comp in zip(node.ops, node.comparators, strict=True):
        right = _eval(comp, scope)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True


def _eval_subscript(node: ast.Subscript, scope: Mapping[str, Any]) -> Any:
    """``x[i]`` of a list or string by integer, of a table by key (no slices)."""
    container = _eval(node.value, scope)
    key = _eval(node.slice, scope)
    if not isinstance(container, list | tuple | str | dict):
        raise _FilterFailure(f"{show(container)} cannot be indexed")
    if isinstance(key, bool) or not isinstance(key, int | str):
        raise _FilterFailure(f"index {show(key)} is not an integer or a key")
    if isinstance(container, dict):
        return container[key]
    if not isinstance(key, int):
        raise _FilterFailure(f"index {show(key)} of {show(container)} is not an integer")
    return container[key]
