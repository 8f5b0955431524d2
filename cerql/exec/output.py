"""Results as rows of the output schema (docs/language.md, "The output schema"), built with Arrow for every engine.

Input: the rows results refer to (an Arrow table with the plan's columns, ``__cerql_ordinal``
and, unless a Spark task has one source, ``__cerql_source``) and each result as row indices
into it (:class:`ResultRows`). Output: an Arrow table with the PARTITION BY columns,
``match_id``, ``match_start``, ``match_end``, then one column per SELECT item: a variable that
holds at most one event is a struct (NULL when unbound), any other variable a list of structs in
stream order, an expression its value. The local engine (``cerql.run``) and the Spark task
(``cerql.exec.task``) both call :func:`build`, so they cannot differ in how a result
looks; nothing in it makes a Python object per result or per event (a query with millions of
results renders in seconds). Spark evaluates SELECT expressions itself, on the task's output.

``match_id`` is a 63-bit hash of the interval's end rows and the selected rows' identities
(source position, row ordinal), so it is the same for the same input whichever engine found
the match. LIMIT takes the first n results in (partition key, match_end, match_start,
match_id) order.
"""

from __future__ import annotations

import datetime
import decimal
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas._libs import lib

from cerql.exec import aggregate
from cerql.automaton import label_bits
from cerql.exec.kernel import gather
from cerql.expr import evaluate
from cerql.plan import AGGREGATE_COLUMN, ORDINAL_COLUMN, SOURCE_COLUMN


class ResultRows(NamedTuple):
    """Results as int64 row indices into the rows they refer to. Result r starts at row
    ``start_row[r]`` and ends at ``end_row[r]``; label entry j says that result ``owner[j]``
    selects row ``entry_row[j]`` as the variables whose label bits are in ``entry_mask[j]``
    (``cerql.automaton.label_bits``), one entry per (result, row)."""

    end_row: np.ndarray
    start_row: np.ndarray
    owner: np.ndarray
    entry_row: np.ndarray
    entry_mask: np.ndarray

    @staticmethod
    def none() -> "ResultRows":
        return ResultRows(*(np.zeros(0, np.int64) for _ in range(5)))

    @staticmethod
    def concat(parts) -> "ResultRows":
        """One ResultRows of several over the same rows (owners renumbered)."""
        parts = [p for p in parts if len(p.end_row)]
        if len(parts) <= 1:
            return parts[0] if parts else ResultRows.none()
        shifts = np.cumsum([0] + [len(p.end_row) for p in parts[:-1]])
        return ResultRows(np.concatenate([p.end_row for p in parts]), np.concatenate([p.start_row for p in parts]),
                          np.concatenate([p.owner + s for p, s in zip(parts, shifts)]),
                          np.concatenate([p.entry_row for p in parts]), np.concatenate([p.entry_mask for p in parts]))


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SALT = np.uint64(0xD6E8FEB86659FD93)


