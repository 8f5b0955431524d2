"""MATCH_RECOGNIZE keys that are STRUCTs or ARRAYs (which Spark sorts and groups): PARTITION BY
and ORDER BY over them give the same rows on both Spark paths (the JVM's matcher and
mapInArrow's Python workers) and in ``cerql.run`` over the same data as Arrow or pandas: groups
as Spark's GROUP BY makes them (NULL fields and elements equal, NaN equal to NaN whatever its
bits, -0.0 to 0.0 inside), ONE ROW PER MATCH showing a group's keys as its first row holds them,
and the order of Spark's sort (docs/semantics.md, "The local engine" and "On Spark")."""

from __future__ import annotations

import math
import struct

import pandas as pd
import pyarrow as pa
import pytest

import cerql
from cerql.planner import front
from cerql.spark import mr_jvm
from tests.spark.compare import plain, with_jvm_matcher

pytestmark = pytest.mark.spark

OTHER_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0]  # a NaN of other bits, sign set


def _data() -> pa.Table:
    """Per ``ts``: a struct key ``k``, an array key ``arr``, a struct holding an array ``ka`` and
    a value ``x``; ``d`` is ``k``'s float. ``k`` of ts 1, 2, 9 are one group (-0.0 and 0.0), as
    are ts 3, 4 (two NaNs), 5, 8 (NULL) and 6, 7 (a NULL field); ``arr`` likewise, ``[]`` for
    ts 6, 7; ``ka`` holds ``arr`` and a number per pair of rows."""
    kind = pa.struct([("a", pa.float64()), ("b", pa.string())])
    k = [{"a": -0.0, "b": "x"}, {"a": 0.0, "b": "x"}, {"a": math.nan, "b": None}, {"a": OTHER_NAN, "b": None},
         None, {"a": None, "b": "x"}, {"a": None, "b": "x"}, None, {"a": 0.0, "b": "x"}, {"a": 1.0, "b": "y"}]
    arr = [[-0.0, None], [0.0, None], [math.nan], [OTHER_NAN], None, [], [], None, [1.0], [1.0, 2.0]]
    ka = [{"v": a, "n": i // 2} for i, a in enumerate(arr)]  # pairs of rows
    return pa.table({"k": pa.array(k, kind), "arr": pa.array(arr, pa.list_(pa.float64())),
                     "ka": pa.array(ka, pa.struct([("v", pa.list_(pa.float64())), ("n", pa.int64())])),
                     "d": pa.array([v["a"] if v else None for v in k], pa.float64()),
                     "ts": pa.array(range(1, 11), pa.int64()), "x": pa.array([3, 1, 2, 5, 4, 3, 1, 2, 6, 1], pa.int64())})


def _query(keys: str, measures: str, pattern: str = "(A+)", define: str = "A AS ts > 0",
           rows: str = "ONE ROW PER MATCH") -> str:
    return (f"SELECT * FROM t MATCH_RECOGNIZE ({keys} MEASURES {measures} {rows} PATTERN {pattern} "
            f"DEFINE {define})")


GROUPS = "COUNT(*) AS n, FIRST(A.ts) AS f, LAST(A.ts) AS l"
RUNS = ("FIRST(A.ts) AS f, LAST(B.ts) AS l", "(A B+)", "B AS x < PREV(x)")  # falling runs: the order shows

# (query, its rows: sorted by repr, which tells -0.0 from 0.0)
CASES = {
    "struct": (_query("PARTITION BY k ORDER BY ts", GROUPS), [
        ((("a", -0.0), ("b", "x")), 3, 1, 9), ((("a", 1.0), ("b", "y")), 1, 10, 10),
        ((("a", None), ("b", "x")), 2, 6, 7), ((("a", "NaN"), ("b", None)), 2, 3, 4), (None, 2, 5, 8)]),
    # the same floats, not nested: one group -0.0 and 0.0, one the NaNs
    "double": (_query("PARTITION BY d ORDER BY ts", GROUPS), [
        (-0.0, 3, 1, 9), (1.0, 1, 10, 10), ("NaN", 2, 3, 4), (None, 4, 5, 8)]),
    "array": (_query("PARTITION BY arr ORDER BY ts", GROUPS), [
        ((), 2, 6, 7), ((-0.0, None), 2, 1, 2), ((1.0, 2.0), 1, 10, 10), ((1.0,), 1, 9, 9), (("NaN",), 2, 3, 4),
        (None, 2, 5, 8)]),
    "struct of an array": (_query("PARTITION BY ka ORDER BY ts", GROUPS), [
        ((("v", ()), ("n", 2)), 1, 6, 6), ((("v", ()), ("n", 3)), 1, 7, 7), ((("v", (-0.0, None)), ("n", 0)), 2, 1, 2),
        ((("v", (1.0, 2.0)), ("n", 4)), 1, 10, 10), ((("v", (1.0,)), ("n", 4)), 1, 9, 9),
        ((("v", ("NaN",)), ("n", 1)), 2, 3, 4), ((("v", None), ("n", 2)), 1, 5, 5), ((("v", None), ("n", 3)), 1, 8, 8)]),
    # sorted: ts 8, 5 (NULL) 7, 6 (a NULL field) 9, 2, 1 (-0.0 ties 0.0) 10, 4, 3 (NaN last)
    "order by a struct": (_query("ORDER BY k, ts DESC", *RUNS), [(1, 10), (4, 3), (5, 7), (9, 2)]),
    # sorted: ts 3, 4 (NaN first) 10, 9 ([1.0, 2.0] before [1.0]) 1, 2, 6, 7 ([] before NULL) 5, 8
    "order by an array, descending": (_query("ORDER BY arr DESC, ts", *RUNS), [(4, 10), (5, 8), (6, 7), (9, 2)]),
    # NULLs first, then the DESC order: a NULL field last
    "order by a struct, descending": (_query("ORDER BY k DESC NULLS FIRST, ts", *RUNS),
                                      [(1, 2), (4, 10), (5, 8), (9, 7)]),
}


def _rows(columns, rows) -> tuple[list, str]:
    """Names and the rows as canonical values, sorted; the rows as their repr, -0.0 not 0.0."""
    return list(columns), repr(sorted((tuple(plain(v) for v in r) for r in rows), key=repr))


def _on_spark(spark, query: str, frame, jvm: str):
    result = with_jvm_matcher(spark, jvm, lambda: cerql.cer_sql(spark, query, t=frame))
    return _rows(result.columns, result.collect())


def _local(query: str, data) -> tuple[list, str]:
    local = cerql.run(query, {"t": data}, output="arrow")
    return _rows(local.column_names, [r.values() for r in local.to_pylist()])


@pytest.mark.parametrize("case", list(CASES))
def test_nested_keys_give_the_same_rows_everywhere(spark, case):
    query, expected = CASES[case]
    data = _data()
    names, rows = _local(query, data)
    assert rows == repr(sorted(expected, key=repr))
    assert _local(query, data.to_pandas(types_mapper=pd.ArrowDtype)) == (names, rows)
    frame = spark.createDataFrame(data)
    assert _on_spark(spark, query, frame, "true") == (names, rows)
    assert _on_spark(spark, query, frame, "false") == (names, rows)


def test_the_grouping_is_sparks_group_by(spark):
    """The groups above are those Spark's own GROUP BY makes of the same keys."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(_data())
    for key in ("k", "arr", "ka"):
        got = sorted(sorted(r["ts"]) for r in frame.groupBy(key).agg(F.collect_list("ts").alias("ts")).collect())
        assert len(got) < 10
        query = _query(f"PARTITION BY {key} ORDER BY ts", "COUNT(*) AS n, FIRST(A.ts) AS f")
        local = cerql.run(query, {"t": _data()}, output="arrow")
        assert sorted(local.column("n").to_pylist()) == sorted(len(g) for g in got)
        assert sorted(local.column("f").to_pylist()) == sorted(g[0] for g in got)


def test_all_rows_per_match_shows_each_rows_own_keys(spark):
    """ALL ROWS PER MATCH (the Python path) shows every row's own key: -0.0 and 0.0 both."""
    query = _query("PARTITION BY k, arr ORDER BY ts", "COUNT(*) AS n", rows="ALL ROWS PER MATCH")
    names, rows = _local(query, _data())
    assert "(('a', -0.0), ('b', 'x')), (-0.0, None), 1, 1, (('v', (-0.0, None)), ('n', 0)), -0.0, 3)" in rows
    assert "(('a', 0.0), ('b', 'x')), (0.0, None), 2, 2, (('v', (0.0, None)), ('n', 0)), 0.0, 1)" in rows
    assert _on_spark(spark, query, spark.createDataFrame(_data()), "false") == (names, rows)


def test_the_one_row_queries_are_the_jvms(spark):
    """The ONE ROW PER MATCH queries above run in the JVM, not in Python."""
    for query, _ in CASES.values():
        assert mr_jvm.why_not(spark, front.plan_row_pattern(query)) is None
