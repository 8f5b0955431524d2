"""A history-dependent DEFINE condition as a plain Python function of one thread's values.

Input: a condition as exec/mr_history.py rewrites it (its navigations, aggregates and columns
replaced by fields ``__cerql_mr_h<i>``), and each field's kind: ``INT`` (a signed integer
column or aggregate), ``FLOAT`` (a DOUBLE) or None (any other type). Output: a function of a
list of field values (Python ints, floats, None for NULL) that gives the condition's truth
(None for NULL), or None when the condition has a shape it does not take.

Why: the thread matcher (exec/mr_threads.py) evaluates a condition once per row for the few
register values its threads hold; through cerql.expr that is an Arrow table and a dozen compute
calls, about 50-200 µs, for one or two values: most of a query's time when the registers are
bounded (docs/benchmarks.md, "MATCH_RECOGNIZE"). The shapes taken here are the common ones, and
for them this function is cerql.expr's result exactly (Spark's semantics, docs/semantics.md):

- comparisons ``= != < <= > >=`` of numbers: two integers compared exactly (Spark widens them to
  the wider integer type, which keeps their values); with a DOUBLE on either side both as
  DOUBLE (an integer converted to the nearest double, as Arrow's cast does), NaN equal to NaN
  and above every other number, -0.0 equal to 0.0; NULL on either side is NULL;
- ``AND``, ``OR`` (Kleene's logic), ``NOT``, ``IS [NOT] NULL``, ``coalesce`` of numbers (an
  integer converted to DOUBLE when some argument is one), parentheses;
- integer literals (they are INT or BIGINT when they fit, else DECIMAL: not taken), TRUE, FALSE.

None of these can raise, so the order in which the parts are evaluated does not matter (cerql.expr
evaluates the right side of AND/OR only where the left does not decide). Anything else — other
types (FLOAT, DECIMAL, strings, times), arithmetic (its overflow errors), functions, CASE, NULL
literals — makes the caller keep cerql.expr. tests/exec/test_mr_scalar.py checks this function
against cerql.expr on random trees and values (NULL, NaN, ±0.0, ±inf, integers near 2**53 and
BIGINT's bounds).
"""

from __future__ import annotations

import re
from typing import Callable

from sqlglot import exp

INT, FLOAT, BOOL = "int", "float", "bool"
FIELD = re.compile(r"__cerql_mr_h(\d+)")
_INT_LITERAL = re.compile(r"\d+")
_BIGINT = 2**63
_COMPARISONS = {exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}

Fn = Callable[[list], object]


def compile_condition(tree: exp.Expression, kinds: list[str | None]) -> Fn | None:
    """The condition ``tree`` as a function of the fields' values, or None (module docstring).
    It must be boolean: cerql.expr's caller refuses other types, and only it says so."""
    got = _compile(tree, kinds)
    if got is None or got[1] != BOOL:
        return None
    return got[0]


def _compile(node: exp.Expression, kinds: list[str | None]) -> tuple[Fn, str] | None:
    if isinstance(node, exp.Paren):
        return _compile(node.this, kinds)
    if isinstance(node, exp.Column):
        return _field(node, kinds)
    if isinstance(node, exp.Literal) or (isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal)):
        return _int_literal(node)
    if isinstance(node, exp.Boolean):
        value = bool(node.this)
        return (lambda vals: value), BOOL
    op = _COMPARISONS.get(type(node))
    if op is not None:
        return _comparison(op, node, kinds)
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
    if i >= len(kinds) or kinds[i] not in (INT, FLOAT):
        return None
    return (lambda vals: vals[i]), kinds[i]


def _int_literal(node: exp.Expression) -> tuple[Fn, str] | None:
    negative = isinstance(node, exp.Neg)
    lit = node.this if negative else node
    if lit.is_string or not _INT_LITERAL.fullmatch(lit.this):
        return None
    value = -int(lit.this) if negative else int(lit.this)
    if not -_BIGINT <= value < _BIGINT:  # a DECIMAL literal
        return None
    return (lambda vals: value), INT


def _numbers(node: exp.Expression, kinds) -> tuple[Fn, str] | None:
    got = _compile(node, kinds)
    return got if got is not None and got[1] in (INT, FLOAT) else None


def _as_float(f: Fn, kind: str) -> Fn:
    if kind == FLOAT:
        return f

    def converted(vals):
        x = f(vals)
        return None if x is None else float(x)  # the nearest double, as Arrow's cast
    return converted


def _comparison(op: str, node, kinds) -> tuple[Fn, str] | None:
    left, right = _numbers(node.this, kinds), _numbers(node.expression, kinds)
    if left is None or right is None:
        return None
    if left[1] == INT and right[1] == INT:
        compare = _INT_COMPARE[op]
        fa, fb = left[0], right[0]
    else:
        compare = _FLOAT_COMPARE[op]
        fa, fb = _as_float(*left), _as_float(*right)

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


def _logic(node, kinds) -> tuple[Fn, str] | None:
    left, right = _compile(node.this, kinds), _compile(node.expression, kinds)
    if left is None or right is None or left[1] != BOOL or right[1] != BOOL:
        return None
    fa, fb = left[0], right[0]
    if isinstance(node, exp.And):
        def conjunction(vals):
            a = fa(vals)
            if a is False:
                return False
            b = fb(vals)
            if b is False:
                return False
            return None if a is None or b is None else True
        return conjunction, BOOL

    def disjunction(vals):
        a = fa(vals)
        if a is True:
            return True
        b = fb(vals)
        if b is True:
            return True
        return None if a is None or b is None else False
    return disjunction, BOOL


def _coalesce(node: exp.Coalesce, kinds) -> tuple[Fn, str] | None:
    parts = [_numbers(e, kinds) for e in [node.this, *node.expressions]]
    if any(p is None for p in parts):
        return None
    kind = FLOAT if any(k == FLOAT for _, k in parts) else INT
    fns = [_as_float(*p) if kind == FLOAT else p[0] for p in parts]

    def coalesce(vals):
        for f in fns:
            x = f(vals)
            if x is not None:
                return x
        return None
    return coalesce, kind


__all__ = ["FLOAT", "INT", "compile_condition"]
