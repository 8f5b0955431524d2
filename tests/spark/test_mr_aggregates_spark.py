"""MATCH_RECOGNIZE's aggregates (exec/mr_folds.py: moments, percentiles, regressions, bits, try_*,
listagg...; DISTINCT, PREV/NEXT in the argument) equal Spark's own over the same rows, values and
types.

``cerql.run`` computes each aggregate as a measure, one row per match, over a variable, a SUBSET
or every row of the match. The same clause with ALL ROWS PER MATCH WITH UNMATCHED ROWS labels
each input row with its match and variable; Spark SQL then groups the labelled rows by match and
computes the aggregate with ``FILTER (WHERE var ...)`` (PREV/NEXT: ``lag``/``lead`` over the
partition). The labelled rows are one Spark partition in row order, so Spark reads each match's
rows in row order, as the standard's aggregates do (collect_list's order, min_by/max_by's ties;
listagg's, which Spark is told with WITHIN GROUP (ORDER BY row)).
The item itself also runs on Spark (``cer_sql``: the local engine in ``mapInArrow``, its schema
from the engine's answer over no rows). One Spark action: all of it joined in one query.
"""

from __future__ import annotations

import math
import random
from decimal import Decimal

import pyarrow as pa
import pytest

import cerql

pytestmark = pytest.mark.spark

B, C, S = "var = 'B'", "var = 'C'", "var IN ('A', 'C')"
# measure name -> (cerql's aggregate, Spark's over the labelled rows, the FILTER condition or None)
PLAIN = {
    "sd_b": ("stddev(B.price)", "stddev(price)", B),
    "std_s": ("std(S.qty)", "std(qty)", S),
    "sdp_u": ("stddev_pop(qty)", "stddev_pop(qty)", None),
    "sds_b": ("stddev_samp(B.amt)", "stddev_samp(amt)", B),
    "var_c": ("variance(C.price)", "variance(price)", C),
    "vs_b": ("var_samp(B.qty)", "var_samp(qty)", B),
    "vp_s": ("var_pop(S.amt)", "var_pop(amt)", S),
    "ci_b": ("count_if(B.qty > 2)", "count_if(qty > 2)", B),
    "ba_b": ("bool_and(B.ok)", "bool_and(ok)", B),
    "ev_u": ("every(ok)", "every(ok)", None),
    "bo_c": ("bool_or(C.ok)", "bool_or(ok)", C),
    "so_s": ("some(S.ok)", "some(ok)", S),
    "an_b": ("any(B.ok)", "any(ok)", B),
    "mnb_u": ("min_by(row, y)", "min_by(row, y)", None),
    "mxb_b": ("max_by(B.amt, B.y)", "max_by(amt, y)", B),
    "mxb_s": ("max_by(S.qty, S.price)", "max_by(qty, price)", S),
    "cl_b": ("collect_list(B.qty)", "collect_list(qty)", B),
    "aa_u": ("array_agg(price)", "array_agg(price)", None),
    "cl_c": ("collect_list(C.amt)", "collect_list(amt)", C),
    "nav_b": ("sum(B.qty - PREV(B.qty))", "sum(qty - prev_qty)", B),
    "nav_n": ("collect_list(NEXT(B.row, 2))", "collect_list(next2_row)", B),
    # the second batch: percentiles, moments, regressions, bits, try_*, listagg (in row order)
    "med_b": ("median(B.price)", "median(price)", B),                   # NaN, -0.0 among the values
    "pct_u": ("percentile(qty, 0.3)", "percentile(qty, 0.3)", None),
    "pcta_s": ("percentile(S.amt, array(0.25, 0.5, 1))", "percentile(amt, array(0.25, 0.5, 1))", S),
    "sk_b": ("skewness(B.price)", "skewness(price)", B),
    "ku_u": ("kurtosis(qty)", "kurtosis(qty)", None),
    "co_b": ("corr(B.qty, B.y)", "corr(qty, y)", B),
    "cp_s": ("covar_pop(S.qty, S.y)", "covar_pop(qty, y)", S),
    "cs_u": ("covar_samp(amt, qty)", "covar_samp(amt, qty)", None),
    "rc_b": ("regr_count(B.y, B.qty)", "regr_count(y, qty)", B),
    "rax_u": ("regr_avgx(qty, amt)", "regr_avgx(qty, amt)", None),
    "ray_b": ("regr_avgy(B.y, B.qty)", "regr_avgy(y, qty)", B),
    "rsxx_u": ("regr_sxx(y, qty)", "regr_sxx(y, qty)", None),
    "rsyy_b": ("regr_syy(B.y, B.qty)", "regr_syy(y, qty)", B),
    "rsxy_s": ("regr_sxy(S.y, S.qty)", "regr_sxy(y, qty)", S),
    "rsl_u": ("regr_slope(y, qty)", "regr_slope(y, qty)", None),
    "ri_b": ("regr_intercept(B.y, B.qty)", "regr_intercept(y, qty)", B),
    "rr2_u": ("regr_r2(y, qty)", "regr_r2(y, qty)", None),
    "bta_u": ("bit_and(qty)", "bit_and(qty)", None),
    "bto_b": ("bit_or(B.y)", "bit_or(y)", B),
    "btx_s": ("bit_xor(S.qty)", "bit_xor(qty)", S),
    "ts_u": ("try_sum(qty)", "try_sum(qty)", None),
    "ts_b": ("try_sum(B.amt)", "try_sum(amt)", B),
    "ta_s": ("try_avg(S.amt)", "try_avg(amt)", S),
    "ta_u": ("try_avg(price)", "try_avg(price)", None),
    "la_b": ("listagg(B.tag, ',')", "listagg(tag, ',') WITHIN GROUP (ORDER BY row)", B),
    "sa_u": ("string_agg(tag)", "string_agg(tag) WITHIN GROUP (ORDER BY row)", None),
}
DISTINCT = {
    "cd_b": ("count(DISTINCT B.qty)", "count(DISTINCT qty)", B),
    "cd_u": ("count(DISTINCT price)", "count(DISTINCT price)", None),   # NaN = NaN, -0.0 = 0.0
    "sd_u": ("sum(DISTINCT qty)", "sum(DISTINCT qty)", None),
    "sdd_b": ("sum(DISTINCT B.amt)", "sum(DISTINCT amt)", B),
    "ad_s": ("avg(DISTINCT S.amt)", "avg(DISTINCT amt)", S),
    "ad_u": ("avg(DISTINCT qty)", "avg(DISTINCT qty)", None),
}
CLAUSE = ("PARTITION BY sym ORDER BY row MEASURES MATCH_NUMBER() AS m, {measures} {rows} PATTERN (A B+ C*) "
          "SUBSET S = (A, C) DEFINE B AS B.row % 5 <> 0, C AS coalesce(C.y, 0) >= 2")


