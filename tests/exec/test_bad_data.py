"""Bad data in the local engines (issue 15 item 4): values that used to crash with a raw Arrow or
Python error now give Spark SQL 4's answer (ANSI mode on), or a CeqlError with Spark's error
class. Each test is the issue's reproduction; expected values are worked out by hand from
Spark's rules (noted per test), and a few are checked against Spark itself.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import cerql
from cerql.errors import AnalysisError, CeqlError, ExecutionError

BIG = 2**60 + 1  # above 2**53: not a double


def run(query: str, frame, engine: str) -> pd.DataFrame:
    return cerql.run(query, {"s": frame}, engine=engine)


def column(out: pd.DataFrame, name: str) -> list:
    """The column's values with every missing marker (None, NaN, pandas.NA) as None."""
    return [None if not isinstance(v, (list, dict)) and pd.isna(v) else v for v in out[name].tolist()]


# --------------------------------------------------------------------------- NULL-only columns
NULLS = pd.DataFrame({"type": ["A", "A"], "ts": [0, 1], "s": [None, None]})  # Arrow type null


@pytest.mark.parametrize("item", ["upper(a.s)", "lower(a.s)", "length(a.s)", "a.s LIKE 'x%'",
                                  "a.s RLIKE 'x'", "abs(a.s)", "NOT a.s", "a.s AND true"])
def test_function_of_a_null_only_column_is_null(engine, item):
    """Spark reads an all-None pandas column as NullType and casts it to what the function
    takes: upper(s) is NULL on every row (it was ArrowNotImplementedError)."""
    out = run(f"SELECT {item} AS u FROM s WHERE A AS a ORDER BY ts", NULLS, engine)
    assert column(out, "u") == [None, None]


def test_coalesce_of_a_null_only_column_takes_the_next_value(engine):
    out = run("SELECT coalesce(a.s, 'x') AS u FROM s WHERE A AS a ORDER BY ts", NULLS, engine)
    assert column(out, "u") == ["x", "x"]


def test_like_on_a_null_only_column_filters_everything_out(engine):
    out = run("SELECT * FROM s WHERE A AS a FILTER a[s LIKE 'x%'] ORDER BY ts", NULLS, engine)
    assert len(out) == 0


def test_null_only_column_against_spark(spark):
    """The same values from Spark itself (the SQL-cell function path is plain Spark SQL)."""
    spark.createDataFrame(NULLS).createOrReplaceTempView("cerql_nulls")
    row = spark.sql("SELECT upper(s), length(s), coalesce(s, 'x'), s LIKE 'x%' FROM cerql_nulls").collect()[0]
    local = run("SELECT upper(a.s) AS u, length(a.s) AS n, coalesce(a.s, 'x') AS c, a.s LIKE 'x%' AS l "
                "FROM s WHERE A AS a ORDER BY ts", NULLS, "local")
    assert list(row) == [column(local, c)[0] for c in "uncl"] == [None, None, "x", None]


# --------------------------------------------------------------------------- integers above 2**53
BIGS = pd.DataFrame({"type": ["A", "A"], "ts": [0, 1], "x": [BIG, 3]})


def test_big_integer_against_a_decimal_literal(engine):
    """Spark types 0.5 as DECIMAL(1,1) and compares a BIGINT with it exactly."""
    out = run("SELECT a.x FROM s WHERE A AS a FILTER a[x > 0.5] ORDER BY ts", BIGS, engine)
    assert column(out, "x") == [BIG, 3]


def test_big_integer_compares_exactly_with_a_long_decimal_literal(engine):
    """2**60 + 1 > 1152921504606846976.5 (= 2**60 + 0.5) holds exactly; as DOUBLE both sides
    would be 2**60 and it would not (Spark: true)."""
    out = run("SELECT a.x FROM s WHERE A AS a FILTER a[x > 1152921504606846976.5] ORDER BY ts", BIGS, engine)
    assert column(out, "x") == [BIG]


def test_big_integer_against_a_double_literal_is_cast_to_double(engine):
    """1.152921504606846976e18 is a DOUBLE literal: Spark casts x to DOUBLE, 2**60 + 1 becomes
    2**60, which is not greater (Spark: false)."""
    out = run("SELECT a.x FROM s WHERE A AS a FILTER a[x > 1.152921504606846976e18] ORDER BY ts", BIGS, engine)
    assert len(out) == 0


