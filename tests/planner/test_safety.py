"""Only scalar, deterministic, self-contained built-in expressions run inside a query
(planner/safety.py): each forbidden form is refused while the query is analysed, before any
data is read, in a bracket, in a FILTER across variables and in a SELECT item, with the
position of the offending part."""

from __future__ import annotations

import pytest

import cerql
from cerql.errors import UnsupportedError

from tests.support import typed_stream

FORBIDDEN = [
    ("x IN (SELECT y FROM other)", "SUBQUERY_NOT_ALLOWED", "x IN"),
    ("EXISTS(SELECT 1)", "SUBQUERY_NOT_ALLOWED", "EXISTS"),
    ("x = (SELECT max(y) FROM other)", "SUBQUERY_NOT_ALLOWED", "max(y)"),
    ("java_method('java.lang.System', 'exit', 1) = 1", "UNSAFE_FUNCTION", "java_method"),
    ("reflect('java.lang.Runtime', 'getRuntime') IS NULL", "UNSAFE_FUNCTION", "reflect"),
    ("try_reflect('java.util.UUID', 'randomUUID') IS NULL", "UNSAFE_FUNCTION", "try_reflect"),
    ("raise_error('boom') IS NULL", "UNSAFE_FUNCTION", "raise_error"),
    ("assert_true(x > 0) IS NULL", "UNSAFE_FUNCTION", "assert_true"),
    ("rand() > 0.5", "NONDETERMINISTIC_FUNCTION", "rand"),
    ("randn(1) > 0", "NONDETERMINISTIC_FUNCTION", "randn"),
    ("uuid() = 'x'", "NONDETERMINISTIC_FUNCTION", "uuid"),
    ("ts < current_timestamp()", "NONDETERMINISTIC_FUNCTION", "current_timestamp"),
    ("ts < now()", "NONDETERMINISTIC_FUNCTION", "now"),
    ("spark_partition_id() = 0", "NONDETERMINISTIC_FUNCTION", "spark_partition_id"),
    ("monotonically_increasing_id() > 0", "NONDETERMINISTIC_FUNCTION", "monotonically_increasing_id"),
    ("input_file_name() = ''", "NONDETERMINISTIC_FUNCTION", "input_file_name"),
    ("size(shuffle(array(x))) = 1", "NONDETERMINISTIC_FUNCTION", "shuffle"),
    ("db.other.x > 1", "OTHER_TABLE_REFERENCE", "db.other.x"),
    ("mydb.my_udf(x) > 1", "USER_FUNCTION_NOT_ALLOWED", "mydb"),
    ("sum(x) OVER (ORDER BY ts) > 1", "NOT_SCALAR_EXPRESSION", "sum"),
    ("explode(array(x)) > 1", "NOT_SCALAR_EXPRESSION", "explode"),
    ("json_tuple(name, 'k') = '1'", "NOT_SCALAR_EXPRESSION", "json_tuple"),
    ("explode_outer(x) IS NULL", "NOT_SCALAR_EXPRESSION", "explode_outer"),
]

STREAM = typed_stream("A B", x=[1, 2], y=[3, 4])


def _refused(query: str, at: str):
    with pytest.raises(UnsupportedError) as err:
        cerql.run(query, {"s": STREAM})
    return err.value


@pytest.mark.parametrize("expr,error_class,at", FORBIDDEN)
def test_refused_in_a_bracket(expr, error_class, at):
    query = f"SELECT * FROM s WHERE A AS a ; B AS b FILTER a[{expr}]"
    err = _refused(query, at)
    assert err.error_class == error_class
    assert query.index(at) + 1 - 8 <= err.column <= query.index(at) + 1 + 8  # at (or right by) the part


@pytest.mark.parametrize("expr,error_class,at", [f for f in FORBIDDEN if "db." not in f[0]])
def test_refused_across_variables_and_in_select(expr, error_class, at):
    qualified = expr.replace("(x", "(a.x").replace("x >", "a.x >").replace("x =", "a.x =").replace("ts <", "a.ts <")
    for query in (f"SELECT * FROM s WHERE A AS a ; B AS b FILTER b.y > a.y AND {qualified}",
                  f"SELECT ({qualified}) AS v FROM s WHERE A AS a ; B AS b"):
        assert _refused(query, at).error_class == error_class


@pytest.mark.spark
def test_refused_on_spark_before_anything_runs(spark):
    df = spark.createDataFrame(STREAM)
    for expr, error_class, _ in FORBIDDEN[:12]:
        with pytest.raises(UnsupportedError) as err:
            cerql.cer_sql(spark, f"SELECT * FROM s WHERE A AS a ; B AS b FILTER a[{expr}]", s=df)
        assert err.value.error_class == error_class


def test_deterministic_built_ins_pass():
    query = "SELECT * FROM s WHERE A AS a ; B AS b FILTER a[abs(x) >= 1 AND lower('X') = 'x'] ORDER BY ts"
    assert len(cerql.run(query, {"s": STREAM})) == 1
