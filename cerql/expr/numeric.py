"""Numbers: + - * / % div, unary minus, abs, floor, ceil, round, sqrt, isnan, greatest, least.

Integers are overflow-checked (ARITHMETIC_OVERFLOW), DECIMALs exact in Spark's result type
(precision loss allowed, its default), floats IEEE with Java's ``%``; a zero divisor of a live
row is DIVIDE_BY_ZERO or REMAINDER_BY_ZERO. ``round`` is HALF_UP on a DOUBLE's decimal text, as
Spark's; exp, ln, log and pow are refused because Spark computes them with Java's StrictMath,
which the C library misses in the last bit. Arithmetic with a date, timestamp or interval goes
to cerql.expr.times.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal, localcontext

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql.errors import ExecutionError
from cerql.expr.coercion import _as_duration, _common, _decimal_fit, _has_nan, _micros, _numeric_pair, _to_float64
from cerql.expr.errors import ExprError, _by_zero, _mismatch, _out_of_range, _overflow_error, _refuse_type, _unsupported
from cerql.expr.kinds import (MAX_PRECISION, Handler, Value, _decimal_op_type, _is_dec, _is_float, _is_int, _is_num,
                              _is_temporal, _is_time, _null_as)
from cerql.expr.literals import _int_literal, literal_scalar, _operand_digits
from cerql.expr.rows import (_ARITH_FN, _BAD, _bad_rows, _checked, _Env, _map_checked, _map_values, _np_valid,
                             _pairs, _ScalarPairs)
from cerql.expr.times import _time_arith


def _decimal_arith(node, op: str, a: Value, b: Value, env: _Env) -> Value:
    kind = _decimal_op_type(op, a.type, b.type)
    if op in "+-*" and _decimal_op_type(op, a.type, b.type, adjust=False)[0] <= MAX_PRECISION:
        fn = {"+": pc.add, "-": pc.subtract, "*": pc.multiply}[op]
        return pc.cast(fn(a, b), kind)  # exact: no rounding and no overflow at these precisions
    if op in "/%":
        zero = _bad_rows(pc.and_(pc.equal(b, pa.scalar(Decimal(0), b.type)), pc.is_valid(a)))
        row = env.hit(zero)
        if row is not None:
            raise _by_zero(node, op)
    pairs = _pairs(a, b)

    def one(x: Decimal, y: Decimal):
        with localcontext() as ctx:
            ctx.prec = 120
            if op == "+":
                r = x + y
            elif op == "-":
                r = x - y
            elif op == "*":
                r = x * y
            elif y == 0:
                return None
            elif op == "/":
                r = x / y
            else:
                r = x % y
        return _decimal_fit(r, kind)

    out, bad = [], []
    for x, y in pairs:
        r = None if x is None or y is None else one(x, y)
        bad.append(r is _BAD)
        out.append(None if r is _BAD else r)
    result = pa.array(out, kind) if not isinstance(pairs, _ScalarPairs) else pa.scalar(out[0], kind)
    hit = env.hit(np.array(bad) if not isinstance(pairs, _ScalarPairs) else bad[0])
    if hit is not None:
        raise _out_of_range(node, "The result", kind)
    return result


def _arith(node, op: str, a: Value, b: Value, env: _Env) -> Value:
    """``a op b`` for + - *, as Spark: integers checked (ARITHMETIC_OVERFLOW), decimals exact in
    Spark's result type, floats as IEEE; dates, timestamps and intervals as :func:`_time_arith`."""
    if _is_temporal(a.type) or _is_temporal(b.type):
        return _time_arith(node, op, a, b, env)
    a, b = _numeric_pair(node, a, b, _operand_digits(node))
    kind = a.type
    if pa.types.is_null(kind):
        return a
    if _is_dec(kind):
        return _decimal_arith(node, op, a, b, env)
    checked, plain = _ARITH_FN[op]
    if _is_int(kind):
        wide = max(a.type, b.type, key=lambda k: k.bit_width)
        return _checked(env, node, checked, plain, (a, b), wide)
    return plain(a, b)


