"""The local expression compiler against Spark, function by function (issue 18, item 3).

Every function and operator the local engine accepts (cerql/expr/) is evaluated on
the same rows by ``compile_expr`` over a pyarrow table and by Spark (``createDataFrame`` of that
table, ``select(expr(...))`` of the Spark SQL text cerql sends, the session time zone UTC, ANSI
mode on): the values must be equal, with the same Python type (a DECIMAL is not a DOUBLE), NaN
equal to NaN. Where Spark raises, the local engine raises an ExecutionError of the same error
class. Some forms are refused locally (UnsupportedError at compile time, or a LocalTypeRefusal
when the planner type-checks): Spark runs them. A few cases go through the public paths,
``cerql.run`` against ``spark.cer_sql``.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import cerql
from cerql.errors import ExecutionError, UnsupportedError
from cerql.parser.sqlexpr import parse_fragment
from cerql.expr import ExprError, LocalTypeRefusal, compile_expr, guard
from tests.spark.compare import canonical_rows, local_records, spark_records

pytestmark = pytest.mark.spark

NAN, INF = float("nan"), float("inf")
UTC = dt.timezone.utc


def _times(*values):
    return [None if v is None else dt.datetime(*v, tzinfo=UTC) for v in values]


_INSTANTS = _times((2024, 1, 5, 10, 20, 30, 120000), (2024, 3, 1, 23, 59, 59), (1999, 12, 31, 23, 30), None,
                   (2024, 1, 7, 0, 0), (1970, 1, 1), (2024, 6, 30, 12, 0, 0, 1), (999, 1, 5, 10, 20, 30))

TABLES = {
    "num": pa.table({
        "i": pa.array([1, -7, 0, None, 2147483647, -2147483648, 12, 5], pa.int32()),
        "l": pa.array([2**60 + 1, -3, 0, None, 2**63 - 1, 7, -2**63, 100], pa.int64()),
        "b": pa.array([1, -128, 127, None, 0, 5, -1, 3], pa.int8()),
        "y": pa.array([NAN, 1.0, INF, None, -0.0, 0.285, -2.5, 1e300], pa.float64()),
        "f": pa.array([1.5, NAN, -0.0, None, 0.285, 2.5, 1e10, -3.25], pa.float32()),
        "d": pa.array([Decimal(v) if v else None for v in
                       ["1.25", "-2.50", "0.00", None, "12345678.99", "0.01", "-0.05", "100.00"]], pa.decimal128(10, 2)),
        "bo": pa.array([True, False, None, True, False, True, None, False]),
    }),
    "str": pa.table({
        "s": pa.array(["ß", "İ", " 12 ", None, "abc", "héllo", "a\nb", "ΑΣ", "\t7\n", "1e3", "NaN", "ǅ", "a%b", "2024-01-05",
                       "  ", "-0"]),
        "n": pa.array(["1", "+12", "-7", None, " 42 ", "0", "2147483647", "007", "\t5\n", "1", "2", "3", "4", "5", "6", "7"]),
        "k": pa.array([1, 2, -1, None, 0, 3, 5, 100, 2, 1, 0, -3, 4, 7, 2, 1], pa.int32()),
    }),
    "time": pa.table({
        "t": pa.array(_INSTANTS, pa.timestamp("us", "UTC")),
        "p": pa.array(_INSTANTS, pa.timestamp("us", "UTC")).cast(pa.timestamp("us", "Europe/Paris")),
        "w": pa.array([None if v is None else v.replace(tzinfo=None) for v in _INSTANTS], pa.timestamp("us")),
        "dt": pa.array([None if v is None else v.date() for v in _INSTANTS], pa.date32()),
        "ts": pa.array(["2024-01-05 10:20:30.12", "2024-3-1 23:59:59", "1999-12-31T23:30:00Z", None, "2024-01-07",
                        "1970-01-01 01:00:00+01:00", "2024-06-30 12:00:00.000001", "0999-01-05 10:20:30 UTC"]),
    }),
}

_rng = np.random.default_rng(18)
_DOUBLES = np.concatenate([_rng.uniform(-10, 10, 150), np.exp(_rng.uniform(-700, 700, 150)), _rng.uniform(0, 3, 100),
                           np.round(_rng.uniform(-100, 100, 100), 3) + 0.0005])
TABLES["rand"] = pa.table({
    "x": pa.array(_DOUBLES), "e": pa.array(_rng.uniform(-30, 30, len(_DOUBLES))),
    "q": pa.array(np.abs(_DOUBLES) * 10.0 ** _rng.integers(-3, 3, len(_DOUBLES)))})

VALUES = {
    "num": [
        # comparisons: NaN equals NaN and is above every number; -0.0 equals 0.0; exact decimals
        "y > 0.7", "y = y", "y != y", "y < 1", "y >= y", "y <= 0.7", "coalesce(y, 0) > 0", "y <=> 1.0",
        "y IS DISTINCT FROM y", "y <=> y", "y IN (1, y)", "y IN (0.0, 1)", "y NOT IN (1)", "y = CAST('NaN' AS DOUBLE)",
        "y BETWEEN -1 AND 2", "y BETWEEN 0 AND CAST('NaN' AS DOUBLE)", "y = 0", "i > 2.5", "l > 1152921504606846976.5",
        "l > 0.5", "l = 1152921504606846977", "l > 1.152921504606846976e18", "d > 1", "d = 1.25", "d < y", "f > 0.285",
        "f = 0.285", "f = 2.5", "b < i", "bo = true", "bo IS TRUE", "bo IS NOT FALSE", "NOT bo", "bo AND y > 0",
        "bo OR y > 0", "i IS NULL", "i IS NOT NULL", "greatest(y, 1.0) > 2",
        # arithmetic
        "l % 7", "i % 5", "-7 % 3", "y % 2", "-7.5 % 2", "d % 0.3", "i / 2", "l / 2", "d / 3", "10 / 0.3", "1 / 3",
        "i * 0.1", "d * y", "d + i", "d - l", "d * d", "f + 1", "f * 2", "b + 1", "b - b", "i div 2", "l div 3", "-y",
        "-d", "-f", "y / 4", "y * 0", "i + 0.5", "l + 1.5e0", "2147483647 + 1L",
        # math
        "abs(d)", "abs(y)", "abs(f)", "abs(l div 2)", "floor(d)", "ceil(d)", "floor(i)", "ceil(l)", "floor(-2.5)",
        "ceil(f)", "floor(f)", "floor(d / 3)", "round(y, 2)", "round(y)", "round(d, 1)", "round(d, -1)", "round(f, 1)", "round(i, 2)", "round(b * 1, -1)",
        "round(-2.5)", "round(0.285, 2)", "round(2.5)", "round(-0.5)", "round(l, -2)", "round(y, -2)", "round(d)",
        "round(y * 1000, 1)", "round(1.005e0, 2)", "round(2.675e0, 2)", "round(-2.5e0)", "sqrt(y)", "sqrt(d)",
        "sqrt(-1)", "isnan(y)", "isnan(f)", "isnan(i)", "greatest(y, 1.0)", "least(y, 1.0)", "greatest(i, l)",
        "least(i, d)", "greatest(i, y, f)", "least(y, y)", "greatest(NULL, i)", "least(NULL, NULL)", "greatest(1, 2.5)",
        # conditionals and NULLs
        "coalesce(y, d)", "coalesce(i, l)", "nvl(i, 0)", "ifnull(d, 1)", "coalesce(NULL, y)", "nullif(i, 0)",
        "nullif(y, y)", "nvl2(y, 1, 2)", "if(bo, i, l)", "if(i > 0, 'pos', 'other')", "if(bo, 1, 2.5)",
        "CASE WHEN y > 1 THEN 'big' WHEN y < 0 THEN 'neg' ELSE 'small' END", "CASE i WHEN 1 THEN 'one' WHEN 0 THEN 'zero' END",
        "CASE WHEN i = 1 THEN 1 ELSE 2.5 END", "CASE WHEN bo THEN d END",
        # errors only on rows Spark evaluates
        "CASE WHEN i <> 0 THEN 10 / i END", "i <> 0 AND 10 / i > 1", "i = 0 OR 10 % i = 0", "coalesce(nullif(i, 0), 1)",
        "if(i BETWEEN -100 AND 100, i * 1000000, 0)", "l IN (0, 2 / l)", "y > 0 AND y < 100 AND CAST(y AS INT) >= 0",
        "CASE WHEN y < 1e9 THEN CAST(y AS DECIMAL(12, 2)) END", "coalesce(CAST(b AS INT), i * 2)",
        # casts
        "try_cast(y AS INT)", "try_cast(y AS BIGINT)", "try_cast(y AS DECIMAL)", "try_cast(y AS DECIMAL(5, 2))",
        "CAST(y AS STRING)", "CAST(f AS STRING)", "CAST(d AS STRING)", "CAST(d AS INT)", "CAST(d AS DOUBLE)",
        "CAST(i AS DOUBLE)", "CAST(l AS DOUBLE)", "try_cast(l AS INT)", "try_cast(i AS SMALLINT)", "CAST(f AS DOUBLE)",
        "CAST(y AS FLOAT)", "CAST(y AS BOOLEAN)", "CAST(i AS BOOLEAN)", "CAST(bo AS INT)", "CAST(bo AS STRING)",
        "CAST(i AS STRING)", "CAST(b AS STRING)", "CAST(l AS STRING)", "try_cast(d AS DECIMAL(4, 1))",
        "CAST(d AS DECIMAL(12, 1))", "CAST(i AS DECIMAL(12, 2))", "try_cast(f AS DECIMAL(10, 2))", "CAST(0.285 AS DOUBLE)",
        "CAST(b AS FLOAT)", "CAST(bo AS DOUBLE)", "CAST(d AS BOOLEAN)", "try_cast(y AS DECIMAL(38, 10)) IS NULL",
        "CAST(9.223372036854775807e18 AS BIGINT)",
    ],
    "str": [
        "upper(s)", "lower(s)", "length(s)", "length(lower(s))", "upper(k)", "length(k)", "s = 'abc'", "s < 'b'",
        "s IN ('abc', 'ß')", "s LIKE '%l%'", "s LIKE 'a_b'", "s LIKE 'a\\\\%b'", "s NOT LIKE '%a%'", "s LIKE ''",
        "s ILIKE 'SS'", "s ILIKE 'ǆ'", "s ILIKE '%σ'", "s ILIKE 'AB%'", "s RLIKE 'b$'", "s RLIKE '^a.b$'",
        "s RLIKE '\\\\s'", "s RLIKE '[0-9]+'", "s RLIKE 'l{2}'", "s RLIKE '^-?[0-9]+$'", "s RLIKE 'a|ß'",
        "s RLIKE '(?:ab)+c'", "s RLIKE '[^a-z]'", "s RLIKE '\\\\d\\\\.'", "s RLIKE '%'",
        "substring(s, 2, 2)", "substring(s, 0, 2)", "substring(s, -2)", "substring(s, -10, 12)", "substring(s, 2, -1)",
        "substr(s, 3)", "substring(s, k, 2)", "substring(s, 1, k)", "substring(s, -1, 1)", "startswith(s, 'a')",
        "endswith(s, 'o')", "contains(s, 'l')", "startswith(s, '')", "contains(s, NULL)", "startswith(n, k)",
        "concat(s, '!')", "concat(s, k)", "concat(n, k, 1.5, 2.5e0, true)", "s || '-' || k", "concat(s)",
        "trim(s)", "ltrim(s)", "rtrim(s)", "length(trim(s))", "trim(n)", "CAST(n AS INT)", "CAST(n AS BIGINT)",
        "CAST(n AS DOUBLE)", "try_cast(n AS DECIMAL(5, 1))", "CAST(n AS DECIMAL(11, 1))", "try_cast(s AS INT)",
        "try_cast(s AS DOUBLE)", "try_cast(s AS BOOLEAN)", "try_cast(s AS DATE)", "try_cast(s AS DECIMAL(5, 1))",
        "try_cast(n AS TINYINT)", "try_cast(s AS TIMESTAMP)", "CAST(k AS STRING)", "nvl(s, 'x')", "s = n",
        "coalesce(s, n)", "greatest(s, n)", "least(s, 'b')", "if(k > 0, s, n)", "CASE WHEN s = 'abc' THEN k END",
        "nullif(s, 'abc')", "s IS NULL",
    ],
    "rand": [  # Java's number printing and Spark's rounding, on many values
        "sqrt(q)", "CAST(x AS STRING)", "CAST(CAST(e AS FLOAT) AS STRING)", "round(x, 2)", "round(e, 3)",
        "round(q, 1)", "round(x)", "try_cast(e AS DECIMAL(12, 4))", "try_cast(q AS DECIMAL(38, 6))",
        "x / e", "x % e", "e * 1.1", "floor(e * 100)",
    ],
    "time": [
        "hour(t)", "minute(t)", "second(t)", "hour(p)", "minute(p)", "hour(w)", "year(t)", "month(p)", "day(t)",
        "dayofmonth(w)", "dayofweek(t)", "dayofweek(dt)", "dayofweek(p)", "year(dt)", "month(dt)", "hour(dt)",
        "year(ts)", "hour(ts)", "day(ts)", "CAST(t AS DATE)", "CAST(p AS DATE)", "CAST(w AS DATE)", "CAST(t AS STRING)",
        "CAST(p AS STRING)", "CAST(w AS STRING)", "CAST(dt AS STRING)", "CAST(dt AS TIMESTAMP)", "CAST(ts AS TIMESTAMP)",
        "CAST(ts AS DATE)", "CAST(p AS TIMESTAMP)", "t > TIMESTAMP '2024-01-05 10:00:00'",
        "p > TIMESTAMP '2024-01-05 10:00:00'", "w > TIMESTAMP '2024-01-05 10:00:00'", "p = t", "w = t", "w = p",
        "dt = CAST(t AS DATE)", "dt < t", "t > '2024-01-05 10:20:30.12'", "p >= '2024-01-05'", "w < '2000-01-01'",
        "dt = '2024-01-05'", "dt < '2024-01-05 10:00'", "t BETWEEN DATE '2024-01-01' AND DATE '2024-12-31'",
        "p IN (TIMESTAMP '2024-01-07 00:00:00', t)", "TIMESTAMP '2024-01-05 11:20:30.12+01:00' = t",
        "TIMESTAMP '2024-01-05T10:20:30.12Z' = p", "DATE '2024-01-05' = dt", "date_format(t, 'yyyy-MM-dd HH:mm:ss')",
        "date_format(p, 'yyyy/M/d H:m:s')", "date_format(dt, 'yyyy-MM-dd\\'T\\'HH')", "date_format(w, 'dd.MM.yyyy')",
        "date_format(ts, 'yyyy')", "date_format(t, 'HH:mm')", "greatest(t, p)", "least(dt, t)",
        "coalesce(t, TIMESTAMP '2000-01-01 00:00:00')", "CASE WHEN hour(t) >= 12 THEN 'pm' ELSE 'am' END",
        "t IS NULL", "t = t", "concat('at ', t)", "length(CAST(t AS STRING))",
    ],
}

ERRORS = [  # (table, expression, Spark's error class on these rows)
    ("num", "i + 1", "ARITHMETIC_OVERFLOW"), ("num", "i - 1", "ARITHMETIC_OVERFLOW"),
    ("num", "i * 2", "ARITHMETIC_OVERFLOW"), ("num", "l * 8", "ARITHMETIC_OVERFLOW"),
    ("num", "-i", "ARITHMETIC_OVERFLOW"), ("num", "abs(i)", "ARITHMETIC_OVERFLOW"), ("num", "-b", "ARITHMETIC_OVERFLOW"),
    ("num", "abs(b)", "ARITHMETIC_OVERFLOW"), ("num", "b * b", "BINARY_ARITHMETIC_OVERFLOW"),
    ("num", "b + b", "BINARY_ARITHMETIC_OVERFLOW"), ("num", "round(i, -1)", "ARITHMETIC_OVERFLOW"),
    ("num", "y > 0 AND CAST(y AS INT) > 0", "CAST_OVERFLOW"), ("num", "CAST(y AS DECIMAL)", "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"),
    ("num", "CAST(f AS DECIMAL(10, 2))", "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"),
    ("str", "CAST(n AS DECIMAL(5, 1))", "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"),
    ("num", "2147483647 * 2", "ARITHMETIC_OVERFLOW"), ("num", "i / 0", "DIVIDE_BY_ZERO"),
    ("num", "y / 0", "DIVIDE_BY_ZERO"), ("num", "d / 0", "DIVIDE_BY_ZERO"), ("num", "10 / i", "DIVIDE_BY_ZERO"),
    ("num", "i % 0", "REMAINDER_BY_ZERO"), ("num", "y % 0", "REMAINDER_BY_ZERO"), ("num", "d % 0", "REMAINDER_BY_ZERO"),
    ("num", "l div 0", "DIVIDE_BY_ZERO"), ("num", "l div -1", "ARITHMETIC_OVERFLOW"),
    ("num", "CAST(y AS INT)", "CAST_OVERFLOW"), ("num", "CAST(y AS BIGINT)", "CAST_OVERFLOW"),
    ("num", "CAST(l AS INT)", "CAST_OVERFLOW"), ("num", "CAST(i AS TINYINT)", "CAST_OVERFLOW"),
    ("num", "CAST(f AS INT)", "CAST_OVERFLOW"), ("num", "CAST(d AS TINYINT)", "CAST_OVERFLOW"),
    ("num", "CAST(y AS DECIMAL(5, 2))", "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"),
    ("num", "CAST(d AS DECIMAL(4, 1))", "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"),
    ("num", "CAST(l AS DECIMAL(10, 0))", "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"),
    ("num", "floor(y)", "ARITHMETIC_OVERFLOW"), ("num", "ceil(y)", "ARITHMETIC_OVERFLOW"),
    ("num", "round(b, -1)", "ARITHMETIC_OVERFLOW"), ("num", "y > 0 AND 1 / (y - y) > 0", "DIVIDE_BY_ZERO"),
    ("str", "CAST(s AS INT)", "CAST_INVALID_INPUT"), ("str", "CAST(s AS DOUBLE)", "CAST_INVALID_INPUT"),
    ("str", "CAST(s AS BOOLEAN)", "CAST_INVALID_INPUT"), ("str", "CAST(s AS DECIMAL(5, 1))", "CAST_INVALID_INPUT"),
    ("str", "CAST(s AS DATE)", "CAST_INVALID_INPUT"), ("str", "CAST(s AS TIMESTAMP)", "CAST_INVALID_INPUT"),
    ("str", "CAST(n AS TINYINT)", "CAST_INVALID_INPUT"), ("str", "year(s)", "CAST_INVALID_INPUT"),
    ("str", "hour(s)", "CAST_INVALID_INPUT"),
    ("time", "t > 'garbage'", "CAST_INVALID_INPUT"), ("time", "dt = '2024-13-01'", "CAST_INVALID_INPUT"),
]

REFUSED = [  # (table, expression): Spark runs these; the local engine refuses them, never answers otherwise
    ("num", "bround(y)"), ("num", "exp(y)"), ("num", "ln(d)"), ("num", "log10(y)"), ("num", "log2(y)"),
    ("num", "log(2, y)"), ("num", "pow(y, 2)"), ("num", "power(d, 2)"),  # Java's StrictMath: not to the last bit
    ("str", "s RLIKE '(?i)abc'"), ("str", "s RLIKE '\\\\bab'"),
    ("str", "s RLIKE 'b$\\\\n'"), ("str", "s RLIKE '[a-z&&[^b]]'"), ("str", "s RLIKE '\\\\p{Alpha}'"),
    ("str", "trim(BOTH 'a' FROM s)"), ("time", "date_format(t, 'EEE')"),
    ("time", "date_format(t, 'yy')"), ("time", "unix_timestamp(t)"), ("time", "dt + 1"),
    ("time", "CAST(t AS BIGINT)"), ("time", "CAST('2024-01-05 10:00:00 Europe/Paris' AS TIMESTAMP) < t"),
]


# --------------------------------------------------------------------------- the two evaluators
def _tree(text: str):
    return parse_fragment(text, 0, text)


def _positioned(err: ExprError):
    return err.cls(err.message, error_class=err.error_class, hint=err.hint)


def local(table: str, text: str) -> list:
    """The expression over the table with cerql's local compiler: its values, one per row
    (errors as planner/resolve.py raises them: ExprError as its CeqlError class)."""
    try:
        fn = guard(compile_expr(_tree(text), lambda col: col.name), _positioned)
    except ExprError as err:
        raise _positioned(err) from None
    t = TABLES[table]
    value = fn(t)
    if isinstance(value, pa.Scalar):
        return [value.as_py()] * t.num_rows
    return value.to_pylist()


def spark_text(text: str) -> str:
    """What cerql sends Spark for the expression (sqlglot prints it back: log10(x) is LOG(10, x))."""
    return _tree(text).sql(dialect="spark")


def _condition(err) -> str:
    get = getattr(err, "getCondition", None) or getattr(err, "getErrorClass", None)
    return get() if get else type(err).__name__


@pytest.fixture(scope="module")
def frames(spark):
    return {name: spark.createDataFrame(t) for name, t in TABLES.items()}


@pytest.fixture(scope="module")
def spark_values(spark, frames):
    """Spark's values of every VALUES case, one job per table (one job per case when a table's
    batch fails, so each case reports its own error)."""
    from pyspark.sql import functions as F

    out = {}
    for table, texts in VALUES.items():
        df = frames[table]
        try:
            rows = df.select(*[F.expr(spark_text(x)).alias(f"c{k}") for k, x in enumerate(texts)]).collect()
            for k, x in enumerate(texts):
                out[table, x] = [r[k] for r in rows]
        except Exception:  # noqa: BLE001 - one case fails: run each alone
            for x in texts:
                try:
                    out[table, x] = [r[0] for r in df.select(F.expr(spark_text(x))).collect()]
                except Exception as err:  # noqa: BLE001
                    out[table, x] = err
    return out


JAVA = {"version": 21}


@pytest.fixture(scope="module", autouse=True)
def java_version(spark):
    """The JVM's feature version: before Java 19, Double.toString sometimes prints a digit more
    than the shortest text that reads back as the value (JDK-4511638); the local engine prints
    the shortest, as Java 19 and later do."""
    text = spark.sparkContext._jvm.java.lang.System.getProperty("java.specification.version")
    JAVA["version"] = int(text.split(".")[-1]) if text.startswith("1.") else int(text)


def _java17_digits(a, b) -> bool:
    """``a`` (local, from the shortest text of a double) and ``b`` (Spark) are the same double
    printed by Java 19+ and by Java 17 with its extra digit (see java_version): only for a
    double whose shortest text has 16 or 17 digits, and only on Java before 19."""
    try:
        x = float(a)
        if JAVA["version"] >= 19 or a == b or x != float(b) or math.isinf(x) or math.isnan(x):
            return False
    except (TypeError, ValueError):
        return False
    return len(Decimal(repr(x)).as_tuple().digits) >= 16


def same(a, b) -> bool:
    """Equal values of the same kind: NaN equals NaN, a DECIMAL is not a DOUBLE, timestamps as
    naive UTC (Spark returns the session's wall time)."""
    if type(a) is type(b) and isinstance(a, (str, Decimal)) and _java17_digits(a, b):
        return True
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, dt.datetime) and a.tzinfo is not None:
        a = a.astimezone(UTC).replace(tzinfo=None)
    if isinstance(b, dt.datetime) and b.tzinfo is not None:
        b = b.astimezone(UTC).replace(tzinfo=None)
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


