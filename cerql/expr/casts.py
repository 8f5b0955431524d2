"""CAST and TRY_CAST, as Spark 4 casts with ANSI mode on.

Strings are read with Spark's parsers (cerql.expr.parsing), numbers are checked against the
target (floats truncated toward zero, DECIMAL rounded HALF_UP), values printed as Java prints
them (cerql.expr.printing); a live row that does not convert raises CAST_INVALID_INPUT,
CAST_OVERFLOW or NUMERIC_VALUE_OUT_OF_RANGE, and TRY_CAST gives NULL there. Comparisons and the
time functions cast strings through :func:`_cast_value` too, as Spark does.
"""

from __future__ import annotations

import math
from decimal import ROUND_DOWN, Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql.errors import ExecutionError, UnsupportedError
from cerql.expr.coercion import _as_timestamp, _date_of_timestamp, _decimal_fit, _to_float64
from cerql.expr.errors import ExprError, _mismatch, _refuse_type, _unsupported
from cerql.expr.kinds import (MAX_PRECISION, Handler, Value, _is_dec, _is_float, _is_int, _is_num, _is_str,
                              _spark_type_name)
from cerql.expr.parsing import (_parse_bool, _parse_date, _parse_decimal, _parse_double, _parse_int,
                                _parse_timestamp, _readable, _ValueUnreadable)
from cerql.expr.printing import _text, java_double_string
from cerql.expr.rows import _BAD, _at, _bad_rows, _Env, _map_checked, _map_values


_CAST_TYPES = {
    "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
    "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "TEXT": pa.string(), "VARCHAR": pa.string(),
    "CHAR": pa.string(), "BOOLEAN": pa.bool_(), "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", "UTC"), "TIMESTAMPTZ": pa.timestamp("us", "UTC"),
    "TIMESTAMPLTZ": pa.timestamp("us", "UTC"), "TIMESTAMPNTZ": pa.timestamp("us"),
}


def _cast_target(node) -> pa.DataType:
    to = node.to
    key = to.this.name if hasattr(to.this, "name") else str(to.this)
    key = key.upper()
    if key == "DECIMAL":
        params = [p.this if isinstance(p, exp.DataTypeParam) else p for p in to.expressions]
        nums = [int(p.this) for p in params if isinstance(p, exp.Literal) and not p.is_string]
        if len(nums) != len(params) or len(nums) > 2:
            raise _unsupported(node, f"CAST to {to.sql(dialect='spark')}")
        precision, scale = (nums + [10, 0])[:2] if nums else (10, 0)
        if len(nums) == 1:
            scale = 0
        if not 1 <= precision <= MAX_PRECISION or not 0 <= scale <= precision:
            raise _unsupported(node, f"CAST to {to.sql(dialect='spark')}")
        return pa.decimal128(precision, scale)
    target = _CAST_TYPES.get(key)
    if target is None or to.expressions and key not in ("VARCHAR", "CHAR", "TEXT"):
        raise _unsupported(node, f"CAST to {to.sql(dialect='spark')}")
    return target


class _Cast:
    """One CAST's conversion of a value: ``out`` with NULL where a value does not convert, and
    the rows that do not (``bad``) with the error class Spark raises for them; or a list of
    (rows, error class) pairs."""

    def __init__(self, out, bad=False, error_class="CAST_INVALID_INPUT"):
        self.out = out
        self.problems = bad if isinstance(bad, list) else [(bad, error_class)]