def _mix(x: np.ndarray) -> np.ndarray:
    """A bijective 64-bit mixer (the splitmix64 finalizer): nearby inputs, far-apart outputs."""
    x = x.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def _row(source: np.ndarray, ordinal: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return _mix(np.asarray(ordinal).astype(np.uint64) + (np.asarray(source).astype(np.uint64) + 1) * _GOLDEN)


def match_ids(start_source, start_ordinal, end_source, end_ordinal,
              owner, var_index, label_source, label_ordinal) -> np.ndarray:
    """Deterministic 63-bit ids of results from what identifies them, whatever the engine.

    Result r has its interval's end rows (source position, row ordinal) at index r of the first
    four arrays; label entry j says that variable ``var_index[j]`` (its position among the
    selected variables) holds row (``label_source[j]``, ``label_ordinal[j]``) in result
    ``owner[j]``. The end row fixes the partition key, so the key needs no part of its own. The
    labels are combined by a sum of mixed values, which does not depend on their order; each
    part goes through a different function so that no two parts cancel out. Vectorized: a
    Python hash per result would cost more than finding the result.
    """
    labels = np.zeros(len(start_source), np.uint64)
    if len(owner):
        np.add.at(labels, np.asarray(owner, np.int64), _label_hash(_row(label_source, label_ordinal), var_index))
    return _combine(_row(start_source, start_ordinal), _row(end_source, end_ordinal), labels)


with np.errstate(over="ignore"):  # each variable position's salt (label bits fit 63 variables)
    _VARIABLE_SALTS = _mix((np.arange(64, dtype=np.uint64) + np.uint64(1)) * _SALT)


def _label_hash(row_hash: np.ndarray, var_index) -> np.ndarray:
    """One label entry's part of match_id: its row's hash and its variable's position."""
    return _mix(row_hash ^ _VARIABLE_SALTS[np.asarray(var_index, np.int64)])


def _combine(start_hash: np.ndarray, end_hash: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """match_id from the hashes of the interval's end rows and the sum of the label parts."""
    with np.errstate(over="ignore"):
        h = _mix(start_hash * np.uint64(3) + _mix(end_hash + _SALT))
        h = _mix(h + labels * np.uint64(5) + _GOLDEN)
    return (h >> np.uint64(1)).astype(np.int64)


def sort_key(value):
    """Order as Spark does ascending: NULLs first, NaN after every number; values of one
    column stay comparable."""
    if value is None:
        return (0, 0)
    if isinstance(value, float) and value != value:
        return (2, 0)
    return (1, value)


def build(plan, rows: pa.Table, results: ResultRows, order: bool = False, limit: int | None = None) -> pa.Table:
    """The result table of ``results`` over ``rows`` (see module docstring). ``order``: sort
    by (partition key, match_end, match_start, match_id) as LIMIT wants (it also makes the
    local output stable); ``limit``: then keep the first n."""
    if len(results.end_row) == 0:
        return schema(plan, rows.schema).empty_table()
    end_row, start_row, owner, entry_row, entry_mask = results
    # only the rows results show, as one chunk: work on all of ``rows`` would grow with them
    used, renumber = used_rows(rows.num_rows, end_row, start_row, entry_row)
    rows = take_rows(rows, used)
    end_row, start_row, entry_row = (renumber(x) for x in (end_row, start_row, entry_row))
    bit_of = label_bits(plan.automaton.labels)
    ids = _ids(rows, bit_of, end_row, start_row, owner, entry_row, entry_mask)
    order_col = rows.column(plan.order_columns[0])
    if order:
        perm = _limit_order(plan, rows, order_col, end_row, start_row, ids, limit)
        end_row, start_row, ids = end_row[perm], start_row[perm], ids[perm]
        new_index = np.full(len(results.end_row), -1, np.int64)
        new_index[perm] = np.arange(len(perm))
        owner = new_index[owner]  # -1: a result LIMIT drops
    n = len(end_row)
    columns = {name: rows.column(c).take(end_row)
               for c, name in zip(plan.partition_columns, plan.partition_result_names)}
    columns["match_id"] = pa.array(ids, pa.int64())
    columns["match_start"] = order_col.take(start_row)
    columns["match_end"] = order_col.take(end_row)
    events = _Events(n, owner, entry_row, entry_mask, bit_of)
    for o in plan.outputs:
        if o.var is None:
            columns[o.name] = _expression(o, rows, events, columns)
        elif o.many:  # each result's events in stream order
            offsets, at = events.of(o.var)
            columns[o.name] = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), _structs(rows, o, plan, at))
        else:  # at most one event per result: one take, NULL where unbound
            at, missing = events.one(o.var)
            structs = _structs(rows, o, plan, at)  # row 0 exists: n > 0
            columns[o.name] = pa.StructArray.from_arrays(structs.flatten(), fields=list(structs.type),
                                                         mask=pa.array(missing))
    return pa.Table.from_arrays([_one_chunk(c) for c in columns.values()], names=list(columns))


