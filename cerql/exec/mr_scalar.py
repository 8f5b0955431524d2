"""A history-dependent DEFINE condition as a plain Python function of one thread's values.

Input: a condition as exec/mr_history.py rewrites it (its navigations, aggregates and columns
replaced by fields ``__cerql_mr_h<i>``), and each field's kind: a signed integer type's width in
bits (``INT`` is 64), ``FLOAT`` (a DOUBLE) or None (any other type). Output: a function of a
list of field values (Python ints, floats, None for NULL) that gives the condition's truth
(None for NULL), or None when the condition has a shape it does not take. It raises
:class:`Refused` where cerql.expr may raise (an integer overflow, a zero divisor): the caller
then asks cerql.expr, which raises Spark's error or not, as it decides.

Why: the thread matcher (exec/mr_threads.py) evaluates a condition once per row for the few
register values its threads hold; through cerql.expr that is an Arrow table and a dozen compute
calls, about 50-200 µs, for one or two values: most of a query's time when the registers are
bounded (docs/benchmarks.md, "MATCH_RECOGNIZE"). The shapes taken here are the common ones, and
for them this function is cerql.expr's result exactly (Spark's semantics, docs/semantics.md):

- two numbers meet as Spark (ANSI) brings them together (cerql.expr.coercion): two integers as
  the wider integer type (which keeps their values); with a DOUBLE on either side both as DOUBLE
  (an integer converted to the nearest double, as Arrow's cast does; a DECIMAL literal as
  cerql.expr converts it); an integer with a DECIMAL literal is a DECIMAL: not taken;
- comparisons ``= != < <= > >=``: NaN equal to NaN and above every other number, -0.0 equal to
  0.0; NULL on either side is NULL;
- ``+ - *``: integers exact in the wider type, :class:`Refused` past its range (Spark's
  ARITHMETIC_OVERFLOW); doubles as IEEE (Python's float operations are IEEE's, no fused
  multiply-add); ``/``: both as DOUBLE, :class:`Refused` for a zero divisor of a non-NULL
  dividend (DIVIDE_BY_ZERO);
- ``AND``, ``OR`` (Kleene's logic), ``NOT``, ``IS [NOT] NULL``, ``coalesce`` of numbers,
  parentheses; each operand evaluated only where cerql.expr evaluates it (the right side of
  AND/OR where the left does not decide, a coalesce argument where those before are NULL), so
  that an operand which would raise is reached exactly when cerql.expr reaches it;
- number literals, typed by cerql.expr's own function (INT, BIGINT, DECIMAL, DOUBLE), TRUE, FALSE.

Anything else — other types (FLOAT, DECIMAL fields, strings, times), ``%``, functions, CASE, NULL
literals — makes the caller keep cerql.expr. tests/exec/test_mr_scalar.py checks this function
against cerql.expr on random trees and values (NULL, NaN, ±0.0, ±inf, integers near 2**53 and
the integer types' bounds).
"""

from __future__ import annotations

import re
from typing import Callable

import pyarrow as pa
from sqlglot import exp

from cerql.expr.coercion import decimal_to_double
from cerql.expr.errors import ExprError
from cerql.expr.literals import literal_scalar