# --------------------------------------------------------------------------- the matrix
@pytest.mark.parametrize("table, text", [(t, x) for t, texts in VALUES.items() for x in texts])
def test_local_values_equal_spark(spark_values, table, text):
    expected = spark_values[table, text]
    if isinstance(expected, Exception):
        pytest.fail(f"Spark raised {_condition(expected)} on {spark_text(text)!r}")
    got = local(table, text)
    bad = [(k, g, e) for k, (g, e) in enumerate(zip(got, expected)) if not same(g, e)]
    assert not bad, f"{text!r} (Spark: {spark_text(text)!r}): (row, local, Spark) {bad}"


@pytest.mark.parametrize("table, text, error_class", ERRORS)
def test_local_raises_as_spark(frames, table, text, error_class):
    from pyspark.sql import functions as F

    try:
        frames[table].select(F.expr(spark_text(text))).collect()
        raised = None
    except Exception as err:  # noqa: BLE001
        raised = _condition(err)
    assert raised == error_class
    if error_class is None:
        local(table, text)
        return
    with pytest.raises(ExecutionError) as err:
        local(table, text)
    assert err.value.error_class == error_class


@pytest.mark.parametrize("table, text", REFUSED)
def test_local_refuses_what_it_cannot_run_as_spark(table, text):
    with pytest.raises((UnsupportedError, LocalTypeRefusal)) as err:
        local(table, text)
    assert "spark.cer_sql" in str(err.value)


