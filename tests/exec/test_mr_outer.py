"""The query around a MATCH_RECOGNIZE item without Spark (cerql/exec/mr_outer.py,
mr_outer_groups.py): the SELECT list, WHERE, GROUP BY, aggregates, HAVING, DISTINCT, ORDER BY and
LIMIT give Spark's answer (the rows below checked by hand against Spark 4's; the same queries on
Spark: tests/spark/test_mr_outer_spark.py); the rest is refused, pointing to Spark."""

from __future__ import annotations

import math
from decimal import Decimal

import pyarrow as pa
import pytest

from cerql.errors import AnalysisError, UnsupportedError
from cerql.exec.mr_outer import run_outer

RESULT = pa.table({"sym": ["a", "b", "c", None], "n": [3, 1, 2, 5]})


def rows(sql: str) -> list[dict]:
    return run_outer(sql, "__mr", RESULT).to_pylist()


def test_select_where_order_limit_over_the_item():
    got = rows("SELECT m.sym, n * 2 AS n2 FROM __mr AS m WHERE m.n > 1 ORDER BY n2 DESC LIMIT 2")
    assert got == [{"sym": None, "n2": 10}, {"sym": "a", "n2": 6}]


def test_star_and_qualified_star_keep_the_items_columns():
    assert rows("SELECT * FROM __mr") == RESULT.to_pylist()
    assert rows("SELECT m.* FROM __mr m") == RESULT.to_pylist()


def test_order_by_follows_sparks_null_placement():
    # Spark: ASC puts NULLs first, DESC last, unless NULLS FIRST/LAST says otherwise.
    assert [r["sym"] for r in rows("SELECT * FROM __mr ORDER BY sym")] == [None, "a", "b", "c"]
    assert [r["sym"] for r in rows("SELECT * FROM __mr ORDER BY sym DESC")] == ["c", "b", "a", None]
    assert [r["sym"] for r in rows("SELECT * FROM __mr ORDER BY sym NULLS LAST")] == ["a", "b", "c", None]
    assert [r["n"] for r in rows("SELECT * FROM __mr ORDER BY sym IS NULL, n DESC")] == [3, 2, 1, 5]


def test_where_drops_rows_whose_condition_is_null():
    assert rows("SELECT n FROM __mr WHERE sym <> 'a'") == [{"n": 1}, {"n": 2}]


@pytest.mark.parametrize("sql, what", [
    ("SELECT * FROM __mr m JOIN other o ON m.sym = o.sym", "JOIN"),
    ("SELECT * FROM __mr UNION ALL SELECT * FROM __mr", "UNION"),
    ("SELECT sym, count(*) FROM __mr GROUP BY ROLLUP(sym)", "ROLLUP"),
    ("SELECT sym, count(*) FROM __mr GROUP BY sym WITH CUBE", "CUBE"),
    ("SELECT sym, count(*) FROM __mr GROUP BY GROUPING SETS ((sym), ())", "GROUPING SETS"),
    ("SELECT sym, n, sum(n) OVER (PARTITION BY sym) FROM __mr", "window"),
    ("SELECT sym FROM __mr WHERE n IN (SELECT n FROM __mr)", "subquery"),
    ("SELECT DISTINCT ON (sym) sym FROM __mr", "DISTINCT ON"),
    ("SELECT sym, collect_list(n) FROM __mr GROUP BY sym", "order"),
    ("SELECT sym, listagg(sym, ',') FROM __mr GROUP BY sym", "order"),
    ("SELECT max_by(sym, n) FROM __mr", "order"),
    ("SELECT min_by(sym, n) FROM __mr", "order"),
    ("SELECT first(sym) FROM __mr", "aggregate"),
    ("SELECT any_value(sym) FROM __mr", "any_value"),
    ("SELECT collect_set(n) FROM __mr", "collect_set"),
    ("SELECT approx_count_distinct(n) FROM __mr", "approximate"),
    ("SELECT count(sym, n) FROM __mr", "arguments"),
    ("SELECT count(DISTINCT sym, n) FROM __mr", "arguments"),
    ("SELECT sum(sym) FROM __mr", "sum"),
    ("SELECT sym FROM __mr ORDER BY max(n)", "ORDER BY"),
    ("SELECT DISTINCT sym FROM __mr ORDER BY n", "DISTINCT"),
    ("SELECT sym, count(*) AS n FROM __mr GROUP BY sym ORDER BY max(n)", "alias"),
    # Spark 4 itself fails on it (UNSUPPORTED_EXPR_FOR_OPERATOR)
    ("SELECT sym FROM __mr GROUP BY sym HAVING count(*) > 1 ORDER BY count(*) DESC, sym", "HAVING"),
])
def test_what_only_spark_runs_is_refused_with_the_way_there(sql, what):
    with pytest.raises(UnsupportedError) as err:
        run_outer(sql, "__mr", RESULT)
    assert err.value.error_class == "LOCAL_OUTER_QUERY"
    assert what.lower() in err.value.message.lower() and "spark.cer_sql" in err.value.hint


