"""MATCH_RECOGNIZE on Spark over columns whose names Spark would parse (a dot, a backtick, a
space, mixed case): both paths (the JVM's matcher and mapInArrow's Python workers) and
``cerql.run`` give the same rows and names; and a key Spark cannot sort or group (a map) is the
query's error at the key, on both paths and before any job (docs/semantics.md, "On Spark")."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import cerql
from cerql.errors import CeqlError
from cerql.planner import front
from cerql.spark import mr_jvm
from tests.spark.compare import plain, with_jvm_matcher

pytestmark = pytest.mark.spark


def _odd() -> pd.DataFrame:
    """A group column ``k.g``, an order column ``T`s``, a price ``my Price`` and ``Qty.Z```."""
    return pd.DataFrame({"k.g": ["a", "a", "a", "b", "b", "b", "b", "b"], "T`s": [1, 2, 3, 4, 5, 6, 7, 8],
                         "my Price": [3.0, 1.0, 2.0, 5.0, 4.0, 3.0, 6.0, 2.0], "Qty.Z`": [1, 2, 3, 4, 5, 6, 7, 8]})


# each spelled otherwise than the column (case), quoted with backticks, a backtick doubled
ONE_ROW = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY `K.G` ORDER BY `t``s` MEASURES FIRST(A.`my price`) AS "
           "`first.p`, LAST(B.`Qty.Z```) AS `q``z`, B.`MY PRICE` AS `b p`, COUNT(*) AS n, `qty.z``` + 1 AS q1 "
           "ONE ROW PER MATCH PATTERN (A B+) DEFINE B AS `my price` < PREV(`My Price`) OR `Qty.Z``` > "
           "NEXT(`qty.z```, 2))")
QUERIES = [
    ONE_ROW,
    # ORDER BY a spaced name, descending; all rows (the Python path on Spark)
    "SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY `k.g` ORDER BY `my price` DESC, `T``s` MEASURES FIRST(A.`T``s`) "
    "AS s, MATCH_NUMBER() AS m ALL ROWS PER MATCH PATTERN (A B) DEFINE B AS `my price` < PREV(`my price`) + "
    "`Qty.Z```)",
    # key expressions over such names, and a measure the JVM does not take
    "SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY upper(`k.g`) ORDER BY `T``s` + 0 MEASURES SUM(B.`my price`) AS s "
    "ONE ROW PER MATCH PATTERN (A B+) DEFINE B AS `my price` > PREV(`my price`, 1))",
]


def _rows(columns, rows) -> tuple[list, list]:
    return list(columns), sorted((tuple(plain(v) for v in r) for r in rows), key=repr)


def _on_spark(spark, query: str, frame, jvm: str):
    result = with_jvm_matcher(spark, jvm, lambda: cerql.cer_sql(spark, query, t=frame))
    return _rows(result.columns, result.collect())


@pytest.mark.parametrize("query", QUERIES)
def test_odd_names_give_the_local_rows_on_both_paths(spark, query):
    data = _odd()
    local = cerql.run(query, {"t": data}, output="arrow")
    expected = _rows(local.column_names, [r.values() for r in local.to_pylist()])
    assert len(expected[1]) >= 2
    frame = spark.createDataFrame(data)
    assert _on_spark(spark, query, frame, "true") == expected
    assert _on_spark(spark, query, frame, "false") == expected


def test_the_one_row_query_is_the_jvms(spark):
    """The first query above runs in the JVM (its DEFINEs, PREV/NEXT and registers over the odd
    names), not in Python."""
    assert mr_jvm.why_not(spark, front.plan_row_pattern(ONE_ROW)) is None


MAP_KEYS = [
    ("PARTITION BY km ORDER BY t", "km", "PARTITION BY"),
    ("PARTITION BY k ORDER BY km DESC", "km DESC", "ORDER BY"),
    ("PARTITION BY sm ORDER BY t", "sm ORDER", "PARTITION BY"),   # a struct holding a map
    ("PARTITION BY map(k, t) ORDER BY t", "map(k", "PARTITION BY"),  # an expression
]


@pytest.mark.parametrize("keys, at, clause", MAP_KEYS)
def test_a_map_key_is_the_querys_error_on_both_paths_before_any_job(spark, keys, at, clause):
    query = (f"SELECT * FROM t MATCH_RECOGNIZE ({keys} MEASURES COUNT(*) AS n ONE ROW PER MATCH PATTERN (A B) "
             "DEFINE B AS x < PREV(x))")
    t = spark.createDataFrame(pd.DataFrame({"k": [1, 1, 2, 2], "t": [1, 2, 3, 4], "x": [3, 1, 2, 5]}))
    t = t.selectExpr("map(k, 1) AS km", "named_struct('a', k, 'm', map(k, 1)) AS sm", "k", "t", "x")
    tracker = spark.sparkContext.statusTracker()
    jobs = set(tracker.getJobIdsForGroup(None))
    errors = []
    for jvm in ("true", "false"):
        with pytest.raises(CeqlError) as err:
            _on_spark(spark, query, t, jvm)
        errors.append(err.value)
    assert set(tracker.getJobIdsForGroup(None)) == jobs
    for err in errors:
        assert (err.error_class, err.line, err.column) == ("MATCH_RECOGNIZE_KEY_NOT_ORDERABLE", 1, query.index(at) + 1)
        assert clause in str(err) and "cast it to a string or pick a field" in err.hint


def test_a_map_key_is_the_same_error_locally():
    """cerql.run over an Arrow map column: the same error, at the same place."""
    query = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY km ORDER BY t MEASURES COUNT(*) AS n ONE ROW PER MATCH "
             "PATTERN (A B) DEFINE B AS x < PREV(x))")
    maps = pd.Series([[(1, 1)], [(1, 1)], [(2, 1)], [(2, 1)]], dtype=pd.ArrowDtype(pa.map_(pa.int64(), pa.int64())))
    data = pd.DataFrame({"km": maps, "t": [1, 2, 3, 4], "x": [3, 1, 2, 5]})
    with pytest.raises(CeqlError) as err:
        cerql.run(query, {"t": data})
    assert (err.value.error_class, err.value.column) == ("MATCH_RECOGNIZE_KEY_NOT_ORDERABLE", query.index("km") + 1)
