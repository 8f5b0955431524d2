"""MATCH_RECOGNIZE matched in Spark's JVM (cerql/spark/mr_jvm.py, io.cerql.mr.MatchRecognizeFunction):
the same rows, names and types as the local engine, and as the Python path on Spark, on random
queries of what it takes (ONE ROW PER MATCH, PAST LAST ROW or TO NEXT ROW, row-local DEFINEs, measures of
FIRST/LAST/COUNT/CLASSIFIER/MATCH_NUMBER); the queries it does not take run in Python, and
``cerql.explain`` says which and why (docs/semantics.md, "On Spark")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cerql
from cerql.errors import CeqlError
from cerql.spark.mr_jvm import JVM_CONF
from tests.spark.compare import plain, with_jvm_matcher

pytestmark = pytest.mark.spark


def _rows(df) -> list[tuple]:
    return sorted((tuple(plain(v) for v in r) for r in df.collect()), key=repr)


def _local(query: str, tables: dict) -> list[tuple]:
    table = cerql.run(query, tables, output="arrow")  # NULLs as NULLs, not pandas' NaN
    return sorted((tuple(plain(v) for v in r.values()) for r in table.to_pylist()), key=repr)


def _data(seed: int, n: int = 40) -> pd.DataFrame:
    """Rows of two keys and a NULL one, ties on ``t``, a NULL now and then in ``s``."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "k": rng.choice(["a", "b", None], n),
        "t": rng.integers(0, 12, n),
        "x": rng.integers(0, 6, n),
        "y": rng.normal(size=n).round(2),
        "s": rng.choice(["p", "q", "r", None], n, p=[0.3, 0.3, 0.3, 0.1]),
    })


VSHAPE = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS first_t, "
          "LAST(C.t) AS last_t, COUNT(*) AS n, COUNT(B.*) AS nb, CLASSIFIER() AS cls, MATCH_NUMBER() AS m, "
          "LAST(C.x) - FIRST(A.x) AS gain, s AS last_s ONE ROW PER MATCH "
          "PATTERN (A B+ C+) DEFINE B AS x < PREV(x), C AS x > PREV(x))")


def test_explain_says_the_jvm_matches(spark):
    t = spark.createDataFrame(_data(1))
    shown = cerql.explain(VSHAPE, spark, t=t)
    assert "cerql's Java matcher" in shown and "MapInArrow" not in shown
    # the result's own plan scans the matcher's rows; the rows it reads are shown, shuffled and sorted
    read = shown[shown.index("the sorted rows the Java matcher reads:"):]
    assert "Exchange hashpartitioning(k" in read and "Sort [k" in read and "__cerql_mr_ordinal" in read
    off = with_jvm_matcher(spark, "false", lambda: cerql.explain(VSHAPE, spark, t=t))
    assert "MapInArrow" in off and f"not in the JVM: {JVM_CONF} is false" in off


@pytest.mark.parametrize("change, why", [
    ("ONE ROW PER MATCH", "ALL ROWS PER MATCH"),
    ("PATTERN", "AFTER MATCH SKIP TO FIRST C"),
    ("COUNT(B.*)", "an aggregate other than COUNT(*)"),
    ("FIRST(A.t)", "FIRST with an offset"),
    ("C AS x > PREV(x)", "a DEFINE reads the match's history"),
])
def test_what_the_jvm_does_not_take_runs_in_python(spark, change, why):
    query = VSHAPE.replace(change, {
        "ONE ROW PER MATCH": "ALL ROWS PER MATCH",
        "PATTERN": "AFTER MATCH SKIP TO FIRST C PATTERN",
        "COUNT(B.*)": "sum(B.x)",
        "FIRST(A.t)": "FIRST(A.t, 1)",
        "C AS x > PREV(x)": "C AS x > FIRST(A.x)",
    }[change])
    data = _data(2)
    t = spark.createDataFrame(data)
    shown = cerql.explain(query, spark, t=t)
    assert "MapInArrow" in shown and why in shown
    assert _rows(cerql.cer_sql(spark, query, t=t)) == _local(query, {"t": data})


