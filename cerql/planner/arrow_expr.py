"""Spark SQL expressions (sqlglot trees) compiled to functions over Arrow tables.

Input: a sqlglot expression and a column resolver. Output: ``fn(table) -> pyarrow value`` built
from ``pyarrow.compute`` kernels, for what runs without Spark: the local engine and the
reference evaluator (``cerql.run``), and the parts of a Spark task that run in Python
(predicates across variables, aggregates). docs/semantics.md "Expressions in the local engines"
is the user's account of what follows.

The rule: a compiled expression gives Spark's answer (Spark SQL 4, ANSI mode on, the session
time zone ``SESSION_TIME_ZONE``), or is refused; never another answer. So values carry Spark's
types as Arrow types: an integer literal is INT (int32) when it fits, a literal with a point
(``0.5``) is DECIMAL (decimal128), and numbers widen as Spark widens them (integer and decimal
to DECIMAL, exactly; anything with a float to DOUBLE, or FLOAT). NaN equals NaN and is above
every number. ``round`` is HALF_UP on the value's decimal text, ``upper``/``lower`` use the full
Unicode case mapping, ``ln`` of 0 is NULL, casts follow Spark's parsers and printers, times are
read in the session time zone. Where Spark raises, the compiled function raises
:class:`ExprError` with Spark's error class (ARITHMETIC_OVERFLOW, DIVIDE_BY_ZERO,
REMAINDER_BY_ZERO, CAST_INVALID_INPUT, CAST_OVERFLOW, NUMERIC_VALUE_OUT_OF_RANGE...), which
:func:`guard` turns into the positioned ExecutionError; and only for rows Spark evaluates: the
right side of AND/OR, CASE/IF branches and COALESCE arguments are evaluated only where Spark
would, so ``b <> 0 AND a / b > 1`` does not raise.

Refusals: a function or form outside the supported set is an :class:`UnsupportedError` at
compile time, with the position, saying that ``spark.cer_sql`` runs it. Operands of a type the
local engine does not take where Spark casts them (``date + 1``, ``CAST(t AS BIGINT)``) raise
:class:`LocalTypeRefusal`, a TypeError, when the planner type-checks the expression on an empty
table (planner/resolve.py ``check``), and a STRING mixed with a number a plain TypeError (the
query's TYPE_MISMATCH); a value the local parsers cannot read as Spark would (a
timestamp string with a zone name) is an UnsupportedError while evaluating.
"""

from __future__ import annotations

import contextvars
import math
import re
from datetime import date, datetime, timedelta, timezone
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql.errors import ExecutionError, UnsupportedError
from cerql.exec import values as _values
from cerql.exec.values import spark_strings

Value = pa.Array | pa.ChunkedArray | pa.Scalar
Compiled = Callable[[pa.Table], Value]

SUPPORTED = (
    "comparisons (= == <=> != <> < <= > >=, IS [NOT] DISTINCT FROM), AND, OR, NOT, + - * / % div, "
    "[NOT] IN (list), [NOT] BETWEEN, [NOT] LIKE, ILIKE, RLIKE, IS [NOT] NULL/TRUE/FALSE, CASE, IF, "
    "COALESCE/NVL/IFNULL, NULLIF, NVL2, CAST/TRY_CAST, TIMESTAMP/DATE literals, abs, floor, ceil, "
    "round, sqrt, isnan, greatest, least, lower, upper, timestamp - timestamp, timestamp +/- INTERVAL, "
    "day-time INTERVAL literals, "
    "length, substring/substr, startswith, endswith, contains, concat/||, trim, ltrim, rtrim, "
    "year, month, day/dayofmonth, dayofweek, hour, minute, second, date_format (yyyy MM dd HH mm ss)"
)


_ZONE: contextvars.ContextVar[str | None] = contextvars.ContextVar("cerql_session_time_zone", default=None)


def _now_zone() -> str:
    """The session time zone of the expression being evaluated (compile_expr's ``time_zone``)."""
    return _ZONE.get() or _values.SESSION_TIME_ZONE


class ExprError(Exception):
    """Raised by the compiler; the caller turns it into a positioned CeqlError."""

    def __init__(self, cls, message: str, node: exp.Expression, error_class: str, hint: str | None = None,
                 offset: int | None = None):
        super().__init__(message)
        self.cls, self.message, self.node, self.error_class, self.hint = cls, message, node, error_class, hint
        self.offset = offset  # where in the query, when ``node`` cannot say (a call's name as written)


class LocalTypeRefusal(TypeError):
    """Operands of a type the local engine does not take where Spark would cast them: raised
    while type-checking on an empty table, so the planner refuses the query before reading
    data (or, planning for Spark, leaves the expression to Spark's analyzer)."""


def _unsupported(node: exp.Expression, what: str | None = None, hint: str | None = None) -> ExprError:
    name = what or f"'{node.sql(dialect='spark')}'"
    return ExprError(UnsupportedError, f"{name} is not supported by cerql's local engine (cerql.run); "
                     "spark.cer_sql runs it", node, "UNSUPPORTED_EXPRESSION", hint or f"supported: {SUPPORTED}")


def refuse_call(name: str, offset: int) -> ExprError:
    """A call written with a name the local engine does not evaluate (parser/written.py:
    sqlglot may read it as another function), at ``offset`` in the query."""
    err = _unsupported(None, f"'{name}'")
    err.offset = offset
    return err


def _refuse_type(node: exp.Expression, *kinds: pa.DataType) -> TypeError:
    """The error for operands the local engine does not take: a STRING mixed with a number is a
    type mismatch of the query (cerql rejects ``name > 5`` before anything runs, where Spark
    would cast each string and fail on the first that is not a number); other mixes that Spark
    casts (``date + 1``, ``CAST(t AS BIGINT)``) are a LocalTypeRefusal."""
    shown = ", ".join(_spark_type_name(k) for k in kinds)
    if any(_is_str(k) for k in kinds) and any(_is_num(k) for k in kinds):
        return TypeError(f"'{node.sql(dialect='spark')}' mixes {shown}")
    return LocalTypeRefusal(f"'{node.sql(dialect='spark')}' on {shown} is not supported by cerql's local engine "
                            "(cerql.run); spark.cer_sql runs it")


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


# --------------------------------------------------------------------------- Spark's type checks
# Where Spark's analyzer refuses the operand types of an expression, the local engine refuses
# them with the same error class (DATATYPE_MISMATCH.*), raised when the planner type-checks the
# expression on an empty table, so both engines refuse the query before reading data. The rules
# below are Spark 4's (tests/spark/test_timestamp_arithmetic.py compares them with its analyzer,
# pair by pair). A type family: T a TIMESTAMP or TIMESTAMP_NTZ, D a DATE, V a day-time
# INTERVAL (an Arrow duration), I an integer of at most 32 bits, L a BIGINT, N another number,
# S a STRING, B a BOOLEAN, 0 NULL.
_TIME_HINT = ("a TIMESTAMP compares with a TIMESTAMP, a DATE or a STRING (ts > TIMESTAMP '2024-01-01 00:00:00'); "
              "the difference of two is an INTERVAL: b.ts - a.ts < INTERVAL 5 MINUTES, ts + INTERVAL '1:30' MINUTE TO SECOND")


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


class SparkTypeMismatch(LocalTypeRefusal):
    """Operand types Spark's analyzer refuses too (``error_class``: its DATATYPE_MISMATCH.*),
    raised when the planner type-checks the expression on an empty table. A LocalTypeRefusal,
    so a query planned for Spark leaves the expression to Spark's analyzer, which reports it with
    its own message and position; the local engine's message names Spark's error class and
    never says that Spark runs it."""

    def __init__(self, message: str, error_class: str, hint: str):
        super().__init__(message)
        self.error_class, self.hint = error_class, hint


def _mismatch(node: exp.Expression, error_class: str, *kinds: pa.DataType) -> SparkTypeMismatch:
    """Spark's analyzer refuses these operand types (see :class:`SparkTypeMismatch`)."""
    shown = " and ".join(_spark_type_name(k) for k in kinds)
    reason = {"BINARY_OP_DIFF_TYPES": "the operands have incompatible types",
              "BINARY_OP_WRONG_TYPE": "the operator does not take operands of this type",
              "DATA_DIFF_TYPES": "the values must all have one type",
              "UNEXPECTED_INPUT_TYPE": "an operand has a type the operator or function does not take",
              "CAST_WITHOUT_SUGGESTION": "the cast is not defined",
              "CAST_WITH_FUNC_SUGGESTION": "the cast is not defined (Spark suggests a function)"}[error_class]
    return SparkTypeMismatch(f"Cannot resolve '{node.sql(dialect='spark')}' due to "
                             f"data type mismatch: {reason} ({shown}); Spark's analyzer refuses it too",
                             f"DATATYPE_MISMATCH.{error_class}", _TIME_HINT)


def _is_temporal(kind: pa.DataType) -> bool:
    return pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_duration(kind)


