"""MATCH_RECOGNIZE on Spark (cerql/spark/mr_lower.py behind ``cer_sql``): the results equal
``cerql.run``'s (docs/semantics.md, "MATCH_RECOGNIZE"), on every way in: a temp view
(``spark.cer_sql``), keyword DataFrames (``cerql.cer_sql(spark, q, t=df)``), ``CREATE TEMP VIEW``,
Spark Connect, ``cerql.explain`` with a session; the query around the item runs as Spark SQL
(WHERE, GROUP BY, JOIN, ORDER BY); query errors come before any Spark job. The SQL cell and
``%%ceql``: tests/spark/test_sql_cells.py; the command line: tests/cli/test_match_recognize_cli.py.

Two small tables, each one DataFrame for the module: ``ref`` (rows 1-8, values 90 80 70 80 90
50 40 60: the reference cases, their expected rows written out) and ``ticks`` (three symbols,
ties on ``ts`` within a symbol, ``seq`` the input order that breaks them).
"""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql.errors import UnsupportedError
from tests.spark.compare import plain, raises_before_any_job

pytestmark = pytest.mark.spark

REF = pd.DataFrame({"row": range(1, 9), "value": [90, 80, 70, 80, 90, 50, 40, 60]})
DEFINE = "DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value)"


def reference_query(pattern: str, skip: str) -> str:
    return ("SELECT row, cls, mno FROM ref MATCH_RECOGNIZE (ORDER BY row MEASURES CLASSIFIER() AS cls, "
            f"MATCH_NUMBER() AS mno ALL ROWS PER MATCH AFTER MATCH SKIP {skip} PATTERN ({pattern}) {DEFINE})")


# (PATTERN, AFTER MATCH SKIP, rows out as row:CLASSIFIER MATCH_NUMBER)
REFERENCE_CASES = [
    ("A B+ C+", "PAST LAST ROW", "1:A1 2:B1 3:B1 4:C1 5:C1 6:A2 7:B2 8:C2"),
    ("A B+? C+?", "PAST LAST ROW", "1:A1 2:B1 3:B1 4:C1 5:A2 6:B2 7:B2 8:C2"),
    ("A B+ C+", "TO NEXT ROW", "1:A1 2:B1 3:B1 4:C1 5:C1 2:A2 3:B2 4:C2 5:C2 5:A3 6:B3 7:B3 8:C3 6:A4 7:B4 8:C4"),
    ("(A | B)* C", "PAST LAST ROW", "1:A1 2:A1 3:A1 4:A1 5:A1 6:A1 7:A1 8:C1"),
    ("A B* C?", "TO NEXT ROW", "1:A1 2:B1 3:B1 4:C1 2:A2 3:B2 4:C2 3:A3 4:C3 4:A4 5:C4 5:A5 6:B5 7:B5 8:C5 "
     "6:A6 7:B6 8:C6 7:A7 8:C7 8:A8"),
]

TICKS = pd.DataFrame({
    "sym": ["x", "y", "x", "z", "y", "x", "z", "y", "x", "z", "x", "y", "z"],
    "ts": [1, 1, 2, 1, 2, 2, 2, 2, 3, 2, 3, 3, 3],
    "price": [10.0, 5.0, 11.0, 7.0, 6.0, 12.0, 8.0, 4.0, 9.0, 9.0, 13.0, 5.0, 10.0],
    "seq": range(13),
})
DEFINE_UP = "DEFINE B AS B.price > PREV(B.price)"
ALL_ROWS_TICKS = ("SELECT * FROM ticks MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES CLASSIFIER() AS cls, "
                  f"MATCH_NUMBER() AS mno ALL ROWS PER MATCH PATTERN (A B+) {DEFINE_UP})")
ONE_ROW_TICKS = (
    "SELECT * FROM ticks MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES FIRST(A.price) AS start, "
    "LAST(B.price) AS top, count(B.*) AS n, sum(B.price) AS total, avg(B.price) AS mean, min(B.price) AS low, "
    "max(B.price) AS high, first(B.seq) AS first_seq, CLASSIFIER() AS cls, MATCH_NUMBER() AS mno "
    f"ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+) {DEFINE_UP})")


def expected(rows: str) -> list[tuple]:
    return [(int(r), c[0], int(c[1:])) for r, c in (item.split(":") for item in rows.split())]


