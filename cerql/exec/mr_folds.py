"""Spark's aggregates over a variable's rows beyond count/sum/avg/min/max, as folds in row order.

Input: an aggregate's kind (``mr_functions.aggregate_kind``: ``stddev_samp``, ``min_by``,
``count_distinct``...) and the Arrow types of its arguments. Output: a :class:`Fold`: Spark's
result type, the state over no rows, the state after one more row (the arguments' Python values
at that row), and the value of a state. exec/mr_measures.py runs a fold over each match's rows of
a variable, exec/mr_history.py keeps its state as a thread register; so a state is immutable and
hashable, and two equal states have the same future.

Spark's rules, as Spark 4 (ANSI) gives them (docs/semantics.md, "MATCH_RECOGNIZE"):

- ``stddev_samp`` (``stddev``, ``std``), ``stddev_pop``, ``var_samp`` (``variance``),
  ``var_pop``: DOUBLE, the argument cast to DOUBLE, NULLs skipped; NULL over no rows, and the
  sample ones NULL over one row. The state is Spark's running (count, mean, sum of squared
  deviations), updated as Spark updates it (Welford's step), so a value is Spark's to the bit
  when Spark reads the rows in the same order;
- ``count_if``: BIGINT, the rows where the condition is true (0 over none);
- ``bool_and`` (``every``), ``bool_or`` (``some``, ``any``): BOOLEAN, NULLs skipped, NULL over
  no rows;
- ``min_by(x, y)`` / ``max_by(x, y)``: x at the row of the least / greatest y (NaN above every
  number), rows whose y is NULL skipped; among rows whose y ties, the last, as Spark keeps
  it when it reads the rows in row order; x may be NULL; NULL when no row has a y;
- ``collect_list`` (``array_agg``): ARRAY of the non-NULL values in row order (empty over no
  rows), its elements not nullable, as Spark types it;
- ``count(DISTINCT x)``, ``sum(DISTINCT x)``, ``avg(DISTINCT x)``: over the distinct non-NULL
  values (NaN equal to NaN, -0.0 to 0.0, as Spark groups), with the types and errors of count,
  sum and avg (exec/aggregate.py). A DOUBLE sum adds the values in the order of their first row,
  where Spark adds them in its hash table's order: the last bits may differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cerql.exec import aggregate

MOMENTS = ("stddev_samp", "stddev_pop", "var_samp", "var_pop")
DISTINCT = ("count_distinct", "sum_distinct", "avg_distinct")
KINDS = MOMENTS + ("count_if", "bool_and", "bool_or", "min_by", "max_by", "collect_list") + DISTINCT

_EMPTY: dict[str, Any] = {**{k: (0.0, 0.0, 0.0) for k in MOMENTS}, "count_if": 0, "bool_and": None,
                          "bool_or": None, "min_by": (None, None), "max_by": (None, None), "collect_list": (),
                          **{k: (frozenset(), ()) for k in DISTINCT}}


class FoldTypeError(Exception):
    """An argument of a type the aggregate does not take (Spark's DATATYPE_MISMATCH)."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.message, self.hint = message, hint


def empty(kind: str):
    """The state of ``kind`` over no rows (the same whatever the arguments' types)."""
    return _EMPTY[kind]


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t)