def test_big_integer_divided_and_averaged(engine):
    """x / 2 and avg are DOUBLE: 2**60 + 1 rounds to 2**60 first."""
    out = run("SELECT a.x / 2 AS h FROM s WHERE A AS a ORDER BY ts", BIGS, engine)
    assert column(out, "h") == [2.0**59, 1.5]
    out = run("SELECT avg(a.x) AS m FROM s WHERE A+ AS a ORDER BY ts", BIGS, engine)
    assert sorted(column(out, "m")) == [3.0, (2.0**60 + 3) / 2, 2.0**60]


def test_big_integer_in_aggregate_filter(engine):
    out = run("SELECT * FROM s WHERE A+ AS a FILTER avg(a.x) > 0.5 ORDER BY ts", BIGS, engine)
    assert len(out) == 3  # {0}, {1}, {0, 1}


def test_big_integer_against_a_double_column_across_variables(engine):
    """a.x > b.y: BIGINT against DOUBLE is compared as DOUBLE (the kernel's registers cast too)."""
    frame = pd.DataFrame({"type": ["A", "B", "B"], "ts": [0, 1, 2], "x": [BIG, 0, 0], "y": [0.0, 1.5, 1e30]})
    out = run("SELECT b.ts AS t FROM s WHERE A AS a ; B AS b FILTER a.x > b.y ORDER BY ts", frame, engine)
    assert column(out, "t") == [1]


def test_big_integer_remainder_is_exact(engine):
    """(2**60 + 1) % 7 = 2 (2**3 = 1 mod 7); % -1 is 0; % 0 is REMAINDER_BY_ZERO, as Spark 4
    raises it under ANSI mode (try_mod gives NULL there)."""
    out = run("SELECT a.x % 7 AS r, a.x % -1 AS m FROM s WHERE A AS a ORDER BY ts", BIGS, engine)
    assert column(out, "r") == [2, 3] and column(out, "m") == [0, 0]
    with pytest.raises(ExecutionError) as err:
        run("SELECT a.x % 0 AS z FROM s WHERE A AS a ORDER BY ts", BIGS, engine)
    assert err.value.error_class == "REMAINDER_BY_ZERO"


def test_big_integer_against_spark(spark):
    row = spark.sql(f"SELECT x > 0.5, x > 1152921504606846976.5, x > 1.152921504606846976e18, x / 2 "
                    f"FROM VALUES ({BIG}L) t(x)").collect()[0]
    assert list(row) == [True, True, False, 2.0**59]


# --------------------------------------------------------------------------- overflow
def test_integer_arithmetic_overflow_is_arithmetic_overflow(engine):
    """BIGINT * 8 above 2**63 - 1: Spark ANSI raises ARITHMETIC_OVERFLOW (Arrow wrapped around)."""
    with pytest.raises(ExecutionError) as err:
        run("SELECT a.x * 8 AS i FROM s WHERE A AS a ORDER BY ts", BIGS, engine)
    assert err.value.error_class == "ARITHMETIC_OVERFLOW"
    assert (err.value.line, err.value.column) == (1, 8)


SUMS = pd.DataFrame({"type": ["A", "A"], "ts": [0, 1], "x": [2**62, 2**62]})


def test_sum_overflow_in_select(engine):
    """2**62 + 2**62 = 2**63 > BIGINT's maximum: ARITHMETIC_OVERFLOW (was OverflowError)."""
    with pytest.raises(ExecutionError) as err:
        run("SELECT sum(a.x) AS h FROM s WHERE A+ AS a ORDER BY ts", SUMS, engine)
    assert err.value.error_class == "ARITHMETIC_OVERFLOW"


def test_sum_overflow_in_a_filter_on_the_reference():
    with pytest.raises(ExecutionError) as err:
        run("SELECT * FROM s WHERE A+ AS a FILTER sum(a.x) > 5 ORDER BY ts", SUMS, "reference")
    assert err.value.error_class == "ARITHMETIC_OVERFLOW"


def test_sum_overflow_in_a_filter_on_the_local_engine():
    with pytest.raises(ExecutionError) as err:
        run("SELECT * FROM s WHERE A+ AS a FILTER sum(a.x) > 5 ORDER BY ts", SUMS, "local")
    assert err.value.error_class == "ARITHMETIC_OVERFLOW"