def _divide(node, a: Value, b: Value, env: _Env) -> Value:
    """Spark's ``/``: DOUBLE unless a DECIMAL is in it (then DECIMAL, HALF_UP at Spark's scale);
    a zero divisor of a non-NULL dividend is DIVIDE_BY_ZERO."""
    if _is_temporal(a.type) or _is_temporal(b.type):
        return _time_arith(node, "/", a, b, env)
    a, b = _numeric_pair(node, a, b, _operand_digits(node))
    if pa.types.is_null(a.type):
        return pc.cast(a, pa.float64())
    if _is_dec(a.type):
        return _decimal_arith(node, "/", a, b, env)
    a, b = _to_float64(a), _to_float64(b)
    if env.hit(_bad_rows(pc.and_(pc.equal(b, 0.0), pc.is_valid(a)))) is not None:
        raise _by_zero(node, "/")
    return pc.divide(a, b)


def _mod(node, a: Value, b: Value, env: _Env) -> Value:
    """Spark's ``%``: the sign follows the dividend; integers exact, floats as Java's ``%``
    (C's fmod), decimals exact; a zero divisor is REMAINDER_BY_ZERO."""
    if _is_temporal(a.type) or _is_temporal(b.type):
        return _time_arith(node, "%", a, b, env)
    a, b = _numeric_pair(node, a, b, _operand_digits(node))
    kind = a.type
    if pa.types.is_null(kind):
        return a
    if _is_dec(kind):
        return _decimal_arith(node, "%", a, b, env)
    zero = pa.scalar(0, kind) if _is_int(kind) else pa.scalar(0.0, kind)
    if env.hit(_bad_rows(pc.and_(pc.equal(b, zero), pc.is_valid(a)))) is not None:
        raise _by_zero(node, "%")
    if _is_int(kind):
        wide = max(a.type, b.type, key=lambda k: k.bit_width)
        one = pa.scalar(1, wide)
        safe_b = pc.if_else(pc.fill_null(pc.equal(b, 0), False), one, pc.cast(b, wide))
        a = pc.cast(a, wide)
        rest = pc.subtract(a, pc.multiply(pc.divide(a, safe_b), safe_b))
        return pc.if_else(pc.equal(safe_b, pa.scalar(-1, wide)), pa.scalar(0, wide), rest)  # Arrow's MIN / -1
    return _float_binary(np.fmod, a, b, kind)


def _float_binary(fn, a: Value, b: Value, kind: pa.DataType) -> Value:
    """A NumPy ufunc of two float values, NULL where either is."""
    if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar):
        if not (a.is_valid and b.is_valid):
            return pa.scalar(None, kind)
        with np.errstate(all="ignore"):
            dtype = kind.to_pandas_dtype()
            return pa.scalar(fn(np.array([a.as_py()], dtype), np.array([b.as_py()], dtype))[0].item(), kind)
    n = len(a) if not isinstance(a, pa.Scalar) else len(b)
    valid = np.ones(n, bool)
    arrays = []
    for v in (a, b):
        if isinstance(v, pa.Scalar):
            valid &= v.is_valid
            arrays.append(np.full(n, v.as_py() if v.is_valid else 0, kind.to_pandas_dtype()))
        else:
            if isinstance(v, pa.ChunkedArray):
                v = v.combine_chunks()
            valid &= np.asarray(v.is_valid().to_numpy(zero_copy_only=False), bool)
            arrays.append(np.asarray(pc.fill_null(v, 0).to_numpy(zero_copy_only=False), kind.to_pandas_dtype()))
    with np.errstate(all="ignore"):
        out = fn(arrays[0], arrays[1])
    return pa.array(out, kind, mask=~valid)