# --------------------------------------------------------------------------- rows Spark evaluates
class _Env:
    """The table and the rows a subexpression is evaluated on (``live``: None for every row,
    else a NumPy bool mask): errors count only on live rows, as Spark evaluates the right side
    of AND/OR, CASE branches and COALESCE arguments only where they decide the value."""

    __slots__ = ("table", "live")

    def __init__(self, table: pa.Table, live: np.ndarray | None = None):
        self.table, self.live = table, live

    def where(self, mask: Value) -> "_Env":
        """These rows, narrowed to those where ``mask`` is true (NULL is not)."""
        if isinstance(mask, pa.Scalar):
            if mask.is_valid and mask.as_py():
                return self
            return _Env(self.table, np.zeros(self.table.num_rows, bool))
        m = _np_bool(mask)
        return _Env(self.table, m if self.live is None else self.live & m)

    def hit(self, bad) -> int | None:
        """The first live row where ``bad`` (a NumPy bool array, or a bool for every row) holds;
        -1 for a scalar that fails where every row is live, None when none fails."""
        if isinstance(bad, (bool, np.bool_)):
            if not bad:
                return None
            if self.live is None:
                return -1
            rows = np.flatnonzero(self.live)
            return int(rows[0]) if len(rows) else None
        if self.live is not None:
            bad = bad & self.live
        rows = np.flatnonzero(bad)
        return int(rows[0]) if len(rows) else None


def _np_bool(mask: Value) -> np.ndarray:
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    if pa.types.is_null(mask.type):
        return np.zeros(len(mask), bool)
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), bool)


def _bad_rows(mask: Value) -> np.ndarray | bool:
    """A boolean Arrow value as where-it-holds: a NumPy array, or a bool for a scalar."""
    if isinstance(mask, pa.Scalar):
        return bool(mask.is_valid and mask.as_py())
    return _np_bool(mask)


def _live_part(value: Value, env: _Env) -> Value:
    if env.live is None or isinstance(value, pa.Scalar):
        return value
    return value.filter(pa.array(env.live))


def _at(value: Value, row: int):
    if isinstance(value, pa.Scalar):
        return value.as_py()
    return value[max(row, 0)].as_py()


def _overflow_error(node: exp.Expression, kind: pa.DataType | None = None) -> ExprError:
    narrow = kind is not None and (pa.types.is_int8(kind) or pa.types.is_int16(kind))
    return ExprError(ExecutionError, f"Integer overflow in '{node.sql(dialect='spark')}'", node,
                     "BINARY_ARITHMETIC_OVERFLOW" if narrow else "ARITHMETIC_OVERFLOW",
                     "cast to a wider type first, or use try_add, try_subtract or try_multiply, which give NULL")


def _checked(env: _Env, node, checked_fn, plain_fn, args, kind=None) -> Value:
    """``checked_fn(*args)`` (Arrow's overflow-checked kernel); an overflow on a live row is
    Spark's ARITHMETIC_OVERFLOW (BINARY_ARITHMETIC_OVERFLOW for TINYINT and SMALLINT), on other
    rows nothing (the wrapped value is never used)."""
    try:
        return checked_fn(*args)
    except pa.ArrowInvalid as err:
        if "overflow" not in str(err).lower():
            raise
        if env.live is not None:
            try:
                checked_fn(*[_live_part(a, env) for a in args])
            except pa.ArrowInvalid:
                raise _overflow_error(node, kind) from None
            return plain_fn(*args)
        raise _overflow_error(node, kind) from None


# --------------------------------------------------------------------------- types
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


def _to_float64(value: Value) -> Value:
    """A number as DOUBLE the way Spark casts it: an integer to the nearest double (Arrow's
    checked cast refuses those above 2**53); a decimal as its unscaled value divided by a power
    of ten (Spark's Decimal.toDouble, exact for the usual literals: 0.7 is 7 / 10)."""
    kind = value.type
    if pa.types.is_float64(kind):
        return value
    if _is_dec(kind):
        return _map_values(value, _decimal_to_double, pa.float64())
    return pc.cast(value, pa.float64(), safe=False)


def _decimal_to_double(d: Decimal) -> float:
    sign, digits, exponent = d.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    if len(digits) <= 18 and exponent <= 0:
        return float(unscaled) / 10.0 ** -exponent if -exponent <= 22 else float(d)
    return float(d)


def _widen_decimals(kinds: list[pa.DataType]) -> pa.DataType:
    """Spark's wider DECIMAL of several (integers as their DECIMAL): the most integer digits and
    the largest scale, at most 38 digits."""
    decs = [_decimal_type_of(k) for k in kinds]
    scale = max(k.scale for k in decs)
    whole = max(k.precision - k.scale for k in decs)
    return pa.decimal128(min(MAX_PRECISION, whole + scale), min(scale, MAX_PRECISION))


def _numeric_pair(node, a: Value, b: Value, literals=(None, None)) -> tuple[Value, Value]:
    """Two numbers in the type Spark (ANSI) computes them in: integers in the wider integer
    type (Arrow's kernels widen so), two FLOATs as FLOAT, any other pair with a float as DOUBLE,
    integers with a DECIMAL as DECIMAL: DECIMAL(10,0) for an INT, but an integer literal as
    few digits as it has (``literals``: each side's digit count when it is one; Spark's
    literalPickMinimumPrecision, which sets the scale of ``d / 3``)."""
    a, b = _null_as(a, b.type), _null_as(b, a.type)
    ta, tb = a.type, b.type
    if pa.types.is_null(ta):
        return a, b
    if not (_is_num(ta) and _is_num(tb)):
        raise _refuse_type(node, ta, tb)
    if _is_int(ta) and _is_int(tb):
        return a, b
    if _is_float(ta) or _is_float(tb):
        if pa.types.is_float32(ta) and pa.types.is_float32(tb):
            return a, b
        return _to_float64(a), _to_float64(b)
    out = []
    for v, digits in zip((a, b), literals):
        if digits and _is_int(v.type) and isinstance(v, pa.Scalar):
            out.append(pa.scalar(None if not v.is_valid else Decimal(v.as_py()), pa.decimal128(digits, 0)))
        else:
            out.append(pc.cast(v, _decimal_type_of(v.type)))
    return out[0], out[1]


def _literal_digits(node: exp.Expression) -> int | None:
    """How many digits an integer literal operand has (Spark types it DECIMAL(digits, 0)
    against a DECIMAL), or None for anything else."""
    value = _int_literal(node)
    return None if value is None else max(1, len(str(abs(value))))


def _common(node, values: list[Value], greatest: bool = False) -> list[Value]:
    """Values of CASE branches, COALESCE, IN, greatest/least in one type as Spark finds it:
    NULL takes the others' type, numbers widen (see :func:`_numeric_pair`), a DATE with a
    TIMESTAMP is a TIMESTAMP, intervals stay intervals; a date, timestamp or interval with a
    type Spark does not unify it with is its DATA_DIFF_TYPES (``greatest``: greatest and least,
    which do not take a STRING with a time either); other mixes are refused."""
    kinds = [v.type for v in values if not pa.types.is_null(v.type)]
    if not kinds:
        return values
    for k in kinds:
        if _is_temporal(k) or _is_temporal(kinds[0]):
            if not _comparable_kinds(kinds[0], k, greatest):
                raise _mismatch(node, "DATA_DIFF_TYPES", kinds[0], k)
    if all(pa.types.is_duration(k) for k in kinds):
        return [_null_as(v, _US) for v in values]
    if all(_is_num(k) for k in kinds):
        if any(_is_float(k) for k in kinds):
            wide = pa.float32() if all(pa.types.is_float32(k) for k in kinds) else pa.float64()
        elif any(_is_dec(k) for k in kinds):
            wide = _widen_decimals(kinds)
        else:
            wide = max(kinds, key=lambda k: k.bit_width)
        out = []
        for v in values:
            if v.type == wide:
                out.append(v)
            elif pa.types.is_float64(wide):
                out.append(_to_float64(_null_as(v, pa.float64())))
            else:
                out.append(pc.cast(v, wide, safe=not _is_float(wide)))
        return out
    if all(_is_time(k) for k in kinds):
        if any(pa.types.is_timestamp(k) for k in kinds):
            aware = any(pa.types.is_timestamp(k) and k.tz for k in kinds)
            return [_as_timestamp(v, aware) for v in values]
        return [_null_as(v, pa.date32()) for v in values]
    first = kinds[0]
    if all(k == first or (_is_str(k) and _is_str(first)) for k in kinds):
        return [_null_as(v, first) if not _is_str(v.type) else pc.cast(v, pa.string()) for v in values]
    raise _refuse_type(node, *kinds)


# --------------------------------------------------------------------------- time
_MICROS = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": None}