def _one_chunk(column):
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _structs(rows: pa.Table, o, plan, at: np.ndarray) -> pa.StructArray:
    """The variable's shown columns at rows ``at``, as structs."""
    cols = list(o.columns or plan.columns)
    taken = rows.select(cols).take(at)
    return pa.StructArray.from_arrays([_one_chunk(taken.column(c)) for c in cols],
                                      fields=[rows.schema.field(c) for c in cols])


def _limit_order(plan, rows, order_col, end_row, start_row, ids, limit) -> np.ndarray:
    """The results' order by LIMIT's rule (docs/language.md, "LIMIT"), its first ``limit`` when given."""
    from cerql.exec.stream import spark_sort_indices

    keys = {c: rows.column(c).take(end_row) for c in plan.partition_columns}
    keys.update({"__end": order_col.take(end_row), "__start": order_col.take(start_row), "__id": pa.array(ids)})
    perm = spark_sort_indices(pa.table(keys), list(keys)).to_numpy()
    return perm if limit is None else perm[:limit]


class _Events:
    """Each result's events of each variable, from the label entries (one compiled pass:
    :func:`cerql.exec.kernel.gather.by_variable`)."""

    def __init__(self, n, owner, entry_row, entry_mask, bit_of):
        self.n = n
        self.index = {var: k for k, var in enumerate(bit_of)}
        bits = np.fromiter(bit_of.values(), np.int64, len(bit_of))
        self.offsets, self.rows = gather.by_variable(n, owner, entry_row, entry_mask, bits)

    def of(self, var: str) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, rows): result r's events are ``rows[offsets[r]:offsets[r + 1]]``, in
        stream order."""
        offsets = self.offsets[self.index[var]]
        return offsets - offsets[0], self.rows[offsets[0]:offsets[-1]]

    def one(self, var: str) -> tuple[np.ndarray, np.ndarray]:
        """(row, missing): each result's first event of the variable (row 0 when it has none)."""
        offsets, at = self.of(var)
        missing = offsets[1:] == offsets[:-1]
        if not missing.any():
            return at[offsets[:-1]], missing
        first = np.zeros(self.n, np.int64)
        first[~missing] = at[offsets[:-1][~missing]]
        return first, missing


def _expression(o, rows: pa.Table, events: _Events, results: dict) -> pa.Array:
    """A SELECT expression's value per result: the compiled expression over a table with a
    ``var.col`` column (the variable's first event, NULL when unbound), a ``__agg<k>`` column
    per aggregate (cerql.exec.aggregate.grouped), and the result columns it names bare
    (``match_start``, a PARTITION BY column) from ``results``."""
    values = {name: results[name] for name in o.expr_results}
    for var, col in o.expr_columns:
        at, missing = events.one(var)
        values[f"{var}.{col}"] = rows.column(col).take(pa.array(at, mask=missing))
    for k, agg in enumerate(o.aggregates):
        offsets, at = events.of(agg.var)
        column = None if agg.column is None else _one_chunk(rows.column(agg.column).take(at))
        values[f"{AGGREGATE_COLUMN}{k}"] = aggregate.grouped(agg.kind, offsets, column, agg.type)
    table = pa.table(values) if values else pa.table({"_": pa.nulls(events.n)})
    value = evaluate(o.expr, table)
    if o.expr_type is not None and not pa.types.is_null(o.expr_type) and value.type != o.expr_type:
        value = pc.cast(value, o.expr_type)
    return value


