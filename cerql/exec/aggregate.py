"""Aggregates over a variable's events, computed by the local engines (planner/aggregates.py).

Input: the kind of aggregate and the column's values at the variable's events, in stream order
(None for ``count(var)``, which gets the events). Output: the value Spark's aggregate of the same
name gives over those rows, so that ``cerql.run`` and ``cer_sql`` agree: NULLs skipped by sum,
avg, min, max, count(col) and collect_list, kept by first and last; NaN above every number for
min and max, as Spark orders it. A sum of integers is a BIGINT that must not overflow: Spark 4
(ANSI mode) raises ARITHMETIC_OVERFLOW when an addition in stream order leaves the BIGINT range,
and so does this module (Python's integers would otherwise grow past what Arrow can hold).

A sum or avg of DECIMAL(p, s) is exact (docs/semantics.md, "Aggregates over a variable's events in SELECT"):
the values are added as integers of unit 10**-s into Spark's sum type DECIMAL(min(38, p + 10),
s), ARITHMETIC_OVERFLOW when a running sum in stream order leaves it (the same point where
Spark's higher-order ``aggregate`` of ``cer_sql`` fails); avg divides that sum by the count and
rounds half away from zero (HALF_UP) to Spark's scale min(38, s + 4), NUMERIC_VALUE_OUT_OF_RANGE
when it does not fit Spark's DECIMAL(min(38, p + 4), min(38, s + 4)).
"""

from __future__ import annotations

import math
from decimal import Context, Decimal

import numpy as np
import pyarrow as pa

from cerql.errors import ExecutionError
from cerql.exec.kernel.aggregate import min_max_float, sum_float64, sum_int64
from cerql.expr import BIGINT_MAX, BIGINT_MIN

MAX_PRECISION = 38  # digits of Spark's widest DECIMAL
_EXACT = Context(prec=200)  # Decimal arithmetic without rounding: any 38-digit sum of 2**63 values


def decimal_sum_type(column_type: pa.Decimal128Type) -> pa.Decimal128Type:
    """Spark's type of a sum of DECIMAL(p, s): DECIMAL(min(38, p + 10), s); avg adds up in it too."""
    return pa.decimal128(min(MAX_PRECISION, column_type.precision + 10), column_type.scale)


def decimal_avg_type(column_type: pa.Decimal128Type) -> pa.Decimal128Type:
    """Spark's type of an avg of DECIMAL(p, s): DECIMAL(min(38, p + 4), min(38, s + 4))."""
    return pa.decimal128(min(MAX_PRECISION, column_type.precision + 4), min(MAX_PRECISION, column_type.scale + 4))


def sum_overflow(detail: str = "") -> ExecutionError:
    """Spark's ANSI error for a BIGINT sum that leaves the range, raised by this module and by the
    kernel's sum registers (exec/driver.py)."""
    return ExecutionError(f"sum() overflows BIGINT{detail}", error_class="ARITHMETIC_OVERFLOW",
                          hint="cast the column to DOUBLE or DECIMAL before the query", params={"kind": "sum"})


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def decimal_sum_overflow(kind: str, sum_type: pa.Decimal128Type, detail: str = "") -> ExecutionError:
    """Spark's ANSI error for a decimal sum (of sum or avg) that leaves its sum type."""
    name = f"DECIMAL({sum_type.precision},{sum_type.scale})"
    return ExecutionError(f"{kind}() overflows {name}{detail}",
                          error_class="ARITHMETIC_OVERFLOW", params={"kind": kind},
                          hint="cast the column to DOUBLE, or to a DECIMAL with fewer fraction digits, "
                               "before the query")


def decimal_avg_out_of_range(avg_type: pa.Decimal128Type, unscaled: int) -> ExecutionError:
    """Spark's ANSI error for a decimal average that its result type cannot hold."""
    shown = Decimal(unscaled).scaleb(-avg_type.scale, context=_EXACT)
    return ExecutionError(f"[NUMERIC_VALUE_OUT_OF_RANGE] avg() = {shown} cannot be represented as "
                          f"DECIMAL({avg_type.precision},{avg_type.scale})",
                          error_class="NUMERIC_VALUE_OUT_OF_RANGE", params={"kind": "avg"},
                          hint="cast the column to a DECIMAL with fewer fraction digits, or to DOUBLE, "
                               "before the query")


def _unscaled(v: Decimal, scale: int) -> int:
    """A decimal value of a column of ``scale`` as the integer count of its units of 10**-scale."""
    return int(v.scaleb(scale, context=_EXACT))


