"""Spark's CAST AS STRING: values printed as Spark prints them.

Spark reads a type column as a string (an atom `1` matches the row whose type casts to '1') and
casts numbers, booleans, dates and timestamps to strings in CAST, concat and the string
functions. Its text is Java's, not Arrow's: 1.0 is "1.0" (Arrow: "1"), 1e7 is "1.0E7", NaN is
"NaN"; a timestamp is "yyyy-MM-dd HH:mm:ss[.ffffff]" in the session time zone. The stream reader
(cerql.exec.stream) prints type columns with :func:`spark_strings`; CAST and the string family
print their arguments with :func:`_text`.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cerql.expr.errors import _refuse_type
from cerql.expr.kinds import Value
from cerql.expr.session import SESSION_TIME_ZONE, _now_zone


def _text(node, value: Value) -> Value:
    """A string function's argument as STRING: Spark casts numbers, booleans, dates and
    timestamps to their text (see :func:`spark_strings`)."""
    kind = value.type
    if pa.types.is_string(kind):
        return value
    if pa.types.is_null(kind):
        return pc.cast(value, pa.string())
    try:
        return spark_strings(value, _now_zone())
    except TypeError:
        raise _refuse_type(node, kind) from None


def java_double_string(value: float, single: bool = False) -> str:
    """Java's ``Double.toString`` (``Float.toString`` with ``single``), which Spark's CAST of a
    DOUBLE (FLOAT) to STRING prints: the shortest digits that read back as the value, plain
    between 1e-3 and 1e7, else as d.dddE±n; always a digit after the point."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = str(np.float32(value)) if single else repr(float(value))
    sign, digit_tuple, exponent = Decimal(text).as_tuple()
    if len(digit_tuple) == 1:  # Java prints two digits when two are closer to the value (4.9E-324)
        exact = Decimal(float(np.float32(value)) if single else float(value))
        two = Decimal(f"{exact:.1e}")
        if two.as_tuple().digits[1:] != (0,) and (np.float32(two) if single else float(two)) == value:
            sign, digit_tuple, exponent = two.as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent - 1  # value = d.ddd × 10**point
    digits = digits.rstrip("0") or "0"
    prefix = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point >= 0:
            whole = (digits[: point + 1]).ljust(point + 1, "0")
            return f"{prefix}{whole}.{digits[point + 1:] or '0'}"
        return f"{prefix}0.{'0' * (-point - 1)}{digits}"
    return f"{prefix}{digits[0]}.{digits[1:] or '0'}E{point}"


def timestamp_string(value, time_zone: str | None = None) -> str:
    """Spark's CAST of a TIMESTAMP to STRING: the wall time in ``time_zone`` (the session's,
    ``SESSION_TIME_ZONE`` by default; a naive value is one already), fractional seconds without
    trailing zeros."""
    if value.tzinfo is not None:
        from zoneinfo import ZoneInfo

        value = value.astimezone(ZoneInfo(time_zone or SESSION_TIME_ZONE)).replace(tzinfo=None)
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text


def _string_of(kind: pa.DataType, time_zone: str | None = None):
    """The Python function printing one value of ``kind`` as Spark does, or None when Arrow's
    cast already prints it so (strings, integers, dates)."""
    if pa.types.is_floating(kind):
        single = pa.types.is_float32(kind)
        return lambda v: java_double_string(v, single)
    if pa.types.is_boolean(kind):
        return lambda v: "true" if v else "false"
    if pa.types.is_decimal(kind):
        return lambda v: format(v, "f")
    if pa.types.is_timestamp(kind):
        return lambda v: timestamp_string(v, time_zone)
    return None


def spark_strings(value, time_zone: str | None = None):
    """An Arrow array or scalar cast to STRING the way Spark casts it (see above; timestamps in
    ``time_zone``, the session's by default); each distinct
    value is printed once (Arrow's hashing compares bits: -0.0 and 0.0 are two values, as they
    print apart)."""
    kind = value.type
    if pa.types.is_dictionary(kind):
        return spark_strings(value.cast(kind.value_type), time_zone)
    if pa.types.is_string(kind):
        return value
    if (pa.types.is_large_string(kind) or pa.types.is_integer(kind) or pa.types.is_date(kind) or pa.types.is_null(kind)
            or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
        return pc.cast(value, pa.string())
    if pa.types.is_timestamp(kind) and kind.unit == "ns":
        value = pc.cast(value, pa.timestamp("us", kind.tz), safe=False)  # Spark keeps microseconds
    show = _string_of(kind, time_zone)
    if show is None:
        raise TypeError(f"cannot print {kind} as Spark does")
    if isinstance(value, pa.Scalar):
        return pa.scalar(show(value.as_py()) if value.is_valid else None, pa.string())
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    encoded = pc.dictionary_encode(value)
    words = pa.array([show(v) for v in encoded.dictionary.to_pylist()], pa.string())
    return words.take(encoded.indices)