def _ids(rows, bit_of, end_row, start_row, owner, entry_row, entry_mask) -> np.ndarray:
    """match ids (:func:`match_ids`, the same values): each row results show is hashed once,
    and each entry's parts for the variables marked on it are summed per result in one
    compiled pass (:func:`cerql.exec.kernel.gather.label_sums`), whatever the entries' order."""
    src = (rows.column(SOURCE_COLUMN).to_numpy() if SOURCE_COLUMN in rows.column_names
           else np.zeros(rows.num_rows, np.int64))  # a Spark task with one source has no source column
    ordinal = rows.column(ORDINAL_COLUMN).to_numpy()
    row_hash = _row(src, ordinal)  # per row of ``rows``: only the rows results show
    bits = np.fromiter(bit_of.values(), np.int64, len(bit_of))
    labels = gather.label_sums(len(end_row), np.asarray(owner, np.int64), np.asarray(entry_row, np.int64),
                               np.asarray(entry_mask, np.int64), bits, _VARIABLE_SALTS[:len(bits)], row_hash)
    return _combine(row_hash[start_row], row_hash[end_row], labels)


def schema(plan, rows: pa.Schema) -> pa.Schema:
    """The result schema for rows of schema ``rows``."""
    fields = [rows.field(c).with_name(name) for c, name in zip(plan.partition_columns, plan.partition_result_names)]
    order = rows.field(plan.order_columns[0]).type
    fields += [pa.field("match_id", pa.int64()), pa.field("match_start", order), pa.field("match_end", order)]
    for o in plan.outputs:
        if o.var is None:
            fields.append(pa.field(o.name, o.expr_type or pa.null()))
            continue
        struct = pa.struct([rows.field(c) for c in (o.columns or plan.columns)])
        fields.append(pa.field(o.name, pa.list_(struct) if o.many else struct))
    return pa.schema(fields)


# -- pandas
_NULLABLE = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
             pa.int64(): pd.Int64Dtype(), pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
             pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(), pa.float32(): pd.Float32Dtype(),
             pa.float64(): pd.Float64Dtype(), pa.bool_(): pd.BooleanDtype()}


def readable(value) -> str:
    """One nested cell as text: dicts and lists as Python writes them, but timestamps, dates,
    times, durations and decimals as they read (``2026-11-23 10:00:02``, not
    ``Timestamp('2026-11-23 10:00:02')`` nor pyarrow's nanosecond integer)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {readable(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(readable(v) for v in value) + "]"
    if isinstance(value, tuple):  # a map's (key, value) pairs
        return "(" + ", ".join(readable(v) for v in value) + ")"
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta, decimal.Decimal)):
        return str(value)  # pd.Timestamp and pd.Timedelta are datetime and timedelta
    return repr(value)


class NestedArray(pd.arrays.ArrowExtensionArray):
    """A result column of structs or lists (a variable, a ``collect_list``), as pandas'
    Arrow-backed array, with its cells as Python values where pandas asks for NumPy objects.

    pandas converts a nested Arrow column to NumPy with pyarrow, which gives a timestamp[ns]
    inside a struct as an integer and a list as a NumPy array: the frame's repr showed
    ``{'ts': 1795424430000000000, ...}`` and ``astype(str)`` raised "setting an array element
    with a sequence". Here ``to_numpy`` (so ``.values``, ``astype(object)``, ``iterrows``, the
    repr) gives each cell as ``df["b"][0]`` does: dicts, lists of dicts, ``pd.Timestamp``; the
    repr and ``astype(str)`` show them with :func:`readable`. Everything else (``.struct``,
    ``.list``, Arrow round trips) is pandas' own."""

    def __init__(self, values) -> None:
        super().__init__(values)
        self._dtype = NestedDtype(self._pa_array.type)

    def to_numpy(self, dtype=None, copy: bool = False, na_value=lib.no_default) -> np.ndarray:
        text = dtype is not None and np.dtype(dtype).kind == "U"
        if dtype is not None and not text and np.dtype(dtype) != np.dtype(object):
            return super().to_numpy(dtype=dtype, copy=copy, na_value=na_value)
        missing = self.dtype.na_value if na_value is lib.no_default else na_value
        cells = (missing if v is None else v for v in self._pa_array.to_pylist())
        if text:
            return np.array([str(v) if v is missing else readable(v) for v in cells], dtype=dtype)
        return np.fromiter(cells, dtype=object, count=len(self))  # a list stays one cell

    def astype(self, dtype, copy: bool = True):
        dtype = pd.api.types.pandas_dtype(dtype)
        if isinstance(dtype, np.dtype) and dtype.kind == "U":  # NumPy would convert the objects itself
            return self.to_numpy(dtype=dtype)
        if isinstance(dtype, pd.StringDtype):  # NULL stays NULL
            cells = self.to_numpy(dtype=object)
            return pd.array([v if v is pd.NA else readable(v) for v in cells], dtype=dtype)
        return super().astype(dtype, copy=copy)

    def _formatter(self, boxed: bool = False):
        return readable if boxed else repr