@pytest.mark.parametrize("skip", ["", "AFTER MATCH SKIP TO NEXT ROW "])
def test_vshape_equals_local_and_the_python_path(spark, skip):
    data = _data(3, 400)
    t = spark.createDataFrame(data)
    query = VSHAPE.replace("PATTERN", skip + "PATTERN")
    assert "cerql's Java matcher" in cerql.explain(query, spark, t=t)
    jvm = cerql.cer_sql(spark, query, t=t)
    python = with_jvm_matcher(spark, "false", lambda: cerql.cer_sql(spark, query, t=t))
    assert jvm.schema == python.schema
    assert _rows(jvm) == _rows(python) == _local(query, {"t": data})
    assert len(_rows(jvm)) > 10


def test_keys_null_nan_and_signed_zero_group_as_spark_groups(spark):
    """Rows 0, 1, 7 (0.0, -0.0, 0.0) are one group, 2-3 (NaN) another, 4-5 (NULL) a third."""
    t = spark.createDataFrame(pd.DataFrame({"t": range(8), "x": range(1, 9)})).selectExpr(
        "CASE WHEN t = 1 THEN -0.0D WHEN t IN (2, 3) THEN double('NaN') WHEN t IN (4, 5) THEN NULL "
        "WHEN t = 6 THEN 1.0D ELSE 0.0D END AS k", "t", "x")
    query = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n, "
             "FIRST(x) AS f ONE ROW PER MATCH PATTERN (A+) DEFINE A AS x > 0)")
    got = _rows(cerql.cer_sql(spark, query, t=t))
    assert sorted(r[1:] for r in got) == [(1, 7), (2, 3), (2, 5), (3, 1)]
    assert got == with_jvm_matcher(spark, "false", lambda: _rows(cerql.cer_sql(spark, query, t=t)))


def test_spark_only_functions_in_defines_and_next(spark):
    data = _data(4, 200)
    query = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY k ORDER BY t, y MEASURES FIRST(A.s) AS a, LAST(B.y) AS b, "
             "COUNT(*) AS n ONE ROW PER MATCH PATTERN (A B{1,3}? C) "
             "DEFINE A AS soundex(s) = 'P000', B AS NEXT(y, 2) > y OR PREV(s, 3) = 'q', C AS y < NEXT(y))")
    t = spark.createDataFrame(data)
    assert "cerql's Java matcher" in cerql.explain(query, spark, t=t)
    python = with_jvm_matcher(spark, "false", lambda: _rows(cerql.cer_sql(spark, query, t=t)))
    assert _rows(cerql.cer_sql(spark, query, t=t)) == python
    assert python


def test_a_define_that_is_not_boolean_is_the_same_error(spark):
    t = spark.createDataFrame(_data(5))
    query = VSHAPE.replace("C AS x > PREV(x)", "C AS x + PREV(x)")
    with pytest.raises(CeqlError) as jvm:
        cerql.cer_sql(spark, query, t=t)
    with pytest.raises(CeqlError) as python:
        with_jvm_matcher(spark, "false", lambda: cerql.cer_sql(spark, query, t=t))
    assert jvm.value.error_class == python.value.error_class == "MATCH_RECOGNIZE_DEFINE_NOT_BOOLEAN"
    assert jvm.value.column == python.value.column


@pytest.mark.parametrize("change, error_class, at", [
    (("B AS x < PREV(x)", "B AS xx < PREV(x)"), "UNKNOWN_COLUMN", "xx < PREV"),
    (("LAST(C.t) AS last_t", "LAST(C.tt) AS last_t"), "UNKNOWN_COLUMN", "C.tt"),
    (("FIRST(A.t)", "FIRST(D.t)"), "MATCH_RECOGNIZE_UNDEFINED_VARIABLE", "D.t"),
    (("C AS x > PREV(x)", "C AS x > PREV(x) + nosuch(x)"), "USER_FUNCTION_NOT_ALLOWED", "nosuch"),
])
def test_errors_are_the_python_paths_and_come_before_any_job(spark, change, error_class, at):
    t = spark.createDataFrame(_data(6))
    query = VSHAPE.replace(*change)
    tracker = spark.sparkContext.statusTracker()
    jobs = set(tracker.getJobIdsForGroup(None))
    with pytest.raises(CeqlError) as jvm:
        cerql.cer_sql(spark, query, t=t)
    assert set(tracker.getJobIdsForGroup(None)) == jobs
    with pytest.raises(CeqlError) as python:
        with_jvm_matcher(spark, "false", lambda: cerql.cer_sql(spark, query, t=t))
    assert (jvm.value.error_class, jvm.value.line, jvm.value.column) == \
        (python.value.error_class, python.value.line, python.value.column)
    assert (jvm.value.error_class, jvm.value.column) == (error_class, query.index(at) + 1)


