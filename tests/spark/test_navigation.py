"""Row navigation, PREV/NEXT, on Spark: Spark computes the navigation columns with lag/lead over
the PARTITION BY partitions in stream order (spark/lower.py ``with_navigation``), and its results
equal the local engine's on the same cases (tests/exec/test_navigation.py has them worked out by
hand): PARTITION BY, NULL at the edges, ties between two sources, rows in no substream, hidden
partition keys, SELECT items; also on Spark Connect. A stream and the cerql() table function
refuse navigation with a positioned error."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cerql
from cerql.errors import CeqlError
from cerql.spark.streaming import ROCKSDB, STATE_STORE_CONF

from tests.spark.compare import canonical_rows, local_records, spark_records

pytestmark = pytest.mark.spark

S = pd.DataFrame({"type": ["T"] * 8, "ts": list(range(1, 9)), "v": [5, 6, 7, 8, 3, 4, 9, 1]})
P = pd.DataFrame({"type": ["T"] * 6, "ts": [1, 2, 3, 4, 5, 6], "k": ["x", "y", "x", "y", "x", "y"],
                  "v": [1, 10, 2, 5, 0, 7]})


def _random(n: int = 300, seed: int = 3) -> pd.DataFrame:
    """Three keys, repeated timestamps (ties broken by input order), a few NULL values."""
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 20, n).astype(float)
    v[rng.random(n) < 0.05] = np.nan  # NULL on both engines (pandas' missing value)
    return pd.DataFrame({"type": rng.choice(["A", "B"], n), "k": rng.choice(["x", "y", "z"], n),
                         "ts": np.sort(rng.integers(0, n // 3, n)), "v": v})


R = _random()

CASES = [
    ("SELECT a[ts] FROM s WHERE T AS a FILTER a[v > PREV(v) AND NEXT(v, 2) IS NOT NULL] ORDER BY ts", {"s": S}),
    ("SELECT a[ts], d[ts] FROM s WHERE T AS a : T AS b : T AS c : T AS d "
     "FILTER a[v > PREV(v)] AND b[v > PREV(v)] AND c[v > PREV(v)] AND d[v < PREV(v)] ORDER BY ts", {"s": S}),
    ("SELECT a[ts], PREV(a.v) AS p, NEXT(a.v, 2) AS n FROM s WHERE T AS a PARTITION BY k ORDER BY ts", {"s": P}),
    ("SELECT a[ts], b[ts] FROM s WHERE T AS a ; T AS b FILTER b.v > PREV(b.v) AND a.v = PREV(b.v) ORDER BY ts",
     {"s": S}),
    ("SELECT a[ts] FROM s WHERE NOT (T FILTER T[v < PREV(v)]) AS a ORDER BY ts", {"s": S}),
    ("SELECT a[ts], b[ts] FROM s WHERE T AS a ; T AS b FILTER a.g = b.g AND b[PREV(v) = 3] ORDER BY ts",
     {"s": pd.DataFrame({"type": ["T"] * 4, "ts": [1, 2, 3, 4], "g": ["x", "y", "x", "y"], "v": [1, 2, 3, 4]})}),
    ("SELECT a[v], PREV(a.v) AS p, NEXT(a.v) AS n FROM s1, s2 WHERE (s1 OR s2) AS a ORDER BY ts",
     {"s1": pd.DataFrame({"ts": [1, 2, 3], "v": [10, 20, 30]}),
      "s2": pd.DataFrame({"ts": [2, 3, 3], "v": [200, 300, 301]})}),
    # many partitions, ties in ts, NULL values: every event with its neighbours, and a rise then a fall
    ("SELECT a[k, ts, v], PREV(a.v) AS p, PREV(a.v, 3) AS p3, NEXT(a.v) AS n FROM r WHERE (A OR B) AS a "
     "PARTITION BY k ORDER BY ts", {"r": R}),
    ("SELECT MAX a[ts], b[ts] FROM r WHERE (A:+ AS a FILTER a[v >= PREV(v)]) : B AS b FILTER b[v < PREV(v)] "
     "PARTITION BY k ORDER BY ts", {"r": R}),
    ("SELECT a[ts], b[ts] FROM r WHERE A AS a ; B AS b FILTER b.v > NEXT(a.v, 2) ORDER BY ts WITHIN 4 EVENTS",
     {"r": R}),
    ("SELECT PREV(a.v), a.v - prev(a.v, 2), sum(b.v) - sum(PREV(b.v)) AS rise FROM s WHERE T AS a ; T+ AS b "
     "ORDER BY ts WITHIN 3 EVENTS", {"s": S}),
]


@pytest.mark.parametrize("query, tables", CASES)
def test_spark_equals_the_local_engine(spark, query, tables):
    frames = {name: spark.createDataFrame(t) for name, t in tables.items()}
    got = cerql.cer_sql(spark, query, **frames)
    want = cerql.run(query, dict(tables))
    assert len(want) > 0
    assert list(got.columns) == list(want.columns)
    assert canonical_rows(spark_records(got)) == canonical_rows(local_records(want))


def test_rows_in_no_substream_are_no_neighbours(spark):
    """A NULL ordering value or partition key: in no substream, nobody's PREV, on Spark too."""
    import pyarrow as pa

    table = pa.table({"type": ["T"] * 5, "ts": pa.array([1, None, 2, 3, 4], pa.int64()),
                      "k": ["x", "x", None, "x", "x"], "v": [1, 50, 60, 2, 3]})
    frame = spark.createDataFrame([tuple(r.values()) for r in table.to_pylist()],
                                  "type string, ts bigint, k string, v bigint")
    query = "SELECT a[ts], PREV(a.v) AS p, NEXT(a.v) AS n FROM s WHERE T AS a PARTITION BY k ORDER BY ts"
    records = spark_records(cerql.cer_sql(spark, query, s=frame))
    assert canonical_rows(records) == canonical_rows(local_records(cerql.run(query, {"s": table})))
    assert sorted((r["a"]["ts"], r["p"], r["n"]) for r in records) == [(1, None, 2), (3, 1, 3), (4, 2, None)]


