"""Spark SQL expressions (sqlglot trees) compiled to functions over Arrow tables.

Input: a sqlglot expression and a column resolver. Output: ``fn(table) -> pyarrow array`` built
from ``pyarrow.compute`` kernels, for the engines that run without Spark (the reference
evaluator and the local engine). SQL's three-valued logic is kept (``and_kleene``,
``or_kleene``); callers treat a NULL predicate as false. Functions outside the supported set
raise :class:`cerql.errors.UnsupportedError` at compile time, with the position.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql.errors import UnsupportedError

Value = pa.Array | pa.ChunkedArray | pa.Scalar
Compiled = Callable[[pa.Table], Value]

_COMPARE = {exp.EQ: pc.equal, exp.NEQ: pc.not_equal, exp.GT: pc.greater,
            exp.GTE: pc.greater_equal, exp.LT: pc.less, exp.LTE: pc.less_equal}
_ARITH = {exp.Add: pc.add, exp.Sub: pc.subtract, exp.Mul: pc.multiply}
_UNARY_FUNCS = {exp.Abs: pc.abs, exp.Lower: pc.utf8_lower, exp.Upper: pc.utf8_upper,
                exp.Length: pc.utf8_length, exp.Floor: pc.floor, exp.Ceil: pc.ceil,
                exp.Sqrt: pc.sqrt, exp.Ln: pc.ln, exp.Exp: pc.exp}
_CAST_TYPES = {
    "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
    "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DECIMAL": pa.float64(),
    "TEXT": pa.string(), "VARCHAR": pa.string(), "CHAR": pa.string(),
    "BOOLEAN": pa.bool_(), "DATE": pa.date32(), "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    "TIMESTAMPNTZ": pa.timestamp("us"),
}


class ExprError(Exception):
    """Raised by the compiler; the caller turns it into a positioned CeqlError."""

    def __init__(self, cls, message: str, node: exp.Expression, error_class: str, hint: str | None = None):
        super().__init__(message)
        self.cls, self.message, self.node, self.error_class, self.hint = cls, message, node, error_class, hint


def _type(value: Value) -> pa.DataType:
    return value.type


def _align(left: Value, right: Value) -> tuple[Value, Value]:
    """Spark's implicit casts that Arrow lacks: a string literal against a date or timestamp."""
    for a, b, flip in ((left, right, False), (right, left, True)):
        if isinstance(b, pa.Scalar) and pa.types.is_string(b.type) and b.is_valid:
            t = _type(a)
            if pa.types.is_timestamp(t) or pa.types.is_date(t):
                import pandas as pd

                stamp = pd.Timestamp(b.as_py())
                if pa.types.is_timestamp(t) and t.tz and stamp.tzinfo is None:
                    stamp = stamp.tz_localize(t.tz)
                cast = pa.scalar(stamp.date() if pa.types.is_date(t) else stamp, type=t)
                return (cast, a) if flip else (a, cast)
    return left, right


def _literal(node: exp.Literal) -> pa.Scalar:
    if node.is_string:
        return pa.scalar(node.this, pa.string())
    text = node.this
    try:
        return pa.scalar(int(text), pa.int64())
    except ValueError:
        return pa.scalar(float(text), pa.float64())


def _as_float(value: Value) -> Value:
    return pc.cast(value, pa.float64())


def _divide(a: Value, b: Value) -> Value:
    """Spark's ``/``: always DOUBLE; division by zero gives NULL here (try_divide)."""
    a, b = _as_float(a), _as_float(b)
    zero = pc.equal(b, 0.0)
    return pc.if_else(zero, pa.scalar(None, pa.float64()), pc.divide(a, b))


def _mod(a: Value, b: Value) -> Value:
    """Spark's ``%``: the sign follows the dividend; NULL when dividing by zero."""
    q = pc.trunc(_divide(a, b))
    out = pc.subtract(_as_float(a), pc.multiply(q, _as_float(b)))
    if pa.types.is_integer(_type(a)) and pa.types.is_integer(_type(b)):
        out = pc.cast(out, pa.int64())
    return out


