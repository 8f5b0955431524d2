"""Spark's types as Arrow types, and Spark's analyzer rules on them.

Every value an expression computes carries its Spark type as an Arrow type (INT is int32,
DECIMAL(p, s) decimal128(p, s), a day-time INTERVAL a microsecond duration, NULL's NullType
Arrow's null); this module holds the predicates on those types, their names as Spark prints
them, the DECIMAL result types of arithmetic, and which pairs of date, timestamp and interval
types Spark's analyzer takes (:func:`_arith_check`, :func:`_comparable_kinds`; the rules are
Spark 4's, compared with its analyzer pair by pair in tests/spark/test_timestamp_arithmetic.py).
Nothing here looks at values, so every family module imports it.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc


Value = pa.Array | pa.ChunkedArray | pa.Scalar


Compiled = Callable[[pa.Table], Value]
# a function-table entry (cerql.expr.core BY_NODE): (sqlglot node, compiler) -> function of the rows
Handler = Callable[..., Callable]


def _spark_type_name(kind: pa.DataType) -> str:
    names = {pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INT", pa.int64(): "BIGINT",
             pa.float32(): "FLOAT", pa.float64(): "DOUBLE", pa.string(): "STRING", pa.bool_(): "BOOLEAN",
             pa.date32(): "DATE", pa.null(): "VOID"}
    if kind in names:
        return names[kind]
    if pa.types.is_decimal(kind):
        return f"DECIMAL({kind.precision},{kind.scale})"
    if pa.types.is_timestamp(kind):
        return "TIMESTAMP" if kind.tz else "TIMESTAMP_NTZ"
    if pa.types.is_duration(kind):
        return "INTERVAL DAY TO SECOND"
    return str(kind).upper()


def _family(kind: pa.DataType) -> str:
    if pa.types.is_timestamp(kind):
        return "T"
    if pa.types.is_date(kind):
        return "D"
    if pa.types.is_duration(kind):
        return "V"
    if _is_int(kind):
        return "L" if kind.bit_width == 64 else "I"
    if _is_num(kind):
        return "N"
    if _is_str(kind):
        return "S"
    if pa.types.is_boolean(kind):
        return "B"
    if pa.types.is_null(kind):
        return "0"
    return "?"


_SPARK_RUNS = "runs"  # Spark accepts the types (the local engine may still not compute it)


def _arith_check(op: str, ta: pa.DataType, tb: pa.DataType) -> str | None:
    """What Spark's analyzer says of ``a op b`` (+ - * / % div) when either is a date, a
    timestamp or an interval: None when the local engine computes it (timestamp - timestamp,
    timestamp +/- interval, interval +/- interval), ``_SPARK_RUNS`` when Spark accepts it and
    the local engine does not compute it, else Spark's error class (DATATYPE_MISMATCH.*)."""
    a, b = _family(ta), _family(tb)
    if "?" in (a, b):
        return _SPARK_RUNS  # a type outside these families: refused locally, as before
    pair = a + b
    same = (a == b == "T" and bool(ta.tz) == bool(tb.tz)) or pair in ("DD", "VV")
    number = ("I", "L", "N")
    if op == "+":
        if pair in ("TV", "VT", "VV"):
            return None
        if pair in ("DV", "VD", "DI", "ID", "VS", "SV") or ("0" in pair and set(pair) & set("TDV")):
            return _SPARK_RUNS
        if a == "D" or b == "D":
            return "UNEXPECTED_INPUT_TYPE"
        if pair == "TT":
            return "BINARY_OP_WRONG_TYPE" if same else "BINARY_OP_DIFF_TYPES"
        if pair in ("TS", "ST"):
            return "BINARY_OP_WRONG_TYPE"
        if "T" in pair:
            return "BINARY_OP_DIFF_TYPES"
        return "UNEXPECTED_INPUT_TYPE"  # an interval with a number or a boolean
    if op == "-":
        if a in "TD" and b in "TD" or pair in ("TV", "VV"):
            return None
        if pair in ("TS", "ST", "DS", "SD", "DV", "DI", "SV") or ("0" in pair and set(pair) & set("TDV")):
            return _SPARK_RUNS
        if a == "V" and b not in "TD":
            return "BINARY_OP_DIFF_TYPES"
        return "UNEXPECTED_INPUT_TYPE"
    if op == "*" and ((a == "V" and b in number + ("S", "0")) or (b == "V" and a in number + ("S", "0"))):
        return _SPARK_RUNS
    if op == "/" and a == "V" and b in number + ("S", "0"):
        return _SPARK_RUNS
    if op == "div" and pair in ("VV", "V0", "0V"):
        return _SPARK_RUNS
    if op == "*" and "V" in pair and (set(pair) - {"V"} <= set("TDVB")):
        return "UNEXPECTED_INPUT_TYPE"
    if op == "/" and a == "V":
        return "UNEXPECTED_INPUT_TYPE"
    if same or (pair in ("TS", "ST", "DS", "SD")):
        return "BINARY_OP_WRONG_TYPE"
    return "BINARY_OP_DIFF_TYPES"