def result_type(kind: str, types: tuple[pa.DataType, ...]) -> pa.DataType:
    """Spark's type of the aggregate over arguments of ``types``; FoldTypeError when it takes no
    such argument."""
    first = types[0]
    if kind in MOMENTS:
        if not _numeric(first):
            raise FoldTypeError(f"{kind}() takes numbers, not {first}", f"cast the argument: {kind}(CAST(x AS DOUBLE))")
        return pa.float64()
    if kind in ("count_if", "bool_and", "bool_or"):
        if not (pa.types.is_boolean(first) or pa.types.is_null(first)):
            raise FoldTypeError(f"{kind}() takes a condition, not {first}", f"write a comparison: {kind}(A.x > 0)")
        return pa.int64() if kind == "count_if" else pa.bool_()
    if kind in ("min_by", "max_by"):
        return first
    if kind == "collect_list":
        return pa.list_(pa.field("item", first, nullable=False))  # Spark: ARRAY<T> without NULLs
    if kind == "count_distinct":
        return pa.int64()
    if not _numeric(first):
        raise FoldTypeError(f"{kind.split('_')[0]}() takes numbers, not {first}", "aggregate a numeric column")
    if kind == "sum_distinct":
        if pa.types.is_integer(first):
            return pa.int64()
        return aggregate.decimal_sum_type(first) if pa.types.is_decimal(first) else pa.float64()
    return aggregate.decimal_avg_type(first) if pa.types.is_decimal(first) else pa.float64()


@dataclass(frozen=True)
class Fold:
    """One aggregate over arguments of known types (module docstring)."""

    kind: str
    types: tuple[pa.DataType, ...]
    result_type: pa.DataType

    @property
    def empty(self):
        return _EMPTY[self.kind]

    def step(self, state, args: tuple):
        """The state after one more row whose arguments are ``args`` (Python values)."""
        kind, x = self.kind, args[0]
        if kind in ("min_by", "max_by"):
            return _by(kind, state, x, args[1])
        if x is None:
            return state
        if kind in MOMENTS:
            n, mean, m2 = state
            x = float(x)
            n1 = n + 1.0
            delta = x - mean
            delta_n = delta / n1
            return n1, mean + delta_n, m2 + delta * (delta - delta_n)
        if kind == "count_if":
            return state + 1 if x else state
        if kind == "bool_and":
            return bool(x) if state is None else state and bool(x)
        if kind == "bool_or":
            return bool(x) if state is None else state or bool(x)
        if kind == "collect_list":
            return state + (x,)
        keys, values = state
        key = _distinct_key(x)
        return state if key in keys else (keys | {key}, values + (x,))

    def value(self, state):
        """The aggregate's Python value for ``state`` (of ``result_type``)."""
        kind = self.kind
        if kind in MOMENTS:
            n, _, m2 = state
            sample = kind in ("stddev_samp", "var_samp")
            if n == 0 or (sample and n == 1):
                return None
            var = m2 / (n - 1.0) if sample else m2 / n
            if kind.startswith("stddev"):
                return math.sqrt(var) if not var < 0 else math.nan
            return var
        if kind in ("min_by", "max_by"):
            return state[1]
        if kind == "collect_list":
            return list(state)
        if kind in DISTINCT:
            values = list(state[1])
            if kind == "count_distinct":
                return len(values)
            if not values:
                return None
            return aggregate.value(kind.split("_")[0], [], values, self.types[0])
        return state


def fold(kind: str, types: tuple[pa.DataType, ...]) -> Fold:
    """The Fold of ``kind`` over arguments of ``types`` (FoldTypeError when it takes none such)."""
    return Fold(kind, tuple(types), result_type(kind, tuple(types)))


def _by(kind: str, state, x, y):
    """min_by/max_by: (the least/greatest y so far as a sort key, its x)."""
    if y is None:
        return state
    key = _order_key(y)
    best = state[0]
    if best is None or (key >= best if kind == "max_by" else key <= best):
        return key, x
    return state


def _order_key(y):
    """Spark's order of a value: NaN above every number, -0.0 equal to 0.0."""
    if isinstance(y, float):
        return (1, 0.0) if math.isnan(y) else (0, y + 0.0)
    return (0, y)


def _distinct_key(x):
    """Spark's grouping of a value: NaN equal to NaN, -0.0 equal to 0.0."""
    if isinstance(x, float):
        return ("nan",) if math.isnan(x) else (x + 0.0,)
    return x


__all__ = ["DISTINCT", "Fold", "FoldTypeError", "KINDS", "MOMENTS", "empty", "fold", "result_type"]