def _convert(node, value: Value, target: pa.DataType) -> _Cast:
    src = value.type
    if src == target:
        return _Cast(value)
    if pa.types.is_null(src):
        return _Cast(pc.cast(value, target))
    if pa.types.is_string(target):
        return _Cast(_text(node, value))
    if _is_str(src):
        return _convert_string(node, pc.cast(value, pa.string()), target)
    if pa.types.is_boolean(src):
        if _is_int(target) or _is_float(target):
            return _Cast(pc.cast(value, target))
        if _is_dec(target):
            return _Cast(_map_values(value, lambda b: Decimal(int(b)), target))
        raise _refuse_type(node, src, target)
    if _is_num(src):
        return _convert_number(node, value, target)
    if pa.types.is_date(src):
        if pa.types.is_timestamp(target):
            return _Cast(_as_timestamp(value, aware=bool(target.tz)))
        if _is_num(target) or pa.types.is_boolean(target):  # Spark points to UNIX_DATE and the like
            raise _mismatch(node, "CAST_WITH_FUNC_SUGGESTION", src, target)
        raise _refuse_type(node, src, target)
    if pa.types.is_duration(src):  # Spark casts an interval to integers, DECIMAL and STRING only
        if _is_int(target) or _is_dec(target) or _is_str(target):
            raise _refuse_type(node, src, target)
        raise _mismatch(node, "CAST_WITHOUT_SUGGESTION", src, target)
    if pa.types.is_timestamp(src):
        if pa.types.is_date(target):
            return _Cast(_date_of_timestamp(value))
        if pa.types.is_timestamp(target):
            return _Cast(_as_timestamp(value, aware=bool(target.tz)))
        if not src.tz and (_is_num(target) or pa.types.is_boolean(target)):  # a TIMESTAMP_NTZ has no number
            raise _mismatch(node, "CAST_WITHOUT_SUGGESTION", src, target)
        raise _refuse_type(node, src, target)
    raise _refuse_type(node, src, target)


def _convert_string(node, value: Value, target: pa.DataType) -> _Cast:
    if _is_int(target):
        out, bad = _map_checked(value, _parse_int(target), target)
        return _Cast(out, bad)
    if _is_float(target):
        out, bad = _map_checked(value, _parse_double, pa.float64())
        return _Cast(pc.cast(out, target, safe=False), bad)
    if pa.types.is_boolean(target):
        out, bad = _map_checked(value, _parse_bool, target)
        return _Cast(out, bad)
    if _is_dec(target):
        malformed = _map_checked(value, lambda s: _parse_decimal(s) is _BAD, pa.bool_())[0]

        def one(s):
            d = _parse_decimal(s)
            return _BAD if d is _BAD else _decimal_fit(d, target)

        out, bad = _map_checked(value, one, target)
        return _Cast(out, [(_bad_rows(malformed), "CAST_INVALID_INPUT"),
                           (bad, "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION")])
    if pa.types.is_date(target):
        out, bad = _map_checked(value, lambda s: _readable(_parse_date, s), target)
        return _Cast(out, bad)
    if pa.types.is_timestamp(target):
        wall = not target.tz  # TIMESTAMP_NTZ: the wall time as written, a zone in the text ignored
        kind = pa.timestamp("us") if wall else pa.timestamp("us", "UTC")
        out, bad = _map_checked(value, lambda s: _readable(lambda t: _parse_timestamp(t, wall), s), kind)
        return _Cast(out, bad)
    raise _refuse_type(node, pa.string(), target)


