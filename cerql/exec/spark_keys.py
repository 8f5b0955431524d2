"""Spark's equality and order of key values, where Arrow's own differ or are missing.

Input: a column of keys (PARTITION BY, ORDER BY, a CEQL substream's key). Output: per row, a
code or rank that groups and orders the values as Spark does, which Arrow cannot do by itself:

- a STRUCT or an ARRAY (LIST) key: Arrow neither hashes nor sorts one. Spark groups two such
  values together when they are equal field by field (element by element), NULL fields equal,
  NaN equal to NaN and -0.0 to 0.0 inside (its GROUP BY normalizes the floats of a key); it
  orders structs field by field, each field ascending with NULLs first, and arrays element by
  element (a NULL element first), then the shorter first, NaN above every number, -0.0 equal
  to 0.0. Both come from one Python key per value (``order_key``): equal keys are Spark's equal
  values, and the keys sort as Spark sorts. Python compares strings by code point, which is
  UTF-8's byte order, Spark's order of strings; bytes as unsigned bytes, as Spark does.
- a float key: Arrow's hash tells -0.0 from 0.0 and NaNs of other bits apart; Spark groups them.

Why here: the local engine (exec/mr_engine.py) and the tasks on Spark's Python path
(exec/task.py ``key_changes``, spark/mr_lower.py) must give the JVM path's groups
(MatchRecognizeFunction.sameKey, spark/java/io/cerql/mr) and Spark's sort (docs/semantics.md,
"On Spark"). Nested keys go through Python values: slower than Arrow, paid only by such keys.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_NULL = (0,)
_NAN = (1, 1)  # above every (1, 0, number)


def is_nested(kind: pa.DataType) -> bool:
    """Whether Arrow cannot group or sort values of this type itself: a struct or a list."""
    return (pa.types.is_struct(kind) or pa.types.is_list(kind) or pa.types.is_large_list(kind)
            or pa.types.is_fixed_size_list(kind) or pa.types.is_list_view(kind)
            or pa.types.is_large_list_view(kind))


def order_key(value) -> tuple:
    """A Python value (``as_py``) as a tuple that compares as Spark compares the value: equal for
    values Spark groups together, ordered as Spark sorts them ascending, NULLs first (module
    docstring)."""
    if value is None:
        return _NULL
    if isinstance(value, float):
        return _NAN if value != value else (1, 0, value)
    if isinstance(value, dict):
        return 1, tuple(order_key(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return 1, tuple(order_key(v) for v in value)
    return 1, value


def ranks(values) -> pa.Array:
    """Per row of a nested column, its rank among the column's distinct values in Spark's order
    (equal values one rank), NULL where the value is: what a sort or a grouping reads instead."""
    keys = [order_key(v) for v in values.to_pylist()]
    rank = {k: r for r, k in enumerate(sorted(set(keys)))}
    return pa.array([None if k == _NULL else rank[k] for k in keys], pa.int64())


def comparable(values) -> pa.Array:
    """``values`` (an Arrow array) as values Arrow groups, hashes and sorts as Spark does: a
    nested column as its ``ranks``; a float column with -0.0 as 0.0 and every NaN the same
    NaN; a dictionary as its values; any other as it is."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    if is_nested(values.type):
        return ranks(values)
    if pa.types.is_floating(values.type):
        nan = pa.scalar(float("nan"), values.type)
        return pc.if_else(pc.is_nan(values), nan, pc.add(values, pa.scalar(0.0, values.type)))  # -0.0 + 0.0 = 0.0
    return values


def group_codes(values) -> np.ndarray:
    """Per row, a code equal for the rows Spark groups together (NULLs one group)."""
    encoded = pc.dictionary_encode(comparable(values), null_encoding="encode")
    return np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)


def same_values(a: tuple, b: tuple) -> bool:
    """Two keys' Python values (``as_py``) equal as Spark groups them: NULL equal to NULL, NaN to
    NaN, -0.0 to 0.0, structs and arrays compared inside alike."""
    return len(a) == len(b) and all(order_key(x) == order_key(y) for x, y in zip(a, b))


__all__ = ["comparable", "group_codes", "is_nested", "order_key", "ranks", "same_values"]