def test_an_unknown_column_names_the_items_columns():
    with pytest.raises(AnalysisError) as err:
        run_outer("SELECT * FROM __mr WHERE zz > 1", "__mr", RESULT)
    assert err.value.error_class == "UNKNOWN_COLUMN" and "sym, n" in err.value.hint


def test_order_by_puts_nan_above_every_number_as_spark():
    result = pa.table({"x": [1.0, float("nan"), None, 3.0]})
    got = run_outer("SELECT x FROM __mr ORDER BY x", "__mr", result).column("x").to_pylist()
    assert got[0] is None and got[1:3] == [1.0, 3.0] and got[3] != got[3]
    got = run_outer("SELECT x FROM __mr ORDER BY x DESC", "__mr", result).column("x").to_pylist()
    assert got[0] != got[0] and got[1:3] == [3.0, 1.0] and got[3] is None


TICKS = pa.table({
    "sym": ["a", "a", None, None, "b", "a"],
    "n": pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
    "x": [1.0, -0.0, 0.0, float("nan"), float("nan"), None],
    "d": pa.array([Decimal("1.50"), Decimal("2.25"), None, Decimal("0.10"), Decimal("4.00"), Decimal("1.00")],
                  pa.decimal128(5, 2)),
})


def over(sql: str, table: pa.Table = TICKS) -> pa.Table:
    return run_outer(sql, "__mr", table)


def same(got: list, want: list) -> bool:
    """Rows equal, NaN equal to NaN, -0.0 told from 0.0."""
    def key(v):
        if isinstance(v, float):
            return ("NaN",) if math.isnan(v) else (v, math.copysign(1.0, v))
        return v
    return [{k: key(v) for k, v in r.items()} for r in got] == [{k: key(v) for k, v in r.items()} for r in want]


def test_group_by_with_aggregates_having_and_order_by_an_alias():
    got = over("SELECT sym, count(*) AS n, avg(n) AS mean, sum(n) AS total FROM __mr GROUP BY sym "
               "HAVING count(*) > 1 ORDER BY n DESC, sym")
    assert got.to_pylist() == [{"sym": "a", "n": 3, "mean": 3.0, "total": 9},
                               {"sym": None, "n": 2, "mean": 3.5, "total": 7}]
    assert got.schema.types == [pa.string(), pa.int64(), pa.float64(), pa.int64()]  # Spark: BIGINT, DOUBLE, BIGINT


def test_spark_names_unaliased_aggregates():
    got = over("SELECT sym, count(*), count(1), count(DISTINCT x), sum(n), max(m.sym) FROM __mr m GROUP BY sym")
    assert got.column_names == ["sym", "count(1)", "count(1)", "count(DISTINCT x)", "sum(n)", "max(sym)"]