def spark_rows(df) -> list[tuple]:
    return [tuple(plain(v) for v in r) for r in df.collect()]


def local_rows(frame: pd.DataFrame) -> list[tuple]:
    return [tuple(plain(v) for v in r) for r in frame.itertuples(index=False)]


def by_partition(rows: list[tuple]) -> list[tuple]:
    """Rows in order of their first column (the PARTITION BY key), each partition's rows in the
    order they came: Spark's partitions come back in any order, a partition's rows in its order."""
    return sorted(rows, key=lambda r: r[0])


@pytest.fixture(scope="module")
def frames(spark):
    """``ref`` as a temp view and a DataFrame, ``ticks`` as a DataFrame only (keywords), and
    ``names``, a temp view the outer query joins."""
    ref = spark.createDataFrame(REF)
    ref.createOrReplaceTempView("ref")
    spark.createDataFrame(pd.DataFrame({"sym": ["x", "y", "z"], "name": ["ex", "why", "zed"]})) \
        .createOrReplaceTempView("names")
    yield ref, spark.createDataFrame(TICKS)
    for view in ("ref", "names", "mr_view", "mr_view_kw"):
        spark.catalog.dropTempView(view)


@pytest.mark.parametrize("pattern, skip, rows", REFERENCE_CASES)
def test_reference_cases_on_spark_and_locally(spark, frames, pattern, skip, rows):
    query = reference_query(pattern, skip)
    assert local_rows(cerql.run(query, {"ref": REF})) == expected(rows)
    assert spark_rows(spark.cer_sql(query)) == expected(rows)  # the temp view, in the match order


def test_partitions_and_ties_broken_by_input_order(frames):
    _, ticks = frames
    got = spark_rows(cerql.cer_sql(ticks.sparkSession, ALL_ROWS_TICKS, ticks=ticks))
    want = local_rows(cerql.run(ALL_ROWS_TICKS, {"ticks": TICKS}))
    assert {r[0] for r in got} == {"x", "y", "z"}
    assert by_partition(got) == by_partition(want)
    # the ties matter: the rows in another input order match otherwise
    reordered = local_rows(cerql.run(ALL_ROWS_TICKS, {"ticks": TICKS[::-1].reset_index(drop=True)}))
    assert by_partition(reordered) != by_partition(want)
    # x: ts 1 (seq 0), then ts 2 as input gives them (seq 2, 5), then ts 3 (seq 8, 10)
    assert [(r[5], r[2]) for r in by_partition(got) if r[0] == "x"] == [(0, "A"), (2, "B"), (5, "B"), (8, "A"),
                                                                       (10, "B")]


def test_one_row_per_match_measures(frames):
    _, ticks = frames
    df = cerql.cer_sql(ticks.sparkSession, ONE_ROW_TICKS, ticks=ticks)
    want = cerql.run(ONE_ROW_TICKS, {"ticks": TICKS})
    assert df.columns == list(want.columns) == ["sym", "start", "top", "n", "total", "mean", "low", "high",
                                                "first_seq", "cls", "mno"]
    got = spark_rows(df)
    assert len(got) >= 4 and sorted(got, key=lambda r: (r[0], r[-1])) == sorted(local_rows(want),
                                                                                  key=lambda r: (r[0], r[-1]))


def test_the_query_around_the_item_is_spark_sql(frames):
    _, ticks = frames
    item = ("ticks MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES count(B.*) AS n, MATCH_NUMBER() AS mno "
            f"AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+) {DEFINE_UP}) AS m")
    query = (f"SELECT m.sym, i.name, count(*) AS matches, max(m.n) AS longest FROM {item} "
             "JOIN names i ON i.sym = m.sym WHERE m.n >= 1 GROUP BY m.sym, i.name ORDER BY m.sym DESC")
    got = spark_rows(cerql.cer_sql(ticks.sparkSession, query, ticks=ticks))
    matches = cerql.run(f"SELECT * FROM {item}", {"ticks": TICKS})
    grouped = matches[matches.n >= 1].groupby("sym").n.agg(["count", "max"]).sort_index(ascending=False)
    names = {"x": "ex", "y": "why", "z": "zed"}
    assert got == [(sym, names[sym], int(c), int(m)) for sym, (c, m) in grouped.iterrows()]
    with pytest.raises(cerql.CeqlError) as err:  # what cerql.run refuses, Spark ran
        cerql.run(query, {"ticks": TICKS})
    assert err.value.error_class == "LOCAL_OUTER_QUERY"