def _as_timestamp(value: Value, aware: bool) -> Value:
    """A DATE, TIMESTAMP or TIMESTAMP_NTZ as a microsecond timestamp: ``aware``, an instant in
    UTC (a naive value is a wall time of the session time zone, a date its midnight there, as
    Spark casts them); else a naive wall time."""
    kind = value.type
    if pa.types.is_null(kind):
        return pc.cast(value, pa.timestamp("us", "UTC") if aware else pa.timestamp("us"))
    if pa.types.is_date(kind):
        value, kind = pc.cast(pc.cast(value, pa.timestamp("s")), pa.timestamp("us")), pa.timestamp("us")
    if kind.unit != "us":
        value = pc.cast(value, pa.timestamp("us", kind.tz), safe=False)
    if aware and not kind.tz:
        zone = _now_zone()
        if zone == "UTC":
            return pc.cast(value, pa.timestamp("us", "UTC"))
        return pc.cast(pc.assume_timezone(value, zone, ambiguous="earliest", nonexistent="earliest"),
                       pa.timestamp("us", "UTC"))
    if aware:
        return value if kind.tz == "UTC" else pc.cast(value, pa.timestamp("us", "UTC"))
    if kind.tz:
        return _wall(value)
    return value


def _wall(value: Value) -> Value:
    """A timestamp as the naive wall time of the session time zone (a naive one is one)."""
    kind = value.type
    if pa.types.is_timestamp(kind) and kind.tz:
        zone = _now_zone()
        value = pc.cast(value, pa.timestamp(kind.unit, zone)) if kind.tz != zone else value
        return pc.local_timestamp(value)
    return value


def _to_date(node, value: Value, env: _Env) -> Value:
    """What Spark's date functions read: a DATE; a TIMESTAMP's date in the session time zone; a
    STRING cast to DATE (CAST_INVALID_INPUT when malformed)."""
    kind = value.type
    if pa.types.is_date(kind) or pa.types.is_null(kind):
        return _null_as(value, pa.date32())
    if pa.types.is_timestamp(kind):
        return pc.cast(pc.floor_temporal(_wall(value), unit="day"), pa.date32())
    if _is_str(kind):
        return _cast_value(node, value, pa.date32(), env, tolerant=False)
    if pa.types.is_duration(kind) or _is_num(kind) or pa.types.is_boolean(kind):
        raise _mismatch(node, "UNEXPECTED_INPUT_TYPE", kind)
    raise _refuse_type(node, kind)


def _to_timestamp(node, value: Value, env: _Env) -> Value:
    kind = value.type
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_null(kind):
        return _as_timestamp(value, aware=False)
    if _is_str(kind):
        return _wall(_cast_value(node, value, pa.timestamp("us", "UTC"), env, tolerant=False))
    if pa.types.is_duration(kind) or _is_num(kind) or pa.types.is_boolean(kind):
        raise _mismatch(node, "UNEXPECTED_INPUT_TYPE", kind)
    raise _refuse_type(node, kind)


_DATE_RE = re.compile(r"([+-]?\d{4,6})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")
_TIME_RE = re.compile(r"(\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?)?")
_ZONE_RE = re.compile(r"\s*(?:(Z)|(UTC|GMT|UT)?([+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?)?)")


def _trim_all(text: str) -> str:
    """Spark's trimAll, which casts apply: every character up to U+0020 at both ends."""
    i, j = 0, len(text)
    while i < j and ord(text[i]) <= 32:
        i += 1
    while j > i and ord(text[j - 1]) <= 32:
        j -= 1
    return text[i:j]


class _Unreadable(Exception):
    """A value the local parser does not read though Spark might (a zone name, a year sign)."""


def _parse_date(text: str):
    """Spark's stringToDate: ``yyyy[-[m]m[-[d]d]]`` then nothing or a space or 'T' and anything;
    None when malformed."""
    text = _trim_all(text)
    m = _DATE_RE.match(text)
    if not m:
        return None
    rest = text[m.end():]
    if rest and rest[0] not in " T":
        return None
    if m.group(1)[0] in "+-" or len(m.group(1)) > 4:
        raise _Unreadable(text)
    try:
        return date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        return None


def _parse_timestamp(text: str):
    """Spark's stringToTimestamp for what the local engine reads: ``yyyy[-m[m][-d[d]]]``, then
    ' ' or 'T' and ``h[h][:m[m][:s[s][.fraction]]]``, then a zone 'Z', 'UTC', '+hh[:mm]';
    without a zone the session time zone's. An aware datetime in UTC; None when malformed;
    :class:`_Unreadable` for zone names and other forms Spark reads but this parser does not."""
    text = _trim_all(text)
    m = _DATE_RE.match(text)
    if not m:
        return None
    if m.group(1)[0] in "+-" or len(m.group(1)) > 4:
        raise _Unreadable(text)
    pos = m.end()
    hour = minute = second = micro = 0
    if pos < len(text) and text[pos] in " T":
        t = _TIME_RE.match(text, pos + 1)
        if t and m.group(3) is not None:
            hour, minute, second = int(t.group(1)), int(t.group(2) or 0), int(t.group(3) or 0)
            fraction = t.group(4) or ""
            if len(fraction) > 9:
                return None
            micro = int((fraction + "000000")[:6])
            pos = t.end()
        elif text[pos] == "T" and pos + 1 == len(text):
            pos += 1
    rest = text[pos:]
    zone = timezone.utc if _now_zone() == "UTC" else None
    if rest:
        z = _ZONE_RE.fullmatch(rest)
        if not z or not (z.group(1) or z.group(2) or z.group(3)):
            if re.fullmatch(r"\s*[A-Za-z][A-Za-z0-9_/+\-]*", rest):
                raise _Unreadable(text)
            return None
        zone = timezone.utc
        if z.group(3):
            sign = -1 if z.group(3)[0] == "-" else 1
            parts = re.findall(r"\d{1,2}", z.group(3)[1:])
            hh, mm, ss = (int(p) for p in (parts + ["0", "0"])[:3])
            if hh > 18 or mm > 59 or ss > 59:
                return None
            zone = timezone(sign * timedelta(hours=hh, minutes=mm, seconds=ss))
    try:
        value = datetime(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1), hour, minute, second, micro)
    except ValueError:
        return None
    if zone is None:
        from zoneinfo import ZoneInfo

        zone = ZoneInfo(_now_zone())
    return value.replace(tzinfo=zone).astimezone(timezone.utc)


# --------------------------------------------------------------------------- value by value
_BAD = object()  # what a per-value function returns for a value Spark's operation fails on


def _map_values(value: Value, fn, kind: pa.DataType, distinct: bool = True):
    """``fn`` of each non-NULL value, as an Arrow value of ``kind``; each distinct value is
    computed once (``distinct``). A result ``_BAD`` is NULL here and listed in the returned
    mask by :func:`_map_checked`."""
    return _map_checked(value, fn, kind, distinct)[0]


def _map_checked(value: Value, fn, kind: pa.DataType, distinct: bool = True):
    """(``fn`` of each value as :func:`_map_values`, the rows where it gave ``_BAD``: a NumPy
    bool array, or a bool for a scalar)."""
    if isinstance(value, pa.Scalar):
        if not value.is_valid:
            return pa.scalar(None, kind), False
        out = fn(value.as_py())
        return (pa.scalar(None, kind), True) if out is _BAD else (pa.scalar(out, kind), False)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    if distinct and len(value) > 64:
        encoded = pc.dictionary_encode(value)
        words, bad = _map_checked(encoded.dictionary, fn, kind, distinct=False)
        indices = encoded.indices
        out = words.take(indices)
        if isinstance(bad, np.ndarray) and bad.any():
            idx = np.asarray(pc.fill_null(indices, -1).to_numpy(zero_copy_only=False))
            rows = np.zeros(len(value), bool)
            rows[idx >= 0] = bad[idx[idx >= 0]]
            return out, rows
        return out, np.zeros(len(value), bool)
    results, bad = [], np.zeros(len(value), bool)
    for k, v in enumerate(value.to_pylist()):
        if v is None:
            results.append(None)
            continue
        r = fn(v)
        if r is _BAD:
            bad[k] = True
            r = None
        results.append(r)
    return pa.array(results, kind), bad


# --------------------------------------------------------------------------- literals
def _number_literal(text: str, negative: bool = False) -> pa.Scalar:
    """A number literal typed as Spark types it: INT when it fits, else BIGINT, else DECIMAL;
    with a point and no exponent DECIMAL(p, s) (``0.285`` is DECIMAL(3,3)); with an exponent
    DOUBLE."""
    sign = "-" if negative else ""
    if re.fullmatch(r"\d+", text):
        value = int(sign + text)
        if -2**31 <= value < 2**31:
            return pa.scalar(value, pa.int32())
        if -2**63 <= value < 2**63:
            return pa.scalar(value, pa.int64())
        if len(text.lstrip("0")) <= MAX_PRECISION:
            return pa.scalar(Decimal(value), pa.decimal128(max(1, len(text.lstrip("0"))), 0))
        raise ValueError(text)
    if re.fullmatch(r"\d*\.\d*", text) and text != ".":
        value = Decimal(sign + text)
        _, digits, exponent = value.as_tuple()
        scale = -exponent
        precision = max(len(digits), scale, 1)
        if precision > MAX_PRECISION:
            raise ValueError(text)
        return pa.scalar(value, pa.decimal128(precision, scale))
    return pa.scalar(float(sign + text), pa.float64())