def test_an_integer_plus_an_interval_is_refused_as_spark_refuses_it():
    """Spark's analyzer refuses ``i + INTERVAL 1 DAY`` (an INT is no timestamp): the local
    engine names its class and does not say that Spark runs it (issue 34, item 4)."""
    from cerql.expr import SparkTypeMismatch

    with pytest.raises(SparkTypeMismatch) as err:
        local("num", "i + INTERVAL 1 DAY")
    assert err.value.error_class == "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"
    assert "spark.cer_sql runs it" not in str(err.value)


def test_refusals_name_the_expression_and_spark():
    with pytest.raises(UnsupportedError) as err:
        local("time", "unix_timestamp(t)")
    assert "is not supported by cerql's local engine (cerql.run); spark.cer_sql runs it" in str(err.value)
    assert "UNIX_TIMESTAMP(t)" in str(err.value) and "hour" in err.value.hint


ZONED = [  # evaluated with spark.sql.session.timeZone = America/New_York and compile_expr(time_zone=...)
    "hour(t)", "hour(p)", "hour(w)", "day(t)", "dayofweek(t)", "CAST(t AS DATE)", "CAST(w AS DATE)",
    "CAST(t AS STRING)", "CAST(w AS STRING)", "t > TIMESTAMP '2024-01-05 05:00:00'",
    "w > TIMESTAMP '2024-01-05 05:00:00'", "w = t", "dt < t", "t > '2024-01-05 05:20:30'", "hour(ts)",
    "date_format(t, 'yyyy-MM-dd HH:mm:ss')", "CAST(ts AS TIMESTAMP) = t", "CAST(dt AS TIMESTAMP) < t",
    "TIMESTAMP '2024-01-05 05:20:30.12' = t", "concat(dt, ' ', t)",
]


