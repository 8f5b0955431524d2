"""Comparisons: = != < <= > >=, <=> (IS [NOT] DISTINCT FROM), [NOT] IN, [NOT] BETWEEN.

Both sides are brought to the type Spark compares them in (cerql.expr.coercion; a STRING
against a DATE or TIMESTAMP is cast to it), then compared as Spark compares: NaN equals NaN and
is above every number, NULL on either side is NULL (but for <=>). IN stops at the first equal
item and BETWEEN evaluates its upper bound only where the lower one holds, as Spark does.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql.expr.casts import _cast_value
from cerql.expr.coercion import _as_timestamp, _has_nan, _micros, _numeric_pair, _time_side, _time_target
from cerql.expr.errors import _mismatch, _refuse_type, _unsupported
from cerql.expr.kinds import (Handler, Value, _bool, _comparable_kinds, _is_num, _is_str, _is_temporal, _is_time,
                              _null_as)
from cerql.expr.rows import _Env, _negated


_PLAIN = {"=": pc.equal, "!=": pc.not_equal, ">": pc.greater, ">=": pc.greater_equal, "<": pc.less,
          "<=": pc.less_equal}


_SWAP = {"=": "=", "!=": "!=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}


def _compare_values(op: str, a: Value, b: Value) -> Value:
    """``a op b`` on values of one type, as Spark compares: NaN equals NaN and is above every
    number (-0.0 equals 0.0); NULL on either side is NULL."""
    plain = _PLAIN[op](a, b)
    if not (_has_nan(a) or _has_nan(b)):
        return plain
    if op in ("<", "<="):
        return _compare_values(_SWAP[op], b, a)
    an, bn = pc.is_nan(a), pc.is_nan(b)
    if op == "=":
        return pc.or_(plain, pc.and_(an, bn))
    if op == "!=":
        return pc.invert(pc.or_(pc.equal(a, b), pc.and_(an, bn)))
    if op == ">":
        return pc.or_(plain, pc.and_(an, pc.invert(bn)))
    return pc.or_(plain, pc.and_(an, pc.is_valid(b)))  # >=


def _comparable(node, a: Value, b: Value, env: _Env, mismatch: str = "BINARY_OP_DIFF_TYPES") -> tuple[Value, Value]:
    """Both sides in the type Spark compares them in: numbers widened (:func:`_numeric_pair`);
    a STRING against a DATE or TIMESTAMP cast to it (CAST_INVALID_INPUT when malformed), a DATE
    against a TIMESTAMP cast to it, timestamps as instants, intervals as microseconds; the same
    types as they are. A date, timestamp or interval against a type Spark does not compare it
    with is Spark's DATATYPE_MISMATCH (``mismatch``: BINARY_OP_DIFF_TYPES, or DATA_DIFF_TYPES
    for IN)."""
    ta, tb = a.type, b.type
    if (_is_temporal(ta) or _is_temporal(tb)) and not _comparable_kinds(ta, tb):
        raise _mismatch(node, mismatch, ta, tb)
    if pa.types.is_duration(ta) and pa.types.is_duration(tb):
        return _micros(a), _micros(b)
    if pa.types.is_null(ta) or pa.types.is_null(tb):
        if pa.types.is_null(ta) and pa.types.is_null(tb):
            return a, b
        return _null_as(a, tb), _null_as(b, ta)
    if _is_num(ta) and _is_num(tb):
        return _numeric_pair(node, a, b)
    if _is_str(ta) and _is_time(tb):
        return _cast_value(node, a, _time_target(tb), env, tolerant=False), _time_side(b)
    if _is_time(ta) and _is_str(tb):
        return _time_side(a), _cast_value(node, b, _time_target(ta), env, tolerant=False)
    if _is_time(ta) and _is_time(tb):
        if pa.types.is_date(ta) and pa.types.is_date(tb):
            return a, b
        aware = bool((pa.types.is_timestamp(ta) and ta.tz) or (pa.types.is_timestamp(tb) and tb.tz))
        return _as_timestamp(a, aware), _as_timestamp(b, aware)
    if _is_str(ta) and _is_str(tb):
        return a, b
    if ta == tb and (pa.types.is_boolean(ta)):
        return a, b
    raise _refuse_type(node, ta, tb)


def _compare(op: str, node, a: Value, b: Value, env: _Env, mismatch: str = "BINARY_OP_DIFF_TYPES") -> Value:
    a, b = _comparable(node, a, b, env, mismatch)
    return _compare_values(op, a, b)


def _null_safe_equal(node, a: Value, b: Value, env: _Env) -> Value:
    a, b = _comparable(node, a, b, env)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    return pc.or_(pc.fill_null(_compare_values("=", a, b), False), both_null)


_COMPARE_OPS = {exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}


def _compile_in(node: exp.In, c):
    if node.args.get("query") is not None or node.args.get("field") is not None or node.args.get("unnest"):
        raise _unsupported(node, "IN with a subquery", hint="IN takes a list of values here")
    value = c(node.this)
    options = [c(e) for e in node.expressions]

    def is_in(env):
        v = value(env)
        out = None
        live = env.where(pc.is_valid(v))
        for opt in options:  # Spark stops at the first equal item
            eq = _compare("=", node, v, opt(live), live, "DATA_DIFF_TYPES")
            out = eq if out is None else pc.or_kleene(out, eq)
            live = live.where(pc.invert(pc.fill_null(eq, False)))
        return out if out is not None else pa.scalar(False)

    return _negated(node, is_in)


def _compile_between(node, c):
    value, low, high = c(node.this), c(node.args["low"]), c(node.args["high"])

    def between(env):  # Spark's x >= low AND x <= high
        v = value(env)
        above = _bool(_compare(">=", node, v, low(env), env))
        below = _bool(_compare("<=", node, v, high(env.where(pc.fill_null(above, True))), env))
        return pc.and_kleene(above, below)

    return _negated(node, between)


def _comparison(op: str) -> Handler:
    """The handler of one comparison operator (``op``: = != > >= < <=)."""

    def compile_comparison(node, c):
        left, right = c(node.this), c(node.expression)
        return lambda env: _compare(op, node, left(env), right(env), env)

    return compile_comparison


def _compile_null_safe(node, c):
    """``<=>`` (IS NOT DISTINCT FROM) and its negation."""
    left, right, negate = c(node.this), c(node.expression), isinstance(node, exp.NullSafeNEQ)

    def null_safe(env):
        out = _null_safe_equal(node, left(env), right(env), env)
        return pc.invert(out) if negate else out

    return null_safe


BY_NODE: dict[type, Handler] = {
    **{klass: _comparison(op) for klass, op in _COMPARE_OPS.items()},
    exp.NullSafeEQ: _compile_null_safe, exp.NullSafeNEQ: _compile_null_safe,
    exp.In: _compile_in, exp.Between: _compile_between,
}