def _decimal_value(kind: str, present: list, column_type: pa.DataType | None) -> Decimal:
    """sum or avg of non-NULL decimals (module docstring); ``column_type`` (DECIMAL(p, s)) when
    known, else DECIMAL(38, the values' largest scale)."""
    if not pa.types.is_decimal(column_type):
        column_type = pa.decimal128(38, max(-v.as_tuple().exponent for v in present))
    sum_type = decimal_sum_type(column_type)
    bound, scale = 10 ** sum_type.precision, column_type.scale
    total = 0
    for v in present:
        total += _unscaled(v, scale)
        if abs(total) >= bound:
            raise decimal_sum_overflow(kind, sum_type, f" after adding {v}")
    if kind == "sum":
        return Decimal(total).scaleb(-scale, context=_EXACT)
    avg_type = decimal_avg_type(column_type)
    rounded = _half_up(total * 10 ** (avg_type.scale - scale), len(present))
    if abs(rounded) >= 10 ** avg_type.precision:
        raise decimal_avg_out_of_range(avg_type, rounded)
    return Decimal(rounded).scaleb(-avg_type.scale, context=_EXACT)


def _half_up(numerator, count):
    """numerator / count (count > 0) rounded half away from zero: Python ints, or object arrays
    of them (NumPy applies the same operators element by element)."""
    magnitude = (2 * abs(numerator) + count) // (2 * count)
    return np.where(numerator < 0, -magnitude, magnitude) if isinstance(magnitude, np.ndarray) else (
        -magnitude if numerator < 0 else magnitude)


def value(kind: str, events: list, values: list | None, column_type: pa.DataType | None = None):
    """The aggregate of ``values`` (the column at ``events``, of ``column_type`` when known: a
    decimal's sum and avg need its precision), or of ``events`` for count(var)."""
    if values is None:
        return len(events)
    present = [v for v in values if v is not None]
    if kind == "count":
        return len(present)
    if kind == "collect_list":
        return present
    if kind == "first":
        return values[0] if values else None
    if kind == "last":
        return values[-1] if values else None
    if not present:
        return None
    if kind in ("sum", "avg") and isinstance(present[0], Decimal):
        return _decimal_value(kind, present, column_type)
    if kind == "sum":
        total = present[0]
        for v in present[1:]:
            total = total + v
            if isinstance(total, int) and not BIGINT_MIN <= total <= BIGINT_MAX:
                raise sum_overflow(f" after adding {v} (total {total})")
        return total
    if kind == "avg":
        total = 0.0
        for v in present:
            total += v
        return total / len(present)
    numbers = [v for v in present if not _is_nan(v)]
    if kind == "max":
        return math.nan if len(numbers) < len(present) else max(numbers)
    if kind == "min":
        return min(numbers) if numbers else math.nan
    raise ValueError(f"unknown aggregate {kind}")  # pragma: no cover - planner/aggregates.py refuses it


# -- the same values for many results at once (cerql.exec.output, the SQL-cell function)
def grouped(kind: str, offsets: np.ndarray, values: pa.Array | None, result_type: pa.DataType) -> pa.Array:
    """:func:`value` for every result at once: result r's events are ``values[offsets[r]:
    offsets[r + 1]]`` (``values`` None for count(var), which counts them), in stream order.
    Vectorized (one pass of NumPy, Arrow or a compiled loop of cerql.exec.kernel.aggregate per
    aggregate), with the same answers as :func:`value`, NULLs, NaN and BIGINT overflow included."""
    offsets = np.asarray(offsets, np.int64)
    n = len(offsets) - 1
    counts = np.diff(offsets)
    if values is None:
        return pa.array(counts, pa.int64())
    owner = np.repeat(np.arange(n), counts)
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
    if kind in ("first", "last"):  # NULLs kept
        empty = counts == 0
        at = np.where(empty, 0, offsets[:-1] if kind == "first" else offsets[1:] - 1)
        return values.take(pa.array(at, mask=empty)).cast(result_type)
    present, present_owner = values.filter(pa.array(valid)), owner[valid]
    present_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(present_owner, minlength=n), out=present_offsets[1:])
    if kind == "count":
        return pa.array(np.diff(present_offsets), pa.int64())
    if kind == "collect_list":
        return pa.ListArray.from_arrays(pa.array(present_offsets, pa.int32()), present).cast(result_type)
    empty = present_offsets[1:] == present_offsets[:-1]  # NULL: no value to aggregate
    if kind in ("sum", "avg") and pa.types.is_decimal(present.type):
        return _grouped_decimal(kind, present, present_offsets, empty)
    if kind == "sum" and pa.types.is_integer(present.type):
        numbers = present.cast(pa.int64()).to_numpy()
        sums, bad = sum_int64(numbers, present_offsets)
        if bad >= 0:
            _raise_overflow(numbers, present_offsets, bad)
        return pa.array(sums, pa.int64(), mask=empty)
    if kind in ("sum", "avg"):
        numbers = present.cast(pa.float64(), safe=False).to_numpy()  # as Python and Spark round it
        sums = sum_float64(numbers, present_offsets, 0.0 if kind == "avg" else np.nan)
        if kind == "avg":
            with np.errstate(invalid="ignore", divide="ignore"):
                sums = sums / np.diff(present_offsets)
        return pa.array(sums, pa.float64(), mask=empty)
    if kind in ("min", "max") and pa.types.is_floating(present.type):
        numbers = present.to_numpy()
        out = min_max_float(numbers, present_offsets, kind == "max")
        return pa.array(out, mask=empty).cast(result_type)
    if kind in ("min", "max"):  # Arrow orders every other type as Python (and Spark) do
        table = pa.table({"r": pa.array(present_owner), "v": present})
        got = table.group_by("r", use_threads=False).aggregate([("v", kind)])
        at = np.full(n, -1, np.int64)
        at[got.column("r").to_numpy()] = np.arange(got.num_rows)
        return got.column(f"v_{kind}").take(pa.array(at, mask=at < 0)).combine_chunks().cast(result_type)
    raise ValueError(f"unknown aggregate {kind}")  # pragma: no cover - planner/aggregates.py refuses it