def _comparable_kinds(ta: pa.DataType, tb: pa.DataType, greatest: bool = False) -> bool:
    """Whether Spark compares (or unifies, in CASE, COALESCE, IN, greatest) values of these
    types when one is a date, a timestamp or an interval: times with times, and with strings
    (not in greatest and least), intervals with intervals; NULL with anything."""
    a, b = _family(ta), _family(tb)
    if "0" in (a, b):
        return True
    if a in "TD" and b in "TD":
        return True
    if a == b == "V":
        return True
    if not greatest and (a in "TD" and b == "S" or b in "TD" and a == "S"):
        return True
    return False


def _is_temporal(kind: pa.DataType) -> bool:
    return pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_duration(kind)


_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}


MAX_PRECISION = 38


def _is_int(t):
    return pa.types.is_integer(t)


def _is_float(t):
    return pa.types.is_floating(t)


def _is_dec(t):
    return pa.types.is_decimal(t)


def _is_num(t):
    return _is_int(t) or _is_float(t) or _is_dec(t)


def _is_str(t):
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_time(t):
    return pa.types.is_timestamp(t) or pa.types.is_date(t)


def _null_as(value: Value, kind: pa.DataType) -> Value:
    """An all-NULL value (Arrow type null, Spark's NullType) as ``kind``: Spark casts NullType
    implicitly, so ``upper(s)`` of a NULL-only column is NULL."""
    return pc.cast(value, kind) if pa.types.is_null(value.type) and not pa.types.is_null(kind) else value


def _decimal_type_of(kind: pa.DataType) -> pa.DataType:
    """The DECIMAL Spark widens an integer type to (TINYINT: DECIMAL(3,0), ..., BIGINT: (20,0))."""
    if _is_int(kind):
        return pa.decimal128(_INT_DIGITS[kind.bit_width], 0)
    return kind


def _widen_decimals(kinds: list[pa.DataType]) -> pa.DataType:
    """Spark's wider DECIMAL of several (integers as their DECIMAL): the most integer digits and
    the largest scale, at most 38 digits."""
    decs = [_decimal_type_of(k) for k in kinds]
    scale = max(k.scale for k in decs)
    whole = max(k.precision - k.scale for k in decs)
    return pa.decimal128(min(MAX_PRECISION, whole + scale), min(scale, MAX_PRECISION))


def _decimal_op_type(op: str, ta: pa.DataType, tb: pa.DataType, adjust: bool = True):
    """Spark's result type of a DECIMAL ``+ - * / %`` (precision loss allowed, its default);
    without ``adjust``, its (precision, scale) before the cut to 38 digits."""
    p1, s1, p2, s2 = ta.precision, ta.scale, tb.precision, tb.scale
    if op in "+-":
        s = max(s1, s2)
        p = max(p1 - s1, p2 - s2) + s + 1
    elif op == "*":
        p, s = p1 + p2 + 1, s1 + s2
    elif op == "/":
        s = max(6, s1 + p2 + 1)
        p = p1 - s1 + s2 + s
    else:  # %
        s = max(s1, s2)
        p = min(p1 - s1, p2 - s2) + s
    if not adjust:
        return p, s
    if p > MAX_PRECISION:
        whole = p - s
        s = max(MAX_PRECISION - whole, min(s, 6))
        p = MAX_PRECISION
    return pa.decimal128(p, s)


_US = pa.duration("us")


def _bool(value: Value) -> Value:
    return _null_as(value, pa.bool_())


BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1  # Spark's BIGINT (a LongType)
