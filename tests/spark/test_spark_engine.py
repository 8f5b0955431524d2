"""Spark results equal the local engine's (issue 5; docs/semantics.md, "On Spark").

Each case runs one query with ``cerql.cer_sql`` on the session-scoped Spark session and with
``cerql.run(engine="local")`` on the same generated rows, and compares the result rows as
multisets. The data has many partition keys, ties on the ordering column, NULL and NaN keys, NULL
ordering values and NULL types; the queries cover every strategy, every window kind, CONSUME BY,
LIMIT, several sources, source-name atoms, TYPED BY and SELECT expressions.

match_id: Spark numbers the rows of a source with ``monotonically_increasing_id``
(docs/semantics.md, "On Spark"), which equals the local row index only when the source has one
partition. The cases compare match_id exactly on single-partition inputs and check it is unique
on the others.
"""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import cerql
from tests.spark.compare import canonical_rows, local_records, spark_records

pytestmark = pytest.mark.spark

N = 1500


def _stream(seed: int, n: int, types=("A", "B", "C", "D")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, n // 2, n))           # about two rows per value: many ties
    key = rng.integers(0, 9, n).astype(float)
    key[rng.random(n) < 0.03] = np.nan                  # NaN keys are one partition
    keys = pd.array(key, dtype="Float64")
    keys[rng.random(n) < 0.03] = pd.NA                  # NULL keys take part in no match
    kind = rng.choice(list(types), n).astype(object)
    kind[rng.random(n) < 0.02] = None
    price = np.round(rng.uniform(0, 100, n), 1)
    ts_col = pd.array(ts, dtype="Int64")
    ts_col[rng.random(n) < 0.01] = pd.NA               # NULL ordering values take part in none
    base = dt.datetime(2024, 3, 1, 9, 30)
    return pd.DataFrame({
        "type": kind,
        "ts": ts_col,
        "k": keys,
        "price": price,
        "t": [base + dt.timedelta(seconds=int(s)) for s in ts],
        "g": rng.integers(0, 3, n).astype(np.int64),
        "d": [(base + dt.timedelta(days=int(s) // 40)).date() for s in ts],
    })


@pytest.fixture(scope="module")
def data():
    s = _stream(1, N)
    r = _stream(2, N // 3, types=("B", "E"))[["type", "ts", "k", "price"]].rename(columns={"type": "kind"})
    r["w"] = np.arange(len(r))
    r["ts"] = r["ts"].astype("Int32")  # int in one source, bigint in the other: widened
    return {"s": s, "r": r}


def _spark_frames(spark, data, partitions):
    """The tables as Spark DataFrames of ``partitions`` partitions that keep the row order, so
    ties on the ordering column are broken the same way by both engines (docs/language.md, "ORDER BY")."""
    frames = {}
    for name, pdf in data.items():
        pdf = pdf.astype({"k": "float64"}).assign(__row=np.arange(len(pdf)))
        df = spark.createDataFrame(pdf).repartitionByRange(partitions, "__row")
        frames[name] = df.sortWithinPartitions("__row").drop("__row")
    return frames


def compare(spark, data, query, partitions=3):
    local = cerql.run(query, dict(data), engine="local")
    frames = _spark_frames(spark, data, partitions)
    on_spark = cerql.cer_sql(spark, query, **frames)
    got = spark_records(on_spark)
    want = local_records(local)
    assert list(on_spark.columns) == list(local.columns)
    assert canonical_rows(got) == canonical_rows(want)
    ids = [r["match_id"] for r in got]
    assert len(set(ids)) == len(ids)
    if partitions == 1:
        assert canonical_rows(got, drop=()) == canonical_rows(want, drop=())
    return got


SEQ = "A AS a ; B AS b ; C AS c"
CASES = {
    "seq_partitioned_events": f"SELECT * FROM s WHERE {SEQ} PARTITION BY [k] ORDER BY ts WITHIN 6 EVENTS",
    "seq_partitioned_numeric": f"SELECT * FROM s WHERE {SEQ} PARTITION BY [k] WITHIN 5 [ts]",
    "seq_time": f"SELECT * FROM s WHERE {SEQ} PARTITION BY [k] WITHIN 4 SECONDS [t]",
    "seq_no_partition": f"SELECT * FROM s WHERE {SEQ} FILTER a[price > 50] WITHIN 3 [ts]",
    "kleene": "SELECT * FROM s WHERE A AS a ; B+ AS b ; C AS c PARTITION BY [k] ORDER BY ts WITHIN 8 EVENTS",
    "contiguous": "SELECT * FROM s WHERE A AS a : B AS b :+ AS bs PARTITION BY [k] ORDER BY ts",
    "contiguous_plus": "SELECT * FROM s WHERE A AS a : (B OR C):+ AS x PARTITION BY [k] ORDER BY ts WITHIN 5 EVENTS",
    "or_and_filters": "SELECT * FROM s WHERE (A AS a OR D AS a) ; B AS b FILTER a[price < 30] AND "
                      "(b[price > 60] OR b[g = 1]) PARTITION BY [k] WITHIN 4 [ts]",
    "any": f"SELECT ANY * FROM s WHERE {SEQ} PARTITION BY [k] ORDER BY ts WITHIN 10 EVENTS",
    "next": "SELECT NEXT * FROM s WHERE A AS a ; B+ AS b PARTITION BY [k] ORDER BY ts WITHIN 6 EVENTS",
    "last": "SELECT LAST * FROM s WHERE A AS a ; B+ AS b PARTITION BY [k] ORDER BY ts WITHIN 6 EVENTS",
    "max": "SELECT MAX * FROM s WHERE A AS a ; B+ AS b PARTITION BY [k] ORDER BY ts WITHIN 6 EVENTS",
    "strict": f"SELECT STRICT * FROM s WHERE {SEQ} PARTITION BY [k] ORDER BY ts WITHIN 5 EVENTS",
    "consume_any": f"SELECT * FROM s WHERE {SEQ} WITHIN 10 [ts] CONSUME BY ANY",
    "consume_partition": "SELECT * FROM s WHERE A AS a ; B+ AS b PARTITION BY [k] WITHIN 10 [ts] "
                         "CONSUME BY PARTITION",
    "limit": f"SELECT * FROM s WHERE {SEQ} PARTITION BY [k] WITHIN 5 [ts] LIMIT 7",
    "limit_no_partition": f"SELECT * FROM s WHERE {SEQ} WITHIN 5 [ts] LIMIT 5",
    "two_keys": "SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [k], [g] WITHIN 3 [ts]",
    "projections": "SELECT a[price, ts], b.price - a.price AS gain, b.g AS g FROM s "
                   "WHERE A AS a ; B AS b PARTITION BY [k] WITHIN 3 [ts]",
    "two_sources": "SELECT * FROM s, r TYPED BY kind WHERE A AS a ; E AS e ; B AS b PARTITION BY [k] "
                   "WITHIN 6 [ts]",
    "source_atoms": "SELECT * FROM s, r TYPED BY kind WHERE s>A AS a ; r AS x ; r>B AS b "
                    "PARTITION BY [k] WITHIN 4 [ts]",
    "date_window": "SELECT * FROM s WHERE A AS a ; D AS d PARTITION BY [k] WITHIN 2 DAYS [d]",
    # rows that fire no transition are pruned before the shuffle; these check that with FILTERs
    "unselected_filtered": "SELECT b FROM s WHERE A AS a ; B AS b FILTER a[price > 50] "
                           "PARTITION BY [k] WITHIN 6 [ts]",
    "kleene_filtered_next": "SELECT NEXT * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER b[price > 30] AND "
                            "c[price < 50] PARTITION BY [k] WITHIN 12 [ts]",
    "kleene_filtered_max_consume": "SELECT MAX * FROM s WHERE A AS a ; (B OR D)+ AS b FILTER b[price > 40] "
                                   "PARTITION BY [g] WITHIN 5 [ts] CONSUME BY PARTITION",
    "filter_or_branches": "SELECT LAST * FROM s WHERE A AS a ; B AS b ; A AS c FILTER (a[price < 20] OR "
                          "b[price > 90]) AND c[g = 2] WITHIN 30 [ts]",
    "timestamp_order_ties": "SELECT * FROM s WHERE B AS b ; B AS b2 PARTITION BY [g] ORDER BY t WITHIN 2 EVENTS",
    # aggregates over a variable's events: Spark SQL over the hidden arrays vs cerql.exec.aggregate
    "aggregates": "SELECT a.price AS ap, count(b) AS n, count(b.price) AS np, sum(b.g) AS sg, "
                  "sum(b.price) AS sp, avg(b.price) AS m, min(b.price) AS lo, max(b.price) AS hi, "
                  "first(b.ts) AS f, last(b.ts) AS l, collect_list(b.g) AS gs, sum(b.g) / count(b) AS r "
                  "FROM s WHERE A AS a ; B+ AS b PARTITION BY [k] ORDER BY ts WITHIN 6 EVENTS",
    # FILTER predicates across variables: whole substreams through exec/post_filter.py in the task
    "cross_filter": "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.price > a.price PARTITION BY [k] WITHIN 4 [ts]",
    "cross_aggregate_filter": "SELECT NEXT a, sum(b.g) AS sg FROM s WHERE A AS a ; B+ AS b FILTER "
                              "avg(b.price) > a.price AND count(b) >= 2 PARTITION BY [k] ORDER BY ts "
                              "WITHIN 6 EVENTS",
    # only the ts columns are shown: price and g reach the task for the predicate alone
    "cross_filter_narrow": "SELECT a[ts], b[ts] FROM s WHERE A AS a ; B AS b FILTER b.price > a.price AND b.g = a.g "
                           "PARTITION BY [k] WITHIN 4 [ts]",
    "cross_filter_consume": "SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.price > a.price + 10) ; C AS c "
                            "PARTITION BY [g] WITHIN 5 [ts] CONSUME BY PARTITION",
    # a FILTER under + or :+: each repetition checked on its own (the automaton marks their first events)
    "cross_filter_under_plus": "SELECT LAST a, count(b) AS n FROM s WHERE (A AS a ; B+ AS b FILTER "
                               "max(b.price) > a.price)+ PARTITION BY [k] ORDER BY ts WITHIN 6 EVENTS",
    # equalities across variables run as partitioning (planner/equality.py): a hidden key
    "equality_partition": "SELECT * FROM s WHERE (A AS a ; B+ AS b) FILTER a.g = b.g ORDER BY ts WITHIN 3 [ts]",
    "equality_partition_mixed": "SELECT LAST a, count(b) AS n, c[ts] FROM s WHERE (A AS a ; B+ AS b ; C AS c) "
                                "FILTER a.g = b.g AND c.g = a.g AND c.price > a.price AND a.d = c.d "
                                "ORDER BY ts WITHIN 8 [ts] LIMIT 40",
    # comparisons between single-event variables: the kernel's registers, streaming in the task
    "aggregate_registers": "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER count(b) >= 2 AND sum(b.g) > 3 "
                           "AND max(b.price) < 80 PARTITION BY [k] ORDER BY ts WITHIN 6 EVENTS",
    "registers": "SELECT * FROM s WHERE A AS a ; B AS b ; C AS c FILTER b.price > a.price AND c.t > a.t "
                 "PARTITION BY [k] ORDER BY ts WITHIN 12 [ts]",
    "registers_then_filter": "SELECT LAST a, c FROM s WHERE (A AS a OR D AS d) ; C AS c FILTER c.price < a.price "
                             "AND c.g = d.g AND c.price + d.price > 50 ORDER BY ts WITHIN 3 [ts]",
    # NOT, AND, ALL (docs/semantics.md, "Negation and conjunction"): NOT's condition is computed
    # in Spark as locally, NULL types included
    "not_filtered": "SELECT * FROM s WHERE A AS a ; NOT (B FILTER B[price > 50]) AS n ; C AS c PARTITION BY [k] "
                    "ORDER BY ts WITHIN 6 EVENTS",
    "and": "SELECT * FROM s WHERE (A AS a ; B AS b) AND (A : B) PARTITION BY [k] ORDER BY ts WITHIN 6 EVENTS",
    "all_next": "SELECT NEXT * FROM s WHERE (A AS a ALL C AS c) FILTER a[price > 50] PARTITION BY [k] "
                "ORDER BY ts WITHIN 4 EVENTS",
    "all_cross_filter": "SELECT * FROM s WHERE (A AS a ALL B AS b) FILTER b.price > a.price PARTITION BY [k] "
                        "WITHIN 3 [ts]",
    "cross_filter_in_all": "SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.price > a.price) ALL (C AS b) "
                           "PARTITION BY [k] WITHIN 3 [ts]",
    "unless": "SELECT * FROM s WHERE (A AS a ; B AS b) UNLESS C PARTITION BY [k] ORDER BY ts WITHIN 6 EVENTS",
    "unless_next": "SELECT NEXT * FROM s WHERE (A AS a ; B+ AS b) UNLESS (C FILTER C[price > 50]) PARTITION BY [k] "
                   "WITHIN 6 [ts]",
    "unless_inside": "SELECT * FROM s WHERE A AS a ; ((B AS b ; B AS c) UNLESS C) PARTITION BY [k] WITHIN 5 [ts]",
    "unless_inside_plus": "SELECT NEXT * FROM s WHERE A AS a ; ((B AS b ; A) UNLESS C)+ PARTITION BY [k] "
                          "ORDER BY ts WITHIN 6 EVENTS",
    "aggregates_single_events": "SELECT count(a) AS na, sum(b.g) AS sb, collect_list(a.price) AS ps, "
                                "max(b.t) AS bt FROM s WHERE (A AS a OR B AS b) ; C AS c "
                                "PARTITION BY [k] WITHIN 3 [ts]",
}


@pytest.mark.parametrize("name", list(CASES))
def test_spark_equals_local(spark, data, name):
    compare(spark, data, CASES[name])


def test_spark_equals_local_on_one_input_partition_including_match_id(spark, data):
    rows = compare(spark, data, CASES["kleene"], partitions=1)
    assert len(rows) > 0


def test_spark_finds_matches_in_every_case(spark, data):
    """Guard against vacuous comparisons: every case above has results on this data."""
    empty = [name for name, q in CASES.items() if len(cerql.run(q, dict(data), engine="local")) == 0]
    assert empty == []


def test_many_shuffle_partitions_and_small_batches(spark, data):
    old = {k: spark.conf.get(k) for k in ("spark.sql.shuffle.partitions",
                                          "spark.sql.execution.arrow.maxRecordsPerBatch")}
    spark.conf.set("spark.sql.shuffle.partitions", "11")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")
    try:
        compare(spark, data, CASES["kleene"], partitions=5)
        compare(spark, data, CASES["consume_partition"], partitions=5)
        compare(spark, data, CASES["seq_no_partition"], partitions=5)
        compare(spark, data, CASES["cross_filter"], partitions=5)
        compare(spark, data, CASES["cross_filter_consume"], partitions=5)
        compare(spark, data, CASES["equality_partition"], partitions=5)
        compare(spark, data, CASES["registers"], partitions=5)
    finally:
        for k, v in old.items():
            spark.conf.set(k, v)


POSITION_CASES = [  # queries that count positions, with FILTERs that leave most rows inert (issue 17)
    "SELECT * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER a[price > 60] AND b[price > 50] AND c[price < 40] "
    "PARTITION BY [k] ORDER BY ts WITHIN 12 EVENTS",
    "SELECT * FROM s WHERE A AS a : B AS b FILTER a[price > 30] ORDER BY ts",
    "SELECT STRICT * FROM s WHERE A AS a ; B AS b FILTER b[price < 50] PARTITION BY [k] ORDER BY ts WITHIN 3 EVENTS",
    "SELECT * FROM s WHERE A AS a ; B:+ AS b FILTER a[price > 20] PARTITION BY [k] ORDER BY ts",
]


@pytest.mark.parametrize("query", POSITION_CASES)
def test_queries_that_count_positions_send_only_rows_that_can_fire(spark, data, query):
    """Spark numbers each row in its substream, drops the inert ones before Python, and the
    task puts the gaps back: the results are the local engine's, which reads every row."""
    rows = compare(spark, data, query, partitions=2)
    assert len(rows) > 0
    frames = _spark_frames(spark, data, 2)
    plan = cerql.cer_sql(spark, query, **frames)._jdf.queryExecution().executedPlan().toString().splitlines()
    numbered = [k for k, line in enumerate(plan) if "monotonically_increasing_id() AS __cerql_pos" in line]
    dropped = [k for k, line in enumerate(plan) if "Filter" in line and "__cerql_bits" in line]
    assert numbered and dropped and dropped[0] < numbered[0]  # the rows are numbered, then dropped


def test_empty_input_gives_empty_result_with_schema(spark, data):
    s = data["s"].iloc[:0]
    df = cerql.cer_sql(spark, CASES["kleene"], s=spark.createDataFrame(s, schema=spark.createDataFrame(data["s"]).schema))
    assert df.collect() == []
    assert df.columns == ["k", "match_id", "match_start", "match_end", "a", "b", "c"]


# -- issue 15 items 5 and 6: any column name, names differing only in case, aggregates in
# SELECT expressions next to string literals, NaN and -0.0 in the order and in partition keys
def _one_partition_frame(spark, table: pa.Table):
    """``table`` as a Spark DataFrame of one partition in the same row order, so match_id
    agrees with the local engine's."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    schema = StructType([StructField(f.name, from_arrow_type(f.type), True) for f in table.schema])
    rows = [tuple(table.column(k)[i].as_py() for k in range(table.num_columns)) for i in range(table.num_rows)]
    return spark.createDataFrame(rows, schema).coalesce(1)


def both_engines(spark, query: str, table: pa.Table) -> list[dict]:
    """The rows of ``query`` over ``s = table``, checked equal (match_id included) on Spark and
    on the local engine; in the local engine's order (LIMIT's order: docs/language.md, "LIMIT")."""
    local = cerql.run(query, {"s": table}, engine="local")
    on_spark = cerql.cer_sql(spark, query, s=_one_partition_frame(spark, table))
    want = local_records(local)
    assert list(on_spark.columns) == list(local.columns)
    assert canonical_rows(spark_records(on_spark), drop=()) == canonical_rows(want, drop=())
    return want


def _nan_as_text(value):
    return "NaN" if value != value else value


def test_columns_named_with_a_dot_or_a_backtick(spark):
    table = pa.table({"type": ["A", "B"], "ts": [0, 1], "a.b": [1, 2], "x`y": [3, 4]})
    rows = both_engines(spark, "SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", table)
    assert [(r["a"], r["b"]) for r in rows] == [({"type": "A", "ts": 0, "a.b": 1, "x`y": 3},
                                                 {"type": "B", "ts": 1, "a.b": 2, "x`y": 4})]
    rows = both_engines(spark, "SELECT a.`a.b` AS v, sum(b.`x``y`) AS w FROM s WHERE A AS a ; B+ AS b "
                               "FILTER a[`a.b` > 0] AND b[`x``y` = 4] ORDER BY ts", table)
    assert [(r["v"], r["w"]) for r in rows] == [(1, 4)]


def test_outputs_differing_only_in_case_are_two_columns(spark):
    table = pa.table({"type": ["A", "A"], "ts": [0, 1]})
    # `A AS a ; A` gives both a and A (docs/semantics.md, "Results")
    rows = both_engines(spark, "SELECT * FROM s WHERE A AS a ; A ORDER BY ts", table)
    assert [(r["a"], r["A"]) for r in rows] == [({"type": "A", "ts": 0}, [{"type": "A", "ts": 0}, {"type": "A", "ts": 1}])]
    rows = both_engines(spark, "SELECT a, A, count(a) AS n, count(A) AS m FROM s WHERE A AS a ; A ORDER BY ts LIMIT 5",
                        table)
    assert [(r["n"], r["m"]) for r in rows] == [(1, 2)]


@pytest.mark.parametrize("literal", ["'__cerql_agg0'", "'`__cerql_agg0`'", "'(`__cerql_agg0`)'"])
@pytest.mark.parametrize("aggregate", ["count(a)", "avg(a.x)"])
def test_aggregate_next_to_a_string_literal_of_its_placeholder(spark, literal, aggregate):
    table = pa.table({"type": ["A", "B"], "ts": [0, 1], "x": [1, 2]})
    query = f"SELECT CASE WHEN {aggregate} > 0 THEN {literal} END AS z FROM s WHERE A AS a ; B AS b ORDER BY ts"
    assert [r["z"] for r in both_engines(spark, query, table)] == [literal.strip("'")]


NAN = float("nan")


def test_nan_ordering_value_sorts_last(spark):
    table = pa.table({"type": ["A", "B", "B"], "ts": [1.0, NAN, 2.0]})
    rows = both_engines(spark, "SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", table)
    assert [_nan_as_text(r["match_end"]) for r in rows] == [2.0, "NaN"]  # B@NaN is after A@1.0


def test_nan_and_negative_zero_partition_keys(spark):
    query = "SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [k] ORDER BY ts"
    table = pa.table({"type": ["A", "B", "A", "B", "A", "B"], "ts": [0, 1, 2, 3, 4, 5],
                      "k": [NAN, -NAN, 1.0, 1.0, -0.0, 0.0]})
    rows = both_engines(spark, query + " LIMIT 1", table)
    assert [(r["k"], r["match_start"]) for r in rows] == [(0.0, 4)]  # -0.0 and 0.0: one key, before 1.0 and NaN
    rows = both_engines(spark, query, table)
    assert [(_nan_as_text(r["k"]), r["match_start"], r["match_end"]) for r in rows] == [(0.0, 4, 5), (1.0, 2, 3),
                                                                                        ("NaN", 0, 1)]


def test_source_columns_differing_only_in_case(spark):
    table = pa.table({"type": ["A", "B"], "ts": [0, 1], "x": [1, 2], "X": [3, 4]})
    rows = both_engines(spark, "SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", table)
    assert [(r["a"], r["b"]) for r in rows] == [({"type": "A", "ts": 0, "x": 1, "X": 3},
                                                 {"type": "B", "ts": 1, "x": 2, "X": 4})]
    with pytest.raises(cerql.AnalysisError) as err:  # before Spark runs anything
        cerql.cer_sql(spark, "SELECT a.x AS v FROM s WHERE A AS a ; B AS b ORDER BY ts",
                      s=_one_partition_frame(spark, table))
    assert (err.value.error_class, err.value.line, err.value.column) == ("AMBIGUOUS_REFERENCE", 1, 10)


def test_two_sources_one_spelling_two_ways(spark):
    """s spells x two ways: both are columns, and r's X is the X one; r spells ts as TS: one column."""
    s = pa.table({"type": ["A"], "ts": [0], "x": [1], "X": [2]})
    r = pa.table({"type": ["B"], "TS": [1], "X": [5]})
    query = "SELECT * FROM s, r WHERE A AS a ; B AS b ORDER BY ts"
    local = local_records(cerql.run(query, {"s": s, "r": r}, engine="local"))
    on_spark = spark_records(cerql.cer_sql(spark, query, s=_one_partition_frame(spark, s),
                                           r=_one_partition_frame(spark, r)))
    assert canonical_rows(on_spark) == canonical_rows(local)
    assert [(x["a"], x["b"]) for x in local] == [({"type": "A", "ts": 0, "x": 1, "X": 2},
                                                  {"type": "B", "ts": 1, "x": None, "X": 5})]


@pytest.mark.parametrize("query, table", [
    ("SELECT * FROM t WHERE A AS a ; B AS b ORDER BY ts", {"type": ["A", "B"], "ts": [0, 1], "x": [1, 2], "X": [3, 4]}),
    ("SELECT * FROM t WHERE A AS a ; B AS b ORDER BY ts", {"type": ["A", "B"], "ts": [0, 1], "a.b": [1, 2], "x`y": [3, 4]}),
    ("SELECT * FROM t WHERE A AS a ; A ORDER BY ts", {"type": ["A", "A"], "ts": [0, 1]}),
])
def test_sql_cell_reads_any_column_name(spark, query, table):
    """The SQL-cell function (cerql/spark/sql_cells.py) gives the local engine's rows on the same names."""
    table = pa.table(table)
    cerql.register(spark)
    _one_partition_frame(spark, table).createOrReplaceTempView("t")
    got = spark_records(spark.sql("SELECT * FROM cerql(TABLE(t), :q)", args={"q": query}))
    assert canonical_rows(got, drop=()) == canonical_rows(local_records(cerql.run(query, {"t": table})), drop=())


# -- issue 38 item 2: a SELECT list that reads no variable shows every result of SELECT *, as
# on the local engines (tests/exec/test_select_without_variables.py); it gave no row before
def _types_table(types: str, k=None) -> pa.Table:
    columns = {"type": types.split(), "ts": list(range(len(types.split())))}
    return pa.table({**columns, "k": k} if k is not None else columns)


PARTITIONED_SPAN = "SELECT k, match_end - match_start AS span FROM t WHERE A ; B PARTITION BY [k] ORDER BY ts"


@pytest.mark.parametrize("query, types, k, expected", [
    ("SELECT match_end - match_start AS span FROM t WHERE A AS a ; B AS b ORDER BY ts", "A B A", None, [(0, 1)]),
    ("SELECT 1 AS one FROM t WHERE A AS a ; B AS b ORDER BY ts", "A B A", None, [(0, 1)]),
    ("SELECT match_id AS m FROM t WHERE A AS a ; B AS b ORDER BY ts", "A B A", None, [(0, 1)]),
    ("SELECT match_start FROM t WHERE A AS a ; B AS b ORDER BY ts", "A B A", None, [(0, 1)]),
    # NEXT keeps a = 0 at 3, LAST a = 2 (docs/language.md, "Selection strategies")
    ("SELECT NEXT 1 AS one FROM t WHERE A AS a ; B AS b ORDER BY ts", "A B A B", None, [(0, 1), (0, 3)]),
    ("SELECT LAST match_id AS m FROM t WHERE A AS a ; B AS b ORDER BY ts", "A B A B", None, [(0, 1), (2, 3)]),
    # * selects a, B and c: one result per B
    ("SELECT 1 AS one FROM t WHERE A AS a ; B ; C AS c ORDER BY ts", "A B B C", None, [(0, 3), (0, 3)]),
    # k = 1 has A0 ; B2, k = 2 has A1 ; B3
    (PARTITIONED_SPAN, "A A B B", [1, 2, 1, 2], [(0, 2), (1, 3)]),
])
def test_select_that_reads_no_variable_shows_every_result_of_star(spark, query, types, k, expected):
    table = _types_table(types, k)
    on_spark = cerql.cer_sql(spark, query, t=_one_partition_frame(spark, table))
    local = cerql.run(query, {"t": table}, engine="local")
    got = spark_records(on_spark)
    assert list(on_spark.columns) == list(local.columns)
    assert canonical_rows(got, drop=()) == canonical_rows(local_records(local), drop=())
    assert sorted((r["match_start"], r["match_end"]) for r in got) == expected
    star = re.sub(r"^SELECT (NEXT |LAST )?.*? FROM ", r"SELECT \1* FROM ", query)
    assert sorted(r["match_id"] for r in got) == sorted(cerql.run(star, {"t": table}, engine="reference").match_id)


@pytest.mark.parametrize("query, types, k", [
    ("SELECT NEXT match_id AS m, match_end - match_start AS span FROM t WHERE A AS a ; B AS b ORDER BY ts",
     "A B A B", None),
    (PARTITIONED_SPAN, "A A B B", [1, 2, 1, 2]),
])
def test_sql_cell_select_that_reads_no_variable(spark, query, types, k):
    """The SQL-cell function gives the local engine's rows (its match_id numbers the rows within
    its own partitions), and evaluates the match columns a SELECT item reads."""
    table = _types_table(types, k)
    cerql.register(spark)
    _one_partition_frame(spark, table).createOrReplaceTempView("t")
    got = spark_records(spark.sql("SELECT * FROM cerql(TABLE(t), :q)", args={"q": query}))
    local = local_records(cerql.run(query, {"t": table}, engine="local"))
    assert canonical_rows(got, drop=("match_id", "m")) == canonical_rows(local, drop=("match_id", "m"))
    assert len(got) == 2 and all(r.get("m", r["match_id"]) == r["match_id"] for r in got)


def test_results_of_many_events_go_back_in_bounded_batches(spark, monkeypatch):
    """Issue 38 item 4 on Spark: a task's results go back to the JVM in Arrow batches of about
    CHUNK_BYTES (spark/ipc.py), not one batch per input batch; at 1 byte every result is its
    own batch, and the rows are still the local engine's."""
    from cerql.spark import ipc

    monkeypatch.setattr(ipc, "CHUNK_BYTES", 1)
    types = ["A"] * 4 + ["B"] * 30 + ["C"] * 3
    table = pa.table({"type": types, "ts": list(range(len(types)))})
    rows = both_engines(spark, "SELECT MAX * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts", table)
    assert len(rows) == 12 and all(len(r["b"]) == 30 for r in rows)


@pytest.mark.parametrize("strategy", ["NEXT", "LAST"])
def test_next_and_last_behind_a_check_search_their_winner(spark, strategy):
    """Issue 38 item 3 on Spark: A(x=0), 20 B's (x=1), C with avg(b.x) > a.x has 2**20 - 1
    candidates at C (a MemoryError once, then TOO_MANY_CANDIDATES); the task hands them over in
    the strategy's order and the first passes: one row, every B, as the local engine."""
    n = 20
    table = pa.table({"type": ["A"] + ["B"] * n + ["C"], "x": [0] + [1] * (n + 1), "ts": list(range(n + 2))})
    q = f"SELECT {strategy} * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER avg(b.x) > a.x ORDER BY ts WITHIN 100 EVENTS"
    rows = both_engines(spark, q, table)
    assert len(rows) == 1 and [e["ts"] for e in rows[0]["b"]] == list(range(1, n + 1))
