"""The local expression compiler's Spark semantics, without Spark (issue 18, item 3).

The expected values are Spark 4's (ANSI mode, session time zone UTC), as
tests/spark/test_local_functions_vs_spark.py checks them against a live session; these few run
in the fast suite.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pytest

from cerql.errors import ExecutionError, UnsupportedError
from cerql.parser.sqlexpr import parse_fragment
from cerql.expr import ExprError, LocalTypeRefusal, compile_expr, guard

NAN = float("nan")
TABLE = pa.table({
    "y": pa.array([NAN, 1.0, None, -0.0]),
    "i": pa.array([2147483647, 0, None, -3], pa.int32()),
    "s": pa.array(["ß", "İ", None, "ΑΣ"]),
    "t": pa.array([dt.datetime(2024, 1, 5, 9, 30, tzinfo=dt.timezone.utc)] * 4,
                  pa.timestamp("us", "UTC")).cast(pa.timestamp("us", "Europe/Paris")),
})


def run(text: str, table: pa.Table = TABLE) -> list:
    def positioned(err: ExprError):
        return err.cls(err.message, error_class=err.error_class)

    try:
        fn = guard(compile_expr(parse_fragment(text, 0, text), lambda c: c.name), positioned)
    except ExprError as err:
        raise positioned(err) from None
    value = fn(table)
    return [value.as_py()] * table.num_rows if isinstance(value, pa.Scalar) else value.to_pylist()


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("text, expected", [
    ("y > 0.7", [True, True, None, False]),                      # NaN is above every number
    ("y = y", [True, True, None, True]),                         # NaN equals NaN
    ("coalesce(y, 0) > 0", [True, True, False, False]),
    ("y IN (1, y)", [True, True, None, True]),
    ("greatest(y, 1.0)", [NAN, 1.0, 1.0, 1.0]),
    ("round(-2.5)", [Decimal("-3")] * 4),                        # HALF_UP, a DECIMAL literal
    ("round(0.285, 2)", [Decimal("0.29")] * 4),
    ("round(0.285e0, 2)", [0.29] * 4),                           # on the double's text
    ("upper(s)", ["SS", "İ", None, "ΑΣ"]),                       # Java's full case mapping
    ("lower(s)", ["ß", "i̇", None, "ας"]),
    ("try_cast(y AS INT)", [None, 1, None, 0]),
    ("CAST(y AS DECIMAL)", [None, Decimal("1"), None, Decimal("0")]),
    ("CAST(y AS STRING)", ["NaN", "1.0", None, "-0.0"]),
    ("10 / 0.3", [Decimal("33.333333")] * 4),
    ("i <> 0 AND 10 / i > 1", [False, False, None, False]),        # the right side only where Spark evaluates it
    ("CASE WHEN i <> 0 THEN 10 % i END", [10, None, None, 1]),
    ("hour(t)", [9] * 4),                                        # the session's zone (UTC), not the column's
    ("t = TIMESTAMP '2024-01-05 09:30:00'", [True] * 4),
    ("CAST(t AS DATE)", [dt.date(2024, 1, 5)] * 4),
    ("date_format(t, 'yyyy-MM-dd HH:mm')", ["2024-01-05 09:30"] * 4),
    ("dayofweek(t)", [6] * 4),
    ("substring('abcdef', -10, 6)", ["ab"] * 4),
    ("trim('\\tab ')", ["\tab"] * 4),
])
def test_spark_values(text, expected):
    got = run(text)
    assert all(same(g, e) for g, e in zip(got, expected)), (text, got)


@pytest.mark.parametrize("text, error_class", [
    ("i + 1", "ARITHMETIC_OVERFLOW"),                            # INT + INT literal is INT
    ("1 / 0", "DIVIDE_BY_ZERO"), ("y / 0", "DIVIDE_BY_ZERO"), ("i % 0", "REMAINDER_BY_ZERO"),
    ("CAST(y AS INT)", "CAST_OVERFLOW"), ("CAST(s AS INT)", "CAST_INVALID_INPUT"),
    ("floor(y)", "ARITHMETIC_OVERFLOW"), ("CAST(12.5 AS DECIMAL(2, 1))", "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"),
    ("CAST(127 AS TINYINT) + CAST(1 AS TINYINT)", "BINARY_ARITHMETIC_OVERFLOW"),
])
def test_spark_errors(text, error_class):
    with pytest.raises(ExecutionError) as err:
        run(text)
    assert err.value.error_class == error_class


@pytest.mark.parametrize("text", ["unix_timestamp(t)", "s RLIKE '(?i)a'", "date_format(t, 'EEE')", "bround(y)",
                                  "exp(1)", "ln(y)", "log10(y)", "log(2, y)", "pow(y, 2)"])  # StrictMath
def test_refused_with_spark_named(text):
    with pytest.raises(UnsupportedError) as err:
        run(text)
    assert "not supported by cerql's local engine (cerql.run); spark.cer_sql runs it" in str(err.value)


def test_types_spark_casts_are_refused_and_string_number_mixes_are_type_errors():
    with pytest.raises(LocalTypeRefusal):
        run("CAST(t AS BIGINT)")
    with pytest.raises(TypeError) as err:
        run("s = 1")
    assert not isinstance(err.value, LocalTypeRefusal)


def test_times_are_read_in_the_session_time_zone():
    """09:30 UTC is 04:30 in New York (EST); the literal is New York's wall time there."""
    t = pa.table({"t": TABLE.column("t")})
    for zone, hour, equal in (("UTC", 9, False), ("America/New_York", 4, True)):
        fn = compile_expr(parse_fragment("hour(t)", 0, "hour(t)"), lambda c: c.name, time_zone=zone)
        assert fn(t).to_pylist() == [hour] * 4
        text = "t = TIMESTAMP '2024-01-05 04:30:00'"
        fn = compile_expr(parse_fragment(text, 0, text), lambda c: c.name, time_zone=zone)
        assert fn(t).to_pylist() == [equal] * 4