INT, FLOAT, BOOL, DECIMAL = 64, "float", "bool", "decimal"  # an integer kind is its width: 8, 16, 32, 64
FIELD = re.compile(r"__cerql_mr_h(\d+)")
_COMPARISONS = {exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_ARITHMETIC = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*"}

Fn = Callable[[list], object]


class Refused(Exception):
    """cerql.expr may raise here (module docstring): the caller evaluates the batch with it."""


def _is_int(kind) -> bool:
    return isinstance(kind, int) and not isinstance(kind, bool)


def compile_condition(tree: exp.Expression, kinds: list[str | None]) -> Fn | None:
    """The condition ``tree`` as a function of the fields' values, or None (module docstring).
    It must be boolean: cerql.expr's caller refuses other types, and only it says so."""
    got = _compile(tree, kinds)
    if got is None or got[1] != BOOL:
        return None
    return got[0]


def _compile(node: exp.Expression, kinds: list[str | None]) -> tuple[Fn, str] | None:
    """``node``'s function and kind, or None. A part without fields is computed here, once:
    cerql.expr computes such a part whether or not a row reaches it (an overflow in
    ``coalesce(x, 1 + 9223372036854775807)`` raises even where x is not NULL), so one that
    raises leaves the whole condition to cerql.expr."""
    got = _compile_node(node, kinds)
    if got is None or any(isinstance(n, exp.Column) for n in node.walk()):
        return got
    try:
        value = got[0]([])
    except Refused:
        return None
    return (lambda vals: value), got[1]


def _compile_node(node: exp.Expression, kinds: list[str | None]) -> tuple[Fn, str] | None:
    if isinstance(node, exp.Paren):
        return _compile(node.this, kinds)
    if isinstance(node, exp.Column):
        return _field(node, kinds)
    if isinstance(node, exp.Literal) or (isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal)):
        return _number_literal(node)
    if isinstance(node, exp.Boolean):
        value = bool(node.this)
        return (lambda vals: value), BOOL
    op = _COMPARISONS.get(type(node))
    if op is not None:
        return _comparison(op, node, kinds)
    if type(node) in _ARITHMETIC:
        return _arithmetic(_ARITHMETIC[type(node)], node, kinds)
    if isinstance(node, exp.Div):
        return _division(node, kinds)
    if isinstance(node, (exp.And, exp.Or)):
        return _logic(node, kinds)
    if isinstance(node, exp.Not):
        inner = _compile(node.this, kinds)
        if inner is None or inner[1] != BOOL:
            return None
        f = inner[0]

        def negated(vals):
            x = f(vals)
            return None if x is None else not x
        return negated, BOOL
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        inner = _compile(node.this, kinds)
        if inner is None:
            return None
        f = inner[0]
        return (lambda vals: f(vals) is None), BOOL
    if isinstance(node, exp.Coalesce):
        return _coalesce(node, kinds)
    return None


def _field(node: exp.Column, kinds: list[str | None]) -> tuple[Fn, str] | None:
    match = FIELD.fullmatch(node.name) if not node.table else None
    if match is None:
        return None
    i = int(match.group(1))
    if i >= len(kinds) or not (_is_int(kinds[i]) or kinds[i] == FLOAT):
        return None
    return (lambda vals: vals[i]), kinds[i]


def _number_literal(node: exp.Expression) -> tuple[Fn, str] | None:
    """A number literal as cerql.expr types it (its own function): an INT or BIGINT, a DOUBLE, or
    a DECIMAL, which is only taken where it meets a DOUBLE (then its value is the double
    cerql.expr converts it to)."""
    negative = isinstance(node, exp.Neg)
    lit = node.this if negative else node
    if lit.is_string:
        return None
    try:
        scalar = literal_scalar(lit, negative)
    except ExprError:
        return None
    t = scalar.type
    if pa.types.is_int32(t) or pa.types.is_int64(t):
        kind, value = t.bit_width, scalar.as_py()
    elif pa.types.is_float64(t):
        kind, value = FLOAT, scalar.as_py()
    elif pa.types.is_decimal(t):
        kind, value = DECIMAL, decimal_to_double(scalar.as_py())
    else:
        return None
    return (lambda vals: value), kind


def _numbers(node: exp.Expression, kinds) -> tuple[Fn, str] | None:
    got = _compile(node, kinds)
    return got if got is not None and (_is_int(got[1]) or got[1] in (FLOAT, DECIMAL)) else None


def _as_float(f: Fn, kind) -> Fn:
    if kind in (FLOAT, DECIMAL):  # a DECIMAL literal's function gives its double already
        return f

    def converted(vals):
        x = f(vals)
        return None if x is None else float(x)  # the nearest double, as Arrow's cast
    return converted


