"""Column types, function names and query text on Spark as in the local engines (issue 38,
items 6 and 7): each test is the issue's reproduction on ``cer_sql``, beside the local
engines' answer (tests/exec/test_column_types.py, tests/parser/test_variable_substitution.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cerql
from cerql.errors import CeqlError, UnsupportedError
from tests.spark.compare import canonical_rows, local_records, spark_records

pytestmark = pytest.mark.spark

PARTITIONED = "SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [k] ORDER BY ts"
BASE = {"type": ["A", "B", "A", "B", "B"], "ts": [0, 1, 2, 3, 4]}


@pytest.mark.parametrize("key", [pd.Categorical(["x", "x", "y", "y", "x"]),
                                 np.array([1.5, 1.5, 2, 2, 1.5], dtype=np.float16)], ids=["category", "float16"])
def test_key_typed_as_create_dataframe_reads_it(spark, key):
    """A pandas category key (a string column to Spark) and a float16 key (DOUBLE) give the
    local engines' rows."""
    frame = pd.DataFrame(dict(BASE, k=key))
    on_spark = cerql.cer_sql(spark, PARTITIONED, s=spark.createDataFrame(frame))
    local = cerql.run(PARTITIONED, {"s": frame})
    assert len(local) == 3
    assert canonical_rows(spark_records(on_spark)) == canonical_rows(local_records(local))


@pytest.mark.parametrize("key", ["array(x)", "map('a', x)", "named_struct('a', x)"], ids=["array", "map", "struct"])
def test_nested_partition_key_is_refused_before_any_job(spark, key):
    """An array key used to pass analysis and fail inside the task (not_equal has no kernel for
    list), a map key failed in Spark's sort: both, and a struct, are UNSUPPORTED_PARTITION_KEY
    naming the column, from cer_sql itself, as locally."""
    df = spark.sql(f"SELECT type, ts, {key} AS k FROM VALUES ('A', 0, 1), ('B', 1, 1), ('A', 2, 2) AS t(type, ts, x)")
    with pytest.raises(UnsupportedError) as err:
        cerql.cer_sql(spark, PARTITIONED, s=df)
    assert err.value.error_class == "UNSUPPORTED_PARTITION_KEY"
    assert "'k'" in err.value.message
    assert (err.value.line, err.value.column) == (1, PARTITIONED.index("[k]") + 2)


@pytest.mark.parametrize("name", ["ab\\", "up*", "upper|lower", "it's"])
def test_backquoted_function_name_is_refused_not_a_parse_exception(spark, name):
    """``SELECT `ab\\`(a.x)`` reached Spark as a broken SHOW SYSTEM FUNCTIONS statement (a raw
    ParseException); a name that is no built-in is USER_FUNCTION_NOT_ALLOWED at the call, and a
    LIKE wildcard in it matches nothing."""
    df = spark.sql("SELECT * FROM VALUES ('A', 0, 1), ('B', 1, 2) AS t(type, ts, x)")
    quoted = "`" + name.replace("`", "``") + "`"
    query = f"SELECT {quoted}(a.x) AS y FROM s WHERE A AS a ; B AS b ORDER BY ts"
    with pytest.raises(UnsupportedError) as err:
        cerql.cer_sql(spark, query, s=df)
    assert err.value.error_class == "USER_FUNCTION_NOT_ALLOWED"
    assert err.value.column == query.index(quoted) + 1


def test_backquoted_builtin_operator_name_runs(spark):
    """A built-in named by symbols (```+`(a.x, 1)``) is found in Spark's list and runs."""
    df = spark.sql("SELECT * FROM VALUES ('A', 0, 1), ('B', 1, 2) AS t(type, ts, x)")
    out = cerql.cer_sql(spark, "SELECT `+`(a.x, 1) AS y FROM s WHERE A AS a ; B AS b ORDER BY ts", s=df)
    assert [r["y"] for r in out.collect()] == [2]