def _literal(node: exp.Literal, negative: bool = False) -> pa.Scalar:
    if node.is_string:
        return pa.scalar(node.this, pa.string())
    try:
        return _number_literal(node.this, negative)
    except ValueError:
        raise _unsupported(node, f"The number literal {node.this}") from None


# --------------------------------------------------------------------------- INTERVAL literals
_UNIT_MICROS = {"WEEK": 7 * 86_400_000_000, "DAY": 86_400_000_000, "HOUR": 3_600_000_000, "MINUTE": 60_000_000,
                "SECOND": 1_000_000, "MILLISECOND": 1000, "MICROSECOND": 1}
_YEAR_MONTH = {"YEAR", "MONTH", "QUARTER", "DECADE", "CENTURY", "MILLENNIUM"}
# a range 'd h:m:s.f' as Spark reads it: (fields, pattern); every field but the first is bounded
_RANGES = {
    ("DAY", "HOUR"): r"(\d+) (\d{1,2})",
    ("DAY", "MINUTE"): r"(\d+) (\d{1,2}):(\d{1,2})",
    ("DAY", "SECOND"): r"(\d+) (\d{1,2}):(\d{1,2}):(\d{1,2}(?:\.\d*)?)",
    ("HOUR", "MINUTE"): r"(\d+):(\d{1,2})",
    ("HOUR", "SECOND"): r"(\d+):(\d{1,2}):(\d{1,2}(?:\.\d*)?)",
    ("MINUTE", "SECOND"): r"(\d+):(\d{1,2}(?:\.\d*)?)",
}
_RANGE_UNITS = {("DAY", "HOUR"): ("DAY", "HOUR"), ("DAY", "MINUTE"): ("DAY", "HOUR", "MINUTE"),
                ("DAY", "SECOND"): ("DAY", "HOUR", "MINUTE", "SECOND"), ("HOUR", "MINUTE"): ("HOUR", "MINUTE"),
                ("HOUR", "SECOND"): ("HOUR", "MINUTE", "SECOND"), ("MINUTE", "SECOND"): ("MINUTE", "SECOND")}
_BOUND = {"HOUR": 23, "MINUTE": 59, "SECOND": 59}
_INTERVAL_FORMS = ("INTERVAL 5 MINUTES, INTERVAL '90' SECOND, INTERVAL 1.5 SECONDS, INTERVAL '1:30' MINUTE TO SECOND, "
                   "INTERVAL '1 02:03:04.5' DAY TO SECOND, INTERVAL '1 day 2 hours', INTERVAL 1 DAY 2 HOURS "
                   "(units WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND)")


def _unit_name(text: str) -> str:
    unit = text.upper()
    return unit[:-1] if unit.endswith("S") and unit[:-1] in _UNIT_MICROS | dict.fromkeys(_YEAR_MONTH) else unit


def _seconds_micros(text: str) -> int:
    """'12.3456789' seconds in microseconds, the fraction cut after six digits (Spark's)."""
    whole, _, fraction = text.partition(".")
    return int(whole) * 1_000_000 + int((fraction + "000000")[:6])


def _unit_micros(node, number: str, unit: str) -> int:
    """``number unit`` (one field of an interval) in microseconds; only seconds have a fraction."""
    sign = -1 if number.startswith("-") else 1
    digits = number.lstrip("+-")
    if unit in _YEAR_MONTH:
        raise _unsupported(node, f"The year-month interval '{node.sql(dialect='spark')}'",
                           hint=f"the local engine reads day-time intervals: {_INTERVAL_FORMS}")
    if unit not in _UNIT_MICROS or not re.fullmatch(r"\d+(\.\d+)?" if unit == "SECOND" else r"\d+", digits):
        raise _interval_unread(node)
    return sign * (_seconds_micros(digits) if unit == "SECOND" else int(digits) * _UNIT_MICROS[unit])


def _interval_unread(node) -> ExprError:
    return ExprError(UnsupportedError, f"The interval '{node.sql(dialect='spark')}' is not one cerql's local "
                     "engine reads (cerql.run)", node, "UNSUPPORTED_EXPRESSION",
                     f"the local engine reads day-time INTERVAL literals: {_INTERVAL_FORMS}")


def _interval_literal(node: exp.Interval) -> pa.Scalar:
    """A day-time INTERVAL literal as Spark reads it, as an Arrow duration in microseconds:
    ``INTERVAL 5 MINUTES`` (one unit, a signed integer; seconds may have a fraction, cut after
    six digits), ``INTERVAL '1:30' MINUTE TO SECOND`` (a range, its later fields bounded as
    Spark bounds them: hours 0-23, minutes and seconds 0-59), ``INTERVAL '1 day 2 hours'``.
    Year-month intervals, and forms or values the local engine does not read, are refused."""
    value, unit = node.this, node.args.get("unit")
    if not (isinstance(value, exp.Literal) and value.is_string):
        raise _interval_unread(node)
    text = _trim_all(value.this)
    if isinstance(unit, exp.IntervalSpan):
        start, end = _unit_name(unit.this.name), _unit_name(unit.expression.name)
        if start in _YEAR_MONTH or end in _YEAR_MONTH:
            _unit_micros(node, "0", start if start in _YEAR_MONTH else end)
        pattern = _RANGES.get((start, end))
        m = re.fullmatch(r"([+-]?)" + pattern, text) if pattern else None
        if m is None:
            raise _interval_unread(node)
        total = 0
        for field, part in zip(_RANGE_UNITS[start, end], m.groups()[1:]):
            if field != start and float(part) >= _BOUND[field] + 1:
                raise _interval_unread(node)
            total += _seconds_micros(part) if field == "SECOND" else int(part) * _UNIT_MICROS[field]
        micros = -total if m.group(1) == "-" else total
    elif unit is not None:
        micros = _unit_micros(node, text, _unit_name(unit.name))
    else:  # INTERVAL '1 day 2 hours': number-unit pairs
        pairs = re.findall(r"\s*([+-]?[\d.]+)\s+([A-Za-z]+)", text)
        if not pairs or "".join(re.findall(r"\s*[+-]?[\d.]+\s+[A-Za-z]+", text)) != text:
            raise _interval_unread(node)
        micros = sum(_unit_micros(node, number, _unit_name(word)) for number, word in pairs)
    if not -2**63 < micros < 2**63:
        raise _interval_unread(node)
    return pa.scalar(micros, _US)


# --------------------------------------------------------------------------- comparisons
def _has_nan(value: Value) -> bool:
    if not _is_float(value.type):
        return False
    if isinstance(value, pa.Scalar):
        return value.is_valid and math.isnan(value.as_py())
    return bool(pc.any(pc.is_nan(value)).as_py())


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


def _time_target(kind: pa.DataType) -> pa.DataType:
    return pa.date32() if pa.types.is_date(kind) else pa.timestamp("us", "UTC")


def _time_side(value: Value) -> Value:
    return value if pa.types.is_date(value.type) else _as_timestamp(value, aware=True)


def _compare(op: str, node, a: Value, b: Value, env: _Env, mismatch: str = "BINARY_OP_DIFF_TYPES") -> Value:
    a, b = _comparable(node, a, b, env, mismatch)
    return _compare_values(op, a, b)


def _null_safe_equal(node, a: Value, b: Value, env: _Env) -> Value:
    a, b = _comparable(node, a, b, env)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    return pc.or_(pc.fill_null(_compare_values("=", a, b), False), both_null)


# --------------------------------------------------------------------------- arithmetic
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


def _out_of_range(node, shown, kind: pa.DataType) -> ExprError:
    return ExprError(ExecutionError, f"{shown} cannot be represented as {_spark_type_name(kind)} in "
                     f"'{node.sql(dialect='spark')}'", node, "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION",
                     "use try_cast, or a wider DECIMAL")


def _decimal_fit(d: Decimal, kind: pa.DataType):
    """``d`` rounded HALF_UP to the scale of ``kind``, or ``_BAD`` when it has more digits than
    the precision allows."""
    if d != 0 and d.adjusted() >= kind.precision - kind.scale + 1:
        return _BAD
    with localcontext() as ctx:
        ctx.prec = 200
        q = d.quantize(Decimal(1).scaleb(-kind.scale), rounding=ROUND_HALF_UP)
    if q.adjusted() >= kind.precision - kind.scale and q != 0:
        return _BAD
    return q


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


class _ScalarPairs(list):
    pass


def _pairs(a: Value, b: Value):
    if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar):
        return _ScalarPairs([(a.as_py(), b.as_py())])
    n = len(a) if not isinstance(a, pa.Scalar) else len(b)
    xs = [a.as_py()] * n if isinstance(a, pa.Scalar) else a.to_pylist()
    ys = [b.as_py()] * n if isinstance(b, pa.Scalar) else b.to_pylist()
    return list(zip(xs, ys))


def _operand_digits(node) -> tuple:
    return _literal_digits(node.this), _literal_digits(node.expression)


def _by_zero(node, op: str) -> ExprError:
    if op == "%":
        return ExprError(ExecutionError, f"Remainder by zero in '{node.sql(dialect='spark')}'", node,
                         "REMAINDER_BY_ZERO", "use try_mod to get NULL for a zero divisor")
    return ExprError(ExecutionError, f"Division by zero in '{node.sql(dialect='spark')}'", node,
                     "DIVIDE_BY_ZERO", "use try_divide to get NULL for a zero divisor")