def test_nulls_nan_and_signed_zeros_group_as_spark():
    # Spark: NULLs one group; NaN equals NaN; -0.0 and 0.0 one group, whose key reads 0.0
    got = over("SELECT x, count(*) AS c FROM __mr GROUP BY x ORDER BY x")
    assert same(got.to_pylist(), [{"x": None, "c": 1}, {"x": 0.0, "c": 2}, {"x": 1.0, "c": 1},
                                  {"x": float("nan"), "c": 2}])
    got = over("SELECT DISTINCT x FROM __mr ORDER BY x DESC")
    assert same(got.to_pylist(), [{"x": float("nan")}, {"x": 1.0}, {"x": 0.0}, {"x": None}])
    # an aggregate's value is not normalized: min of -0.0 and 1.0 is -0.0, as Spark gives it
    assert same(over("SELECT min(x) AS lo FROM __mr WHERE sym = 'a'").to_pylist(), [{"lo": -0.0}])
    assert over("SELECT count(DISTINCT x) AS c FROM __mr").to_pylist() == [{"c": 3}]


def test_an_aggregate_without_group_by_is_one_row_even_over_no_rows():
    empty = TICKS.slice(0, 0)
    got = over("SELECT count(*) AS c, count(n) AS cn, sum(n) AS s, avg(x) AS a, max(sym) AS m, sum(d) AS sd, "
               "stddev(n) AS sd2, count_if(n > 1) AS ci, bit_or(n) AS b FROM __mr", empty)
    assert got.to_pylist() == [{"c": 0, "cn": 0, "s": None, "a": None, "m": None, "sd": None, "sd2": None,
                                "ci": 0, "b": None}]
    assert got.schema.types == [pa.int64(), pa.int64(), pa.int64(), pa.float64(), pa.string(),
                                pa.decimal128(15, 2), pa.float64(), pa.int64(), pa.int32()]
    assert over("SELECT sym, count(*) AS c FROM __mr GROUP BY sym", empty).num_rows == 0
    assert over("SELECT count(*) AS c FROM __mr WHERE n > 100").to_pylist() == [{"c": 0}]
    assert over("SELECT count(*) AS c FROM __mr HAVING c > 100").num_rows == 0


def test_group_by_ordinal_alias_expression_and_all():
    want = [{"s": None, "c": 2}, {"s": "a", "c": 3}, {"s": "b", "c": 1}]
    for group in ("1", "s", "sym", "ALL"):
        assert over(f"SELECT sym AS s, count(*) AS c FROM __mr GROUP BY {group} ORDER BY 1").to_pylist() == want
    got = over("SELECT (n % 2) * 10 AS parity, sum(n) AS s FROM __mr GROUP BY n % 2 ORDER BY parity")
    assert got.to_pylist() == [{"parity": 0, "s": 12}, {"parity": 10, "s": 9}]


def test_having_reads_a_select_alias_before_a_column_of_that_name():
    # as Spark: n is count(*)'s alias here, though the item has a column n too
    got = over("SELECT count(*) AS n FROM __mr GROUP BY sym HAVING n > 1 ORDER BY n")
    assert got.to_pylist() == [{"n": 2}, {"n": 3}]


def test_aggregate_filter_and_the_folds():
    got = over("SELECT sym, sum(n) FILTER (WHERE n > 1) AS f, median(n) AS med, percentile(n, 0.25) AS p25, "
               "bool_and(n > 1) AS every, var_pop(n) AS v, sum(DISTINCT n % 2) AS sdist, avg(d) AS ad "
               "FROM __mr GROUP BY sym ORDER BY sym NULLS LAST")
    assert got.to_pylist() == [
        {"sym": "a", "f": 8, "med": 2.0, "p25": 1.5, "every": False, "v": 14 / 3, "sdist": 1,
         "ad": Decimal("1.583333")},
        {"sym": "b", "f": 5, "med": 5.0, "p25": 5.0, "every": True, "v": 0.0, "sdist": 1, "ad": Decimal("4.000000")},
        {"sym": None, "f": 7, "med": 3.5, "p25": 3.25, "every": True, "v": 0.25, "sdist": 1,
         "ad": Decimal("0.100000")}]
    assert got.schema.field("ad").type == pa.decimal128(9, 6)


def test_select_distinct_and_order_by_ordinal():
    assert over("SELECT DISTINCT sym FROM __mr ORDER BY 1 NULLS LAST").to_pylist() == [
        {"sym": "a"}, {"sym": "b"}, {"sym": None}]
    assert over("SELECT DISTINCT sym, n > 2 AS big FROM __mr ORDER BY sym, big").to_pylist() == [
        {"sym": None, "big": True}, {"sym": "a", "big": False}, {"sym": "a", "big": True}, {"sym": "b", "big": True}]
    assert over("SELECT n FROM __mr ORDER BY 1 DESC LIMIT 2").to_pylist() == [{"n": 6}, {"n": 5}]


