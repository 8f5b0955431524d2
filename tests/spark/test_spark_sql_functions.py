"""Spark SQL in full where Spark evaluates it: unary FILTER predicates and SELECT items.

Spark computes the condition bits and the SELECT items itself, so there any deterministic
built-in scalar function works, also those cerql's local engine does not have (hour,
startswith, date_format, size(b), b[0].price, ...). Each query is checked against the same
query on the local engine with the function's value precomputed as a column in pandas, so the
expected matches come from the engine that the differential tests check against the reference.
Errors: Spark's analyzer checks these expressions before any job, with the query's position.
"""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql.errors import AnalysisError, UnsupportedError

from tests.spark.compare import canonical_rows, local_records, spark_records

pytestmark = pytest.mark.spark

TS = pd.to_datetime(["2024-01-01 09:59", "2024-01-01 10:05", "2024-01-02 11:00", "2024-01-06 11:30",
                     "2024-01-07 10:40", "2024-01-08 12:00", "2024-01-08 12:01"])
STREAM = pd.DataFrame({
    "type": ["A", "B", "A", "B", "B", "A", "B"],
    "ts": TS,
    "x": [1.0, 2.5, 3.0, 4.0, -5.0, 100.0, 1000.0],
    "name": ["MSFT", "INTC", "IBM", "AMZN", "ORCL", "MSFT", "INTC"],
    "k": ["u", "u", "v", "u", "v", "u", "u"],
})
# each Spark SQL predicate, and the same condition on a column pandas computed
DERIVED = {
    "h": TS.hour,
    "dow": (TS.dayofweek + 1) % 7 + 1,   # Spark's dayofweek: Sunday = 1
    "lg": STREAM["x"].where(STREAM["x"] > 0).map(lambda v: __import__("math").log10(v)),
    "i_name": STREAM["name"].str.startswith("I"),
    "two": STREAM["name"].str[:2],
    "hm": TS.strftime("%H:%M"),
}
CASES = [
    ("a[hour(ts) IN (9, 12)]", "a[h IN (9, 12)]"),
    ("a[dayofweek(ts) IN (2, 3)] AND b[startswith(name, 'I')]", "a[dow IN (2, 3)] AND b[i_name]"),
    ("b[log10(x) >= 0.5]", "b[lg >= 0.5]"),
    ("a[substring(name, 1, 2) = 'MS'] AND b[date_format(ts, 'HH:mm') > '10:30']", "a[two = 'MS'] AND b[hm > '10:30']"),
    ("a[ts >= TIMESTAMP '2024-01-02 00:00:00'] AND b[greatest(x, 3) = 3]", "a[ts >= '2024-01-02 00:00:00'] AND b[x <= 3]"),
    ("a[concat(name, '!') = 'MSFT!'] AND b.x > a.x", "a[name = 'MSFT'] AND b.x > a.x"),
]


@pytest.fixture(scope="module")
def frames(spark):
    derived = STREAM.assign(**DERIVED)
    return spark.createDataFrame(STREAM), derived


@pytest.mark.parametrize("spark_filter,local_filter", CASES)
def test_spark_functions_in_filters_match_precomputed_columns(spark, frames, spark_filter, local_filter):
    df, derived = frames
    query = "SELECT a, b FROM s WHERE A AS a ; B AS b FILTER {} PARTITION BY k WITHIN 7 DAYS"
    got = cerql.cer_sql(spark, query.format(spark_filter), s=df)
    want = cerql.run(query.format(local_filter), {"s": derived})
    assert len(want) > 0
    drop = ("match_id", "a", "b")  # the derived columns are not in the Spark stream's structs
    assert canonical_rows(spark_records(got), drop) == canonical_rows(local_records(want), drop)
    # the matched events themselves, by their timestamps
    pairs = lambda records: sorted((r["a"]["ts"], r["b"]["ts"]) for r in records)  # noqa: E731
    assert pairs(spark_records(got)) == [(a.to_pydatetime(), b.to_pydatetime())
                                         for a, b in pairs(local_records(want))]


