"""sum and avg over DECIMAL columns (issue 17 item 3; docs/semantics.md "Decimal aggregates").

Spark 4 with ANSI on, checked by hand in a SparkSession: sum(DECIMAL(p, s)) is
DECIMAL(min(38, p + 10), s); avg(DECIMAL(p, s)) is DECIMAL(min(38, p + 4), min(38, s + 4)),
the exact sum over the count rounded half away from zero (avg of 2, 0, 0 as DECIMAL(5,0) is
0.6667, of -2, 0, 0 is -0.6667); a sum past 38 digits is ARITHMETIC_OVERFLOW, an average its
type cannot hold (avg of 1, 1 as DECIMAL(38,36), typed DECIMAL(38,38)) NUMERIC_VALUE_OUT_OF_RANGE.
Values are exact: no float on the way. Positions = ts.
"""

from __future__ import annotations

from decimal import Context
from decimal import Decimal as D

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cerql
from cerql.errors import ExecutionError
from cerql.exec import aggregate
from cerql.planner import aggregates
from tests.support import ENGINES, plan_of

AMOUNT = pa.decimal128(10, 2)
EXACT = Context(prec=100)  # the default 28 digits would round 38-digit values


def stream(spec: str, amounts, amount_type=AMOUNT) -> pd.DataFrame:
    types = spec.split()
    return pd.DataFrame({"type": types, "ts": list(range(len(types))),
                         "amount": pd.Series(pd.array(amounts, dtype=pd.ArrowDtype(amount_type)))})


def run(query: str, frame: pd.DataFrame, engine: str, output="pandas"):
    return cerql.run(query, {"s": frame}, engine=engine, output=output)


def test_result_types_are_sparks():
    assert aggregates.result_type("sum", pa.decimal128(5, 2)) == pa.decimal128(15, 2)
    assert aggregates.result_type("avg", pa.decimal128(5, 2)) == pa.decimal128(9, 6)
    assert aggregates.result_type("sum", pa.decimal128(36, 2)) == pa.decimal128(38, 2)
    assert aggregates.result_type("avg", pa.decimal128(38, 36)) == pa.decimal128(38, 38)
    assert aggregates.result_type("min", AMOUNT) == AMOUNT
    assert aggregates.accepts("sum", AMOUNT) and aggregates.accepts("avg", AMOUNT)
    assert not aggregates.accepts("sum", pa.decimal256(40, 2))


@pytest.mark.parametrize("engine", ENGINES)
def test_select_sum_and_avg_of_a_kleene_variable(engine):
    # A B(1.25) B(NULL) B(2.50) B(0.01), WITHIN 4 EVENTS: b is any non-empty subset of {1, 2, 3, 4}
    query = ("SELECT sum(b.amount) AS total, avg(b.amount) AS mean, collect_list(b.ts) AS at FROM s "
             "WHERE A AS a ; B+ AS b ORDER BY ts WITHIN 4 EVENTS")
    out = run(query, stream("A B B B B", [None, D("1.25"), None, D("2.50"), D("0.01")]), engine)
    got = {tuple(r.at): (r.total, r.mean) for r in out.itertuples()}
    assert len(got) == 15
    # all four: 1.25 + 2.50 + 0.01 = 3.76 over 3 values = 1.25333... -> 1.253333 (scale 2 + 4)
    total, mean = got[(1, 2, 3, 4)]
    assert (total, mean) == (D("3.76"), D("1.253333")) and str(total) == "3.76" and str(mean) == "1.253333"
    # b = {2}: only NULL -> NULL, NULL
    assert all(v is None or v is pd.NA for v in got[(2,)])
    # b = {1, 4}: 1.25 + 0.01 = 1.26, avg 0.63; b = {3, 4}: 2.51, 1.255 exactly
    assert got[(1, 4)] == (D("1.26"), D("0.630000")) and got[(3, 4)] == (D("2.51"), D("1.255000"))


@pytest.mark.parametrize("engine", ENGINES)
def test_output_types_keep_the_decimals(engine):
    query = "SELECT sum(b.amount) AS total, avg(b.amount) AS mean FROM s WHERE A AS a ; B+ AS b ORDER BY ts"
    table = run(query, stream("A B B", [None, D("0.10"), D("0.20")]), engine, output="arrow")
    assert table.schema.field("total").type == pa.decimal128(20, 2)
    assert table.schema.field("mean").type == pa.decimal128(14, 6)
    assert sorted(table.column("total").to_pylist()) == [D("0.10"), D("0.20"), D("0.30")]
    assert D("0.150000") in table.column("mean").to_pylist()  # 0.30 / 2, no float's 0.15000000000000002


