"""The event stream of a query, laid out for evaluation.

Input: a :class:`cerql.plan.QueryPlan` and ``{table key: pyarrow.Table}``. Output: a
:class:`Stream`: the union of the sources by column name, without the rows that can take part
in no match (NULL first ordering column, NULL partition key), sorted by (partition key, ordering
columns, source position in FROM, row ordinal in the source), cut into substreams, with one
boolean per row for each atom and each unary predicate and the window values (docs/language.md,
"Events and the stream"). Every engine reads the same Stream, so they see the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cerql import ast
from cerql.expr import evaluate_predicate, spark_strings, spark_types
from cerql.parser.units import MICROS_PER_UNIT
from cerql.plan import ORDINAL_COLUMN, SOURCE_COLUMN, QueryPlan
from cerql.exec.bits import non_null_columns


@dataclass
class Stream:
    """Rows in evaluation order; substream k is rows ``bounds[k][0]:bounds[k][1]``."""

    table: pa.Table
    bounds: list[tuple[int, int]]
    keys: list[tuple]
    atoms: dict[ast.Atom, np.ndarray]
    predicates: dict[str, np.ndarray]
    window_values: np.ndarray | None


def as_arrow(table) -> pa.Table:
    """pandas or Arrow input as an Arrow table, its columns typed as Spark's ``createDataFrame``
    reads them (:func:`cerql.expr.tables.spark_types`: a ``category`` as its values, float16
    as DOUBLE, date64 as DATE, unsigned 64-bit as BIGINT)."""
    if isinstance(table, pa.Table):
        return spark_types(table)
    if isinstance(table, pa.RecordBatch):
        return spark_types(pa.Table.from_batches([table]))
    if isinstance(table, pd.DataFrame):
        return spark_types(pa.Table.from_pandas(table, preserve_index=False))
    raise TypeError(f"expected a pandas DataFrame or a pyarrow Table, got {type(table).__name__}")


def union_sources(plan: QueryPlan, tables: Mapping[str, pa.Table]) -> pa.Table:
    """Union by column name (missing columns are NULL), with source position and row ordinal."""
    lowered = {c.lower(): c for c in plan.columns}
    exact = set(plan.columns)  # x and X of one source are two columns (resolve.build_union)
    parts = []
    for src in plan.sources:
        t = tables[src.key]
        t = t.rename_columns([n if n in exact else lowered.get(n.lower(), n) for n in t.column_names])
        t = t.append_column(SOURCE_COLUMN, pa.array(np.full(t.num_rows, src.index, np.int32)))
        t = t.append_column(ORDINAL_COLUMN, pa.array(np.arange(t.num_rows, dtype=np.int64)))
        parts.append(t)
    table = pa.concat_tables(parts, promote_options="permissive")
    return table.select(list(plan.columns) + [SOURCE_COLUMN, ORDINAL_COLUMN])


def drop_null_rows(plan: QueryPlan, table: pa.Table) -> pa.Table:
    """The rows with every one of :func:`cerql.exec.bits.non_null_columns` not NULL: the
    others take part in no match (the local engine's and the SQL-cell function's drop; Spark's
    is ``cerql.spark.lower.kept_rows``)."""
    columns = non_null_columns(plan)
    if all(table.column(c).null_count == 0 for c in columns):
        return table
    mask = pc.is_valid(table.column(columns[0]))
    for col in columns[1:]:
        mask = pc.and_(mask, pc.is_valid(table.column(col)))
    return table.filter(mask)


def firing_rows(bits: np.ndarray, masks) -> np.ndarray:
    """Which rows have every bit of one of ``masks`` (:func:`cerql.exec.bits.firing_masks`):
    the rows a query that does not count positions keeps."""
    bits = np.asarray(bits).astype(np.uint64)
    fires = np.zeros(len(bits), bool)
    for m in masks:
        fires |= (bits & np.uint64(m)) == np.uint64(m)
    return fires


def _time_ordered(plan: QueryPlan, table: pa.Table) -> bool:
    """One source and one ordering column whose values never decrease: the common case of a
    time-ordered table, whose rows are then already in (order, source, ordinal) order."""
    if len(plan.sources) != 1 or len(plan.order_columns) != 1:
        return False
    col = table.column(plan.order_columns[0])
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_timestamp(col.type)
            or pa.types.is_date(col.type)):
        return False
    if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type):
        col = pc.cast(col, pa.int64()) if pa.types.is_timestamp(col.type) else pc.cast(col, pa.int32())
    values = col.to_numpy()
    return bool(np.all(values[1:] >= values[:-1]))


def _ranked_key(kind: pa.DataType) -> bool:
    """Key types whose distinct values Arrow's hashing and Arrow's sort agree on (floats stay with
    the full sort: NaN and -0.0)."""
    return any(test(kind) for test in (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer,
                                        pa.types.is_boolean, pa.types.is_date, pa.types.is_timestamp))


def _key_codes(column: pa.ChunkedArray, ranked: bool = False) -> np.ndarray:
    """Each row's code among the column's distinct values; with ``ranked``, the codes are the
    values' ranks in Arrow's ascending order. Arrow's hashing compares bytes, so "a" and "a\\x00"
    are two keys, as in Spark (pandas' factorize merges them); floats keep pandas' grouping (one
    NaN key, 0.0 equal to -0.0), as Spark normalizes them."""
    if pa.types.is_floating(column.type):
        return pd.factorize(column.to_pandas(), use_na_sentinel=False)[0]
    encoded = pc.dictionary_encode(column.combine_chunks())
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    if ranked:
        rank = np.empty(len(encoded.dictionary), dtype=np.int64)
        rank[pc.array_sort_indices(encoded.dictionary).to_numpy()] = np.arange(len(encoded.dictionary))
        codes = rank[codes]
    return codes


def _sorted(plan: QueryPlan, table: pa.Table) -> pa.Table:
    keys = plan.substream_columns
    if _time_ordered(plan, table):
        if not keys:
            return table
        if all(_ranked_key(table.column(c).type) for c in keys):
            # The rows of one key are already in order, so a stable sort by the keys' ranks gives
            # the full sort's order at a fraction of its cost (integer argsort, no string compares).
            ranks = [_key_codes(table.column(c), ranked=True) for c in keys]
            order = np.argsort(ranks[0], kind="stable") if len(ranks) == 1 else np.lexsort(ranks[::-1])
            return table.take(order)
    names = keys + plan.order_columns + (SOURCE_COLUMN, ORDINAL_COLUMN)
    return table.take(spark_sort_indices(table, names))


def spark_sort_indices(table: pa.Table, names) -> pa.Array:
    """The rows' order by ``names`` ascending as Spark sorts: NULL first, NaN after every number
    and equal to itself, -0.0 equal to 0.0. Arrow's ``at_start`` would put NaN first too, so a
    float column is sorted by whether it is NaN (NULL for NULL), then by value."""
    columns = []
    for c in names:
        col = table.column(c)
        if pa.types.is_floating(col.type):
            columns.append(pc.is_nan(col))
        columns.append(col)
    keyed = pa.Table.from_arrays(columns, names=[str(k) for k in range(len(columns))])
    return pc.sort_indices(keyed, sort_keys=[(str(k), "ascending", "at_start") for k in range(len(columns))])


def _substreams(plan: QueryPlan, table: pa.Table) -> tuple[list[tuple[int, int]], list[tuple]]:
    n = table.num_rows
    if n == 0:
        return [], []
    if not plan.substream_columns:
        return [(0, n)], [()]
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for col in plan.substream_columns:
        codes = _key_codes(table.column(col))
        change[1:] |= codes[1:] != codes[:-1]
    starts = np.flatnonzero(change)
    heads = table.select(list(plan.substream_columns)).take(starts)
    keys = list(zip(*(heads.column(c).to_pylist() for c in plan.substream_columns)))
    bounds = list(zip(starts.tolist(), starts[1:].tolist() + [n]))
    return bounds, keys


def atom_rows(plan: QueryPlan, table: pa.Table) -> dict[ast.Atom, np.ndarray]:
    """Which rows each atom matches, for a table with the stream columns and the source column.
    A type column is read as Spark casts it to a string (``cerql.spark.lower``'s condition):
    a DOUBLE 1.0 is '1.0', so the atom `1` does not match it (Arrow would print '1')."""
    source = table.column(SOURCE_COLUMN).to_numpy()
    types: dict[str, pa.ChunkedArray] = {}  # each type column cast to string once
    out = {}
    for atom, atom_plan in plan.atoms.items():
        mask = np.zeros(table.num_rows, dtype=bool)
        for index, type_column, value in atom_plan.alternatives:
            rows = source == index
            if type_column is not None:
                if type_column not in types:
                    types[type_column] = spark_strings(table.column(type_column))
                equal = pc.fill_null(pc.equal(types[type_column], value), False)
                rows &= np.asarray(equal.to_numpy(zero_copy_only=False), bool)
            mask |= rows
        out[atom] = mask
    return out


def window_values(plan: QueryPlan, table: pa.Table) -> np.ndarray | None:
    """The first ordering column as numbers the window is measured in."""
    if plan.window is None or plan.window.kind == "events":
        return None
    col = table.column(plan.order_columns[0])
    if plan.order_kind == "timestamp":
        # nanoseconds (pandas' default) are truncated to microseconds, Spark's precision
        col = pc.cast(col, pa.timestamp("us", tz=col.type.tz), safe=False)
        return np.asarray(pc.cast(col, pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    if plan.order_kind == "date":
        days = pc.cast(pc.cast(col, pa.date32()), pa.int32()).to_numpy(zero_copy_only=False)
        return np.asarray(days, dtype=np.int64) * MICROS_PER_UNIT["day"]
    if pa.types.is_integer(col.type):
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)
    return np.asarray(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def navigated(plan: QueryPlan, table: pa.Table) -> pa.Table:
    """The union with each PREV/NEXT column (``plan.navigation``, planner/navigation.py), which
    holds the navigated column's own value, shifted by its offset within each PARTITION BY
    partition in the stream's order (ordering columns, source, ordinal); NULL where no row lies
    that far. Only rows that have a place in the stream count: a NULL first ordering value or
    partition key puts a row in no substream. The hidden partition columns of equalities across
    variables (``join_columns``) do not split it: they are the planner's choice, not the query's.
    Spark computes the same with ``lag``/``lead`` (spark/lower.py ``with_navigation``)."""
    if not plan.navigation or table.num_rows == 0:
        return table
    keys = list(plan.partition_columns)
    valid = pc.is_valid(table.column(plan.order_columns[0]))
    for key in keys:
        valid = pc.and_(valid, pc.is_valid(table.column(key)))
    rows = np.flatnonzero(np.asarray(valid.to_numpy(zero_copy_only=False), bool))
    placed = table.take(rows)
    order = spark_sort_indices(placed, keys + list(plan.order_columns) + [SOURCE_COLUMN, ORDINAL_COLUMN])
    placed = placed.take(order)
    rows = rows[order.to_numpy()]  # the table's rows in the stream's order
    m = len(rows)
    change = np.zeros(m, dtype=bool)
    if m:
        change[0] = True
    for key in keys:
        codes = _key_codes(placed.column(key))
        change[1:] |= codes[1:] != codes[:-1]
    partition = np.cumsum(change)
    here = np.arange(m)
    for nav in plan.navigation:
        there = here + nav.offset
        ok = (there >= 0) & (there < m)
        ok[ok] &= partition[there[ok]] == partition[here[ok]]
        source = np.full(table.num_rows, -1, np.int64)
        source[rows[ok]] = rows[there[ok]]
        values = table.column(nav.column).take(pa.array(source, mask=source < 0))
        table = table.set_column(table.column_names.index(nav.column), nav.column, values)
    return table


def stream_of(plan: QueryPlan, table: pa.Table) -> Stream:
    """Rows already without NULL ordering values or keys and in evaluation order (with the
    source and ordinal columns), laid out: substreams, atoms, predicates and window values."""
    bounds, keys = _substreams(plan, table)
    predicates = {text: evaluate_predicate(fn, table) for text, fn in plan.predicates.items()}
    return Stream(table, bounds, keys, atom_rows(plan, table), predicates, window_values(plan, table))


def build_stream(plan: QueryPlan, tables: Mapping[str, pa.Table]) -> Stream:
    """Lay out the rows of every source for evaluation (see module docstring)."""
    stream = stream_of(plan, _sorted(plan, drop_null_rows(plan, navigated(plan, union_sources(plan, tables)))))
    warn_type_case(plan, stream)
    return stream


def warn_type_case(plan: QueryPlan, stream: Stream) -> None:
    """An EventTypeCaseWarning for each atom that matches no row of a source that has rows,
    where some row's type matches it case-insensitively (``fail`` for ``FAIL``). A warning, not
    an error, as Spark SQL runs ``WHERE type = 'fail'`` and returns no row (docs/language.md,
    "Events and the stream"); only atoms that match nothing pay for the second comparison."""
    import warnings

    from cerql.errors import EventTypeCaseWarning

    table, source, seen = stream.table, None, set()
    for atom, atom_plan in plan.atoms.items():
        if stream.atoms[atom].any() or table.num_rows == 0:
            continue
        for index, type_column, value in atom_plan.alternatives:
            if type_column is None or (index, value) in seen:
                continue
            seen.add((index, value))
            if source is None:
                source = table.column(SOURCE_COLUMN).to_numpy()
            rows = source == index
            if not rows.any():
                continue
            types = spark_strings(table.column(type_column)).filter(pa.array(rows))
            found = pc.unique(types.filter(pc.fill_null(pc.equal(pc.utf8_lower(types), value.lower()), False)))
            if len(found):
                names = ", ".join(repr(v) for v in found.to_pylist()[:3])
                where = f" (line {atom.span.line}, column {atom.span.column})" if atom.span else ""
                name = plan.sources[index].ref if index < len(plan.sources) else "the source"
                warnings.warn(f"Event type '{value}'{where} matches no row of {name}, but {names} does: event "
                              f"types match exactly, as Spark compares strings; write {found[0]} to match those "
                              f"rows", EventTypeCaseWarning, stacklevel=2)
