"""The Spark surfaces (docs/semantics.md, "On Spark"): ``spark.cer_sql`` on classic and Connect sessions,
``cerql.cer_sql``, sources by keyword, temp view and catalog name, CREATE TEMP VIEW, the
maxMatchesPerEvent guard, ``cerql.explain`` with a session, and query errors raised before Spark
runs anything."""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql.spark.patch import _method, _patch
from cerql.spark.task_errors import task_error
from tests.spark.compare import canonical_rows, local_records, raises_before_any_job, spark_records

pytestmark = pytest.mark.spark

STOCK = pd.DataFrame({
    "type": ["SELL", "BUY", "BUY", "SELL", "BUY", "SELL", "BUY"],
    "name": ["MSFT", "MSFT", "INTC", "INTC", "MSFT", "MSFT", "INTC"],
    "ts": pd.to_datetime(["2024-03-01 09:30:00", "2024-03-01 09:30:05", "2024-03-01 09:30:06",
                          "2024-03-01 09:30:07", "2024-03-01 09:30:30", "2024-03-01 09:31:50",
                          "2024-03-01 09:31:55"]),
    "price": [101.0, 102.0, 47.0, 48.0, 100.0, 99.0, 50.0],
})
QUERY = "SELECT * FROM stock WHERE SELL AS s ; BUY+ AS b PARTITION BY [name] WITHIN 1 MINUTE"


@pytest.fixture(scope="module")
def stock(spark):
    df = spark.createDataFrame(STOCK).coalesce(1)
    df.createOrReplaceTempView("stock")
    yield df
    spark.catalog.dropTempView("stock")


def expected(query=QUERY, **tables):
    return local_records(cerql.run(query, {"stock": STOCK, **tables}))


def test_import_adds_cer_sql_to_both_session_classes():
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert SparkSession.cer_sql is _method
    assert ConnectSession.cer_sql is _method
    assert not issubclass(ConnectSession, SparkSession)  # why both are patched


def test_install_keeps_an_existing_cer_sql():
    class Session:
        def cer_sql(self):
            return "theirs"


    _patch(Session)
    assert Session().cer_sql() == "theirs"


def test_spark_cer_sql_reads_a_temp_view_and_equals_local(spark, stock):
    got = spark_records(spark.cer_sql(QUERY))
    assert canonical_rows(got, drop=()) == canonical_rows(expected(), drop=())
    assert len(got) == 3


def test_run_given_a_spark_dataframe_points_to_cer_sql(spark, stock):
    with pytest.raises(cerql.UnsupportedError, match="Table 'stock' is a DataFrame") as err:
        cerql.run(QUERY, {"stock": stock})
    assert err.value.error_class == "UNSUPPORTED_TABLE" and err.value.column == 15
    assert "cerql.cer_sql(spark, query, stock=df)" in err.value.hint


def test_keyword_dataframe_shadows_the_table(spark, stock):
    only_msft = STOCK[STOCK.name == "MSFT"].reset_index(drop=True)
    got = spark_records(cerql.cer_sql(spark, QUERY, STOCK=spark.createDataFrame(only_msft).coalesce(1)))
    want = local_records(cerql.run(QUERY, {"stock": only_msft}))
    assert canonical_rows(got, drop=()) == canonical_rows(want, drop=())
    assert {r["name"] for r in got} == {"MSFT"}


def test_catalog_name_with_database(spark, stock, tmp_path):
    spark.sql("CREATE DATABASE IF NOT EXISTS cerql_db")
    try:
        spark.sql(f"CREATE TABLE cerql_db.trades USING parquet LOCATION '{tmp_path}/t' AS SELECT * FROM stock")
        query = QUERY.replace("FROM stock", "FROM cerql_db.trades")
        got = spark_records(spark.cer_sql(query))
        assert canonical_rows(got) == canonical_rows(expected())
    finally:
        spark.sql("DROP DATABASE IF EXISTS cerql_db CASCADE")