def test_building_the_result_runs_no_job_until_an_action(spark):
    """The JVM path reads Spark's own rows through an RDD whose input plan (with adaptive query
    execution, whose planning runs the shuffle) is made when a job first needs it: building the
    DataFrame, explaining it and reading its schema start no job."""
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
    t = spark.createDataFrame(_data(7, 200))
    tracker = spark.sparkContext.statusTracker()
    jobs = set(tracker.getJobIdsForGroup(None))
    result = cerql.cer_sql(spark, VSHAPE, t=t)
    result.schema, result.columns
    cerql.explain(VSHAPE, spark, t=t)
    assert set(tracker.getJobIdsForGroup(None)) == jobs
    assert _rows(result) == _local(VSHAPE, {"t": _data(7, 200)})


def test_the_result_twice_and_under_a_shuffle_of_outer_sql(spark):
    """Two actions on one result, and outer SQL that shuffles it again (GROUP BY, a join with
    itself), give the local engine's rows."""
    data = _data(8, 300)
    t = spark.createDataFrame(data)
    result = cerql.cer_sql(spark, VSHAPE, t=t)
    assert _rows(result) == _rows(result) == _local(VSHAPE, {"t": data})
    outer = VSHAPE.replace("SELECT * FROM t MATCH_RECOGNIZE", "SELECT k, count(*) AS c, sum(n) AS rows FROM t "
                           "MATCH_RECOGNIZE") + " GROUP BY k"
    assert _rows(cerql.cer_sql(spark, outer, t=t)) == _local(outer, {"t": data})
    again = cerql.cer_sql(spark, VSHAPE, t=t)
    joined = again.join(result, again["k"].eqNullSafe(result["k"]) & (again["m"] == result["m"]))
    assert joined.count() == result.count() > 10


def test_keys_and_values_of_many_types(spark):
    """PARTITION BY and measures over dates, timestamps, integers, decimals, strings and booleans
    (read from Spark's rows without conversion, as their own values): the Python path's rows."""
    data = _data(9, 300)
    t = spark.createDataFrame(data).selectExpr(
        "k", "t", "x", "y", "s", "date_add(DATE'2024-02-27', cast(x AS INT)) AS d",
        "timestamp_micros(t * 1000003) AS ts", "cast(y AS DECIMAL(9, 2)) AS dec", "x % 2 = 0 AS b",
        "cast(y AS FLOAT) AS f", "date_add(DATE'2024-02-27', cast(t % 3 AS INT)) AS kd",
        "timestamp_micros(t % 3) AS kts", "cast(t % 3 AS INT) AS ki", "cast(t % 3 AS DECIMAL(3, 1)) AS kdec",
        "t % 3 = 0 AS kb", "cast(t % 3 AS FLOAT) - 0.5F AS kf", "nullif(x, 3) AS xn",
        "CASE WHEN x = 2 THEN NULL WHEN x = 4 THEN double('NaN') WHEN x = 5 THEN -0.0D ELSE y END AS yn")
    query = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY {keys} ORDER BY t, y MEASURES FIRST(A.d) AS fd, "
             "LAST(C.ts) AS lt, FIRST(A.dec) AS fdec, LAST(s) AS ls, FIRST(B.f) AS ff, LAST(A.b) AS lb, "
             "COUNT(*) AS n ONE ROW PER MATCH PATTERN (A B+ C+) DEFINE B AS x < PREV(x), C AS x > PREV(x))")
    # measures of many types (a DECIMAL, a string, a FLOAT, a BOOLEAN), then of dates, timestamps,
    # BIGINTs and DOUBLEs with NULL, NaN and -0.0
    primitives = ("FIRST(A.d) AS fd, LAST(C.ts) AS lt, FIRST(B.yn) AS fy, LAST(B.yn) AS ly, LAST(C.xn) AS lx, "
                  "FIRST(xn) AS fx, COUNT(*) AS n ONE ROW")
    cases = [query.format(keys=k) for k in ("kd", "kts", "ki, k", "kdec", "kb, s", "kf")]
    cases += [query.format(keys=k).replace(query[query.index("FIRST(A.d)"):query.index(" ONE ROW") + 8], primitives)
              for k in ("ki, k", "kf")]
    for q in cases:
        jvm = cerql.cer_sql(spark, q, t=t)
        assert "cerql's Java matcher" in cerql.explain(q, spark, t=t)
        python = with_jvm_matcher(spark, "false", lambda: cerql.cer_sql(spark, q, t=t))
        assert jvm.schema == python.schema
        assert _rows(jvm) == _rows(python), q
        assert len(_rows(jvm)) > 5