def _int_divide(node, a: Value, b: Value, env: _Env) -> Value:
    """Spark's ``div`` of integers: BIGINT, truncated toward zero; DIVIDE_BY_ZERO, and
    ARITHMETIC_OVERFLOW for -2**63 div -1."""
    if _is_temporal(a.type) or _is_temporal(b.type):
        return _time_arith(node, "div", a, b, env)
    a, b = _null_as(a, pa.int64()), _null_as(b, pa.int64())
    if not (_is_int(a.type) and _is_int(b.type)):
        raise _refuse_type(node, a.type, b.type)
    a, b = pc.cast(a, pa.int64()), pc.cast(b, pa.int64())
    if env.hit(_bad_rows(pc.and_(pc.equal(b, 0), pc.is_valid(a)))) is not None:
        raise _by_zero(node, "/")
    if env.hit(_bad_rows(pc.and_(pc.equal(a, -2**63), pc.equal(b, -1)))) is not None:
        raise _overflow_error(node)
    safe_b = pc.if_else(pc.fill_null(pc.equal(b, 0), False), pa.scalar(1, pa.int64()), b)
    return pc.divide(a, safe_b)


def _number(node, value: Value) -> Value:
    value = _null_as(value, pa.float64())
    if _is_temporal(value.type):  # Spark's math functions take numbers only
        raise _mismatch(node, "UNEXPECTED_INPUT_TYPE", value.type)
    if not _is_num(value.type):
        raise _refuse_type(node, value.type)
    return value


def _double_fn(fn, node, value: Value, env: _Env) -> Value:
    """A DOUBLE function of a number (``sqrt``: exact in IEEE arithmetic, so the C library's
    value is Java's too)."""
    return fn(_to_float64(_number(node, value)))


def _abs(node, value: Value, env: _Env) -> Value:
    if pa.types.is_duration(value.type):  # Spark's abs of an interval: not computed here
        raise _refuse_type(node, value.type)
    value = _number(node, value)
    if _is_int(value.type):
        return _checked(env, node, pc.abs_checked, pc.abs, (value,))
    return pc.abs(value)


def _negate(node, value: Value, env: _Env) -> Value:
    if pa.types.is_duration(value.type):
        return _as_duration(_checked(env, node, pc.negate_checked, pc.negate, (_micros(value),)))
    value = _number(node, value)
    if _is_int(value.type):
        return _checked(env, node, pc.negate_checked, pc.negate, (value,))
    return pc.negate(value)


def _floor_ceil(node, value: Value, env: _Env, up: bool) -> Value:
    """Spark's floor and ceil: BIGINT of an integer or a float (ARITHMETIC_OVERFLOW for NaN,
    infinities and values beyond BIGINT), DECIMAL(p - s + 1, 0) of a DECIMAL."""
    value = _number(node, value)
    kind = value.type
    if _is_int(kind):
        return pc.cast(value, pa.int64())
    if _is_dec(kind):
        target = pa.decimal128(min(MAX_PRECISION, kind.precision - kind.scale + 1), 0)
        rounding = ROUND_CEILING if up else ROUND_FLOOR
        return _map_values(value, lambda d: d.to_integral_value(rounding=rounding), target)
    x = pc.cast(value, pa.float64())
    r = pc.ceil(x) if up else pc.floor(x)
    if pa.types.is_float32(kind):  # Spark converts a FLOAT as Java's (long): NaN is 0, saturating
        r = pc.if_else(pc.is_nan(r), 0.0, r)
        big = pc.greater_equal(r, 2.0**63)
        r = pc.max_element_wise(pc.min_element_wise(r, float(2**63 - 1024), skip_nulls=False), -2.0**63,
                                skip_nulls=False)
        out = pc.cast(r, pa.int64(), safe=False)
        return pc.if_else(big, pa.scalar(2**63 - 1), out)
    bad = pc.or_(pc.is_nan(r), pc.or_(pc.greater_equal(r, 2.0**63), pc.less(r, -2.0**63)))
    if env.hit(_bad_rows(bad)) is not None:
        raise _overflow_error(node)
    safe = pc.if_else(pc.fill_null(bad, False), pa.scalar(0.0), r)
    return pc.cast(safe, pa.int64(), safe=False)


def _round_double(x: float, digits: int) -> float:
    """Spark's round of a DOUBLE: HALF_UP on its decimal text (Java's Double.toString)."""
    if math.isnan(x) or math.isinf(x):
        return x
    with localcontext() as ctx:
        ctx.prec = 400
        d = Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP) if digits > -400 else Decimal(0)
    return float(d)


