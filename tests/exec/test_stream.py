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


# ----------------------------------------------------------------- time-ordered input, by key
# A time-ordered table with PARTITION BY is sorted by the keys' ranks alone (a stable integer
# sort); the result must be the order of the full Arrow sort by (keys, ts, ordinal), whatever the
# key types, and the substreams must follow it.

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

KEY_VALUES = {
    "str": (pa.string(), st.sampled_from(["", "a", "B", "b", "é", "ß", "z", "𝔘", "a\x00"])),
    "int": (pa.int64(), st.integers(-3, 3)),
    "bool": (pa.bool_(), st.booleans()),
    "date": (pa.date32(), st.dates(min_value=pd.Timestamp("1999-12-30").date(),
                                   max_value=pd.Timestamp("2000-01-02").date())),
    "float": (pa.float64(), st.sampled_from([0.0, -0.0, 1.5, float("nan"), -2.0])),
}


@st.composite
def keyed_tables(draw):
    n = draw(st.integers(0, 40))
    kinds = draw(st.lists(st.sampled_from(sorted(KEY_VALUES)), min_size=1, max_size=2))
    columns = {"type": pa.array(draw(st.lists(st.sampled_from("AB"), min_size=n, max_size=n)))}
    for i, kind in enumerate(kinds):
        arrow_type, values = KEY_VALUES[kind]
        cells = draw(st.lists(st.one_of(st.none(), values) if draw(st.booleans()) else values,
                              min_size=n, max_size=n))
        columns[f"k{i}"] = pa.array(cells, arrow_type)
    steps = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    columns["ts"] = pa.array(np.cumsum(steps, dtype=np.int64))
    return pa.table(columns), [f"k{i}" for i in range(len(kinds))]


def spark_key(value):
    """Spark's ascending order: NULL first, NaN after every number, -0.0 equal to 0.0."""
    if value is None:
        return (0, 0)
    return (2, 0) if isinstance(value, float) and value != value else (1, value)


@settings(max_examples=300, deadline=None)
@given(keyed_tables())
def test_time_ordered_input_by_key_is_in_full_sort_order(case):
    table, keys = case
    text = f"SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [{', '.join(keys)}] ORDER BY ts"
    plan = resolve(cerql.analyze(text), {"s": table.schema})
    s = build_stream(plan, {"s": table})
    valid = table.append_column("__ord", pa.array(np.arange(table.num_rows)))
    for k in keys:
        valid = valid.filter(pa.compute.is_valid(valid.column(k)))
    ordered = sorted(valid.to_pylist(), key=lambda r: tuple(spark_key(r[c]) for c in keys + ["ts", "__ord"]))
    expected = [r["__ord"] for r in ordered]
    assert s.table.column("__cerql_ordinal").to_pylist() == expected
    rows = list(zip(*(s.table.column(k).to_pylist() for k in keys)))

    def same(a, b):  # one substream per key; NaN keys form one, 0.0 and -0.0 are equal
        return all(x == y or (x != x and y != y) for x, y in zip(a, b))

    for (start, end), key in zip(s.bounds, s.keys):
        assert all(same(r, key) for r in rows[start:end])
    assert sum(end - start for start, end in s.bounds) == len(rows)


# -- NaN in the order (issue 15 item 6): Spark SQL's order, NaN after every number
NAN = float("nan")


def test_nan_ordering_values_sort_last_as_in_spark():
    table = pa.table({"type": ["A", "B", "B"], "ts": [1.0, NAN, 2.0]})
    plan = resolve(cerql.analyze(QUERY), {"s": table.schema})
    assert build_stream(plan, {"s": table}).table.column("__cerql_ordinal").to_pylist() == [0, 2, 1]
    out = cerql.run(QUERY, {"s": table}, engine="local")  # B@NaN comes after A@1.0, so it matches
    assert [(r["a"]["ts"], str(r["b"]["ts"])) for r in out.to_dict("records")] == [(1.0, "2.0"), (1.0, "nan")]


def test_nan_partition_key_is_one_substream_taken_last_by_limit():
    text = "SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [k] ORDER BY ts LIMIT 1"
    table = pa.table({"type": ["A", "B", "A", "B"], "ts": [0, 1, 2, 3], "k": [NAN, -NAN, 1.0, 1.0]})
    out = cerql.run(text, {"s": table}, engine="local")
    assert [(r["k"], r["match_start"], r["match_end"]) for r in out.to_dict("records")] == [(1.0, 2, 3)]
    everything = cerql.run(text.replace(" LIMIT 1", ""), {"s": table}, engine="local")
    assert [r["match_start"] for r in everything.to_dict("records")] == [2, 0]  # NaN's match last


def test_negative_zero_partition_key_is_the_substream_of_zero():
    text = "SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [k] ORDER BY ts"
    table = pa.table({"type": ["A", "B"], "ts": [0, 1], "k": [-0.0, 0.0]})
    out = cerql.run(text, {"s": table}, engine="local")
    assert [(r["a"]["ts"], r["b"]["ts"]) for r in out.to_dict("records")] == [(0, 1)]