# ------------------------------------------------------------------------------ random queries
VARIABLES = ("A", "B", "C")


def _patterns():
    leaf = st.sampled_from(VARIABLES)
    quant = st.sampled_from(["", "", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,2}", "{,2}", "{2,}", "{0,1}?"])

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map(lambda p: f"{p[0]} {p[1]}"),
            st.tuples(inner, inner).map(lambda p: f"{p[0]} | {p[1]}"),
            st.tuples(inner, quant).map(lambda p: f"({p[0]}){p[1]}"),
            inner.map(lambda p: "{- " + p + " -}"),
            st.tuples(leaf, leaf).map(lambda p: f"PERMUTE({p[0]}, {p[1]})"),
        )

    body = st.recursive(st.tuples(leaf, quant).map("".join), extend, max_leaves=5)
    return st.tuples(st.sampled_from(["", "", "^ "]), body, st.sampled_from(["", "", " $"])).map("".join)


CONDITIONS = ["x > PREV(x)", "x < PREV(x, 2)", "x >= NEXT(x)", "x % 2 = 0", "s IS NULL", "PREV(x) IS NULL",
              "coalesce(NEXT(s, 2), 'p') = 'p'", "s = 'p'", "y > 0 AND s <> 'r'", "NEXT(s) = s", "TRUE", "FALSE",
              "NULL"]
# each measure, with the variables it needs in the pattern (U: A or C)
MEASURES = {"FIRST(A.x)": "A", "LAST(B.y)": "B", "x": "", "A.s": "A", "COUNT(*)": "", "COUNT(C.*)": "C",
            "CLASSIFIER()": "", "MATCH_NUMBER()": "", "LAST(x) - FIRST(x)": "", "FIRST(U.t)": "U",
            "CLASSIFIER(U)": "U", "COUNT(U.*) * 2": "U", "upper(LAST(A.s))": "A", "FINAL LAST(t)": "",
            "RUNNING FIRST(B.t) + 1": "B"}


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=_patterns(), defines=st.lists(st.sampled_from(CONDITIONS), min_size=3, max_size=3),
       defined=st.lists(st.booleans(), min_size=3, max_size=3),
       measures=st.lists(st.sampled_from(sorted(MEASURES)), min_size=1, max_size=4, unique=True),
       partitioned=st.booleans(), seed=st.integers(0, 1000), skip=st.sampled_from(["PAST LAST ROW", "TO NEXT ROW"]))
def test_random_queries_equal_local(spark, pattern, defines, defined, measures, partitioned, seed, skip):
    present = {v for v in VARIABLES if v in pattern}
    subset = sorted(present & {"A", "C"})
    items = [m for m in measures if all(v in present or (v == "U" and subset) for v in MEASURES[m])] or ["COUNT(*)"]
    define = ", ".join(f"{v} AS {c}" for v, c, d in zip(VARIABLES, defines, defined) if d and v in present)
    query = (f"SELECT * FROM t MATCH_RECOGNIZE ({'PARTITION BY k ' if partitioned else ''}ORDER BY t, y "
             f"MEASURES {', '.join(f'{m} AS m{i}' for i, m in enumerate(items))} ONE ROW PER MATCH "
             f"AFTER MATCH SKIP {skip} PATTERN ({pattern}) {'SUBSET U = (' + ', '.join(subset) + ')' if subset else ''} "
             f"{'DEFINE ' + define if define else ''})")
    data = _data(seed)
    t = spark.createDataFrame(data)
    assert "cerql's Java matcher" in cerql.explain(query, spark, t=t)
    jvm = cerql.cer_sql(spark, query, t=t)
    assert _rows(jvm) == _local(query, {"t": data})
    python = with_jvm_matcher(spark, "false", lambda: cerql.cer_sql(spark, query, t=t))
    assert jvm.schema == python.schema