# --------------------------------------------------------------------------- timestamps and intervals
_US = pa.duration("us")


def _micros(value: Value) -> Value:
    """A microsecond timestamp or duration as its BIGINT count."""
    return pc.cast(value, pa.int64())


def _as_duration(value: Value) -> Value:
    return pc.cast(value, _US)


def _time_arith(node, op: str, a: Value, b: Value, env: _Env) -> Value:
    """``a op b`` where either is a date, a timestamp or a day-time interval, as Spark 4:
    timestamp - timestamp (or date) is an INTERVAL DAY TO SECOND, the microseconds between them
    (a TIMESTAMP_NTZ or a DATE with a TIMESTAMP is first read in the session time zone, as Spark
    casts it; DATE - DATE is the days between them); timestamp +/- interval is a timestamp of
    the same type; interval +/- interval an interval. Types Spark refuses are its
    DATATYPE_MISMATCH error; types Spark takes and the local engine does not compute
    (date + interval, interval * number...) a LocalTypeRefusal."""
    ta, tb = a.type, b.type
    verdict = _arith_check(op, ta, tb)
    if verdict == _SPARK_RUNS:
        raise _refuse_type(node, ta, tb)
    if verdict is not None:
        raise _mismatch(node, verdict, ta, tb)
    fa, fb = _family(ta), _family(tb)
    checked, plain = _ARITH_FN[op]
    if fa in "TD" and fb in "TD":  # a difference of times
        aware = bool((fa == "T" and ta.tz) or (fb == "T" and tb.tz))
        x, y = _micros(_as_timestamp(a, aware)), _micros(_as_timestamp(b, aware))
        return _as_duration(_checked(env, node, checked, plain, (x, y)))
    if fa == fb == "V":
        return _as_duration(_checked(env, node, checked, plain, (_micros(a), _micros(b))))
    stamp, delta = (a, b) if fa == "T" else (b, a)  # a timestamp and an interval
    out = _checked(env, node, checked, plain, (_micros(stamp), _micros(delta)) if fa == "T"
                   else (_micros(delta), _micros(stamp)))
    return pc.cast(out, stamp.type)


_ARITH_FN = {"+": (pc.add_checked, pc.add), "-": (pc.subtract_checked, pc.subtract),
             "*": (pc.multiply_checked, pc.multiply)}


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


# --------------------------------------------------------------------------- math
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


def _np_valid(value: Value) -> np.ndarray:
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    return np.asarray(value.is_valid().to_numpy(zero_copy_only=False), bool)


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


# --------------------------------------------------------------------------- strings
def _text(node, value: Value) -> Value:
    """A string function's argument as STRING: Spark casts numbers, booleans, dates and
    timestamps to their text (see cerql.exec.values.spark_strings)."""
    kind = value.type
    if pa.types.is_string(kind):
        return value
    if pa.types.is_null(kind):
        return pc.cast(value, pa.string())
    try:
        return spark_strings(value, _now_zone())
    except TypeError:
        raise _refuse_type(node, kind) from None


def _all_ascii(value: Value) -> bool:
    if isinstance(value, pa.Scalar):
        return not value.is_valid or value.as_py().isascii()
    return bool(pc.all(pc.string_is_ascii(value)).as_py() in (True, None))


def _case_map(node, value: Value, upper: bool) -> Value:
    """Spark's upper and lower: the full Unicode case mapping (``upper('ß')`` is 'SS',
    ``lower('İ')`` is 'i̇'; Arrow maps one character to one)."""
    value = _text(node, value)
    if _all_ascii(value):
        return pc.ascii_upper(value) if upper else pc.ascii_lower(value)
    return _map_values(value, (lambda s: s.upper()) if upper else (lambda s: s.lower()), pa.string())


def _int_literal(node: exp.Expression | None) -> int | None:
    """An integer literal (possibly negative), or None."""
    if node is None:
        return None
    negative = False
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        negative, node = True, node.this
    if isinstance(node, exp.Literal) and not node.is_string and re.fullmatch(r"\d+", node.this):
        return -int(node.this) if negative else int(node.this)
    return None


def _spark_substring(s: str, pos: int, length: int) -> str:
    """UTF8String.substringSQL: 1-based; 0 is 1; a negative position counts from the end."""
    n = len(s)
    start = pos - 1 if pos > 0 else (n + pos if pos < 0 else 0)
    end = start + length
    start = max(start, 0)
    return "" if start >= end else s[start:end]


def _substring(node, value: Value, pos, length, c, env: _Env) -> Value:
    value = _text(node, value)
    p, n = _int_literal(pos), (_int_literal(length) if length is not None else 2**31 - 1)
    if p is not None and n is not None:
        if p > 0:
            start, stop = p - 1, p - 1 + n
        elif p == 0:
            start, stop = 0, n
        else:
            start, stop = p, (p + n if p + n < 0 else None)
        if n <= 0 or (stop is not None and p >= 0 and stop <= start):
            return pc.if_else(pc.is_valid(value), pa.scalar("", pa.string()), pa.scalar(None, pa.string()))
        if stop is not None and stop >= 2**31 - 1:
            stop = None
        return pc.utf8_slice_codeunits(value, start, stop) if stop is not None else pc.utf8_slice_codeunits(value, start)
    pv = c(pos)(env)
    nv = c(length)(env) if length is not None else pa.scalar(2**31 - 1, pa.int32())
    for v in (pv, nv):
        if not (_is_int(v.type) or pa.types.is_null(v.type)):
            raise _refuse_type(node, v.type)
    rows = _table_of(value, pv, nv)
    out = [None if s is None or q is None or m is None else _spark_substring(s, q, m) for s, q, m in rows]
    return _shape(out, pa.string(), value, pv, nv)


def _table_of(*values):
    n = max((len(v) for v in values if not isinstance(v, pa.Scalar)), default=1)
    cols = [[v.as_py()] * n if isinstance(v, pa.Scalar) else v.to_pylist() for v in values]
    return list(zip(*cols))


def _shape(out: list, kind: pa.DataType, *inputs) -> Value:
    if all(isinstance(v, pa.Scalar) for v in inputs):
        return pa.scalar(out[0], kind)
    return pa.array(out, kind)


_AFFIX = {exp.StartsWith: ("startswith", pc.starts_with, str.startswith),
          exp.EndsWith: ("endswith", pc.ends_with, str.endswith),
          exp.Contains: ("contains", pc.match_substring, lambda s, p: p in s)}


def _affix(node, kind, value: Value, pattern: Value) -> Value:
    _, arrow_fn, py_fn = _AFFIX[kind]
    value, pattern = _text(node, value), _text(node, pattern)
    if isinstance(pattern, pa.Scalar):
        if not pattern.is_valid:
            return pa.scalar(None, pa.bool_()) if isinstance(value, pa.Scalar) else pa.nulls(len(value), pa.bool_())
        if isinstance(value, pa.Scalar):
            return pa.scalar(None if not value.is_valid else py_fn(value.as_py(), pattern.as_py()), pa.bool_())
        return arrow_fn(value, pattern.as_py())
    rows = _table_of(value, pattern)
    return _shape([None if s is None or p is None else py_fn(s, p) for s, p in rows], pa.bool_(), value, pattern)


def _concat(node, values: list[Value]) -> Value:
    """Spark's concat and ``||``: NULL when any argument is; others cast to STRING."""
    if not values:
        return pa.scalar("", pa.string())
    texts = [_text(node, v) for v in values]
    if all(isinstance(v, pa.Scalar) for v in texts):
        parts = [v.as_py() for v in texts]
        return pa.scalar(None if any(p is None for p in parts) else "".join(parts), pa.string())
    return pc.binary_join_element_wise(*texts, "")


def _trim(node, value: Value) -> Value:
    """Spark's trim, ltrim, rtrim: spaces (U+0020) only, not tabs or newlines."""
    value = _text(node, value)
    position = (node.args.get("position") or "").upper()
    if position == "LEADING":
        return pc.utf8_ltrim(value, characters=" ")
    if position == "TRAILING":
        return pc.utf8_rtrim(value, characters=" ")
    return pc.utf8_trim(value, characters=" ")


def _string_literal(node: exp.Expression, what: str) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    raise _unsupported(node, f"{what} with a pattern that is not a string literal",
                       hint="write the pattern as a string literal")


def _like_pattern(node, pattern: str, what: str) -> str:
    """A LIKE pattern checked as Spark checks it: the escape character ``\\`` may only precede
    ``_``, ``%`` or itself (Spark raises otherwise; here it is refused)."""
    k = 0
    while k < len(pattern):
        if pattern[k] == "\\":
            if k + 1 >= len(pattern) or pattern[k + 1] not in "_%\\":
                raise _unsupported(node, f"The {what} pattern '{pattern}' (an escape before "
                                         f"'{pattern[k + 1:k + 2] or 'the end'}')",
                                   hint="Spark rejects it too: escape only _, % and \\")
            k += 2
        else:
            k += 1
    return pattern