def test_create_temp_view(spark, frames):
    _, ticks = frames
    query = reference_query(*REFERENCE_CASES[0][:2])
    empty = spark.cer_sql("CREATE OR REPLACE TEMP VIEW mr_view AS " + query)
    assert empty.columns == [] and empty.count() == 0
    assert spark_rows(spark.table("mr_view")) == expected(REFERENCE_CASES[0][2])
    cerql.cer_sql(spark, "CREATE TEMP VIEW mr_view_kw AS " + ONE_ROW_TICKS, ticks=ticks)  # a keyword source
    assert sorted(spark_rows(spark.table("mr_view_kw"))) == sorted(local_rows(cerql.run(ONE_ROW_TICKS,
                                                                                         {"ticks": TICKS})))


def test_keyword_dataframe_shadows_a_temp_view(spark, frames):
    query = reference_query(*REFERENCE_CASES[0][:2])
    other = spark.createDataFrame(REF.assign(value=REF.value[::-1].to_numpy()))  # values reversed
    got = spark_rows(cerql.cer_sql(spark, query, ref=other))
    assert got == local_rows(cerql.run(query, {"ref": REF.assign(value=REF.value[::-1].to_numpy())}))
    assert got != expected(REFERENCE_CASES[0][2])


def test_spark_connect(connect):
    cases = REFERENCE_CASES[2]
    query = reference_query(*cases[:2])
    ref = connect.createDataFrame(REF)
    assert spark_rows(cerql.cer_sql(connect, query, ref=ref)) == expected(cases[2])
    ref.createOrReplaceTempView("ref")  # the Connect session's own view
    assert spark_rows(connect.cer_sql(query)) == expected(cases[2])
    assert "MapInArrow" in cerql.explain(query, connect)


def test_explain_with_a_session(spark, frames):
    _, ticks = frames
    explained = cerql.explain(ALL_ROWS_TICKS, spark, ticks=ticks)
    header, _, on_spark = explained.partition("\non spark:")
    assert header == cerql.explain(ALL_ROWS_TICKS)
    assert "partition by: sym" in on_spark and "MapInArrow" in on_spark and "cerql_match_recognize" in on_spark


ITEM = ("SELECT * FROM ref MATCH_RECOGNIZE (ORDER BY row MEASURES LAST(B.value) AS low ALL ROWS PER MATCH "
        f"PATTERN (A B+) {DEFINE.split(', C AS')[0]})")


@pytest.mark.parametrize("query, error_class, at", [
    (ITEM.replace("B.value < PREV", "B.valu < PREV"), "UNKNOWN_COLUMN", "B.valu <"),
    (ITEM.replace("LAST(B.value)", "LAST(B.volume)"), "UNKNOWN_COLUMN", "B.volume)"),
    (ITEM.replace("LAST(B.value)", "LAST(D.value)"), "MATCH_RECOGNIZE_UNDEFINED_VARIABLE", "D.value"),
    (ITEM.replace("DEFINE B AS B.value", "DEFINE D AS D.value"), "MATCH_RECOGNIZE_UNDEFINED_VARIABLE", "D AS"),
    (ITEM.replace("FROM ref", "FROM nowhere"), "UNKNOWN_SOURCE", "nowhere"),
])
def test_errors_come_before_any_spark_job(spark, frames, query, error_class, at):
    raises_before_any_job(spark, query, error_class, query.index(at) + 1)


def test_a_stream_is_refused_toward_ceql(spark):
    """Spark cannot sort a stream, and a row pattern reads a partition in order: the query is
    refused before anything runs, with CEQL's way over streams in the hint."""
    stream = spark.readStream.format("rate").load().withColumnRenamed("timestamp", "ts")
    text = ("SELECT * FROM r MATCH_RECOGNIZE (ORDER BY ts MEASURES count(*) AS n PATTERN (A B+) "
            "DEFINE B AS B.value > PREV(B.value))")
    with pytest.raises(UnsupportedError) as err:
        cerql.cer_sql(spark, text, r=stream)
    assert err.value.error_class == "MATCH_RECOGNIZE_OVER_STREAM" and "WITHIN" in err.value.hint
    assert err.value.column == text.index("r MATCH_RECOGNIZE") + 1