def test_session_time_zone_other_than_utc(spark):
    """Times are read in the session time zone: Spark's spark.sql.session.timeZone, the local
    compiler's ``time_zone`` (UTC unless given)."""
    from pyspark.sql import functions as F

    zone = "America/New_York"
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        df = spark.createDataFrame(TABLES["time"])
        rows = df.select(*[F.expr(spark_text(x)).alias(f"c{k}") for k, x in enumerate(ZONED)]).collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    for k, text in enumerate(ZONED):
        fn = compile_expr(_tree(text), lambda col: col.name, time_zone=zone)
        value = fn(TABLES["time"])
        got = [value.as_py()] * len(rows) if isinstance(value, pa.Scalar) else value.to_pylist()
        expected = [r[k] for r in rows]
        bad = [(j, g, e) for j, (g, e) in enumerate(zip(got, expected)) if not same(g, e)]
        assert not bad, f"{text!r} in {zone}: (row, local, Spark) {bad}"


def test_no_case_is_listed_twice():
    cases = [(t, x) for t, texts in VALUES.items() for x in texts]
    assert len(cases) == len(set(cases))


# --------------------------------------------------------------------------- the public paths
STREAM = pd.DataFrame({
    "type": ["A", "B", "A", "B", "B"], "ts": [0, 1, 2, 3, 4],
    "y": [0.5, float("nan"), float("nan"), 2.0, 1.0], "p": [1.0, 2.5, -2.5, 0.285, 3.0],
    "s": ["straße", "İx", "a", "b", "c"],
})