def _like(node, value: Value, pattern: str, ignore_case: bool) -> Value:
    value = _text(node, value)
    if ignore_case:  # Spark's ILIKE is lower(value) LIKE lower(pattern), full case mapping
        value = _case_map(node, value, upper=False)
        pattern = pattern.lower()
    return pc.match_like(value, pattern)


_JAVA_SPACE = " \\t\\n\\x0B\\f\\r"
_LINE_END = "\\n\\r\\x{85}\\x{2028}\\x{2029}"


def _java_regex(node, pattern: str) -> str:
    """A Java regular expression (Spark's RLIKE) as the RE2 expression Arrow runs, matching the
    same strings: ``.`` excludes every Java line terminator, ``$`` also matches before a final
    one, ``\\s`` is Java's six characters. Constructs RE2 reads otherwise or lacks (lookaround,
    backreferences, possessive quantifiers, inline flags, nested or intersected classes, \\b,
    \\p{...}, \\Q...\\E) are refused."""

    def refuse(what: str):
        return _unsupported(node, f"The RLIKE pattern '{pattern}' ({what})",
                            hint="the local engine runs Java regular expressions RE2 reads the same way: "
                                 "literals, . [] [^] * + ? {m,n} lazy quantifiers | (...) (?:...) ^ $ "
                                 "\\d \\w \\s and escaped punctuation")

    out, k, n, in_class = [], 0, len(pattern), False
    while k < n:
        ch = pattern[k]
        if ch == "\\":
            if k + 1 >= n:
                raise refuse("a trailing backslash")
            nxt = pattern[k + 1]
            k += 2
            if nxt in "dDwW":
                out.append("\\" + nxt)
            elif nxt == "s":
                out.append(_JAVA_SPACE if in_class else f"[{_JAVA_SPACE}]")
            elif nxt == "S" and not in_class:
                out.append(f"[^{_JAVA_SPACE}]")
            elif nxt in "tnrfa":
                out.append("\\" + nxt)
            elif nxt == "e":
                out.append("\\x1B")
            elif nxt == "x":
                m = re.match(r"[0-9a-fA-F]{2}|\{[0-9a-fA-F]+\}", pattern[k:])
                if not m:
                    raise refuse("a malformed \\x escape")
                out.append("\\x" + m.group(0))
                k += m.end()
            elif nxt == "u":
                m = re.match(r"[0-9a-fA-F]{4}", pattern[k:])
                if not m:
                    raise refuse("a malformed \\u escape")
                out.append("\\x{" + m.group(0) + "}")
                k += 4
            elif not nxt.isalnum() and ord(nxt) < 128:
                out.append("\\" + nxt)
            else:
                raise refuse(f"\\{nxt}")
            continue
        if in_class:
            if ch == "[" or pattern.startswith("&&", k):
                raise refuse("a nested or intersected character class")
            if ch == "]":
                in_class = False
            out.append(ch)
            k += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            k += 1
            if k < n and pattern[k] == "^":
                out.append("^")
                k += 1
            if k < n and pattern[k] == "]":
                raise refuse("a ']' first in a class")
            continue
        if ch == ".":
            out.append(f"[^{_LINE_END}]")
        elif ch == "$":
            j = k + 1
            while j < n and pattern[j] == ")":
                j += 1
            if j < n and pattern[j] != "|":
                raise refuse("'$' before more of the pattern")
            out.append(f"(?:\\r\\n|[{_LINE_END}])?\\z")
        elif ch == "(":
            if pattern.startswith("(?", k) and not pattern.startswith("(?:", k):
                raise refuse("a group with (?")
            out.append(ch)
        elif ch in "*+?}":
            if ch == "}":
                raise refuse("an unmatched '}'")
            out.append(ch)
            if k + 1 < n and pattern[k + 1] == "+":
                raise refuse("a possessive quantifier")
        elif ch == "{":
            m = re.match(r"\{\d+(,\d*)?\}", pattern[k:])
            if not m:
                raise refuse("a '{' that is not a repetition")
            out.append(m.group(0))
            k += m.end()
            if k < n and pattern[k] == "+":
                raise refuse("a possessive quantifier")
            continue
        else:
            out.append(ch)
        k += 1
    if in_class:
        raise refuse("an unclosed class")
    return "".join(out)


# --------------------------------------------------------------------------- date and time
_FIELDS = {exp.Hour: pc.hour, exp.Minute: pc.minute, exp.Second: pc.second}
_DATE_FIELDS = {exp.Year: pc.year, exp.Month: pc.month, exp.Day: pc.day, exp.DayOfMonth: pc.day}


def _date_arg(node: exp.Expression) -> exp.Expression:
    """The argument of a date function; sqlglot wraps it in a conversion Spark's text lacks."""
    arg = node.this
    if isinstance(arg, (exp.TsOrDsToDate, exp.TimeStrToTime)) and not arg.args.get("format"):
        return arg.this
    return arg


def _spark_format(node: exp.TimeToStr) -> str:
    """The Java pattern of date_format as cerql prints it for Spark (sqlglot keeps a strftime
    form)."""
    import sqlglot

    if "written_format" in node.meta:  # the pattern as the user wrote it (parser/written.py)
        return node.meta["written_format"]
    printed = exp.TimeToStr(this=exp.column("x"), format=node.args["format"].copy()).sql(dialect="spark")
    prefix = "DATE_FORMAT(x, "
    if not (printed.startswith(prefix) and printed.endswith(")")):
        raise _unsupported(node)
    literal = sqlglot.parse_one(printed[len(prefix):-1], read="spark")
    if not (isinstance(literal, exp.Literal) and literal.is_string):
        raise _unsupported(node)
    return literal.this


_FORMAT_FIELDS = {"yyyy": ("year", 4), "y": ("year", 1), "MM": ("month", 2), "M": ("month", 1),
                  "dd": ("day", 2), "d": ("day", 1), "HH": ("hour", 2), "H": ("hour", 1),
                  "mm": ("minute", 2), "m": ("minute", 1), "ss": ("second", 2), "s": ("second", 1)}


def _format_parts(node, pattern: str) -> list:
    """A date_format pattern as literal strings and (field, width) pairs, for the letters whose
    Java meaning is exact here (yyyy y MM M dd d HH H mm m ss s); others are refused."""
    parts, k = [], 0
    while k < len(pattern):
        ch = pattern[k]
        if ch == "'":
            end = pattern.find("'", k + 1)
            if end < 0:
                raise _unsupported(node, f"date_format pattern '{pattern}' (an unclosed quote)")
            parts.append(pattern[k + 1:end] if end > k + 1 else "'")
            k = end + 1
        elif ch.isalpha():
            j = k
            while j < len(pattern) and pattern[j] == ch:
                j += 1
            run = pattern[k:j]
            if run not in _FORMAT_FIELDS:
                raise _unsupported(node, f"date_format with '{run}'",
                                   hint="the local engine formats yyyy y MM M dd d HH H mm m ss s and quoted text")
            parts.append(_FORMAT_FIELDS[run])
            k = j
        elif ch in "[]{}#":
            raise _unsupported(node, f"date_format with '{ch}'")
        else:
            parts.append(ch)
            k += 1
    return parts


def _date_format(node, value: Value, parts: list, env: _Env) -> Value:
    wall = _to_timestamp(node, value, env)
    if isinstance(wall, pa.Scalar):
        wall = pa.array([wall.as_py()], wall.type)
        return _date_format(node, wall, parts, env)[0]
    years = pc.year(wall)
    outside = _bad_rows(pc.or_(pc.less(years, 1), pc.greater(years, 9999)))
    if env.hit(outside) is not None:
        raise ExprError(UnsupportedError, "date_format of a year outside 1-9999 is not supported by cerql's local "
                        "engine (cerql.run); spark.cer_sql runs it", node, "UNSUPPORTED_EXPRESSION")
    pieces = []
    for part in parts:
        if isinstance(part, str):
            pieces.append(pa.scalar(part, pa.string()))
            continue
        field, width = part
        text = pc.cast(getattr(pc, field)(wall), pa.string())
        pieces.append(pc.utf8_lpad(text, width, "0") if width > 1 else text)
    if all(isinstance(p, pa.Scalar) for p in pieces):  # no field: the text on every non-NULL row
        text = "".join(p.as_py() for p in pieces)
        return pc.if_else(pc.is_valid(wall), pa.scalar(text), pa.scalar(None, pa.string()))
    return pc.binary_join_element_wise(*pieces, "")


# --------------------------------------------------------------------------- CAST
_CAST_TYPES = {
    "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
    "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "TEXT": pa.string(), "VARCHAR": pa.string(),
    "CHAR": pa.string(), "BOOLEAN": pa.bool_(), "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", "UTC"), "TIMESTAMPTZ": pa.timestamp("us", "UTC"),
    "TIMESTAMPLTZ": pa.timestamp("us", "UTC"), "TIMESTAMPNTZ": pa.timestamp("us"),
}
_TRUE = {"t", "true", "y", "yes", "1"}
_FALSE = {"f", "false", "n", "no", "0"}
_DOUBLE_RE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?")
_HEX_RE = re.compile(r"[+-]?0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*[pP][+-]?\d+[fFdD]?")


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