N = pd.DataFrame({"type": ["T"] * 6, "ts": [1, 2, 3, 4, 5, 6], "name": ["a", "a", "b", "c", "c", "a"]})


def test_a_spark_only_function_of_a_navigated_column(spark):
    """In brackets Spark evaluates it after navigation; across variables it would be a column
    derived per source before navigation, and is refused."""
    frame = spark.createDataFrame(N)
    query = "SELECT a[ts] FROM s WHERE T AS a FILTER a[{}] ORDER BY ts"
    got = cerql.cer_sql(spark, query.format("md5(PREV(name)) = md5(name)"), s=frame)
    want = cerql.run(query.format("PREV(name) = name"), {"s": N})
    on_spark = sorted(r["a"]["ts"] for r in spark_records(got))
    assert on_spark == sorted(r["a"]["ts"] for r in local_records(want)) == [2, 5]
    cross = "SELECT * FROM s WHERE T AS a ; T AS b FILTER soundex(PREV(b.name)) = soundex(a.name) ORDER BY ts"
    with pytest.raises(CeqlError) as err:
        cerql.cer_sql(spark, cross, s=frame)
    assert err.value.error_class == "NAVIGATION_NOT_SUPPORTED"
    assert err.value.column == cross.index("PREV") + 1


def test_spark_connect(connect):
    query, tables = CASES[2]
    got = cerql.cer_sql(connect, query, s=connect.createDataFrame(tables["s"]))
    assert canonical_rows(spark_records(got)) == canonical_rows(local_records(cerql.run(query, dict(tables))))


def test_explain_on_spark_shows_the_navigation(spark):
    query = "SELECT * FROM s WHERE T AS a FILTER a[v > PREV(v)] PARTITION BY k ORDER BY ts"
    text = cerql.explain(query, spark, s=spark.createDataFrame(P))
    assert "row navigation: __cerql_d0 = PREV(v)" in text
    assert "Window [lag(" in text


def test_a_stream_refuses_navigation(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    instants = pd.to_datetime(P["ts"], unit="s").astype("datetime64[us]").dt.tz_localize("UTC")
    P.assign(ts=instants).to_parquet(folder / "part0.parquet")
    frame = spark.readStream.schema(spark.read.parquet(str(folder)).schema).parquet(str(folder))
    frame = frame.withWatermark("ts", "2 seconds")
    query = "SELECT * FROM s WHERE T AS a ; T AS b FILTER b[v > PREV(v)] ORDER BY ts WITHIN 5 SECONDS"
    old = spark.conf.get(STATE_STORE_CONF, None)
    spark.conf.set(STATE_STORE_CONF, ROCKSDB)
    try:
        with pytest.raises(CeqlError) as err:
            cerql.cer_sql(spark, query, s=frame)
    finally:
        if old is None:
            spark.conf.unset(STATE_STORE_CONF)
        else:
            spark.conf.set(STATE_STORE_CONF, old)
    assert err.value.error_class == "NAVIGATION_ON_STREAM"
    assert err.value.column == query.index("PREV") + 1 and err.value.hint


def test_the_table_function_refuses_navigation(spark):
    from cerql.spark.sql_cells import register

    register(spark)
    spark.createDataFrame(S).createOrReplaceTempView("nav_s")
    query = "SELECT * FROM s WHERE T AS a FILTER a[v > PREV(v)] ORDER BY ts"
    with pytest.raises(Exception, match="NAVIGATION_IN_TABLE_FUNCTION"):
        spark.sql("SELECT * FROM cerql(TABLE(nav_s), :q)", args={"q": query}).collect()
