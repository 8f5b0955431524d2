"""Spark's implicit casts: the types two or more values are computed or compared in.

Numbers widen as Spark (ANSI) widens them (integers to the wider integer, with a DECIMAL to
DECIMAL exactly, with a float to DOUBLE or FLOAT), a DATE meets a TIMESTAMP as a TIMESTAMP,
timestamps are read in the session time zone (:func:`_as_timestamp`, :func:`_wall`), intervals
are counted in microseconds. Comparisons, arithmetic, CASE, COALESCE, IN and greatest/least all
start here, so it sits below every family.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext

import pyarrow as pa
import pyarrow.compute as pc

from cerql.expr.errors import _mismatch, _refuse_type
from cerql.expr.kinds import (_US, Value, _comparable_kinds, _decimal_type_of, _is_dec, _is_float, _is_int, _is_num,
                              _is_str, _is_temporal, _is_time, _null_as, _widen_decimals)
from cerql.expr.rows import _BAD, _map_values
from cerql.expr.session import _now_zone


def _to_float64(value: Value) -> Value:
    """A number as DOUBLE the way Spark casts it: an integer to the nearest double (Arrow's
    checked cast refuses those above 2**53); a decimal as its unscaled value divided by a power
    of ten (Spark's Decimal.toDouble, exact for the usual literals: 0.7 is 7 / 10)."""
    kind = value.type
    if pa.types.is_float64(kind):
        return value
    if _is_dec(kind):
        return _map_values(value, decimal_to_double, pa.float64())
    return pc.cast(value, pa.float64(), safe=False)


def decimal_to_double(d: Decimal) -> float:
    sign, digits, exponent = d.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    if len(digits) <= 18 and exponent <= 0:
        return float(unscaled) / 10.0 ** -exponent if -exponent <= 22 else float(d)
    return float(d)


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
        return _instant(value, zone)
    if aware:
        return value if kind.tz == "UTC" else pc.cast(value, pa.timestamp("us", "UTC"))
    if kind.tz:
        return _wall(value)
    return value


def _instant(local: Value, zone: str, ambiguous: str = "earliest") -> Value:
    """A naive wall time of ``zone`` as the instant Java's ZonedDateTime.of (so Spark's cast to
    TIMESTAMP) makes of it: in an overlap the earlier offset (``ambiguous="latest"``: the later);
    in a gap the offset before it, so 02:30 in New York's spring-forward hour is 03:30 after it.
    Arrow's assume_timezone puts a time in a gap at the gap's edge, so only its offset there
    (the one before) is kept."""
    guess = pc.assume_timezone(local, zone, ambiguous=ambiguous, nonexistent="earliest")
    offset = pc.subtract(_micros(pc.local_timestamp(guess)), _micros(guess))
    return pc.cast(pc.subtract(_micros(local), offset), pa.timestamp("us", "UTC"))


def _wall(value: Value) -> Value:
    """A timestamp as the naive wall time of the session time zone (a naive one is one)."""
    kind = value.type
    if pa.types.is_timestamp(kind) and kind.tz:
        zone = _now_zone()
        value = pc.cast(value, pa.timestamp(kind.unit, zone)) if kind.tz != zone else value
        return pc.local_timestamp(value)
    return value


def _has_nan(value: Value) -> bool:
    if not _is_float(value.type):
        return False
    if isinstance(value, pa.Scalar):
        return value.is_valid and math.isnan(value.as_py())
    return bool(pc.any(pc.is_nan(value)).as_py())


def _time_target(kind: pa.DataType) -> pa.DataType:
    return pa.date32() if pa.types.is_date(kind) else pa.timestamp("us", "UTC")


def _time_side(value: Value) -> Value:
    return value if pa.types.is_date(value.type) else _as_timestamp(value, aware=True)


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


def _micros(value: Value) -> Value:
    """A microsecond timestamp or duration as its BIGINT count."""
    return pc.cast(value, pa.int64())


def _as_duration(value: Value) -> Value:
    return pc.cast(value, _US)


def _date_of_timestamp(value: Value) -> Value:
    """A TIMESTAMP's date in the session time zone, as Spark casts it to DATE."""
    return pc.cast(pc.floor_temporal(_wall(value), unit="day"), pa.date32())