@pytest.mark.parametrize("engine", ENGINES)
def test_avg_rounds_half_up_away_from_zero(engine):
    query = "SELECT avg(b.amount) AS mean FROM s WHERE A AS a ; (B ; B ; B) AS b ORDER BY ts"
    typ = pa.decimal128(5, 0)
    up = run(query, stream("A B B B", [None, D(2), D(0), D(0)], typ), engine, output="arrow")
    down = run(query, stream("A B B B", [None, D(-2), D(0), D(0)], typ), engine, output="arrow")
    assert up.column("mean").to_pylist() == [D("0.6667")] and up.schema.field("mean").type == pa.decimal128(9, 4)
    assert down.column("mean").to_pylist() == [D("-0.6667")]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unbound_variable_aggregates_to_null(engine):
    # (A AS a OR B AS b) ; C: the B branch leaves a without events
    query = ("SELECT sum(a.amount) AS total, avg(a.amount) AS mean, count(b) AS nb FROM s "
             "WHERE (A AS a OR B AS b) ; C ORDER BY ts")
    out = run(query, stream("A B C", [D("1.00"), D("2.00"), D("3.00")]), engine, output="arrow")
    got = sorted(zip(out.column("nb").to_pylist(), out.column("total").to_pylist(), out.column("mean").to_pylist()))
    assert got == [(0, D("1.00"), D("1.000000")), (1, None, None)]
    assert out.schema.field("total").type == pa.decimal128(20, 2)


@pytest.mark.parametrize("engine", ENGINES)
def test_filter_sum_against_a_decimal_literal(engine):
    # b = subsets of B(6.00) B(4.50) B(0.01) after A: sums 6.00, 4.50, 0.01, 10.50, 6.01, 4.51, 10.51
    query = ("SELECT sum(b.amount) AS total FROM s WHERE A AS a ; B+ AS b "
             "FILTER sum(b.amount) > 10.5 ORDER BY ts")
    frame = stream("A B B B", [None, D("6.00"), D("4.50"), D("0.01")])
    assert run(query, frame, engine)["total"].tolist() == [D("10.51")]
    query_ge = query.replace("> 10.5", ">= 10.50")
    assert sorted(run(query_ge, frame, engine)["total"].tolist()) == [D("10.50"), D("10.51")]


@pytest.mark.parametrize("engine", ENGINES)
def test_filter_avg_across_variables(engine):
    # a.amount 2.00; b subsets of 1.00, 3.00, 2.50: avg(b) > a.amount for {3.00}, {2.50}, {3.00, 2.50},
    # {1.00, 3.00, 2.50} (6.50 / 3 = 2.1667); not for {1.00, 3.00} (2.00, equal) nor {1.00, 2.50} (1.75)
    query = ("SELECT avg(b.amount) AS mean FROM s WHERE A AS a ; B+ AS b "
             "FILTER avg(b.amount) > a.amount ORDER BY ts")
    out = run(query, stream("A B B B", [D("2.00"), D("1.00"), D("3.00"), D("2.50")]), engine)
    assert sorted(out["mean"].tolist()) == [D("2.166667"), D("2.500000"), D("2.750000"), D("3.000000")]