def test_select_items_read_the_match(spark, frames):
    """size(b), b[0].x, element_at(b, -1).ts, match_end - match_start, a PARTITION BY column,
    struct fields of a single-event variable, each with Spark's type."""
    df, _ = frames
    query = ("SELECT size(b) AS n, b[0].x AS first_x, element_at(b, -1).ts AS last_ts, "
             "match_end - match_start AS took, upper(k) AS kk, k, hour(a.ts) AS h, a.name "
             "FROM s WHERE A AS a ; B+ AS b FILTER a[name = 'MSFT'] PARTITION BY k WITHIN 1 DAY")
    got = cerql.cer_sql(spark, query, s=df)
    types = {f.name: f.dataType.simpleString() for f in got.schema.fields}
    assert types["n"] == "int" and types["first_x"] == "double" and types["last_ts"] == "timestamp"
    assert types["took"] == "interval day to second" and types["h"] == "int"
    assert list(got.columns) == ["k", "match_id", "match_start", "match_end", "n", "first_x", "last_ts", "took",
                                 "kk", "h", "name"]
    rows = sorted((r.n, r.first_x, r.last_ts, r.took.total_seconds(), r.kk, r.h, r.name) for r in got.collect())
    # MSFT at 2024-01-01 09:59 then B+ within a day: {10:05}; MSFT at 2024-01-08 12:00: {12:01}
    assert rows == [
        (1, 2.5, TS[1].to_pydatetime(), 6 * 60.0, "U", 9, "MSFT"),
        (1, 1000.0, TS[6].to_pydatetime(), 60.0, "U", 12, "MSFT"),
    ]


def test_select_of_result_columns_agrees_with_the_local_engine(spark, frames):
    df, _ = frames
    query = ("SELECT match_start AS s0, k AS key, a.x * 2 + 1 AS y, b FROM s WHERE A AS a ; B AS b "
             "PARTITION BY k ORDER BY ts WITHIN 3 DAYS")
    got = cerql.cer_sql(spark, query, s=df)
    want = cerql.run(query, {"s": STREAM})
    assert len(want) == 2
    assert canonical_rows(spark_records(got)) == canonical_rows(local_records(want))


@pytest.mark.parametrize("fragment,error_class,at", [
    ("FILTER a[x + array(1) > 0]", "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES", "x + array"),
    ("FILTER a[soundex(name)]", "NON_BOOLEAN_FILTER", "soundex"),
    ("FILTER a[hour(x) = 1]", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", "x) = 1"),
])
def test_spark_analyzer_errors_point_at_the_expression(spark, frames, fragment, error_class, at):
    df, _ = frames
    query = f"SELECT * FROM s WHERE A AS a ; B AS b {fragment}"
    with pytest.raises(AnalysisError) as err:
        cerql.cer_sql(spark, query, s=df)
    assert err.value.error_class == error_class
    assert err.value.column == query.index(at) + 1
    assert "__cerql" not in str(err.value)  # hidden names are shown as the user's


def test_select_item_errors_before_any_job(spark, frames):
    df, _ = frames
    query = "SELECT size(a) AS n FROM s WHERE A AS a ; B AS b"
    with pytest.raises(AnalysisError) as err:
        cerql.cer_sql(spark, query, s=df)
    assert err.value.error_class.startswith("DATATYPE_MISMATCH")
    assert err.value.column == query.index("size") + 1
    assert "`a`" in str(err.value) or " a" in str(err.value)


def test_udfs_and_unknown_functions_are_refused(spark, frames):
    df, _ = frames
    spark.udf.register("cerql_test_udf", lambda v: v, "double")
    for query in ("SELECT * FROM s WHERE A AS a ; B AS b FILTER a[cerql_test_udf(x) > 0]",
                  "SELECT cerql_test_udf(a.x) AS y FROM s WHERE A AS a ; B AS b",
                  "SELECT * FROM s WHERE A AS a ; B AS b FILTER a[no_such_function(x) > 0]"):
        with pytest.raises(UnsupportedError) as err:
            cerql.cer_sql(spark, query, s=df)
        assert err.value.error_class == "USER_FUNCTION_NOT_ALLOWED"
        assert err.value.column == query.index("_function" if "no_such" in query else "cerql_test_udf") + 1 - (
            len("no_such") if "no_such" in query else 0)