class NestedDtype(pd.ArrowDtype):
    """``pd.ArrowDtype`` whose arrays are :class:`NestedArray`; equal to ``pd.ArrowDtype`` of
    the same Arrow type (either way round) and hashed alike."""

    def __eq__(self, other) -> bool:
        if isinstance(other, pd.ArrowDtype):
            return self.pyarrow_dtype == other.pyarrow_dtype
        return super().__eq__(other)

    __hash__ = pd.ArrowDtype.__hash__

    @classmethod
    def construct_array_type(cls):
        return NestedArray


def to_pandas(plan, table: pa.Table) -> pd.DataFrame:
    """The result as pandas: variables (structs, lists of structs) and any other nested value
    as ``pd.ArrowDtype`` (:class:`NestedDtype`), so ``df["b"].struct.field("price")`` and
    ``df["b"].list.len()`` work without a Python object per cell, and the frame's repr,
    ``to_string()`` and ``astype(str)`` show timestamps inside them as timestamps
    (:class:`NestedArray`); expressions' numbers and booleans as pandas' nullable dtypes, so
    NULL (pd.NA) stays apart from NaN; the other columns as Arrow converts them."""
    expressions = {o.name for o in plan.outputs if o.var is None}

    def dtype(name: str, arrow_type: pa.DataType):
        if pa.types.is_nested(arrow_type):
            return NestedDtype(arrow_type)
        return _NULLABLE.get(arrow_type) if name in expressions else None

    frame = {}
    for name, column in zip(table.column_names, table.columns):
        frame[name] = column.to_pandas(types_mapper=lambda t, name=name: dtype(name, t))
    return pd.DataFrame(frame, columns=table.column_names)


# -- taking rows
def take_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table.take(rows)`` as one chunk, for sorted ``rows``, touching only the record batches
    that hold them: Arrow's take on a table of many chunks costs time in the number of chunks,
    and the rows a Spark task keeps across batches (a whole substream without WITHIN) are many
    chunks."""
    batches = table.to_batches()
    if len(batches) <= 1:
        return table.take(rows).combine_chunks()
    bounds = np.cumsum([0] + [b.num_rows for b in batches])
    which = np.searchsorted(bounds, rows, side="right") - 1
    cuts = np.flatnonzero(np.diff(which)) + 1
    parts = [batches[w[0]].take(pa.array(g - bounds[w[0]]))
             for g, w in zip(np.split(rows, cuts), np.split(which, cuts)) if len(g)]
    if not parts:
        return table.schema.empty_table()
    return pa.Table.from_batches(parts, schema=table.schema).combine_chunks()


def used_rows(n: int, *indexes: np.ndarray):
    """The sorted distinct rows among ``indexes`` (rows of a table of ``n`` rows) and a function
    renumbering rows into positions among them. A mask over the table when it is not much
    larger than the indexes (no sort), else ``np.unique`` and a binary search."""
    everything = np.concatenate(indexes)
    if n <= 8 * len(everything):
        mark = np.zeros(n, bool)
        mark[everything] = True
        position = np.cumsum(mark) - 1
        return np.flatnonzero(mark), lambda x: position[x]
    used = np.unique(everything)
    return used, lambda x: np.searchsorted(used, x)