def test_create_temp_view_registers_the_result(spark, stock):
    out = spark.cer_sql("CREATE TEMP VIEW cerql_runs AS " + QUERY)
    try:
        assert out.columns == [] and out.collect() == []
        assert spark.sql("SELECT count(*) AS n FROM cerql_runs").first().n == 3
        with pytest.raises(cerql.AnalysisError) as err:
            spark.cer_sql("CREATE TEMP VIEW cerql_runs AS " + QUERY)
        assert err.value.error_class == "VIEW_EXISTS"
        spark.cer_sql("CREATE OR REPLACE TEMP VIEW cerql_runs AS " + QUERY + " LIMIT 1")
        assert spark.table("cerql_runs").count() == 1
        # a view of results is itself a source: the match_end of each run, one per name
        again = spark.cer_sql("SELECT * FROM cerql_runs WHERE cerql_runs AS r ORDER BY match_end").collect()
        assert len(again) == 1
    finally:
        spark.catalog.dropTempView("cerql_runs")


def test_connect_session_gives_the_same_rows(connect, stock):
    connect.createDataFrame(STOCK).coalesce(1).createOrReplaceTempView("stock")
    got = spark_records(connect.cer_sql(QUERY))
    assert canonical_rows(got, drop=()) == canonical_rows(expected(), drop=())
    connect.cer_sql("CREATE OR REPLACE TEMP VIEW cerql_c AS " + QUERY)
    assert connect.table("cerql_c").count() == 3
    assert "MapInArrow" in cerql.explain(QUERY, connect)


@pytest.mark.parametrize("query, error_class, column", [
    ("SELECT * FROM nowhere WHERE SELL AS s", "UNKNOWN_SOURCE", 15),
    ("SELECT * FROM stock WHERE SELL AS s FILTER s[colour = 'red']", "UNKNOWN_COLUMN", 46),
    ("SELECT * FROM stock WHERE SELL AS s FILTER s[price + 1]", "NON_BOOLEAN_FILTER", 46),
    ("SELECT * FROM stock WHERE SELL AS s WITHIN 3 SECONDS [price]", "WINDOW_NEEDS_TIME", 44),
    ("SELECT * FROM stock WHERE SELL AS s FILTER s[name > 3]", "TYPE_MISMATCH", 46),
    ("SELECT * FROM stock WHERE (SELL AS s ; BUY AS b FILTER b.price > c.price)+", "UNBOUND_FILTER_VARIABLE", 66),
])
def test_query_errors_come_before_spark_runs(spark, stock, query, error_class, column):
    raises_before_any_job(spark, query, error_class, column)


def test_max_matches_per_event_conf_fails_the_run(spark):
    rows = pd.DataFrame({"type": ["A"] * 30 + ["B"], "ts": range(31)})
    query = "SELECT * FROM s WHERE A+ AS a ; B AS b ORDER BY ts"
    spark.conf.set("cerql.maxMatchesPerEvent", "1000")
    try:
        df = cerql.cer_sql(spark, query, s=spark.createDataFrame(rows))
        with pytest.raises(Exception, match="maxMatchesPerEvent") as failure:
            df.collect()
        cause = task_error(failure.value)
        assert isinstance(cause, cerql.ExecutionError)
        assert cause.error_class == "TOO_MANY_MATCHES_PER_EVENT"
        assert "cerql.maxMatchesPerEvent" in cause.hint
    finally:
        spark.conf.unset("cerql.maxMatchesPerEvent")
    assert cerql.cer_sql(spark, query.replace("A+", "A"), s=spark.createDataFrame(rows)).count() == 30


@pytest.mark.parametrize("f, error_class", [("sum(a.x) > 5", "TOO_MANY_RUNS_PER_EVENT"),
                                            ("sum(a.big) > 5", "ARITHMETIC_OVERFLOW")])