def test_decimal_aggregates_in_filter_stay_out_of_the_kernels_registers():
    """The kernel's registers add int64 or float64; a decimal sum is checked by the post-filter."""
    frame = stream("A B", [D("1.00"), D("2.00")])
    for predicate in ("sum(b.amount) > 10.5", "sum(b.amount) > 10", "avg(b.amount) <= 2", "sum(b.amount) > 1e1"):
        plan = plan_of(f"SELECT * FROM s WHERE A AS a ; B+ AS b FILTER {predicate} ORDER BY ts", frame)
        assert plan.registers == (), predicate
    ints = plan_of("SELECT * FROM s WHERE A AS a ; B+ AS b FILTER sum(b.ts) > 10 ORDER BY ts", frame)
    assert [r.aggregate for r in ints.registers] == ["sum"]  # the integer column still gets one


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sum_past_38_digits_is_arithmetic_overflow(engine):
    nines = D("9" * 36 + ".99")
    query = "SELECT sum(b.amount) AS total FROM s WHERE A AS a ; (B ; B) AS b ORDER BY ts"
    with pytest.raises(ExecutionError) as info:
        run(query, stream("A B B", [None, nines, D("0.01")], pa.decimal128(38, 2)), engine)
    assert info.value.error_class == "ARITHMETIC_OVERFLOW"
    # a sum that comes back within 38 digits is fine, as long as no running sum leaves them
    ok = run(query, stream("A B B", [None, nines, D("-0.01")], pa.decimal128(38, 2)), engine, output="arrow")
    assert ok.column("total").to_pylist() == [D("9" * 36 + ".98")]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_avg_its_type_cannot_hold_is_out_of_range(engine):
    query = "SELECT avg(b.amount) AS mean FROM s WHERE A AS a ; (B ; B) AS b ORDER BY ts"
    with pytest.raises(ExecutionError) as info:
        run(query, stream("A B B", [None, D(1), D(1)], pa.decimal128(38, 36)), engine)
    assert info.value.error_class == "NUMERIC_VALUE_OUT_OF_RANGE"
    half = run(query, stream("A B B", [None, D(1), D(0)], pa.decimal128(38, 36)), engine, output="arrow")
    assert half.column("mean").to_pylist() == [D("0.5")] and half.schema.field("mean").type == pa.decimal128(38, 38)


# -- grouped (the vectorized result builder) gives value's (the per-result rules) answers
DECIMAL_TYPES = st.sampled_from([pa.decimal128(1, 0), pa.decimal128(5, 2), pa.decimal128(10, 4),
                                 pa.decimal128(18, 0), pa.decimal128(28, 10), pa.decimal128(38, 18),
                                 pa.decimal128(38, 0), pa.decimal128(38, 36), pa.decimal128(36, 36)])


@st.composite
def decimal_groups(draw):
    typ = draw(DECIMAL_TYPES)
    top = 10 ** typ.precision - 1
    edge = st.sampled_from([u for u in (top, -top, 10 ** typ.scale, -(10 ** typ.scale), 1, -1, 0, 5, -5)
                            if abs(u) <= top])
    units = st.one_of(st.none(), edge, st.integers(-top, top))
    sizes = draw(st.lists(st.integers(0, 5), min_size=1, max_size=6))
    drawn = draw(st.lists(units, min_size=sum(sizes), max_size=sum(sizes)))
    values = [None if u is None else D(u).scaleb(-typ.scale, context=EXACT) for u in drawn]
    return typ, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), values


def _outcome(fn):
    try:
        return fn()
    except ExecutionError as e:
        return e.error_class


@settings(max_examples=300, deadline=None)
@given(decimal_groups(), st.sampled_from(["sum", "avg"]))
def test_grouped_decimal_aggregates_equal_the_per_result_rules(case, kind):
    typ, offsets, values = case
    result_type = aggregates.result_type(kind, typ)
    array = pa.array(values, typ)
    grouped = _outcome(lambda: aggregate.grouped(kind, offsets, array, result_type))
    per_result = _outcome(lambda: [aggregate.value(kind, [], values[lo:hi], typ)
                                   for lo, hi in zip(offsets[:-1], offsets[1:])])
    if isinstance(per_result, str) or isinstance(grouped, str):
        # the first result that fails decides for value; grouped reports some failing result
        assert isinstance(grouped, str) and isinstance(per_result, str) and grouped in (
            "ARITHMETIC_OVERFLOW", "NUMERIC_VALUE_OUT_OF_RANGE")
        return
    assert grouped.type == result_type
    assert grouped.to_pylist() == per_result
    for got in per_result:  # each fits Spark's type, at its scale
        assert got is None or got.as_tuple().exponent == -result_type.scale


def test_grouped_decimals_from_a_sliced_array():
    array = pa.array([D("9.99"), D("1.00"), None, D("2.01")], AMOUNT).slice(1)
    got = aggregate.grouped("sum", np.array([0, 3]), array, pa.decimal128(20, 2))
    assert got.to_pylist() == [D("3.01")]
    assert aggregate.grouped("avg", np.array([0, 3]), array, pa.decimal128(14, 6)).to_pylist() == [D("1.505000")]