@pytest.mark.parametrize("query", [
    "SELECT * FROM s WHERE A AS a ; B AS b FILTER a[soundex(name) = 'M200']",
    "SELECT * FROM s WHERE A AS a ; B AS b FILTER soundex(a.name) = soundex(b.name)",
    "SELECT size(b) AS n FROM s WHERE A AS a ; B+ AS b",
    "SELECT b[0].x AS n FROM s WHERE A AS a ; B+ AS b",
])
def test_the_local_engine_refuses_what_only_spark_runs(query):
    with pytest.raises(UnsupportedError) as err:
        cerql.run(query, {"s": STREAM})
    assert err.value.error_class == "UNSUPPORTED_EXPRESSION"


# -- FILTER across variables: Spark-only functions of one variable become derived columns.
# Functions the local engine does not run; the expected rows come from the local engine over
# the same functions' values, computed by Spark as plain columns.
CROSS_CASES = [
    ("soundex(a.name) < soundex(b.name)", "a.sx < b.sx"),
    ("levenshtein(b.name, 'INTC') <= 2 AND b.x > a.x", "b.lev <= 2 AND b.x > a.x"),
    ("crc32(b.name) % 3 >= crc32(a.name) % 3", "b.c3 >= a.c3"),
]
SPARK_COLUMNS = ("soundex(name) AS sx", "levenshtein(name, 'INTC') AS lev", "crc32(name) % 3 AS c3")


@pytest.mark.parametrize("spark_filter,local_filter", CROSS_CASES)
def test_spark_functions_across_variables(spark, frames, spark_filter, local_filter):
    df, _ = frames
    computed = df.selectExpr("*", *SPARK_COLUMNS).toPandas()
    query = "SELECT a, b FROM s WHERE A AS a ; B+ AS b FILTER {} PARTITION BY k WITHIN 7 DAYS"
    got = spark_records(cerql.cer_sql(spark, query.format(spark_filter), s=df))
    want = local_records(cerql.run(query.format(local_filter), {"s": computed}))
    assert len(want) > 0
    key = lambda r: (r["match_start"], r["match_end"], tuple(e["ts"] for e in r["b"]))  # noqa: E731
    assert sorted(map(key, got)) == sorted((pd.Timestamp(s).to_pydatetime(), pd.Timestamp(e).to_pydatetime(),
                                            tuple(pd.Timestamp(t).to_pydatetime() for t in ts))
                                           for s, e, ts in map(key, want))
    # the derived columns never show in the results
    assert all(sorted(r["a"]) == sorted(STREAM.columns) for r in got)


def test_an_equality_of_derived_columns_is_a_hidden_partition_key(spark, frames):
    from cerql.spark.session import plan_query

    df, _ = frames
    query = "SELECT * FROM s WHERE A AS a ; B AS b FILTER soundex(a.name) = soundex(b.name)"
    _, plan, _ = plan_query(spark, query, {"s": df})
    assert plan.join_columns == ("__cerql_d0",)


def test_a_spark_only_function_over_two_variables_is_refused(spark, frames):
    df, _ = frames
    query = "SELECT * FROM s WHERE A AS a ; B AS b FILTER levenshtein(b.name, a.name) < 2"
    with pytest.raises(UnsupportedError) as err:
        cerql.cer_sql(spark, query, s=df)
    assert err.value.error_class == "UNSUPPORTED_EXPRESSION"
    assert err.value.column == query.index("levenshtein") + 1
    assert "__cerql" not in str(err.value)


