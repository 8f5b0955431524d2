"""Aggregates over a variable's events in SELECT, on both local engines (docs/semantics.md,
"Aggregates over a variable's events in SELECT").

Each value is Spark's aggregate of that column over the variable's events in the result (so
tests/spark/test_spark_engine.py checks cer_sql against the same code): sum, avg, min, max and
count(col) skip NULLs, first/last take the first/last event's value as it is, collect_list the
non-NULL values in stream order, count(var) counts events. Expected values are worked out by
hand in the comments. Positions = ts.
"""

from __future__ import annotations

import math

import pandas as pd
import pyarrow as pa
import pytest

import cerql
from tests.support import ENGINES, typed_stream


def rows(query: str, spec: str, engine: str, **columns) -> list[dict]:
    out = cerql.run(query, {"s": typed_stream(spec, **columns)}, engine=engine)
    return out.drop(columns="match_id").to_dict("records")


def clean(value):
    """pd.NA as None, so expected values can say None."""
    return None if value is pd.NA else value


@pytest.mark.parametrize("engine", ENGINES)
def test_every_aggregate_over_a_kleene_variable(engine):
    # A(x 1) B(x 2) B(NULL) B(x 4), WITHIN 3 EVENTS: a = 0 and b a non-empty subset of {1, 2, 3}
    query = ("SELECT count(b) AS n, count(b.x) AS nx, sum(b.x) AS s, avg(b.x) AS m, min(b.x) AS lo, "
             "max(b.x) AS hi, first(b.x) AS f, last(b.x) AS l, collect_list(b.x) AS xs "
             "FROM s WHERE A AS a ; B+ AS b ORDER BY ts WITHIN 3 EVENTS")
    got = {(r["match_end"], r["n"], r["f"] if r["f"] is not pd.NA else None, clean(r["l"])):
           {k: clean(v) for k, v in r.items()} for r in rows(query, "A B B B", engine, x=[1, 2, None, 4])}
    # b = {1, 2, 3}: values 2, NULL, 4
    full = got[(3, 3, 2, 4)]
    assert (full["nx"], full["s"], full["m"], full["lo"], full["hi"], list(full["xs"])) == (2, 6, 3.0, 2, 4, [2, 4])
    # b = {2}: only NULL: count(b) 1, count(b.x) 0, sum/avg/min/max NULL, first = last = NULL, []
    only_null = got[(2, 1, None, None)]
    assert (only_null["nx"], only_null["s"], only_null["m"], only_null["lo"], list(only_null["xs"])) == (
        0, None, None, None, [])
    # b = {1, 2}: first 2, last NULL (kept as it is)
    assert got[(2, 2, 2, None)]["s"] == 2
    assert len(got) == 7  # the 7 non-empty subsets of {1, 2, 3}


@pytest.mark.parametrize("engine", ENGINES)
def test_types_follow_spark(engine):
    out = cerql.run("SELECT sum(b.x) AS si, sum(b.y) AS sd, avg(b.x) AS m, count(b) AS n, max(b.x) AS hi "
                    "FROM s WHERE A AS a ; B+ AS b ORDER BY ts",
                    {"s": typed_stream("A B", x=[1, 2], y=[0.5, 1.5])}, engine=engine)
    assert [str(t) for t in out[["si", "sd", "m", "n", "hi"]].dtypes] == ["Int64", "Float64", "Float64", "Int64",
                                                                         "Int64"]
    assert out.loc[0, "si"] == 2 and out.loc[0, "sd"] == 1.5


@pytest.mark.parametrize("engine", ENGINES)
def test_unbound_variable_aggregates_over_no_rows(engine):
    # (A AS a OR B AS b) ; C: for the A branch b has no events: count 0, sum NULL, []
    query = ("SELECT count(b) AS n, sum(b.x) AS s, collect_list(b.x) AS xs, count(a) AS na "
             "FROM s WHERE (A AS a OR B AS b) ; C ORDER BY ts")
    got = sorted((r["match_start"], r["n"], clean(r["s"]), list(r["xs"]), r["na"])
                 for r in rows(query, "A B C", engine, x=[1, 2, 3]))
    assert got == [(0, 0, None, [], 1), (1, 1, 2, [2], 0)]


@pytest.mark.parametrize("engine", ENGINES)
def test_nan_is_above_every_number_as_in_spark(engine):
    # an Arrow table keeps NaN apart from NULL (pandas input would read NaN as NULL)
    table = pa.table({"type": ["A", "B", "B"], "y": [0.0, float("nan"), 1.0], "ts": [0, 1, 2]})
    out = cerql.run("SELECT min(b.y) AS lo, max(b.y) AS hi FROM s WHERE A ; B+ AS b ORDER BY ts",
                    {"s": table}, engine=engine)
    def shown(v):
        return "NaN" if math.isnan(v) else str(v)

    got = sorted((r["match_end"], shown(r["lo"]), shown(r["hi"])) for r in out.to_dict("records"))
    # b = {1}: NaN, NaN; b = {2}: 1, 1; b = {1, 2}: min 1 (NaN is the largest), max NaN
    assert got == [(1, "NaN", "NaN"), (2, "1.0", "1.0"), (2, "1.0", "NaN")]


@pytest.mark.parametrize("engine", ENGINES)
def test_aggregates_inside_expressions_with_single_event_columns(engine):
    # a(x 10) ; b+ (x 1, 3): sum 4, a.x - sum = 6; b = {1}: 9; b = {2}: 7
    query = "SELECT a.x - sum(b.x) AS rest FROM s WHERE A AS a ; B+ AS b ORDER BY ts"
    assert sorted(r["rest"] for r in rows(query, "A B B", engine, x=[10, 1, 3])) == [6, 7, 9]


@pytest.mark.parametrize("query, error_class, column", [
    ("SELECT stddev(b.x) FROM s WHERE B+ AS b", "UNSUPPORTED_AGGREGATE", 8),
    ("SELECT sum(b) FROM s WHERE B+ AS b", "AGGREGATE_ARGUMENT", 12),
    ("SELECT sum(b.x * a.x) FROM s WHERE A AS a ; B+ AS b", "AGGREGATE_ARGUMENT", 8),  # two variables
    # (an expression over one variable, sum(b.x * 2), is accepted: tests/exec/test_aggregate_expressions.py)
    ("SELECT sum(max(b.x)) FROM s WHERE B+ AS b", "AGGREGATE_ARGUMENT", 12),  # at the inner call
    ("SELECT count(DISTINCT b.x) FROM s WHERE B+ AS b", "AGGREGATE_ARGUMENT", 8),
    ("SELECT sum(c.x) FROM s WHERE B+ AS b", "UNKNOWN_VARIABLE", 12),
    ("SELECT b.x + sum(b.x) FROM s WHERE B+ AS b", "SET_VARIABLE_IN_EXPRESSION", 8),
])
def test_bad_aggregates_are_refused_at_the_call(query, error_class, column):
    with pytest.raises(cerql.CeqlError) as info:
        cerql.analyze(query)
    assert (info.value.error_class, info.value.line, info.value.column) == (error_class, 1, column)
    assert info.value.hint


def test_sum_of_a_string_column_is_a_type_error():
    with pytest.raises(cerql.AnalysisError) as info:
        cerql.run("SELECT sum(b.name) FROM s WHERE B+ AS b ORDER BY ts", {"s": typed_stream("B", name=["x"])})
    assert (info.value.error_class, info.value.column) == ("AGGREGATE_TYPE", 8)