def test_sum_that_fits_is_exact(engine):
    frame = pd.DataFrame({"type": ["A", "A"], "ts": [0, 1], "x": [2**62, 2**62 - 1]})
    out = run("SELECT sum(a.x) AS h FROM s WHERE A+ AS a ORDER BY ts", frame, engine)
    assert sorted(column(out, "h")) == [2**62 - 1, 2**62, 2**63 - 1]


def test_sum_overflow_against_spark(spark):
    with pytest.raises(Exception, match="ARITHMETIC_OVERFLOW"):
        spark.sql(f"SELECT sum(x) FROM VALUES ({2**62}L), ({2**62}L) t(x)").collect()


# --------------------------------------------------------------------------- CAST
CASTS = pd.DataFrame({"type": ["A", "A", "A"], "ts": [0, 1, 2], "s": ["abc", " 7 ", "12"],
                      "y": [1.9, -1.9, 1e30]})


def test_cast_of_a_malformed_string_is_cast_invalid_input(engine):
    with pytest.raises(ExecutionError) as err:
        run("SELECT CAST(a.s AS INT) AS i FROM s WHERE A AS a ORDER BY ts", CASTS, engine)
    assert err.value.error_class == "CAST_INVALID_INPUT"
    assert (err.value.line, err.value.column) == (1, 8)
    assert "try_cast" in err.value.hint


def test_try_cast_gives_null_for_what_does_not_convert(engine):
    """Spark trims strings before the cast (' 7 ' is 7) and truncates doubles toward zero."""
    out = run("SELECT try_cast(a.s AS INT) AS i, try_cast(a.y AS BIGINT) AS j FROM s WHERE A AS a ORDER BY ts",
              CASTS, engine)
    assert column(out, "i") == [None, 7, 12]
    assert column(out, "j") == [1, -1, None]


def test_cast_out_of_range_is_cast_overflow(engine):
    with pytest.raises(ExecutionError) as err:
        run("SELECT CAST(a.y AS BIGINT) AS j FROM s WHERE A AS a ORDER BY ts", CASTS, engine)
    assert err.value.error_class == "CAST_OVERFLOW"
    with pytest.raises(ExecutionError) as err:
        run("SELECT CAST(a.x AS INT) AS j FROM s WHERE A AS a ORDER BY ts", BIGS, engine)
    assert err.value.error_class == "CAST_OVERFLOW"


def test_cast_in_a_filter_raises_too(engine):
    with pytest.raises(ExecutionError) as err:
        run("SELECT * FROM s WHERE A AS a FILTER a[CAST(s AS INT) > 1] ORDER BY ts", CASTS, engine)
    assert err.value.error_class == "CAST_INVALID_INPUT"
    assert (err.value.line, err.value.column) == (1, 39)


def test_cast_against_spark(spark):
    with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
        spark.sql("SELECT CAST('abc' AS INT)").collect()
    assert list(spark.sql("SELECT try_cast('abc' AS INT), CAST(' 7 ' AS INT), CAST(-1.9D AS BIGINT), "
                          "CAST(-2.75 AS INT)").collect()[0]) == [None, 7, -1, -2]


# --------------------------------------------------------------------------- unsigned 64-bit
def test_uint64_column_that_fits_is_bigint(engine):
    """Spark reads a pandas uint64 column as bigint: the values compare as integers."""
    frame = pd.DataFrame({"type": ["A", "A"], "ts": [0, 1], "x": np.array([2**63 - 1, 3], dtype=np.uint64)})
    out = run("SELECT a.x FROM s WHERE A AS a FILTER a[x > 1] ORDER BY ts", frame, engine)
    assert column(out, "x") == [2**63 - 1, 3]


def test_uint64_value_above_bigint_is_refused(engine):
    """Spark would read 2**63 + 5 as NULL; cerql refuses rather than lose it (was ArrowInvalid)."""
    frame = pd.DataFrame({"type": ["A", "A"], "ts": [0, 1], "x": np.array([2**63 + 5, 3], dtype=np.uint64)})
    with pytest.raises(CeqlError) as err:
        run("SELECT a.x FROM s WHERE A AS a FILTER a[x > 1] ORDER BY ts", frame, engine)
    assert err.value.error_class == "UNSUPPORTED_COLUMN_TYPE"
    assert err.value.params["column"] == "x"
    with pytest.raises(CeqlError):  # Arrow input too
        cerql.run("SELECT * FROM s WHERE A ORDER BY ts", {"s": pa.Table.from_pandas(frame)}, engine=engine)