def _table() -> pa.Table:
    rng = random.Random(7)
    n = 60

    def maybe(value, p=0.2):
        return None if rng.random() < p else value

    return pa.table({
        "sym": pa.array(["x" if i < 35 else "y" for i in range(n)]),
        "row": pa.array(range(1, n + 1), pa.int64()),
        "price": pa.array([maybe(rng.choice([0.0, -0.0, math.nan, 1.5, 2.25, 10.0, -3.5, 0.1]), 0.1)
                           for _ in range(n)], pa.float64()),
        "qty": pa.array([maybe(rng.randint(0, 6)) for _ in range(n)], pa.int64()),
        "amt": pa.array([maybe(Decimal(rng.randint(-300, 900)) / 100) for _ in range(n)], pa.decimal128(7, 2)),
        "ok": pa.array([maybe(rng.random() < 0.6) for _ in range(n)], pa.bool_()),
        "y": pa.array([maybe(rng.randint(0, 3)) for _ in range(n)], pa.int64()),
        "tag": pa.array([None if i % 9 == 4 else "abcdefg"[i % 7] * (1 + i % 3) for i in range(n)]),
    })


def _frame(spark, table: pa.Table):
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    schema = StructType([StructField(f.name, from_arrow_type(f.type), True) for f in table.schema])
    return spark.createDataFrame([tuple(r.values()) for r in table.to_pylist()], schema).coalesce(1)


def _spark_sql(aggregates: dict) -> str:
    items = ", ".join(f"{spark}{f' FILTER (WHERE {cond})' if cond else ''} AS {name}"
                      for name, (_, spark, cond) in aggregates.items())
    return f"SELECT sym, m, {items} FROM l WHERE m IS NOT NULL GROUP BY sym, m"


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def test_aggregates_equal_sparks(spark):
    from cerql.spark.lower import spark_type

    table = _table()
    measures = {**PLAIN, **DISTINCT}
    text = "SELECT * FROM t MATCH_RECOGNIZE (" + CLAUSE.format(
        measures=", ".join(f"{cerql_sql} AS {name}" for name, (cerql_sql, _, _) in measures.items()),
        rows="ONE ROW PER MATCH") + ")"
    ours = cerql.run(text, {"t": table}, output="arrow")
    labelled = cerql.run("SELECT * FROM t MATCH_RECOGNIZE (" + CLAUSE.format(
        measures="CLASSIFIER() AS var", rows="ALL ROWS PER MATCH WITH UNMATCHED ROWS") + ")", {"t": table},
        output="arrow")
    assert ours.num_rows >= 8 and set(labelled.column("var").to_pylist()) >= {"A", "B", "C", None}

    _frame(spark, labelled).createOrReplaceTempView("mr_labelled")
    cerql.cer_sql(spark, text, t=_frame(spark, table)).createOrReplaceTempView("mr_on_spark")
    query = (f"WITH l AS (SELECT *, lag(qty) OVER (PARTITION BY sym ORDER BY row) AS prev_qty, "
             f"lead(row, 2) OVER (PARTITION BY sym ORDER BY row) AS next2_row FROM mr_labelled), "
             f"p AS ({_spark_sql(PLAIN)}), d AS ({_spark_sql(DISTINCT)}), "
             f"o AS (SELECT sym, m, struct(*) AS on_spark FROM mr_on_spark) "
             f"SELECT * FROM p JOIN d USING (sym, m) JOIN o USING (sym, m) ORDER BY sym, m")
    frame = spark.sql(query)
    theirs = [r.asDict(recursive=True) for r in frame.collect()]
    assert [(r["sym"], r["m"]) for r in theirs] == list(zip(ours.column("sym").to_pylist(),
                                                            ours.column("m").to_pylist()))
    types = {f.name: f.dataType for f in frame.schema.fields}
    on_spark = {f.name: f.dataType for f in types["on_spark"].fields}
    for name in measures:
        assert spark_type(ours.schema.field(name).type) == types[name] == on_spark[name], name
        got = ours.column(name).to_pylist()
        want = [r[name] for r in theirs]
        assert all(_same(g, w) for g, w in zip(got, want)), (name, measures[name][0], got, want)
        item = [r["on_spark"][name] for r in theirs]  # the item itself on Spark: cerql in mapInArrow
        assert all(_same(g, w) for g, w in zip(got, item)), (name, "cer_sql", got, item)