def test_register_guards_fail_the_run_with_their_class(spark, f, error_class):
    """Issue 15: register runs that cannot meet (a sum over A+ of values of both signs, 2**12
    distinct sums) fail the Spark job as they fail cerql.run; so does an integer sum past BIGINT."""
    rows = pd.DataFrame({"type": ["A"] * 12 + ["B"], "x": [(-2) ** i for i in range(12)] + [0],
                         "big": [2 ** 62] * 12 + [0], "ts": range(13)})
    query = f"SELECT ANY count(a) AS n FROM s WHERE A+ AS a ; B FILTER {f} ORDER BY ts"
    spark.conf.set("cerql.maxMatchesPerEvent", "1000")
    try:
        df = cerql.cer_sql(spark, query, s=spark.createDataFrame(rows))
        with pytest.raises(Exception, match=error_class) as failure:
            df.collect()
        cause = task_error(failure.value)
        assert isinstance(cause, cerql.ExecutionError) and cause.error_class == error_class
    finally:
        spark.conf.unset("cerql.maxMatchesPerEvent")
    with pytest.raises(cerql.CeqlError) as local:
        cerql.run(query, {"s": rows}, max_matches_per_event=1000)
    assert local.value.error_class == error_class


def test_sum_of_non_negative_values_meets_on_spark_as_locally(spark):
    """The same sum over non-negative values: the input's minimum, NaN count and total, one
    broadcast row, tell each task the sum rises, so its runs meet and it answers as cerql.run."""
    x = [2 ** i for i in range(30)]
    rows = pd.DataFrame({"type": ["A"] * 30 + ["B"], "x": x + [0], "ts": range(31)})
    query = "SELECT ANY count(a) AS n FROM s WHERE A+ AS a ; B FILTER sum(a.x) > 5 ORDER BY ts"
    spark.conf.set("cerql.maxMatchesPerEvent", "1000")
    try:
        got = spark_records(cerql.cer_sql(spark, query, s=spark.createDataFrame(rows)))
    finally:
        spark.conf.unset("cerql.maxMatchesPerEvent")
    want = local_records(cerql.run(query, {"s": rows}, max_matches_per_event=1000))
    assert canonical_rows(got) == canonical_rows(want) and len(got) == 1


def test_task_error_is_none_for_other_failures():
    assert task_error(RuntimeError("boom")) is None


def test_explain_with_spark_shows_bits_pruning_and_plan(spark, stock):
    text = cerql.explain(QUERY + " ", spark)
    assert "automaton:" in text
    assert "bit 0: atom SELL" in text and "bit 1: atom BUY" in text
    assert "partition by: name" in text
    assert "all bits of one of {bit 0} or {bit 1}" in text  # SELL or BUY: no FILTER here
    assert "MapInArrow" in text and "Exchange hashpartitioning" in text


def test_timestamp_ntz_ordering_column_and_time_window(spark):
    frame = spark.createDataFrame(STOCK).selectExpr("type", "name", "CAST(ts AS TIMESTAMP_NTZ) AS ts",
                                                    "price").coalesce(1)
    assert dict(frame.dtypes)["ts"] == "timestamp_ntz"
    got = spark_records(cerql.cer_sql(spark, QUERY, stock=frame))
    assert canonical_rows(got, drop=()) == canonical_rows(expected(), drop=())
    assert len(got) == 3


def test_a_column_arrow_cannot_carry_is_an_error_naming_it(spark, stock):
    frame = spark.sql("SELECT *, make_interval(0, 0, 0, 1) AS gap FROM stock")
    with pytest.raises(cerql.UnsupportedError) as err:
        cerql.cer_sql(spark, QUERY, stock=frame)
    assert err.value.error_class == "UNSUPPORTED_COLUMN_TYPE"
    # SELECT * shows every column: the error is at the star (a query that reads no such column
    # runs without it: tests/spark/test_column_types_spark.py)
    assert "'gap'" in str(err.value) and (err.value.line, err.value.column) == (1, 8)
