"""Results as rows of the output schema (DESIGN.md section 5).

Input: a plan, the stream and the results of an engine. Output: a pandas DataFrame with the
PARTITION BY columns, ``match_id``, ``match_start``, ``match_end``, then one column per SELECT
item: a variable that holds at most one event is a dict (or None), any other variable is a list
of dicts in stream order, an expression is its value. ``match_id`` is a 63-bit hash of the
partition key, the interval and the selected rows' identities (source position, row ordinal), so
it is the same for the same input whichever engine found the match. LIMIT takes the first n
results in (partition key, match_end, match_start, match_id) order.
"""

from __future__ import annotations

import hashlib
from typing import Iterable

import pandas as pd
import pyarrow as pa

from cerql.exec.stream import Stream
from cerql.exec.values import evaluate
from cerql.plan import ORDINAL_COLUMN, SOURCE_COLUMN, QueryPlan


def match_id(key: tuple, start_row: tuple, end_row: tuple, labels: Iterable[tuple]) -> int:
    """Deterministic id of one result from what identifies it, independent of the engine."""
    text = repr((key, start_row, end_row, sorted(labels)))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1


def _sort_key(value):
    """Order NULLs first and keep values of one column comparable."""
    return (value is not None, value)


def render(plan: QueryPlan, stream: Stream, results) -> pd.DataFrame:
    """Build the result DataFrame of a query from an engine's results."""
    table = stream.table
    rows = table.select(list(plan.columns)).to_pylist() if results else []
    src = table.column(SOURCE_COLUMN).to_pylist() if results else []
    ordinal = table.column(ORDINAL_COLUMN).to_pylist() if results else []
    order_values = table.column(plan.order_columns[0]).to_pylist() if results else []

    records = []
    for r in results:
        lo = stream.bounds[r.substream][0]
        key = stream.keys[r.substream]
        ident = lambda p: (src[lo + p], ordinal[lo + p])  # noqa: E731
        positions: dict[str, list[int]] = {}
        for var, p in sorted(r.labels, key=lambda l: l[1]):
            positions.setdefault(var, []).append(p)
        record = dict(zip(plan.partition_columns, key))
        record["match_id"] = match_id(key, ident(r.start), ident(r.end),
                                      [(v, ident(p)) for v, p in r.labels])
        record["match_start"] = order_values[lo + r.start]
        record["match_end"] = order_values[lo + r.end]
        record["__positions"] = (lo, positions)
        records.append(record)

    # LIMIT's order (DESIGN.md 4.6); without LIMIT it just makes the output stable
    records.sort(key=lambda rec: tuple(_sort_key(rec[c]) for c in plan.partition_columns)
                 + (_sort_key(rec["match_end"]), _sort_key(rec["match_start"]), rec["match_id"]))
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
    return _typed(frame, plan, table)


def _expression(out, rows, lo, positions):
    values = {}
    for var, col in out.expr_columns:
        ps = positions.get(var, [])
        values[f"{var}.{col}"] = [rows[lo + ps[0]][col] if ps else None]
    table = pa.table(values) if values else pa.table({"_": [None]})
    return evaluate(out.expr, table)[0].as_py()


def _typed(frame: pd.DataFrame, plan: QueryPlan, table: pa.Table) -> pd.DataFrame:
    """Give the fixed columns their Arrow types, also when there are no results."""
    frame["match_id"] = frame["match_id"].astype("int64")
    order_type = table.schema.field(plan.order_columns[0]).type
    for col in ["match_start", "match_end"]:
        frame[col] = pa.array(frame[col].tolist(), type=order_type).to_pandas()
    for col in plan.partition_columns:
        frame[col] = pa.array(frame[col].tolist(), type=table.schema.field(col).type).to_pandas()
    return frame