def _parse_int(kind: pa.DataType):
    lo, hi = -2 ** (kind.bit_width - 1), 2 ** (kind.bit_width - 1) - 1

    def parse(text: str):
        t = _trim_all(text)
        if not re.fullmatch(r"[+-]?\d+", t):
            return _BAD
        v = int(t)
        return v if lo <= v <= hi else _BAD

    return parse


def _parse_double(text: str):
    t = _trim_all(text)
    low = t.lower()
    if low in ("inf", "+inf", "infinity", "+infinity"):
        return math.inf
    if low in ("-inf", "-infinity"):
        return -math.inf
    if low in ("nan", "+nan", "-nan"):
        return math.nan
    if _DOUBLE_RE.fullmatch(t):
        body = t.rstrip("fFdD")
        return float(body.replace("Infinity", "inf"))
    if _HEX_RE.fullmatch(t):
        return float.fromhex(t.rstrip("fFdD"))
    return _BAD


def _parse_bool(text: str):
    t = _trim_all(text).lower()
    return True if t in _TRUE else False if t in _FALSE else _BAD


def _parse_decimal(text: str):
    t = _trim_all(text)
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", t):
        return _BAD
    try:
        return Decimal(t)
    except InvalidOperation:
        return _BAD


class _Cast:
    """One CAST's conversion of a value: ``out`` with NULL where a value does not convert, and
    the rows that do not (``bad``) with the error class Spark raises for them; or a list of
    (rows, error class) pairs."""

    def __init__(self, out, bad=False, error_class="CAST_INVALID_INPUT"):
        self.out = out
        self.problems = bad if isinstance(bad, list) else [(bad, error_class)]


def _convert(node, value: Value, target: pa.DataType, env: _Env) -> _Cast:
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
            return _Cast(_to_date(node, value, env))
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
        out, bad = _map_checked(value, lambda s: _readable(_parse_timestamp, s), pa.timestamp("us", "UTC"))
        if not target.tz:  # TIMESTAMP_NTZ: the wall time as written; a zone in the text is ignored by none
            out = _wall(out)
        return _Cast(out, bad)
    raise _refuse_type(node, pa.string(), target)


def _any(bad) -> bool:
    return bool(bad.any()) if isinstance(bad, np.ndarray) else bool(bad)


class _ValueUnreadable(Exception):
    def __init__(self, text):
        super().__init__(text)
        self.text = text


def _readable(parse, text: str):
    try:
        out = parse(text)
    except _Unreadable:
        raise _ValueUnreadable(text) from None
    return _BAD if out is None else out


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
        done = _convert(node, value, target, env)
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
            shown = _values.java_double_string(shown)
        to = _spark_type_name(target)
        if error_class == "CAST_INVALID_INPUT":
            message = f"The value {shown!r} of '{node.this.sql(dialect='spark')}' cannot be cast to {to} because it is malformed"
        elif error_class == "CAST_OVERFLOW":
            message = f"The value {shown!r} of '{node.this.sql(dialect='spark')}' cannot be cast to {to} due to an overflow"
        else:
            message = f"The value {shown!r} of '{node.this.sql(dialect='spark')}' cannot be represented as {to}"
        raise ExprError(ExecutionError, message, node, error_class, "use try_cast to get NULL for such values")
    return done.out


# --------------------------------------------------------------------------- compile
def compile_expr(node: exp.Expression, resolve: Callable[[exp.Column], str], time_zone: str | None = None) -> Compiled:
    """Compile ``node``; ``resolve`` maps each column reference to a field of the input table.
    ``time_zone`` is the session time zone the expression reads times in (Spark's
    ``spark.sql.session.timeZone``), fixed when it is compiled, so a function shipped to a
    Spark worker keeps it; by default cerql.exec.values.SESSION_TIME_ZONE, UTC.

    A decimal literal that is the whole expression (``1.5``: the constant of a register check
    such as ``max(b.p) > 150.5``, or a SELECT item) is a DOUBLE, as it was before DECIMAL
    literals: the planner's register checks (planner/resolve.py ``register_check``,
    ``aggregate_check``) take integer and float constants only, and without them an aggregate
    over a Kleene variable enumerates every subset. Spark compares a DOUBLE aggregate with it as
    a DOUBLE too; an integer one above 2**53 compares exactly on Spark only. Inside an
    expression a decimal literal is a DECIMAL."""
    bare = node
    while isinstance(bare, exp.Paren):
        bare = bare.this
    negative = isinstance(bare, exp.Neg)
    if negative:
        bare = bare.this
    if isinstance(bare, exp.Literal) and not bare.is_string:
        value = _literal(bare, negative)
        if _is_dec(value.type):
            value = pa.scalar(_decimal_to_double(value.as_py()), pa.float64())
        return lambda t: value
    fn = _compile(node, resolve)
    zone = time_zone or _values.SESSION_TIME_ZONE
    return lambda t: _evaluate(fn, zone, t)


def _evaluate(fn, zone: str, t: pa.Table) -> Value:
    """``fn`` on ``t`` with ``zone`` as the session time zone (a module function: the compiled
    closure must pickle for Spark's workers, a ContextVar does not)."""
    token = _ZONE.set(zone)
    try:
        return fn(_Env(t))
    finally:
        _ZONE.reset(token)


def _read(t: pa.Table, name: str) -> Value:
    """A column as Spark holds it: dictionaries decoded, timestamps in microseconds (Spark's
    precision; nanoseconds are truncated as Spark's createDataFrame does), large strings as
    strings."""
    col = t.column(name)
    kind = col.type
    if pa.types.is_dictionary(kind):
        col, kind = col.cast(kind.value_type), kind.value_type
    if pa.types.is_timestamp(kind) and kind.unit != "us":
        col = pc.cast(col, pa.timestamp("us", kind.tz), safe=False)
    elif pa.types.is_large_string(kind):
        col = pc.cast(col, pa.string())
    return col


def _bool(value: Value) -> Value:
    return _null_as(value, pa.bool_())