@pytest.mark.parametrize("sql, error_class", [
    ("SELECT sym, n FROM __mr GROUP BY sym", "MISSING_AGGREGATION"),
    ("SELECT n, count(*) FROM __mr", "MISSING_AGGREGATION"),
    ("SELECT sym FROM __mr GROUP BY sym ORDER BY n", "MISSING_AGGREGATION"),
    ("SELECT sym, count(*) FROM __mr GROUP BY 2", "GROUP_BY_POS_AGGREGATE"),
    ("SELECT sym FROM __mr GROUP BY 3", "GROUP_BY_POS_OUT_OF_RANGE"),
    ("SELECT sym FROM __mr ORDER BY 2", "ORDER_BY_POS_OUT_OF_RANGE"),
    ("SELECT count(*) FROM __mr GROUP BY max(n)", "GROUP_BY_AGGREGATE"),
    ("SELECT sum(max(n)) FROM __mr", "NESTED_AGGREGATE_FUNCTION"),
    ("SELECT sym FROM __mr WHERE max(n) > 1 GROUP BY sym", "INVALID_WHERE_CONDITION"),
    ("SELECT stddev(sym) FROM __mr", "DATATYPE_MISMATCH"),
    ("SELECT count(*) FROM __mr HAVING max(sym)", "DATATYPE_MISMATCH"),
    ("SELECT count(*) FILTER (WHERE n) FROM __mr", "DATATYPE_MISMATCH"),
    ("SELECT sym, count(zz) FROM __mr GROUP BY sym", "UNKNOWN_COLUMN"),
])
def test_what_spark_rejects_is_an_error(sql, error_class):
    with pytest.raises(AnalysisError) as err:
        over(sql)
    assert err.value.error_class == error_class


def test_min_and_max_over_both_signed_zeros_are_refused_when_the_zero_wins():
    # Spark keeps the zero it reads first, in an order the query around the item does not fix
    with pytest.raises(UnsupportedError) as err:
        over("SELECT min(x) FROM __mr")
    assert err.value.error_class == "LOCAL_OUTER_QUERY" and "-0.0 and 0.0" in err.value.message
    assert same(over("SELECT max(x) AS hi FROM __mr").to_pylist(), [{"hi": float("nan")}])  # NaN wins: exact
    assert same(over("SELECT min(x) AS lo FROM __mr WHERE n > 2").to_pylist(), [{"lo": 0.0}])  # one zero only


def test_a_query_sqlglot_does_not_read_is_refused():
    with pytest.raises(UnsupportedError) as err:
        run_outer("SELECT avg(drop) FROM __mr", "__mr", pa.table({"drop": [1.0]}))
    assert err.value.error_class == "LOCAL_OUTER_QUERY"


def test_a_bare_decimal_literal_is_a_decimal_as_on_spark():
    # Spark types 1.5 as DECIMAL(2,1): sum(1.5) is DECIMAL(12,1), avg(1.5) DECIMAL(6,5) (checked
    # against Spark 4), a SELECT item 1.5 DECIMAL(2,1); not cerql.expr's DOUBLE of a bare literal
    got = over("SELECT sum(1.5) AS s, avg(1.5) AS a, min(-2.50) AS m, 1.5 AS k FROM __mr")
    assert got.schema.types == [pa.decimal128(12, 1), pa.decimal128(6, 5), pa.decimal128(3, 2), pa.decimal128(2, 1)]
    assert got.to_pylist() == [{"s": Decimal(TICKS.num_rows) * Decimal("1.5"), "a": Decimal("1.50000"),
                                "m": Decimal("-2.50"), "k": Decimal("1.5")}]
    plain = over("SELECT (0.25) AS k, n FROM __mr LIMIT 1")
    assert plain.schema.types[0] == pa.decimal128(2, 2) and plain.column("k").to_pylist() == [Decimal("0.25")]