def _grouped_decimal(kind: str, present: pa.Array, offsets: np.ndarray, empty: np.ndarray) -> pa.Array:
    """Decimal sum or avg per group (module docstring), exact: the values' 128-bit units as
    Python integers in NumPy object arrays, running sums from one cumulative sum."""
    column_type = present.type
    sum_type = decimal_sum_type(column_type)
    units = _units(present)
    running = np.cumsum(np.concatenate([np.array([0], object), units]))  # running[k]: sum of units[:k]
    starts = np.repeat(offsets[:-1], np.diff(offsets))
    partial = running[1:] - running[starts]  # each group's running sum after each of its values
    over = np.flatnonzero(np.abs(partial) >= 10 ** sum_type.precision)
    if len(over):
        group = int(np.searchsorted(offsets, over[0], side="right") - 1)
        values = present.slice(offsets[group], offsets[group + 1] - offsets[group]).to_pylist()
        _decimal_value(kind, values, column_type)
        raise AssertionError("the grouped decimal sum saw an overflow that value's does not")  # pragma: no cover
    sums = running[offsets[1:]] - running[offsets[:-1]]
    if kind == "sum":
        return _decimal_array(sums, empty, sum_type)
    avg_type = decimal_avg_type(column_type)
    counts = np.maximum(np.diff(offsets), 1).astype(object)
    rounded = _half_up(sums * 10 ** (avg_type.scale - column_type.scale), counts)
    too_big = np.flatnonzero((np.abs(rounded) >= 10 ** avg_type.precision) & ~empty)
    if len(too_big):
        raise decimal_avg_out_of_range(avg_type, int(rounded[too_big[0]]))
    return _decimal_array(rounded, empty, avg_type)


def _units(array: pa.Array) -> np.ndarray:
    """A decimal128 array's unscaled values (counts of 10**-scale) as Python ints, from its two
    little-endian 64-bit words per value (the high one signed)."""
    words = np.frombuffer(array.buffers()[1], dtype="<u8", count=2 * (array.offset + len(array)))
    words = words.reshape(-1, 2)[array.offset:]
    return words[:, 1].view("<i8").astype(object) * (1 << 64) + words[:, 0].astype(object)


def _decimal_array(units: np.ndarray, empty: np.ndarray, type_: pa.Decimal128Type) -> pa.Array:
    """A decimal128 array of ``type_`` from unscaled Python ints, NULL where ``empty``."""
    units = np.where(empty, 0, units).astype(object)
    low = (units & ((1 << 64) - 1)).astype(np.uint64)
    high = (units >> 64).astype(np.int64)
    words = np.empty((len(units), 2), np.uint64)
    words[:, 0], words[:, 1] = low, high.view(np.uint64)
    validity = pa.array(~empty, pa.bool_()).buffers()[1] if empty.any() else None
    return pa.Array.from_buffers(type_, len(units), [validity, pa.py_buffer(words)],
                                 null_count=int(empty.sum()))


def _raise_overflow(numbers: np.ndarray, offsets: np.ndarray, group: int):
    """The error :func:`value` gives for the group that overflows, with its Python numbers."""
    value("sum", [], numbers[offsets[group]:offsets[group + 1]].tolist())
    raise AssertionError("the compiled sum saw an overflow that Python's does not")  # pragma: no cover
