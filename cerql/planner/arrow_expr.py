"""Spark SQL expressions (sqlglot trees) compiled to functions over Arrow tables.

Input: a sqlglot expression and a column resolver. Output: ``fn(table) -> pyarrow array`` built
from ``pyarrow.compute`` kernels, for the engines that run without Spark (the reference
evaluator and the local engine). SQL's three-valued logic is kept (``and_kleene``,
``or_kleene``); callers treat a NULL predicate as false. Functions outside the supported set
raise :class:`cerql.errors.UnsupportedError` at compile time, with the position.

Values follow Spark SQL 4 with ANSI mode on, so that the local engines and Spark agree: an
all-NULL column (Arrow type ``null``, Spark's NullType) is cast to what the function takes;
an integer against a float is cast to DOUBLE without a range check, but against a decimal
literal such as ``0.5`` it compares exactly; ``+ - *`` and ``abs`` of integers that overflow,
and a ``CAST`` that cannot convert a value, raise an :class:`~cerql.errors.ExecutionError`
(ARITHMETIC_OVERFLOW, CAST_INVALID_INPUT, CAST_OVERFLOW) where ``try_cast`` gives NULL. Such
errors happen while evaluating: the compiled function raises :class:`ExprError`, which
:func:`guard` turns into the positioned error.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from cerql.errors import ExecutionError, UnsupportedError

Value = pa.Array | pa.ChunkedArray | pa.Scalar
Compiled = Callable[[pa.Table], Value]

_COMPARE = {exp.EQ: pc.equal, exp.NEQ: pc.not_equal, exp.GT: pc.greater,
            exp.GTE: pc.greater_equal, exp.LT: pc.less, exp.LTE: pc.less_equal}
_ARITH = {exp.Add: pc.add_checked, exp.Sub: pc.subtract_checked, exp.Mul: pc.multiply_checked}
_STRING_FUNCS = {exp.Lower: pc.utf8_lower, exp.Upper: pc.utf8_upper, exp.Length: pc.utf8_length}
_NUMBER_FUNCS = {exp.Abs: pc.abs_checked, exp.Floor: pc.floor, exp.Ceil: pc.ceil,
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


def _typed(value: Value, kind: pa.DataType) -> Value:
    """An all-NULL value (Arrow type null, Spark's NullType) as ``kind``, the type the function
    takes: Spark casts NullType implicitly, so ``upper(s)`` of a NULL-only column is NULL."""
    return pc.cast(value, kind) if pa.types.is_null(value.type) else value


def _float(value: Value) -> Value:
    """An integer as DOUBLE the way Spark casts it: to the nearest double, never an error (Arrow
    refuses integers above 2**53 unless the cast is unchecked)."""
    if pa.types.is_integer(value.type) or pa.types.is_null(value.type):
        return pc.cast(value, pa.float64(), safe=False)
    return value


def _promote(left: Value, right: Value) -> tuple[Value, Value]:
    """Spark's numeric widening where Arrow's would fail: an integer against a float is DOUBLE."""
    lt, rt = left.type, right.type
    if pa.types.is_integer(lt) and pa.types.is_floating(rt):
        return _float(left), right
    if pa.types.is_floating(lt) and pa.types.is_integer(rt):
        return left, _float(right)
    return left, right


def _overflow(fn, node: exp.Expression):
    """``fn`` with Arrow's integer overflow raised as Spark's ARITHMETIC_OVERFLOW."""

    def checked(*args):
        try:
            return fn(*args)
        except pa.ArrowInvalid as err:
            if "overflow" not in str(err).lower():
                raise
            raise ExprError(ExecutionError, f"Integer overflow in '{node.sql(dialect='spark')}'", node,
                            "ARITHMETIC_OVERFLOW", "cast to DOUBLE or DECIMAL first, or use try_add, "
                            "try_subtract or try_multiply, which give NULL") from None

    return checked


def _decimal_literal(node: exp.Expression) -> pa.Scalar | None:
    """A number literal Spark types as DECIMAL (digits with a point, no exponent: ``0.5``,
    ``-2.25``), as an exact Arrow decimal; None for anything else."""
    sign = ""
    if isinstance(node, exp.Neg):
        sign, node = "-", node.this
    if not isinstance(node, exp.Literal) or node.is_string or "." not in node.this or "e" in node.this.lower():
        return None
    try:
        value = Decimal(sign + node.this)
    except InvalidOperation:
        return None
    return pa.scalar(value) if len(value.as_tuple().digits) <= 38 else None


def _compare(fn, node, left: Compiled, right: Compiled) -> Compiled:
    """A comparison; an integer against a decimal literal compares exactly, as Spark does
    (``x > 0.5`` on a BIGINT above 2**53 is not rounded through DOUBLE)."""
    exact = (_decimal_literal(node.this), _decimal_literal(node.expression))

    def compare(t):
        a, b = left(t), right(t)
        if exact[1] is not None and pa.types.is_integer(a.type):
            b = exact[1]
        elif exact[0] is not None and pa.types.is_integer(b.type):
            a = exact[0]
        return fn(*_align(a, b))

    return compare


def _align(left: Value, right: Value) -> tuple[Value, Value]:
    """Spark's implicit casts that Arrow lacks: a string literal against a date or timestamp,
    an integer against a float (``_promote``)."""
    left, right = _promote(left, right)
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
    return pc.cast(_float(value), pa.float64())


def _divide(a: Value, b: Value) -> Value:
    """Spark's ``/``: always DOUBLE; division by zero gives NULL here (try_divide)."""
    a, b = _as_float(a), _as_float(b)
    zero = pc.equal(b, 0.0)
    return pc.if_else(zero, pa.scalar(None, pa.float64()), pc.divide(a, b))


def _mod(a: Value, b: Value) -> Value:
    """Spark's ``%``: the sign follows the dividend; NULL when dividing by zero. Integers stay
    exact (Arrow's integer division truncates toward zero, as Spark's remainder needs)."""
    if pa.types.is_integer(_type(a)) and pa.types.is_integer(_type(b)):
        b = pc.if_else(pc.equal(b, 0), pa.scalar(None, pa.int64()), pc.cast(b, pa.int64()))
        a = pc.cast(a, pa.int64())
        rest = pc.subtract(a, pc.multiply(pc.divide(a, b), b))
        return pc.if_else(pc.equal(b, -1), pa.scalar(0, pa.int64()), rest)  # Arrow's -2**63 / -1 is 0
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
        return _compare(_COMPARE[type(node)], node, c(node.this), c(node.expression))
    if isinstance(node, exp.NullSafeEQ):
        left, right = c(node.this), c(node.expression)

        def null_safe(t):
            a, b = _align(left(t), right(t))
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            return pc.or_(pc.fill_null(pc.equal(a, b), False), both_null)

        return null_safe
    if isinstance(node, exp.And):
        left, right = c(node.this), c(node.expression)
        return lambda t: pc.and_kleene(_typed(left(t), pa.bool_()), _typed(right(t), pa.bool_()))
    if isinstance(node, exp.Or):
        left, right = c(node.this), c(node.expression)
        return lambda t: pc.or_kleene(_typed(left(t), pa.bool_()), _typed(right(t), pa.bool_()))
    if isinstance(node, exp.Not):
        inner = c(node.this)
        return lambda t: pc.invert(_typed(inner(t), pa.bool_()))
    if isinstance(node, exp.Neg):
        inner, negate = c(node.this), _overflow(pc.negate_checked, node)
        return lambda t: negate(inner(t))
    if type(node) in _ARITH:
        fn, left, right = _overflow(_ARITH[type(node)], node), c(node.this), c(node.expression)
        return lambda t: fn(*_promote(left(t), right(t)))
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
        return lambda t: pc.match_substring_regex(_typed(value(t), pa.string()), pattern)
    if isinstance(node, (exp.Case, exp.If)):
        return _compile_case(node, c)
    if isinstance(node, exp.Coalesce):
        parts = [c(node.this)] + [c(e) for e in node.expressions]
        return lambda t: pc.coalesce(*_common([p(t) for p in parts]))
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return _compile_cast(node, c)
    if type(node) in _STRING_FUNCS:
        fn, inner = _STRING_FUNCS[type(node)], c(node.this)
        return lambda t: fn(_typed(inner(t), pa.string()))
    if type(node) in _NUMBER_FUNCS:
        fn, inner = _overflow(_NUMBER_FUNCS[type(node)], node), c(node.this)
        return lambda t: fn(_typed(inner(t), pa.float64()))
    if isinstance(node, exp.Round):
        inner = c(node.this)
        digits = int(node.args["decimals"].this) if node.args.get("decimals") is not None else 0
        return lambda t: pc.round(_typed(inner(t), pa.float64()), digits, round_mode="half_up")
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
    return lambda t: pc.match_like(_typed(value(t), pa.string()), pattern, ignore_case=ignore_case)


def _common(values: list[Value]) -> list[Value]:
    """COALESCE's arguments in one type: NULL-only ones take the others' type, and integers
    mixed with floats become DOUBLE."""
    kinds = [v.type for v in values if not pa.types.is_null(v.type)]
    if not kinds:
        return values
    kind = kinds[0]
    if any(pa.types.is_floating(k) for k in kinds) and all(pa.types.is_integer(k) or pa.types.is_floating(k)
                                                          for k in kinds):
        kind = pa.float64()
    return [v if v.type == kind else pc.cast(_float(v), kind) for v in values]


def _cast_target(node) -> pa.DataType:
    key = node.to.this.name if hasattr(node.to.this, "name") else str(node.to.this)
    target = _CAST_TYPES.get(key.upper())
    if target is None:
        raise ExprError(UnsupportedError, f"CAST to {node.to.sql(dialect='spark')} is not supported by the local engines",
                        node, "UNSUPPORTED_EXPRESSION")
    return target


def _compile_cast(node, c) -> Compiled:
    """CAST as Spark 4 with ANSI mode: strings are trimmed and must parse, numbers must fit the
    target (floats and decimals are truncated toward zero first); otherwise CAST_INVALID_INPUT or
    CAST_OVERFLOW. ``try_cast`` (sqlglot's TryCast with ``safe``) gives NULL for those values.
    Other casts (to DOUBLE, between time types) do not check, as Spark does not."""
    inner, target = c(node.this), _cast_target(node)
    tolerant = bool(node.args.get("safe"))

    def cast(t):
        value = inner(t)
        source = value.type
        checked = pa.types.is_string(source) or pa.types.is_integer(target)
        if pa.types.is_string(source) and not pa.types.is_string(target):
            value = pc.utf8_trim_whitespace(value)
        if (pa.types.is_floating(source) or pa.types.is_decimal(source)) and pa.types.is_integer(target):
            value = pc.round(value, 0, round_mode="towards_zero")
        try:
            return pc.cast(value, target, safe=checked)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            if tolerant:
                return _cast_each(value, target)
            raise _cast_error(node, value, target) from None

    return cast


def _cast_each(value: Value, target: pa.DataType) -> Value:
    """try_cast: each value that does not convert is NULL."""
    if isinstance(value, pa.Scalar):
        return _cast_each(pa.array([value.as_py()], value.type), target)[0]
    out = []
    for item in (value.combine_chunks() if isinstance(value, pa.ChunkedArray) else value):
        try:
            out.append(pc.cast(item, target).as_py())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            out.append(None)
    return pa.array(out, target)


def _cast_error(node, value: Value, target: pa.DataType) -> ExprError:
    """The first value that does not convert, as Spark's error names it."""
    bad = value
    if not isinstance(value, pa.Scalar):
        for item in (value.combine_chunks() if isinstance(value, pa.ChunkedArray) else value):
            try:
                pc.cast(item, target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                bad = item
                break
    shown = bad.as_py() if isinstance(bad, pa.Scalar) else "a value"
    malformed = pa.types.is_string(value.type)
    return ExprError(
        ExecutionError,
        f"The value {shown!r} of '{node.this.sql(dialect='spark')}' cannot be cast to {node.to.sql(dialect='spark')}"
        + (" because it is malformed" if malformed else " due to an overflow"),
        node, "CAST_INVALID_INPUT" if malformed else "CAST_OVERFLOW",
        "use try_cast to get NULL for such values")


def guard(fn: Compiled, raise_error: Callable[[ExprError], Exception]) -> Compiled:
    """``fn`` with the errors it raises while evaluating (:class:`ExprError`, e.g. a CAST of a
    malformed string) turned into ``raise_error(err)``, a positioned CeqlError."""

    def guarded(t):
        try:
            return fn(t)
        except ExprError as err:
            raise raise_error(err) from None

    return guarded


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


__all__ = ["compile_expr", "ExprError", "Compiled", "guard"]