PUBLIC = [
    "SELECT a.ts AS at, b.ts AS bt FROM s WHERE A AS a ; B AS b FILTER b.y > a.y ORDER BY ts",
    "SELECT a.ts AS at, b.ts AS bt FROM s WHERE A AS a ; B AS b FILTER b.y = a.y ORDER BY ts",
    "SELECT a.ts AS at, b.ts AS bt FROM s WHERE A AS a ; B AS b FILTER b.y < a.y ORDER BY ts",
    "SELECT b.ts AS bt FROM s WHERE B AS b FILTER b[y > 0.7] ORDER BY ts",
    "SELECT b.ts AS bt FROM s WHERE B AS b FILTER b[coalesce(y, 0) > 0 AND y = y] ORDER BY ts",
    "SELECT a.ts AS at, round(a.p) AS r, round(a.p, 2) AS r2, upper(a.s) AS u FROM s WHERE A AS a ORDER BY ts",
    "SELECT b.ts AS bt, round(b.p, 2) AS r, lower(b.s) AS l, CAST(b.y AS STRING) AS t FROM s WHERE B AS b ORDER BY ts",
    "SELECT a.ts AS at, max(b.y) AS m, count(b) AS n FROM s WHERE A AS a ; B+ AS b FILTER max(b.y) > 1 ORDER BY ts",
    "SELECT a.ts AS at, b.ts AS bt FROM s WHERE A AS a ; B AS b FILTER b.p >= a.p * 0.5 ORDER BY ts",
]