_COMPARE_OPS = {exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_ARITH_OPS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*"}
_SIMPLE_DOUBLE = {exp.Sqrt: pc.sqrt}


def _compile(node: exp.Expression, resolve) -> Callable[[_Env], Value]:
    c = lambda n: _compile(n, resolve)  # noqa: E731

    if isinstance(node, exp.Column):
        name = resolve(node)
        return lambda env: _read(env.table, name)
    if isinstance(node, exp.Literal):
        value = _literal(node)
        return lambda env: value
    if isinstance(node, exp.Boolean):
        value = pa.scalar(bool(node.this), pa.bool_())
        return lambda env: value
    if isinstance(node, exp.Null):
        return lambda env: pa.scalar(None, pa.null())
    if isinstance(node, exp.Interval):
        value = _interval_literal(node)
        return lambda env: value
    if isinstance(node, exp.Paren):
        return c(node.this)
    if type(node) in _COMPARE_OPS:
        op, left, right = _COMPARE_OPS[type(node)], c(node.this), c(node.expression)
        return lambda env: _compare(op, node, left(env), right(env), env)
    if isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
        left, right, negate = c(node.this), c(node.expression), isinstance(node, exp.NullSafeNEQ)

        def null_safe(env):
            out = _null_safe_equal(node, left(env), right(env), env)
            return pc.invert(out) if negate else out

        return null_safe
    if isinstance(node, (exp.And, exp.Or)):
        left, right, is_and = c(node.this), c(node.expression), isinstance(node, exp.And)

        def logic(env):
            a = _bool(left(env))
            decided = pc.fill_null(a, True) if is_and else pc.invert(pc.fill_null(a, False))
            b = _bool(right(env.where(decided)))  # Spark evaluates the right side only where it decides
            return pc.and_kleene(a, b) if is_and else pc.or_kleene(a, b)

        return logic
    if isinstance(node, exp.Not):
        inner = c(node.this)
        return lambda env: pc.invert(_bool(inner(env)))
    if isinstance(node, exp.Neg):
        if isinstance(node.this, exp.Literal) and not node.this.is_string:
            value = _literal(node.this, negative=True)
            return lambda env: value
        inner = c(node.this)
        return lambda env: _negate(node, inner(env), env)
    if type(node) in _ARITH_OPS:
        op, left, right = _ARITH_OPS[type(node)], c(node.this), c(node.expression)
        return lambda env: _arith(node, op, left(env), right(env), env)
    if isinstance(node, (exp.Div, exp.Mod, exp.IntDiv)):
        left, right = c(node.this), c(node.expression)
        fn = _divide if isinstance(node, exp.Div) else _mod if isinstance(node, exp.Mod) else _int_divide
        return lambda env: fn(node, left(env), right(env), env)
    if isinstance(node, exp.Is):
        inner = c(node.this)
        if isinstance(node.expression, exp.Null):
            return lambda env: pc.is_null(inner(env))
        if isinstance(node.expression, exp.Boolean):
            truth = pa.scalar(bool(node.expression.this), pa.bool_())
            return lambda env: pc.fill_null(pc.equal(_bool(inner(env)), truth), False)
        raise _unsupported(node)
    if isinstance(node, exp.In):
        return _negated(node, _compile_in(node, c))
    if isinstance(node, exp.Between):
        return _negated(node, _compile_between(node, c))
    if isinstance(node, (exp.Like, exp.ILike)):
        what = "ILIKE" if isinstance(node, exp.ILike) else "LIKE"
        value = c(node.this)
        pattern = _like_pattern(node, _string_literal(node.expression, what), what)
        ignore_case = isinstance(node, exp.ILike)
        return _negated(node, lambda env: _like(node, value(env), pattern, ignore_case))
    if isinstance(node, exp.RegexpLike):
        value = c(node.this)
        pattern = _java_regex(node, _string_literal(node.expression, "RLIKE"))
        return _negated(node, lambda env: pc.match_substring_regex(_text(node, value(env)), pattern))
    if isinstance(node, (exp.Case, exp.If)):
        return _compile_case(node, c)
    if isinstance(node, exp.Coalesce):
        return _compile_coalesce(node, c)
    if isinstance(node, exp.Nullif):
        left, right = c(node.this), c(node.expression)

        def nullif(env):
            a = left(env)
            equal = _compare("=", node, a, right(env), env)
            return pc.if_else(pc.fill_null(equal, False), pa.scalar(None, a.type), a)

        return nullif
    if isinstance(node, exp.Nvl2):
        test, yes, no = c(node.this), c(node.args["true"]), c(node.args["false"]) if node.args.get("false") else None

        def nvl2(env):
            present = pc.is_valid(test(env))
            a = yes(env.where(present))
            b = no(env.where(pc.invert(present))) if no else pa.scalar(None, pa.null())
            a, b = _common(node, [a, b])
            return pc.if_else(present, a, b)

        return nvl2
    if isinstance(node, (exp.Cast, exp.TryCast)):
        inner, target = c(node.this), _cast_target(node)
        tolerant = bool(node.args.get("safe"))
        return lambda env: _cast_value(node, inner(env), target, env, tolerant)
    if isinstance(node, (exp.Lower, exp.Upper)):
        inner, upper = c(node.this), isinstance(node, exp.Upper)
        return lambda env: _case_map(node, inner(env), upper)
    if isinstance(node, exp.Length):
        inner = c(node.this)
        return lambda env: pc.utf8_length(_text(node, inner(env)))
    if isinstance(node, exp.Substring):
        inner = c(node.this)
        start, length = node.args.get("start"), node.args.get("length")
        if start is None:
            raise _unsupported(node)
        return lambda env: _substring(node, inner(env), start, length, c, env)
    if type(node) in _AFFIX:
        left, right, kind = c(node.this), c(node.expression), type(node)
        return lambda env: _affix(node, kind, left(env), right(env))
    if isinstance(node, (exp.Concat, exp.DPipe)):
        if isinstance(node, exp.Concat) and node.args.get("coalesce"):
            raise _unsupported(node)
        parts = [c(e) for e in (node.expressions if isinstance(node, exp.Concat) else [node.this, node.expression])]
        return lambda env: _concat(node, [p(env) for p in parts])
    if isinstance(node, exp.Trim):
        if node.args.get("expression") is not None or node.args.get("collation") is not None:
            raise _unsupported(node, "trim with characters to remove", hint="trim(s), ltrim(s) and rtrim(s) run locally")
        inner = c(node.this)
        return lambda env: _trim(node, inner(env))
    if isinstance(node, exp.Abs):
        inner = c(node.this)
        return lambda env: _abs(node, inner(env), env)
    if isinstance(node, (exp.Floor, exp.Ceil)):
        if node.args.get("decimals") is not None or node.args.get("to") is not None:
            raise _unsupported(node)
        inner, up = c(node.this), isinstance(node, exp.Ceil)
        return lambda env: _floor_ceil(node, inner(env), env, up)
    if isinstance(node, exp.Round):
        inner = c(node.this)
        digits = _int_literal(node.args.get("decimals")) if node.args.get("decimals") is not None else 0
        if digits is None or node.args.get("truncate") is not None:
            raise _unsupported(node, "round with a scale that is not an integer literal")
        return lambda env: _round(node, inner(env), digits, env)
    if type(node) in _SIMPLE_DOUBLE:
        fn, inner = _SIMPLE_DOUBLE[type(node)], c(node.this)
        return lambda env: _double_fn(fn, node, inner(env), env)
    if isinstance(node, (exp.Exp, exp.Ln, exp.Log, exp.Pow)):
        # Spark computes these with Java's StrictMath, whose last bit the C library's functions
        # (NumPy's, Arrow's) miss for about one value in ten: the local engine refuses them
        # rather than give another answer
        raise _unsupported(node, hint="exp, ln, log, log10, log2 and pow are computed by Java's StrictMath on "
                           "Spark, which the local engine does not reproduce to the last bit; sqrt is exact on both")
    if isinstance(node, exp.IsNan):
        inner = c(node.this)

        def isnan(env):
            x = _to_float64(_number(node, inner(env)))
            return pc.fill_null(pc.is_nan(x), False)

        return isnan
    if isinstance(node, (exp.Greatest, exp.Least)):
        parts = [c(node.this)] + [c(e) for e in node.expressions]
        greatest = isinstance(node, exp.Greatest)
        return lambda env: _extreme(node, [p(env) for p in parts], greatest)
    if type(node) in _FIELDS:
        fn, inner = _FIELDS[type(node)], c(node.this)
        return lambda env: pc.cast(fn(_to_timestamp(node, inner(env), env)), pa.int32())
    if type(node) in _DATE_FIELDS or isinstance(node, exp.DayOfWeek):
        inner = c(_date_arg(node))
        if isinstance(node, exp.DayOfWeek):  # Spark: 1 = Sunday ... 7 = Saturday
            return lambda env: pc.cast(pc.day_of_week(_to_date(node, inner(env), env), count_from_zero=False,
                                                      week_start=7), pa.int32())
        fn = _DATE_FIELDS[type(node)]
        return lambda env: pc.cast(fn(_to_date(node, inner(env), env)), pa.int32())
    if isinstance(node, exp.TimeToStr):
        inner = c(_date_arg(node))
        parts = _format_parts(node, _spark_format(node))
        return lambda env: _date_format(node, inner(env), parts, env)
    raise _unsupported(node)


def _negated(node, fn):
    if not node.args.get("negate"):
        return fn
    return lambda env: pc.invert(_bool(fn(env)))


def guard(fn: Compiled, raise_error: Callable[[ExprError], Exception]) -> Compiled:
    """``fn`` with the errors it raises while evaluating (:class:`ExprError`, e.g. a CAST of a
    malformed string) turned into ``raise_error(err)``, a positioned CeqlError."""

    def guarded(t):
        try:
            return fn(t)
        except ExprError as err:
            raise raise_error(err) from None

    return guarded


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

    return is_in


def _compile_between(node, c):
    value, low, high = c(node.this), c(node.args["low"]), c(node.args["high"])

    def between(env):  # Spark's x >= low AND x <= high
        v = value(env)
        above = _bool(_compare(">=", node, v, low(env), env))
        below = _bool(_compare("<=", node, v, high(env.where(pc.fill_null(above, True))), env))
        return pc.and_kleene(above, below)

    return between


def _compile_coalesce(node, c):
    parts = [c(node.this)] + [c(e) for e in node.expressions]

    def coalesce(env):
        values, rest = [], env
        for part in parts:  # each argument only where the ones before are NULL
            v = part(rest)
            values.append(v)
            rest = rest.where(pc.is_null(v))
        return pc.coalesce(*_common(node, values))

    return coalesce


def _compile_case(node, c):
    if isinstance(node, exp.If):
        branches = [(c(node.this), c(node.args["true"]))]
        default = c(node.args["false"]) if node.args.get("false") is not None else None
        subject = None
    else:
        branches = [(c(i.this), c(i.args["true"])) for i in node.args["ifs"]]
        default = c(node.args["default"]) if node.args.get("default") is not None else None
        subject = c(node.this) if node.this is not None else None

    def case(env):
        rest, conds, values = env, [], []
        x = subject(env) if subject else None
        for cond, val in branches:  # each condition where none before held, each value where its own does
            test = cond(rest)
            test = _bool(_compare("=", node, x, test, rest) if subject else test)
            holds = pc.fill_null(test, False)
            conds.append(holds)
            values.append(val(rest.where(holds)))
            rest = rest.where(pc.invert(holds))
        values.append(default(rest) if default else pa.scalar(None, pa.null()))
        typed = _common(node, values)
        out = typed[-1]
        for holds, v in zip(reversed(conds), reversed(typed[:-1])):
            out = pc.if_else(holds, v, out)
        return out

    return case


__all__ = ["compile_expr", "ExprError", "Compiled", "guard", "LocalTypeRefusal", "SparkTypeMismatch", "SUPPORTED"]