def _round(node, value: Value, digits: int, env: _Env) -> Value:
    """Spark's round(x, d): HALF_UP (away from zero on ties). A DOUBLE is rounded on its decimal
    text, so round(0.285D, 2) is 0.29 (Arrow, on binary values: 0.28); a DECIMAL exactly, as
    DECIMAL(p - s + d + 1, d); an integer with d < 0 to tens, hundreds... (ARITHMETIC_OVERFLOW
    when it leaves its type)."""
    value = _number(node, value)
    kind = value.type
    if _is_int(kind):
        if digits >= 0:
            return value
        q = 10 ** -digits
        lo, hi = -2 ** (kind.bit_width - 1), 2 ** (kind.bit_width - 1) - 1

        def one(v):
            r = (abs(v) + q // 2) // q * q * (1 if v >= 0 else -1)
            return r if lo <= r <= hi else _BAD

        out, bad = _map_checked(value, one, kind)
        if env.hit(bad) is not None:
            raise ExprError(ExecutionError, f"Overflow in '{node.sql(dialect='spark')}'", node,
                            "ARITHMETIC_OVERFLOW", "cast to a wider type first")
        return out
    if _is_dec(kind):
        scale = min(digits, kind.scale)
        target = pa.decimal128(max(1, min(MAX_PRECISION, kind.precision - kind.scale + scale + 1)), max(scale, 0))
        if digits >= kind.scale:
            return value

        def one_dec(d):
            with localcontext() as ctx:
                ctx.prec = 200
                return d.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP).quantize(
                    Decimal(1).scaleb(-target.scale))

        return _map_values(value, one_dec, target)
    single = pa.types.is_float32(kind)
    x = pc.cast(value, pa.float64())
    if 0 <= digits <= 15:
        # Arrow's round (x * 10**d, round, / 10**d) is Spark's answer but near a tie of the
        # scaled value, and for values too large to have digits there: those are redone exactly.
        fast = pc.round(x, digits, round_mode="half_towards_infinity")
        scaled = pc.multiply(pc.abs(x), 10.0 ** digits)
        frac = pc.subtract(scaled, pc.floor(scaled))
        near = pc.or_(pc.less(pc.abs(pc.subtract(frac, 0.5)), 1e-6), pc.greater_equal(scaled, 2.0**52))
        rows = _bad_rows(pc.and_(near, pc.is_finite(x)))
        if isinstance(rows, bool):
            out = pa.scalar(_round_double(x.as_py(), digits), pa.float64()) if rows else fast
        elif rows.any():
            exact = fast.to_numpy(zero_copy_only=False).copy()
            xs = x.to_numpy(zero_copy_only=False)
            for k in np.flatnonzero(rows):
                exact[k] = _round_double(float(xs[k]), digits)
            out = pa.array(exact, pa.float64(), mask=~_np_valid(x))
        else:
            out = fast
    else:
        out = _map_values(x, lambda v: _round_double(v, digits), pa.float64(), distinct=False)
    return pc.cast(out, pa.float32(), safe=False) if single else out


def _extreme(node, values: list[Value], greatest: bool) -> Value:
    """Spark's greatest and least: NULLs skipped (NULL only when every argument is), NaN above
    every number, arguments in their common type."""
    values = _common(node, values, greatest=True)
    kind = next((v.type for v in values if not pa.types.is_null(v.type)), pa.null())
    if pa.types.is_null(kind):
        return values[0]
    fn = pc.max_element_wise if greatest else pc.min_element_wise
    if _is_time(kind) or pa.types.is_duration(kind):  # Arrow has no element-wise max of timestamps: their integers
        stamp = pa.int32() if pa.types.is_date(kind) else pa.int64()
        out = fn(*[pc.cast(v, stamp) for v in values], skip_nulls=True)
        return pc.cast(out, kind)
    out = fn(*values, skip_nulls=True)
    if _is_float(kind) and any(_has_nan(v) for v in values):
        nans = [pc.fill_null(pc.is_nan(v), False) for v in values]
        nan = pa.scalar(float("nan"), kind)
        if greatest:
            any_nan = nans[0]
            for m in nans[1:]:
                any_nan = pc.or_(any_nan, m)
            out = pc.if_else(any_nan, nan, out)
        else:
            numbers = [pc.and_(pc.is_valid(v), pc.invert(m)) for v, m in zip(values, nans)]
            some = numbers[0]
            for m in numbers[1:]:
                some = pc.or_(some, m)
            present = pc.is_valid(values[0])
            for v in values[1:]:
                present = pc.or_(present, pc.is_valid(v))
            out = pc.if_else(pc.and_(present, pc.invert(some)), nan, out)
    return out