def _both(spark, query: str, frame: pd.DataFrame):
    local_rows = canonical_rows(local_records(cerql.run(query, {"s": frame}, engine="local")))
    reference = canonical_rows(local_records(cerql.run(query, {"s": frame}, engine="reference")))
    on_spark = canonical_rows(spark_records(spark.cer_sql(query, s=spark.createDataFrame(frame))))
    return local_rows, reference, on_spark


@pytest.mark.parametrize("query", PUBLIC)
def test_run_equals_cer_sql(spark, query):
    table = pa.Table.from_pandas(STREAM, preserve_index=False)  # keeps NaN apart from NULL
    local_rows, reference, on_spark = _both(spark, query, table)
    assert local_rows == reference == on_spark


def test_atom_against_a_double_type_column(spark):
    """Spark reads the type column as a string: 1.0 is '1.0', so the atom `1` matches nothing
    and `1.0` matches the rows of type 1.0 (Arrow printed 1.0 as '1')."""
    frame = pd.DataFrame({"type": [1.0, 2.0, 1.0], "ts": [0, 1, 2]})
    for atom, count in (("`1`", 0), ("`1.0`", 2)):
        query = f"SELECT a.ts AS t FROM s WHERE {atom} AS a ORDER BY ts"
        local_rows, reference, on_spark = _both(spark, query, frame)
        assert local_rows == reference == on_spark
        assert sum(local_rows.values()) == count


def test_division_by_zero_raises_in_run_and_cer_sql(spark):
    query = "SELECT a.ts / a.p AS q FROM s WHERE A AS a ORDER BY ts"
    frame = pd.DataFrame({"type": ["A"], "ts": [1], "p": [0.0]})
    with pytest.raises(ExecutionError) as err:
        cerql.run(query, {"s": frame})
    assert err.value.error_class == "DIVIDE_BY_ZERO"
    with pytest.raises(Exception, match="DIVIDE_BY_ZERO"):
        spark.cer_sql(query, s=spark.createDataFrame(frame)).collect()
