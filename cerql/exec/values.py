"""Running compiled expressions on Arrow tables.

Input: a function from planner/arrow_expr.py (``table -> value``) and a table. Output: a whole
Arrow array, or a NumPy bool array for predicates (NULL counts as false: docs/language.md, "NULL").
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cerql.errors import UnsupportedError
from cerql.exec.aggregate import BIGINT_MAX


def evaluate(fn: Callable, table: pa.Table) -> pa.Array:
    """Run a compiled expression on a table; scalars are broadcast to the table's length."""
    value = fn(table)
    if isinstance(value, pa.Scalar):
        return pa.array([value.as_py()] * table.num_rows, type=value.type)
    if isinstance(value, pa.ChunkedArray):
        return value.combine_chunks()
    return value


def evaluate_predicate(fn: Callable, table: pa.Table):
    """A predicate as a NumPy bool array; NULL counts as false."""
    value = evaluate(fn, table)
    if pa.types.is_null(value.type):
        value = pa.array([False] * len(value), pa.bool_())
    return np.asarray(pc.fill_null(value, False).to_numpy(zero_copy_only=False), dtype=bool)


def signed_columns(table: pa.Table) -> pa.Table:
    """Unsigned 64-bit columns as BIGINT, Spark's type for them (Spark has no unsigned types and
    ``createDataFrame`` reads a pandas uint64 column as bigint). Spark turns a value above
    2**63 - 1 into NULL without a word; cerql refuses it instead of losing it."""
    for k, field in enumerate(table.schema):
        if not pa.types.is_uint64(field.type):
            continue
        column = table.column(k)
        top = pc.max(column).as_py() if len(column) else None
        if top is not None and top > BIGINT_MAX:
            raise UnsupportedError(
                f"Column '{field.name}' is unsigned 64-bit and holds {top}, above BIGINT's maximum 2**63 - 1",
                error_class="UNSUPPORTED_COLUMN_TYPE", params={"column": field.name},
                hint="Spark has no unsigned 64-bit type (it would read the value as NULL): cast the column "
                     "to float64 or to a decimal before the query, or subtract an offset")
        table = table.set_column(k, field.with_type(pa.int64()), pc.cast(column, pa.int64()))
    return table


def spark_types(table: pa.Table) -> pa.Table:
    """The table's columns as Spark's ``createDataFrame`` types them, where Arrow has a type Spark
    has not: a dictionary column (a pandas ``category``) as its values' type, half floats as
    DOUBLE, date64 (milliseconds) as DATE (days; Spark's only date type), unsigned 64-bit as
    BIGINT (:func:`signed_columns`). Every engine then sees one type per Spark type."""
    for k, field in enumerate(table.schema):
        kind = field.type
        target = None
        if pa.types.is_dictionary(kind):
            kind = target = kind.value_type
        if pa.types.is_float16(kind):
            target = pa.float64()
        elif pa.types.is_date64(kind):
            target = pa.date32()
        if target is not None:
            column = table.column(k)
            if pa.types.is_dictionary(column.type):
                column = pc.cast(column, column.type.value_type)
            table = table.set_column(k, field.with_type(target), pc.cast(column, target, safe=False))
    return signed_columns(table)


# --------------------------------------------------------------------------- Spark's CAST AS STRING
# Spark reads a type column as a string (an atom `1` matches the row whose type casts to '1') and
# casts numbers, booleans, dates and timestamps to strings in CAST, concat and the string
# functions. Its text is Java's, not Arrow's: 1.0 is "1.0" (Arrow: "1"), 1e7 is "1.0E7",
# NaN is "NaN"; a timestamp is "yyyy-MM-dd HH:mm:ss[.ffffff]" in the session time zone.
SESSION_TIME_ZONE = "UTC"  # the local engines' spark.sql.session.timeZone (the cerql CLI's Spark setting)


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