def test_on_spark_connect(connect):
    """The same through a Spark Connect session: the analyzer's errors (analysis is lazy there)
    and the Spark-only functions, in brackets, across variables and in SELECT."""
    df = connect.createDataFrame(STREAM)
    query = ("SELECT size(b) AS n, element_at(b, -1).x AS last_x FROM s WHERE A AS a ; B+ AS b "
             "FILTER a[soundex(name) = 'M213'] AND levenshtein(b.name, 'INTC') <= 2 PARTITION BY k WITHIN 1 DAY")
    rows = sorted((r.n, r.last_x) for r in cerql.cer_sql(connect, query, s=df).collect())
    assert rows == [(1, 2.5), (1, 1000.0)]
    with pytest.raises(AnalysisError) as err:
        cerql.cer_sql(connect, "SELECT * FROM s WHERE A AS a ; B AS b FILTER a[soundex(x) + array(1) > 0]", s=df)
    assert err.value.error_class.startswith("DATATYPE_MISMATCH")


def test_predicates_across_variables_read_the_session_time_zone(spark, frames):
    """``hour(b.ts) < 12`` across variables runs in Python inside the task; in a bracket Spark
    runs it on the JVM. Both read times in the session's zone (here not UTC): same rows."""
    df, _ = frames
    query = "SELECT a, b FROM s WHERE A AS a ; B AS b FILTER {} WITHIN 7 DAYS"
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        in_python = spark_records(cerql.cer_sql(spark, query.format("hour(b.ts) < 6 AND b.x > a.x"), s=df))
        on_jvm = spark_records(cerql.cer_sql(spark, query.format("b[hour(ts) < 6] AND b.x > a.x"), s=df))
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert len(on_jvm) > 0
    assert canonical_rows(in_python) == canonical_rows(on_jvm)


def test_log10_and_log2_are_sparks_own(spark, frames):
    """sqlglot reads log10(x) as log(10, x), which Spark computes as ln(x) / ln(10)
    (2.9999999999999996 for 1000): cerql sends Spark's log10 and log2 themselves."""
    df, _ = frames
    query = ("SELECT log10(b.x) AS l10, log2(b.x * 1.024) AS l2 FROM s WHERE A AS a ; B AS b "
             "FILTER a[log10(x) = 2] AND b[log10(x) = 3]")
    rows = [(r.l10, r.l2) for r in cerql.cer_sql(spark, query, s=df).collect()]
    assert rows == [(3.0, 10.0)]
    # log(10, x) as written is Spark's log(base, x): ln(x) / ln(10), as spark.sql computes it
    written = cerql.cer_sql(spark, query.replace("log10(b.x)", "log(10, b.x)"), s=df).collect()
    assert [r.l10 for r in written] == [spark.sql("SELECT log(10, 1000D) AS v").first().v]


def test_a_whole_variable_never_shows_derived_columns(spark, frames):
    df, _ = frames
    query = ("SELECT b[0] AS first FROM s WHERE A AS a ; B+ AS b "
             "FILTER soundex(a.name) > soundex(b.name) PARTITION BY k WITHIN 1 DAY")
    got = cerql.cer_sql(spark, query, s=df)
    assert [f.name for f in got.schema["first"].dataType.fields] == list(STREAM.columns)
    assert got.count() > 0


def test_aggregates_of_expressions(spark, frames):
    """sum(b.x * 2), max(hour(b.ts)): the same rows as cerql.run; max(levenshtein(...)), which
    only Spark runs, equal to the aggregate of the function's values computed as a column."""
    df, _ = frames
    query = ("SELECT sum(b.x * 2) AS t, max(hour(b.ts)) AS h, count(b) AS n FROM s WHERE A AS a ; B+ AS b "
             "FILTER sum(b.x * 2) > 5 PARTITION BY k WITHIN 7 DAYS")
    got = spark_records(cerql.cer_sql(spark, query, s=df))
    want = local_records(cerql.run(query, {"s": STREAM}))
    assert len(want) > 0
    assert canonical_rows(got) == canonical_rows(want)
    spark_only = ("SELECT max(levenshtein(b.name, 'INTC')) AS lev FROM s WHERE A AS a ; B+ AS b "
                  "PARTITION BY k WITHIN 7 DAYS")
    computed = df.selectExpr("*", *SPARK_COLUMNS).toPandas()
    got = spark_records(cerql.cer_sql(spark, spark_only, s=df))
    want = local_records(cerql.run(spark_only.replace("levenshtein(b.name, 'INTC')", "b.lev"), {"s": computed}))
    assert canonical_rows(got) == canonical_rows(want)