def _convert_number(node, value: Value, target: pa.DataType) -> _Cast:
    src = value.type
    if _is_int(target):
        lo, hi = -2 ** (target.bit_width - 1), 2 ** (target.bit_width - 1) - 1
        if _is_int(src):
            bad = _bad_rows(pc.or_(pc.less(value, lo), pc.greater(value, hi)))
            return _Cast(pc.cast(value, target, safe=False), bad, "CAST_OVERFLOW")
        if _is_float(src):
            x = pc.cast(value, pa.float64())
            t = pc.trunc(x)
            # Spark's check: floor(x) <= MAX and ceil(x) >= MIN as doubles, then Java's
            # saturating conversion (so 2**63 as a DOUBLE is BIGINT's maximum)
            bad = pc.or_(pc.is_nan(x), pc.or_(pc.greater(pc.floor(x), float(hi)), pc.less(pc.ceil(x), float(lo))))
            clipped = pc.max_element_wise(pc.min_element_wise(pc.if_else(pc.fill_null(bad, False), 0.0, t),
                                                              float(2**63 - 1024), skip_nulls=False),
                                          float(-2**63), skip_nulls=False)
            out = pc.cast(clipped, pa.int64(), safe=False)
            if target.bit_width == 64:
                out = pc.if_else(pc.greater_equal(t, 2.0**63), pa.scalar(2**63 - 1), out)
            return _Cast(pc.cast(out, target, safe=False), _bad_rows(bad), "CAST_OVERFLOW")
        return _Cast(*_map_checked(value, lambda d: (lambda v: v if lo <= v <= hi else _BAD)(
            int(d.to_integral_value(rounding=ROUND_DOWN))), target), "CAST_OVERFLOW")
    if pa.types.is_float64(target):
        return _Cast(_to_float64(value))
    if pa.types.is_float32(target):
        return _Cast(pc.cast(_to_float64(value) if _is_dec(src) else value, target, safe=False))
    if _is_dec(target):
        if _is_float(src):
            def one(v):
                if math.isnan(v) or math.isinf(v):
                    return None
                return _decimal_fit(Decimal(repr(float(v))), target)
        else:
            def one(v):
                return _decimal_fit(Decimal(v), target)
        out, bad = _map_checked(value, one, target)
        return _Cast(out, bad, "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION")
    if pa.types.is_boolean(target):
        return _Cast(pc.not_equal(value, pa.scalar(0, src) if not _is_dec(src) else pa.scalar(Decimal(0), src)))
    raise _refuse_type(node, src, target)


def _cast_value(node, value: Value, target: pa.DataType, env: _Env, tolerant: bool) -> Value:
    """CAST as Spark 4 with ANSI mode: strings read with Spark's parsers (trimmed of characters
    up to U+0020), numbers checked against the target (floats truncated toward zero, DECIMAL
    rounded HALF_UP), text printed as Java prints it; CAST_INVALID_INPUT, CAST_OVERFLOW or
    NUMERIC_VALUE_OUT_OF_RANGE on a live row that does not convert, NULL under try_cast."""
    try:
        done = _convert(node, value, target)
    except _ValueUnreadable as err:
        raise ExprError(UnsupportedError, f"The value {err.text!r} of '{node.this.sql(dialect='spark')}' as "
                        f"{_spark_type_name(target)} is not supported by cerql's local engine (cerql.run); "
                        "spark.cer_sql reads it", node, "UNSUPPORTED_EXPRESSION",
                        "the local engine reads yyyy-MM-dd[ HH:mm:ss[.ffffff]][Z|UTC|+hh:mm]") from None
    if tolerant:
        out = done.out
        for bad, _ in done.problems:
            if isinstance(bad, np.ndarray) and bad.any():
                out = pc.if_else(pa.array(bad), pa.scalar(None, out.type), out)
            elif isinstance(bad, (bool, np.bool_)) and bad:
                out = pa.scalar(None, out.type)
        return out
    hits = [(row, error_class) for row, error_class in ((env.hit(bad), cls) for bad, cls in done.problems)
            if row is not None]
    if hits:
        row, error_class = min(hits, key=lambda h: h[0])
        shown = _at(value, row)
        if isinstance(shown, float):
            shown = java_double_string(shown)
        to = _spark_type_name(target)
        if error_class == "CAST_INVALID_INPUT":
            message = f"The value {shown!r} of '{node.this.sql(dialect='spark')}' cannot be cast to {to} because it is malformed"
        elif error_class == "CAST_OVERFLOW":
            message = f"The value {shown!r} of '{node.this.sql(dialect='spark')}' cannot be cast to {to} due to an overflow"
        else:
            message = f"The value {shown!r} of '{node.this.sql(dialect='spark')}' cannot be represented as {to}"
        raise ExprError(ExecutionError, message, node, error_class, "use try_cast to get NULL for such values")
    return done.out


def _compile_cast(node, c):
    """CAST, and TRY_CAST (sqlglot: a Cast with ``safe``), which gives NULL where CAST raises."""
    inner, target = c(node.this), _cast_target(node)
    tolerant = bool(node.args.get("safe"))
    return lambda env: _cast_value(node, inner(env), target, env, tolerant)


BY_NODE: dict[type, Handler] = {exp.Cast: _compile_cast, exp.TryCast: _compile_cast}