def compile_expr(node: exp.Expression, resolve: Callable[[exp.Column], str]) -> Compiled:
    """Compile ``node``; ``resolve`` maps each column reference to a field of the input table."""
    c = lambda n: compile_expr(n, resolve)  # noqa: E731

    if isinstance(node, exp.Column):
        name = resolve(node)
        return lambda t: t.column(name)
    if isinstance(node, exp.Literal):
        value = _literal(node)
        return lambda t: value
    if isinstance(node, exp.Boolean):
        value = pa.scalar(bool(node.this), pa.bool_())
        return lambda t: value
    if isinstance(node, exp.Null):
        return lambda t: pa.scalar(None, pa.null())
    if isinstance(node, exp.Paren):
        return c(node.this)
    if type(node) in _COMPARE:
        fn, left, right = _COMPARE[type(node)], c(node.this), c(node.expression)
        return lambda t: fn(*_align(left(t), right(t)))
    if isinstance(node, exp.NullSafeEQ):
        left, right = c(node.this), c(node.expression)

        def null_safe(t):
            a, b = _align(left(t), right(t))
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            return pc.or_(pc.fill_null(pc.equal(a, b), False), both_null)

        return null_safe
    if isinstance(node, exp.And):
        left, right = c(node.this), c(node.expression)
        return lambda t: pc.and_kleene(left(t), right(t))
    if isinstance(node, exp.Or):
        left, right = c(node.this), c(node.expression)
        return lambda t: pc.or_kleene(left(t), right(t))
    if isinstance(node, exp.Not):
        inner = c(node.this)
        return lambda t: pc.invert(inner(t))
    if isinstance(node, exp.Neg):
        inner = c(node.this)
        return lambda t: pc.negate(inner(t))
    if type(node) in _ARITH:
        fn, left, right = _ARITH[type(node)], c(node.this), c(node.expression)
        return lambda t: fn(left(t), right(t))
    if isinstance(node, exp.Div):
        left, right = c(node.this), c(node.expression)
        return lambda t: _divide(left(t), right(t))
    if isinstance(node, exp.Mod):
        left, right = c(node.this), c(node.expression)
        return lambda t: _mod(left(t), right(t))
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise ExprError(UnsupportedError, "IS only supports NULL here", node, "UNSUPPORTED_EXPRESSION")
        inner = c(node.this)
        return lambda t: pc.is_null(inner(t))
    if isinstance(node, exp.In):
        return _compile_in(node, c)
    if isinstance(node, exp.Between):
        value, low, high = c(node.this), c(node.args["low"]), c(node.args["high"])

        def between(t):
            v = value(t)
            return pc.and_kleene(pc.greater_equal(*_align(v, low(t))), pc.less_equal(*_align(v, high(t))))

        return between
    if isinstance(node, (exp.Like, exp.ILike)):
        return _compile_like(node, c)
    if isinstance(node, exp.RegexpLike):
        value = c(node.this)
        pattern = _string_literal(node.expression, "RLIKE")
        return lambda t: pc.match_substring_regex(value(t), pattern)
    if isinstance(node, (exp.Case, exp.If)):
        return _compile_case(node, c)
    if isinstance(node, exp.Coalesce):
        parts = [c(node.this)] + [c(e) for e in node.expressions]
        return lambda t: pc.coalesce(*[p(t) for p in parts])
    if isinstance(node, (exp.Cast, exp.TryCast)):
        inner = c(node.this)
        key = node.to.this.name if hasattr(node.to.this, "name") else str(node.to.this)
        target = _CAST_TYPES.get(key.upper())
        if target is None:
            raise ExprError(UnsupportedError, f"CAST to {node.to.sql(dialect='spark')} is not supported by the local engines",
                            node, "UNSUPPORTED_EXPRESSION")
        return lambda t: pc.cast(inner(t), target, safe=False)
    if type(node) in _UNARY_FUNCS:
        fn, inner = _UNARY_FUNCS[type(node)], c(node.this)
        return lambda t: fn(inner(t))
    if isinstance(node, exp.Round):
        inner = c(node.this)
        digits = int(node.args["decimals"].this) if node.args.get("decimals") is not None else 0
        return lambda t: pc.round(inner(t), digits, round_mode="half_up")
    name = node.sql(dialect="spark")
    raise ExprError(
        UnsupportedError, f"'{name}' is not supported by cerql's local engines", node,
        "UNSUPPORTED_EXPRESSION",
        "supported: comparisons, AND/OR/NOT, + - * / %, IN, BETWEEN, LIKE, RLIKE, IS NULL, CASE, "
        "COALESCE, CAST, abs, lower, upper, length, floor, ceil, round, sqrt, ln, exp",
    )


def _string_literal(node: exp.Expression, what: str) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    raise ExprError(UnsupportedError, f"{what} needs a string literal pattern", node, "UNSUPPORTED_EXPRESSION")


def _compile_like(node, c) -> Compiled:
    value = c(node.this)
    pattern = _string_literal(node.expression, "LIKE")
    ignore_case = isinstance(node, exp.ILike)
    return lambda t: pc.match_like(value(t), pattern, ignore_case=ignore_case)


def _compile_in(node: exp.In, c) -> Compiled:
    if node.args.get("query") is not None or node.args.get("field") is not None:
        raise ExprError(UnsupportedError, "IN supports a list of values here", node, "UNSUPPORTED_EXPRESSION")
    value = c(node.this)
    options = [c(e) for e in node.expressions]

    def is_in(t):
        v = value(t)
        out = None
        for opt in options:
            eq = pc.equal(*_align(v, opt(t)))
            out = eq if out is None else pc.or_kleene(out, eq)
        return out

    return is_in


def _compile_case(node, c) -> Compiled:
    if isinstance(node, exp.If):
        branches = [(c(node.this), c(node.args["true"]))]
        default = c(node.args["false"]) if node.args.get("false") is not None else None
    else:
        if node.this is not None:
            raise ExprError(UnsupportedError, "CASE x WHEN ... is not supported here; write CASE WHEN x = ...",
                            node, "UNSUPPORTED_EXPRESSION")
        branches = [(c(i.this), c(i.args["true"])) for i in node.args["ifs"]]
        default = c(node.args["default"]) if node.args.get("default") is not None else None

    def case(t):
        values = [v(t) for _, v in branches] + ([default(t)] if default else [])
        typed = [v.type for v in values if not pa.types.is_null(v.type)]
        target = typed[0] if typed else pa.null()
        out = default(t) if default else pa.scalar(None, target)
        out = pc.cast(out, target) if out.type != target else out
        for cond, val in reversed(branches):
            v = val(t)
            v = pc.cast(v, target) if v.type != target else v
            out = pc.if_else(pc.fill_null(cond(t), False), v, out)
        return out

    return case


__all__ = ["compile_expr", "ExprError", "Compiled"]
