"""The query around a MATCH_RECOGNIZE item without Spark (cerql/exec/mr_outer.py): the SELECT
list, WHERE, ORDER BY and LIMIT give Spark's answer; the rest is refused, pointing to Spark."""

from __future__ import annotations

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
    ("SELECT sym, count(*) AS c FROM __mr GROUP BY sym", "GROUP BY"),
    ("SELECT * FROM __mr m JOIN other o ON m.sym = o.sym", "JOIN"),
    ("SELECT DISTINCT sym FROM __mr", "DISTINCT"),
    ("SELECT max(n) FROM __mr", "aggregate"),
    ("SELECT * FROM __mr UNION ALL SELECT * FROM __mr", "UNION"),
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