# --------------------------------------------------------------------------- windows wider than any value
WIDE = pd.DataFrame({"type": ["A", "A", "A"], "ts": [0, 1, 2**62],
                     "t": pd.to_datetime([0, 1, 2], unit="s")})


@pytest.mark.parametrize("window", ["ORDER BY ts WITHIN 1e21 [ts]", "ORDER BY ts WITHIN 9223372036854775807 [ts]",
                                    "ORDER BY ts WITHIN 1e21 EVENTS", "ORDER BY t WITHIN 1e21 SECONDS"])
def test_window_wider_than_the_column_bounds_nothing(engine, window):
    """No two BIGINTs, timestamps or positions are further apart than 2**63 - 1: every pair
    of the three A's is a result, as without WITHIN (was OverflowError)."""
    out = run(f"SELECT a.ts AS x, b.ts AS y FROM s WHERE A AS a ; A AS b {window}", WIDE, engine)
    assert sorted(zip(column(out, "x"), column(out, "y"))) == [(0, 1), (0, 2**62), (1, 2**62)]


def test_window_on_a_double_column_keeps_its_amount(engine):
    frame = pd.DataFrame({"type": ["A", "A", "A"], "ts": [0.0, 1.0, 1e22]})
    out = run("SELECT a.ts AS x, b.ts AS y FROM s WHERE A AS a ; A AS b ORDER BY ts WITHIN 1e21 [ts]", frame, engine)
    assert sorted(zip(column(out, "x"), column(out, "y"))) == [(0.0, 1.0)]


# --------------------------------------------------------------------------- names differing in case
TWINS = pd.DataFrame({"type": ["A", "A"], "ts": [0, 1], "x": [1, 2], "X": [3, 4]})


def test_select_star_keeps_both_columns_differing_in_case(engine):
    """Spark (caseSensitive=false) keeps x and X in SELECT * (was ArrowInvalid duplicate fields)."""
    out = run("SELECT * FROM s WHERE A AS a ORDER BY ts", TWINS, engine)
    assert out["a"].tolist() == [{"type": "A", "ts": 0, "x": 1, "X": 3}, {"type": "A", "ts": 1, "x": 2, "X": 4}]


@pytest.mark.parametrize("query, column", [
    ("SELECT a.x FROM s WHERE A AS a ORDER BY ts", 10),
    ("SELECT * FROM s WHERE A AS a FILTER a[X > 1] ORDER BY ts", 39),
    ("SELECT * FROM s WHERE A AS a ORDER BY x", 39),
])
def test_naming_a_column_spelled_two_ways_is_ambiguous(engine, query, column):
    with pytest.raises(AnalysisError) as err:
        run(query, TWINS, engine)
    assert err.value.error_class == "AMBIGUOUS_REFERENCE"
    assert (err.value.line, err.value.column) == (1, column)


def test_other_columns_of_a_source_with_case_twins_still_resolve(engine):
    out = run("SELECT a.ts AS t FROM s WHERE A AS a FILTER a[ts > 0] ORDER BY ts", TWINS, engine)
    assert column(out, "t") == [1]


def test_case_twins_in_spark(spark):
    """What the local engine follows: Spark keeps both in SELECT *, naming one is ambiguous."""
    spark.createDataFrame(TWINS).createOrReplaceTempView("cerql_twins")
    assert spark.sql("SELECT * FROM cerql_twins").columns == ["type", "ts", "x", "X"]
    with pytest.raises(Exception, match="AMBIGUOUS_REFERENCE"):
        spark.sql("SELECT x FROM cerql_twins").collect()


def test_cast_of_a_decimal_truncates(engine):
    """Spark: CAST(1.50 AS INT) = 1, CAST(-2.75 AS INT) = -2 (toward zero, no error)."""
    from decimal import Decimal

    table = pa.table({"type": ["A", "A"], "ts": [0, 1],
                      "d": pa.array([Decimal("1.50"), Decimal("-2.75")], pa.decimal128(5, 2))})
    out = cerql.run("SELECT CAST(a.d AS INT) AS i FROM s WHERE A AS a ORDER BY ts", {"s": table}, engine=engine)
    assert column(out, "i") == [1, -2]
