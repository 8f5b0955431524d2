"""The stream layout (exec/stream.py): row order, removed rows, and the shortcuts that skip work
on input that is already in evaluation order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

import cerql
from cerql.exec.stream import build_stream
from cerql.planner.resolve import resolve


def stream_of(text: str, df: pd.DataFrame):
    table = pa.Table.from_pandas(df, preserve_index=False)
    plan = resolve(cerql.analyze(text), {"s": table.schema})
    return build_stream(plan, {"s": table})


QUERY = "SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts"


def test_ordered_input_keeps_its_rows_in_place_ties_included():
    df = pd.DataFrame({"type": list("ABAB"), "ts": [1, 1, 2, 2]})
    s = stream_of(QUERY, df)
    assert s.table.column("type").to_pylist() == list("ABAB")
    assert s.table.column("__cerql_ordinal").to_pylist() == [0, 1, 2, 3]


def test_unordered_input_is_sorted_stably():
    df = pd.DataFrame({"type": list("ABAB"), "ts": [2, 1, 1, 0]})
    s = stream_of(QUERY, df)
    assert s.table.column("__cerql_ordinal").to_pylist() == [3, 1, 2, 0]


def test_unordered_timestamps_are_sorted():
    ts = pd.to_datetime(["2026-01-01 00:00:02", "2026-01-01 00:00:01", "2026-01-01 00:00:03"])
    s = stream_of("SELECT * FROM s WHERE A AS a ; B AS b", pd.DataFrame({"type": list("ABA"), "ts": ts}))
    assert s.table.column("__cerql_ordinal").to_pylist() == [1, 0, 2]


def test_rows_with_null_order_values_are_removed_only_when_present():
    df = pd.DataFrame({"type": list("ABAB"), "ts": [0.0, np.nan, 2.0, 3.0]})
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.set_column(1, "ts", pa.array([0.0, None, 2.0, 3.0]))
    plan = resolve(cerql.analyze(QUERY), {"s": table.schema})
    s = build_stream(plan, {"s": table})
    assert s.table.column("__cerql_ordinal").to_pylist() == [0, 2, 3]