def test_variable_reference_is_refused_as_locally(spark):
    """Spark substituted ``${x}`` from the session's conf (3 matches; cerql.run kept the text: 0):
    cer_sql now refuses it as cerql.run does."""
    spark.conf.set("x", "A")
    try:
        df = spark.createDataFrame(pd.DataFrame({"type": ["A", "B", "A", "B"], "ts": [0, 1, 2, 3]}))
        query = "SELECT * FROM s WHERE A AS a ; B AS b FILTER a[type = '${x}'] ORDER BY ts"
        with pytest.raises(CeqlError) as err:
            cerql.cer_sql(spark, query, s=df)
        assert err.value.error_class == "VARIABLE_SUBSTITUTION_NOT_SUPPORTED"
        assert err.value.column == query.index("${") + 1
    finally:
        spark.conf.unset("x")


YEAR_MONTH = ("SELECT *, INTERVAL '1' YEAR AS iv FROM VALUES ('A', 0, 1), ('B', 1, 2), ('A', 2, 3), ('B', 3, 4) "
              "AS t(type, ts, x)")


@pytest.mark.parametrize("query", [
    "SELECT a.x FROM s WHERE A AS a ; B AS b ORDER BY ts",
    "SELECT a[x, ts], b[ts] FROM s WHERE A AS a ; B AS b FILTER a[x > 0] ORDER BY ts",
    "SELECT sum(b.x) AS n FROM s WHERE A AS a ; B+ AS b FILTER b.x > a.x ORDER BY ts WITHIN 5 [ts]",
])
def test_year_month_interval_column_no_query_reads_is_left_out(spark, query):
    """A year-month interval column (which Arrow cannot carry) failed every query on its source;
    a query that does not read it runs, as over the source without it."""
    df = spark.sql(YEAR_MONTH)
    got = canonical_rows(spark_records(cerql.cer_sql(spark, query, s=df)))
    assert got == canonical_rows(spark_records(cerql.cer_sql(spark, query, s=df.drop("iv"))))
    assert sum(got.values()) > 0


@pytest.mark.parametrize("query, at", [
    ("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", "*"),
    ("SELECT a, b[ts] FROM s WHERE A AS a ; B AS b ORDER BY ts", "a,"),
    ("SELECT a.iv FROM s WHERE A AS a ; B AS b ORDER BY ts", "iv"),
    ("SELECT a[iv] FROM s WHERE A AS a ; B AS b ORDER BY ts", "iv"),
    ("SELECT a.x FROM s WHERE A AS a ; B AS b FILTER a[iv > INTERVAL '0' YEAR] ORDER BY ts", "iv"),
    ("SELECT a.x FROM s WHERE A AS a ; B AS b FILTER b.iv = a.iv ORDER BY ts", "iv ="),
    ("SELECT a.x FROM s WHERE A AS a ; B AS b PARTITION BY [iv] ORDER BY ts", "iv]"),
    ("SELECT size(b) AS n FROM s WHERE A AS a ; B+ AS b ORDER BY ts", "size"),
])
def test_year_month_interval_column_a_query_reads_is_refused(spark, query, at):
    """A query that reads the column, or shows a whole variable, is UNSUPPORTED_COLUMN_TYPE
    naming it, from cer_sql before any job."""
    df = spark.sql(YEAR_MONTH)
    with pytest.raises(UnsupportedError) as err:
        cerql.cer_sql(spark, query, s=df)
    assert err.value.error_class == "UNSUPPORTED_COLUMN_TYPE"
    assert err.value.params["column"] == "iv" and "interval year" in err.value.message
    assert err.value.column == query.index(at) + 1


def test_array_order_column_is_refused_as_locally(spark):
    df = spark.sql("SELECT type, array(ts) AS k FROM VALUES ('A', 0), ('B', 1) AS t(type, ts)")
    with pytest.raises(UnsupportedError) as err:
        cerql.cer_sql(spark, "SELECT * FROM s WHERE A AS a ; B AS b ORDER BY k", s=df)
    assert err.value.error_class == "UNSUPPORTED_ORDER_COLUMN"