def _pair(node, kinds) -> tuple[Fn, Fn, object] | None:
    """Both operands of ``node`` in the kind they meet in (module docstring), or None."""
    left, right = _numbers(node.this, kinds), _numbers(node.expression, kinds)
    if left is None or right is None:
        return None
    if _is_int(left[1]) and _is_int(right[1]):
        return left[0], right[0], max(left[1], right[1])
    if left[1] == FLOAT or right[1] == FLOAT:
        return _as_float(*left), _as_float(*right), FLOAT
    return None  # a DECIMAL


def _comparison(op: str, node, kinds) -> tuple[Fn, str] | None:
    pair = _pair(node, kinds)
    if pair is None:
        return None
    fa, fb, kind = pair
    compare = _FLOAT_COMPARE[op] if kind == FLOAT else _INT_COMPARE[op]

    def comparison(vals):
        a, b = fa(vals), fb(vals)
        if a is None or b is None:
            return None
        return compare(a, b)
    return comparison, BOOL


def _float_gt(a: float, b: float) -> bool:
    """Spark's ``a > b`` of doubles: NaN above every other number, not above NaN."""
    return a > b or (a != a and b == b)


def _float_ge(a: float, b: float) -> bool:
    return a >= b or a != a


def _float_eq(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)


_INT_COMPARE = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, ">": lambda a, b: a > b,
                ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b}
_FLOAT_COMPARE = {"=": _float_eq, "!=": lambda a, b: not _float_eq(a, b), ">": _float_gt, ">=": _float_ge,
                  "<": lambda a, b: _float_gt(b, a), "<=": lambda a, b: _float_ge(b, a)}


def _arithmetic(op: str, node, kinds) -> tuple[Fn, object] | None:
    pair = _pair(node, kinds)
    if pair is None:
        return None
    fa, fb, kind = pair
    compute = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}[op]
    if kind == FLOAT:
        def floating(vals):
            a, b = fa(vals), fb(vals)
            return None if a is None or b is None else compute(a, b)
        return floating, FLOAT
    low, high = -(1 << (kind - 1)), (1 << (kind - 1)) - 1

    def integral(vals):
        a, b = fa(vals), fb(vals)
        if a is None or b is None:
            return None
        x = compute(a, b)
        if not low <= x <= high:
            raise Refused  # ARITHMETIC_OVERFLOW, which cerql.expr raises
        return x
    return integral, kind


def _division(node, kinds) -> tuple[Fn, str] | None:
    pair = _pair(node, kinds)
    if pair is None:
        return None
    fa, fb = _as_float(pair[0], pair[2]), _as_float(pair[1], pair[2])

    def divide(vals):
        a, b = fa(vals), fb(vals)
        if a is None or b is None:
            return None
        if b == 0.0:
            raise Refused  # DIVIDE_BY_ZERO, which cerql.expr raises
        return a / b
    return divide, FLOAT


def _logic(node, kinds) -> tuple[Fn, str] | None:
    left, right = _compile(node.this, kinds), _compile(node.expression, kinds)
    if left is None or right is None or left[1] != BOOL or right[1] != BOOL:
        return None
    fa, fb = left[0], right[0]
    # three-valued AND and OR: a side equal to ``decides`` (False for AND, True for OR) is the
    # answer, the right side unread when the left one decides, as cerql.expr does; else NULL if
    # either side is, else the other value
    decides = not isinstance(node, exp.And)

    def junction(vals):
        a = fa(vals)
        if a is decides:
            return decides
        b = fb(vals)
        if b is decides:
            return decides
        return None if a is None or b is None else not decides
    return junction, BOOL


def _coalesce(node: exp.Coalesce, kinds) -> tuple[Fn, str] | None:
    parts = [_numbers(e, kinds) for e in [node.this, *node.expressions]]
    if any(p is None for p in parts):
        return None
    if any(k == FLOAT for _, k in parts):
        kind = FLOAT
    elif all(_is_int(k) for _, k in parts):
        kind = max(k for _, k in parts)
    else:
        return None  # a DECIMAL
    fns = [_as_float(*p) if kind == FLOAT else p[0] for p in parts]

    def coalesce(vals):
        for f in fns:
            x = f(vals)
            if x is not None:
                return x
        return None
    return coalesce, kind


__all__ = ["FLOAT", "INT", "Refused", "compile_condition"]
