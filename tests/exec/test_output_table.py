"""cerql.run's result as Arrow (exec/output.py): the table with output="arrow", the DataFrame whose
variable columns are Arrow-backed, SELECT expressions and aggregates computed for all results
at once, with the same values as the per-result rules (cerql.exec.aggregate.value)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import cerql
from cerql.exec import aggregate
from cerql.planner.aggregates import result_type
from tests.generators import derandomized

STOCK = pd.DataFrame({
    "type": ["SELL", "BUY", "BUY", "SELL", "BUY", "SELL", "SELL", "BUY"],
    "name": ["MSFT", "MSFT", "INTC", "MSFT", "MSFT", "MSFT", "INTC", "INTC"],
    "price": [120.0, 101.0, 30.0, 99.0, None, 1500.0, 7.0, 8.0],
    "volume": pd.array([10, 20, 30, None, 50, 60, 70, 80], dtype="Int32"),
    "ts": list(range(8)),
})
QUERY = ("SELECT * FROM stock WHERE SELL AS s ; BUY+ AS b ; SELL AS e "
         "PARTITION BY [name] ORDER BY ts WITHIN 5 EVENTS")


def test_arrow_output_is_the_table_with_typed_columns():
    table = cerql.run(QUERY, {"stock": STOCK}, output="arrow")
    assert isinstance(table, pa.Table)
    row = pa.struct([("type", pa.string()), ("name", pa.string()), ("price", pa.float64()),
                     ("volume", pa.int32()), ("ts", pa.int64())])
    assert table.schema == pa.schema([("name", pa.string()), ("match_id", pa.int64()),
                                      ("match_start", pa.int64()), ("match_end", pa.int64()),
                                      ("s", row), ("b", pa.list_(row)), ("e", row)])
    got = sorted((r["match_start"], r["match_end"], [b["ts"] for b in r["b"]]) for r in table.to_pylist())
    # MSFT: SELL ts 0, BUY 1, SELL 3, BUY 4 (price NULL), SELL 5; INTC has no SELL before a BUY and a SELL
    assert got == [(0, 3, [1]), (0, 5, [1]), (0, 5, [1, 4]), (0, 5, [4]), (3, 5, [4])]
    assert table.column("b").to_pylist()[-1] == [{"type": "BUY", "name": "MSFT", "price": None, "volume": 50, "ts": 4}]


def test_pandas_output_reads_structs_and_lists_without_python_objects():
    df = cerql.run(QUERY, {"stock": STOCK})
    assert isinstance(df["s"].dtype, pd.ArrowDtype) and isinstance(df["b"].dtype, pd.ArrowDtype)
    assert df["s"].struct.field("price").tolist() == [120.0] * 4 + [99.0]  # in LIMIT's order
    assert df["b"].list.len().tolist()[0] == 1 and sorted(df["b"].list.len()) == [1, 1, 1, 1, 2]
    assert df["e"].struct.field("ts").tolist() == [3, 5, 5, 5, 5]
    # a NULL inside a struct stays NULL, not NaN
    prices = df["b"].list.flatten().struct.field("price")
    assert prices.isna().sum() == 3 and sorted(prices.dropna().tolist()) == [101.0] * 3
    assert df["name"].dtype == object and df["match_id"].dtype == np.int64


def test_pandas_and_arrow_outputs_hold_the_same_rows():
    df = cerql.run(QUERY, {"stock": STOCK})
    table = cerql.run(QUERY, {"stock": STOCK}, output="arrow")
    assert pa.Table.from_pandas(df, preserve_index=False).to_pylist() == table.to_pylist()


def test_limit_keeps_its_order_and_expressions_their_types():
    text = ("SELECT s.price AS p, sum(b.volume) AS v, count(b) AS n, avg(b.price) AS a, "
            "collect_list(b.price) AS prices FROM stock WHERE SELL AS s ; BUY+ AS b "
            "PARTITION BY [name] ORDER BY ts WITHIN 4 EVENTS LIMIT 3")
    table = cerql.run(text, {"stock": STOCK}, output="arrow")
    assert table.schema.field("v").type == pa.int64() and table.schema.field("a").type == pa.float64()
    assert table.schema.field("prices").type == pa.list_(pa.float64())
    rows = [(r["name"], r["match_end"], r["match_start"]) for r in table.to_pylist()]
    assert rows == sorted(rows) and len(rows) == 3 and rows[0][0] == "INTC"
    df = cerql.run(text, {"stock": STOCK})
    assert str(df["v"].dtype) == "Int64" and str(df["p"].dtype) == "Float64"
    # INTC: SELL at ts 6, BUY at 7; MSFT: the BUY at ts 1 ends one result, the BUY at ts 4 (price
    # NULL) three (s at ts 0 with b {4} or {1, 4}, s at ts 3 with b {4}): LIMIT takes two by
    # match_end, match_start, match_id
    assert df[["p", "v", "n", "a"]].iloc[0].tolist() == [7.0, 80, 1, 8.0] and list(df["prices"][0]) == [8.0]
    assert df[["match_start", "match_end", "p", "v", "n", "a"]].iloc[1].tolist() == [0, 1, 120.0, 20, 1, 101.0]
    assert df[["match_start", "match_end"]].iloc[2].tolist() == [0, 4]
    assert (df["v"][2], df["n"][2], df["a"][2]) in ((50, 1, pd.NA), (70, 2, 101.0))
    assert list(df["prices"][2]) == ([] if df["n"][2] == 1 else [101.0])


def test_unknown_output_is_a_ceql_error():
    with pytest.raises(cerql.CeqlError, match="Unknown output 'polars'") as err:
        cerql.run(QUERY, {"stock": STOCK}, output="polars")
    assert err.value.error_class == "UNKNOWN_OUTPUT"


def test_no_results_keep_the_schema():
    table = cerql.run("SELECT s, count(s) AS n FROM stock WHERE SELL AS s FILTER s[price > 1e9] ORDER BY ts",
                      {"stock": STOCK}, output="arrow")
    assert table.num_rows == 0
    assert table.schema.names == ["match_id", "match_start", "match_end", "s", "n"]
    assert table.schema.field("n").type == pa.int64()


# ------------------------------------------------------------------ aggregates for all results at once
VALUES = {
    pa.int64(): st.one_of(st.none(), st.integers(-5, 5), st.sampled_from([2**62, -2**62, 2**63 - 1])),
    pa.int32(): st.one_of(st.none(), st.integers(-5, 5)),
    pa.float64(): st.one_of(st.none(), st.floats(-3, 3), st.sampled_from([math.nan, 0.0, -0.0, math.inf])),
    pa.float32(): st.one_of(st.none(), st.sampled_from([1.5, -2.25, math.nan, 0.0])),
    pa.string(): st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b", "é"])),
    pa.bool_(): st.one_of(st.none(), st.booleans()),
}
KINDS = ["count", "sum", "avg", "min", "max", "first", "last", "collect_list"]


@st.composite
def groups(draw):
    arrow_type = draw(st.sampled_from(list(VALUES)))
    kind = draw(st.sampled_from(KINDS))
    if kind in ("sum", "avg"):
        arrow_type = draw(st.sampled_from([pa.int64(), pa.int32(), pa.float64(), pa.float32()]))
    values = draw(st.lists(st.lists(VALUES[arrow_type], max_size=5), max_size=6))
    return kind, arrow_type, values


def _outcome(fn):
    try:
        return "ok", fn()
    except cerql.CeqlError as err:
        return "error", err.error_class


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b)


@derandomized(400)
@given(groups())
@example(("sum", pa.int64(), [[1], [2**62, 2**62]]))
@example(("sum", pa.int64(), [[-2**62, -2**62, -1]]))
@example(("sum", pa.int64(), [[2**63 - 1, -5, 5], [-2**62, -2**62]]))
@example(("avg", pa.float64(), [[-0.0], [], [None, -0.0, 0.0]]))
def test_grouped_aggregates_equal_the_per_result_rules(case):
    kind, arrow_type, values = case
    flat = pa.array([v for g in values for v in g], arrow_type)
    offsets = np.cumsum([0] + [len(g) for g in values])
    typed = flat.to_pylist()  # the values as the column holds them (float32 rounded)
    out_type = result_type(kind, arrow_type)

    def one_by_one():
        return pa.array([aggregate.value(kind, list(range(lo, hi)), typed[lo:hi])
                         for lo, hi in zip(offsets[:-1], offsets[1:])], out_type).to_pylist()

    expected = _outcome(one_by_one)
    got = _outcome(lambda: aggregate.grouped(kind, offsets, flat, out_type).to_pylist())
    assert got[0] == expected[0]
    assert _same(got[1], expected[1]), (got, expected)


def test_grouped_count_of_events_and_overflow_message():
    assert aggregate.grouped("count", np.array([0, 2, 2, 5]), None, pa.int64()).to_pylist() == [2, 0, 3]
    with pytest.raises(cerql.CeqlError, match=r"after adding 4611686018427387904 \(total 9223372036854775808\)"):
        aggregate.grouped("sum", np.array([0, 1, 3]), pa.array([1, 2**62, 2**62]), pa.int64())


@pytest.mark.parametrize("layout", ["kernel", "ascending", "shuffled"])
def test_entries_are_gathered_per_variable_in_result_and_stream_order(layout):
    """gather.by_variable: variable k's events of result r, in stream order, whatever order the
    entries come in (the kernel's is last event first); an owner of -1 (a result LIMIT drops)
    is left out."""
    from cerql.exec.kernel.gather import by_variable

    rng = np.random.default_rng(3)
    owner = np.repeat(np.arange(50), rng.integers(1, 6, 50))
    row = np.concatenate([np.sort(rng.choice(100, (owner == r).sum(), replace=False)) for r in range(50)])
    mask = rng.integers(1, 8, len(owner)) << 1  # any of three variables' bits
    owner = np.where(rng.random(len(owner)) < 0.1, -1, owner)
    if layout == "kernel":  # each result's entries last event first
        order = np.lexsort((-row, owner))
    elif layout == "ascending":
        order = np.arange(len(owner))
    else:
        order = rng.permutation(len(owner))
    owner, row, mask = owner[order], row[order], mask[order]
    bits = np.array([2, 4, 8], np.int64)
    offsets, rows = by_variable(50, owner, row, mask, bits)
    for k, bit in enumerate(bits):
        for r in range(50):
            want = sorted(row[(owner == r) & ((mask & bit) != 0)].tolist())
            assert rows[offsets[k, r]:offsets[k, r + 1]].tolist() == want