_ARITH_OPS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*"}




def _compile_negation(node, c):
    """Unary minus; of a number literal, the negative literal (``-2147483648`` is an INT)."""
    if isinstance(node.this, exp.Literal) and not node.this.is_string:
        value = literal_scalar(node.this, negative=True)
        return lambda env: value
    inner = c(node.this)
    return lambda env: _negate(node, inner(env), env)


def _arithmetic(op: str) -> Handler:
    """The handler of + - * (``op``)."""

    def compile_arithmetic(node, c):
        left, right = c(node.this), c(node.expression)
        return lambda env: _arith(node, op, left(env), right(env), env)

    return compile_arithmetic


def _division(fn) -> Handler:
    """The handler of / % div (``fn``: :func:`_divide`, :func:`_mod`, :func:`_int_divide`)."""

    def compile_division(node, c):
        left, right = c(node.this), c(node.expression)
        return lambda env: fn(node, left(env), right(env), env)

    return compile_division


def _compile_abs(node, c):
    inner = c(node.this)
    return lambda env: _abs(node, inner(env), env)


def _compile_floor_ceil(node, c):
    if node.args.get("decimals") is not None or node.args.get("to") is not None:
        raise _unsupported(node)
    inner, up = c(node.this), isinstance(node, exp.Ceil)
    return lambda env: _floor_ceil(node, inner(env), env, up)


def _compile_round(node, c):
    inner = c(node.this)
    digits = _int_literal(node.args.get("decimals")) if node.args.get("decimals") is not None else 0
    if digits is None or node.args.get("truncate") is not None:
        raise _unsupported(node, "round with a scale that is not an integer literal")
    return lambda env: _round(node, inner(env), digits, env)


def _compile_sqrt(node, c):
    inner = c(node.this)
    return lambda env: _double_fn(pc.sqrt, node, inner(env), env)


def _refuse_strict_math(node, c):
    # Spark computes these with Java's StrictMath, whose last bit the C library's functions
    # (NumPy's, Arrow's) miss for about one value in ten: the local engine refuses them
    # rather than give another answer
    raise _unsupported(node, hint="exp, ln, log, log10, log2 and pow are computed by Java's StrictMath on "
                       "Spark, which the local engine does not reproduce to the last bit; sqrt is exact on both")


def _compile_isnan(node, c):
    inner = c(node.this)

    def isnan(env):
        x = _to_float64(_number(node, inner(env)))
        return pc.fill_null(pc.is_nan(x), False)

    return isnan


def _compile_extreme(node, c):
    """greatest and least."""
    parts = [c(node.this)] + [c(e) for e in node.expressions]
    greatest = isinstance(node, exp.Greatest)
    return lambda env: _extreme(node, [p(env) for p in parts], greatest)


BY_NODE: dict[type, Handler] = {
    exp.Neg: _compile_negation, **{klass: _arithmetic(op) for klass, op in _ARITH_OPS.items()},
    exp.Div: _division(_divide), exp.Mod: _division(_mod), exp.IntDiv: _division(_int_divide),
    exp.Abs: _compile_abs, exp.Floor: _compile_floor_ceil, exp.Ceil: _compile_floor_ceil, exp.Round: _compile_round,
    exp.Sqrt: _compile_sqrt, exp.Exp: _refuse_strict_math, exp.Ln: _refuse_strict_math,
    exp.Log: _refuse_strict_math, exp.Pow: _refuse_strict_math, exp.IsNan: _compile_isnan,
    exp.Greatest: _compile_extreme, exp.Least: _compile_extreme,
}
