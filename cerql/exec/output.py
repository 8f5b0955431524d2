"""Results as rows of the output schema (DESIGN.md section 5).

Input: a plan, the stream and the results of an engine. Output: a pandas DataFrame with the
PARTITION BY columns, ``match_id``, ``match_start``, ``match_end``, then one column per SELECT
item: a variable that holds at most one event is a dict (or None), any other variable is a list
of dicts in stream order, an expression is its value. ``match_id`` is a 63-bit hash of the
interval's end rows and the selected rows' identities (source position, row ordinal), so it is
the same for the same input whichever engine found the match. LIMIT takes the first n
results in (partition key, match_end, match_start, match_id) order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from cerql.exec import aggregate
from cerql.exec.stream import Stream
from cerql.exec.values import evaluate
from cerql.plan import AGGREGATE_COLUMN, ORDINAL_COLUMN, SOURCE_COLUMN, QueryPlan


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
    n = len(start_source)
    labels = np.zeros(n, np.uint64)
    with np.errstate(over="ignore"):
        if len(owner):
            var = _mix((np.asarray(var_index).astype(np.uint64) + np.uint64(1)) * _SALT)
            np.add.at(labels, np.asarray(owner, np.int64), _mix(_row(label_source, label_ordinal) ^ var))
        h = _mix(_row(start_source, start_ordinal) * np.uint64(3) + _mix(_row(end_source, end_ordinal) + _SALT))
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


def render(plan: QueryPlan, stream: Stream, results) -> pd.DataFrame:
    """Build the result DataFrame of a query from an engine's results."""
    table = stream.table
    rows = table.select(list(plan.columns)).to_pylist() if results else []
    src = table.column(SOURCE_COLUMN).to_pylist() if results else []
    ordinal = table.column(ORDINAL_COLUMN).to_pylist() if results else []
    order_values = table.column(plan.order_columns[0]).to_pylist() if results else []

    records = []
    var_index = {v: k for k, v in enumerate(dict.fromkeys(plan.selected))}  # the label bits' order
    ends = {"ss": [], "so": [], "es": [], "eo": []}
    labels = {"owner": [], "var": [], "src": [], "ord": []}
    for i, r in enumerate(results):
        lo = stream.bounds[r.substream][0]
        positions: dict[str, list[int]] = {}
        for var, p in sorted(r.labels, key=lambda l: l[1]):
            positions.setdefault(var, []).append(p)
            labels["owner"].append(i)
            labels["var"].append(var_index[var])
            labels["src"].append(src[lo + p])
            labels["ord"].append(ordinal[lo + p])
        for name, p in (("s", r.start), ("e", r.end)):
            ends[name + "s"].append(src[lo + p])
            ends[name + "o"].append(ordinal[lo + p])
        record = dict(zip(plan.partition_columns, stream.keys[r.substream]))
        record["match_start"] = order_values[lo + r.start]
        record["match_end"] = order_values[lo + r.end]
        record["__positions"] = (lo, positions)
        records.append(record)
    ids = match_ids(*(np.array(v, np.int64) for v in ends.values()),
                    *(np.array(v, np.int64) for v in labels.values()))
    for record, i in zip(records, ids.tolist()):
        record["match_id"] = i

    # LIMIT's order (DESIGN.md 4.6); without LIMIT it just makes the output stable
    records.sort(key=lambda rec: tuple(sort_key(rec[c]) for c in plan.partition_columns)
                 + (sort_key(rec["match_end"]), sort_key(rec["match_start"]), rec["match_id"]))
    if plan.limit is not None:
        records = records[: plan.limit]

    for rec in records:
        lo, positions = rec.pop("__positions")
        for out in plan.outputs:
            if out.var is not None:
                cols = out.columns or plan.columns
                events = [{c: rows[lo + p][c] for c in cols} for p in positions.get(out.var, [])]
                rec[out.name] = events if out.many else (events[0] if events else None)
            else:
                rec[out.name] = _expression(out, rows, lo, positions)

    names = list(plan.partition_columns) + ["match_id", "match_start", "match_end"] + [o.name for o in plan.outputs]
    frame = pd.DataFrame.from_records(records, columns=names)
    for out in plan.outputs:  # from the records: pandas' inference turns NULL into NaN
        if out.expr is not None and out.expr_type is not None and not pa.types.is_null(out.expr_type):
            values = pa.array([rec[out.name] for rec in records], out.expr_type)
            frame[out.name] = values.to_pandas(types_mapper=_nullable_dtype)
    return _typed(frame, plan, table)


def _expression(out, rows, lo, positions):
    values = {}
    for var, col in out.expr_columns:
        ps = positions.get(var, [])
        values[f"{var}.{col}"] = [rows[lo + ps[0]][col] if ps else None]
    for k, agg in enumerate(out.aggregates):
        events = positions.get(agg.var, [])
        column = None if agg.column is None else [rows[lo + p][agg.column] for p in events]
        values[f"{AGGREGATE_COLUMN}{k}"] = pa.array([aggregate.value(agg.kind, events, column)], agg.type)
    table = pa.table(values) if values else pa.table({"_": [None]})
    return evaluate(out.expr, table)[0].as_py()


_NULLABLE = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
             pa.int64(): pd.Int64Dtype(), pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
             pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(), pa.float32(): pd.Float32Dtype(),
             pa.float64(): pd.Float64Dtype(), pa.bool_(): pd.BooleanDtype()}


def _nullable_dtype(arrow_type: pa.DataType):
    """pandas' nullable dtype for numbers and booleans, so NULL (pd.NA) stays apart from NaN."""
    return _NULLABLE.get(arrow_type)


def _typed(frame: pd.DataFrame, plan: QueryPlan, table: pa.Table) -> pd.DataFrame:
    """Give the fixed columns their Arrow types, also when there are no results."""
    frame["match_id"] = frame["match_id"].astype("int64")
    order_type = table.schema.field(plan.order_columns[0]).type
    for col in ["match_start", "match_end"]:
        frame[col] = pa.array(frame[col].tolist(), type=order_type).to_pandas()
    for col in plan.partition_columns:
        frame[col] = pa.array(frame[col].tolist(), type=table.schema.field(col).type).to_pandas()
    return frame
