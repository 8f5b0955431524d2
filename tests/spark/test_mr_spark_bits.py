"""MATCH_RECOGNIZE on Spark: the row-local DEFINE bits Spark computes in the JVM (spark/mr_bits.py)
equal the local engine's (exec/mr_define.py), PARTITION BY / ORDER BY expressions give the local
engine's answer, a function only Spark runs works in a DEFINE on Spark (and is refused locally),
a match undecided over cerql.matchRecognize.maxMatchRows rows fails with its CeqlError, and a
group far longer than that limit, of short matches, runs under it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import cerql
from cerql.exec import mr_engine
from cerql.exec.mr_define import define_bits
from cerql.planner import front
from cerql.spark import mr_bits, mr_lower
from cerql.spark.task_errors import task_error
from cerql.spark.mr_jvm import JVM_CONF

pytestmark = pytest.mark.spark

DEFINES = ("B AS price < PREV(price), C AS C.price > PREV(price, 2) OR NEXT(price) IS NULL, "
           "D AS PREV(price) IS NULL AND coalesce(NEXT(price, 3), -1.0) < price + 1")


def _rows(n: int = 60, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    price = np.round(rng.uniform(0, 10, n), 1).astype(object)
    price[rng.random(n) < 0.15] = None
    sym = rng.choice(["a", "A", "b", "c", "C"], n).astype(object)
    sym[rng.random(n) < 0.05] = None
    return pd.DataFrame({"id": np.arange(n), "sym": sym, "ts": rng.permutation(n), "price": price})


def _query(rows: str, partition: str = "lower(sym)", order: str = "ts % 7 DESC, ts") -> str:
    return (f"SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY {partition} ORDER BY {order} "
            "MEASURES CLASSIFIER() AS cls, MATCH_NUMBER() AS mno, count(*) AS n, LAST(price) AS last_price "
            f"{rows} AFTER MATCH SKIP TO NEXT ROW PATTERN (A? (B | C | D)+) DEFINE {DEFINES}) AS m")


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(frame.columns), na_position="first").reset_index(drop=True)


def _local_bits(text: str, rows: pd.DataFrame) -> dict[int, int]:
    """Each row's DEFINE bits as cerql.run computes them (by id): the engine's own steps."""
    clause = front.plan_row_pattern(text).clause
    table = pa.Table.from_pandas(rows, preserve_index=False)
    table, part_keys, order_keys = mr_engine.key_columns(clause, table, text, None)
    part = mr_engine.partition_ids(table, [k.column for k in part_keys])
    order = mr_engine.sort_order(table, part, clause.order_by, [k.column for k in order_keys])
    sorted_rows = table.take(pa.array(order))
    start, end, _ = mr_engine._partition_bounds(part[order])
    defines = {d.variable.upper(): d.condition for d in clause.defines}
    bits = define_bits(sorted_rows, start, end, ("A", "B", "C", "D"), defines, text)
    return dict(zip(sorted_rows.column("id").to_pylist(), bits.tolist()))


def test_jvm_bits_equal_local_bits(spark):
    """PREV/NEXT at offsets 1-3 over expression keys, NULL prices and NULL partition keys: the
    bits the JVM packs equal exec/mr_define.py's, row by row."""
    rows = _rows()
    text = _query("ALL ROWS PER MATCH")
    planned = front.plan_row_pattern(text)
    frame = spark.createDataFrame(rows).repartition(3)  # several input partitions
    from pyspark.sql import functions as F

    frame = frame.withColumn(mr_lower.ORDINAL, F.monotonically_increasing_id())
    frame, keys, partition, order = mr_bits.with_keys(frame, planned.clause, text, mr_lower.ORDINAL)
    assert keys == ["__cerql_mr_key0", "__cerql_mr_key1", None]
    frame = mr_bits.with_bits(frame, planned.clause, planned.analysis.row_local, partition, order, text)
    jvm = {r["id"]: r[mr_bits.BITS] & (2 ** 64 - 1) for r in frame.select("id", mr_bits.BITS).collect()}
    local = _local_bits(text, rows)
    assert jvm == local
    assert len({b for b in local.values()}) > 3  # the data tells the variables apart


@pytest.mark.parametrize("rows, partition, order", [
    ("ALL ROWS PER MATCH WITH UNMATCHED ROWS", "lower(sym)", "ts % 7 DESC, ts"),
    ("ONE ROW PER MATCH", "sym, id % 2", "-ts NULLS FIRST"),
])
def test_results_equal_local(spark, rows, partition, order):
    rows_in = _rows(seed=9)
    text = _query(rows, partition, order)
    local = cerql.run(text, {"t": rows_in})
    on_spark = cerql.cer_sql(spark, text, t=spark.createDataFrame(rows_in).repartition(3)).toPandas()
    assert list(on_spark.columns) == list(local.columns)
    assert [c for c in local.columns if c in ("lower(sym)", "id % 2", "ts % 7")] != []
    pd.testing.assert_frame_equal(_sorted(on_spark), _sorted(local), check_dtype=False)


def test_spark_only_function_in_define_and_partition(spark):
    """soundex (which cerql.expr does not run) in a DEFINE and in PARTITION BY: Spark computes
    it in the JVM; cerql.run refuses it with a CeqlError naming spark.cer_sql."""
    rows = _rows(seed=3)
    text = _query("ALL ROWS PER MATCH", "soundex(sym)", "ts").replace(
        "B AS price < PREV(price)", "B AS price < PREV(price) AND soundex(sym) <> 'B000'")
    for query in (text, _query("ALL ROWS PER MATCH", "soundex(sym)", "ts")):
        with pytest.raises(cerql.CeqlError) as refused:
            cerql.run(query, {"t": rows})
        assert refused.value.error_class == "UNSUPPORTED_EXPRESSION" and "spark.cer_sql" in str(refused.value)
    # soundex of one letter is that letter, upper case, and 000: the same as upper(sym) || '000'
    same = text.replace("soundex(sym)", "upper(sym) || '000'")
    local = cerql.run(same, {"t": rows}).rename(columns={"upper(sym) || '000'": "soundex(sym)"})
    on_spark = cerql.cer_sql(spark, text, t=spark.createDataFrame(rows)).toPandas()
    assert "soundex(sym)" in on_spark.columns
    pd.testing.assert_frame_equal(_sorted(on_spark), _sorted(local), check_dtype=False)


def test_navigating_defines_run_in_the_tasks_unless_only_spark_runs_them(spark):
    """A DEFINE with PREV/NEXT that cerql.expr evaluates is computed in the tasks (no Window in
    Spark's plan, its columns crossing instead of bits); one with a function only Spark runs
    keeps the Window; a DEFINE of the current row alone stays a projection in the JVM."""
    spark.conf.set(JVM_CONF, "false")  # the Python path's input and plan (the JVM takes these queries)
    try:
        rows = spark.createDataFrame(_rows(seed=3))
        plain = _query("ONE ROW PER MATCH", "sym", "ts").replace("PATTERN (A? (B | C | D)+) DEFINE",
                                                                  "PATTERN (A? (B | C | D)+) DEFINE A AS price > 1,")
        spark_only = plain.replace("B AS price < PREV(price)", "B AS price < PREV(price) AND soundex(sym) <> 'B000'")
        for text, local, window, bits in ((plain, {"B", "C", "D"}, False, True), (spark_only, {"C", "D"}, True, True),
                                          (_query("ONE ROW PER MATCH", "sym", "ts"), {"B", "C", "D"}, False, False)):
            planned, frame, _, _, spec = mr_lower.matcher_input(spark, text, {"t": rows})
            assert set(spec.defines) == local
            plan = "\n".join(line for line in mr_lower.explain_on_spark(spark, text, {"t": rows}).splitlines()
                             if "Window" in line or mr_bits.BITS in line)
            assert ("Window [" in plan) == window, plan
            assert (mr_bits.BITS in frame.columns) == bits and ("price" in frame.columns)
            if text is not spark_only:  # which cerql.run refuses (test_spark_only_function_in_define_and_partition)
                on_spark = cerql.cer_sql(spark, text, t=rows).toPandas()
                local = cerql.run(text, {"t": _rows(seed=3)})
                assert len(local) > 3
                pd.testing.assert_frame_equal(_sorted(on_spark), _sorted(local), check_dtype=False)
    finally:
        spark.conf.unset(JVM_CONF)


@pytest.mark.parametrize("jvm", ["true", "false"])
@pytest.mark.parametrize("skip", ["PAST LAST ROW", "TO NEXT ROW"])
def test_match_limit_conf_fails_the_run(spark, jvm, skip):
    """The same limit and error whether the JVM matches (it holds the matches found behind the
    first undecided start, and TO NEXT ROW the rows' bits from there on, which it replays) or
    Python does (it holds the rows from there on)."""
    spark.conf.set(JVM_CONF, jvm)
    rows = pd.DataFrame({"sym": ["x"] * 20 + ["y"] * 3, "ts": range(23), "price": [1.0] * 23})
    text = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES count(*) AS n "
            f"AFTER MATCH SKIP {skip} PATTERN (A+) DEFINE A AS price > 0) AS m")
    overlap = skip == "TO NEXT ROW"  # a match per start row, each running to its group's end
    spark.conf.set(mr_lower.MAX_MATCH_ROWS_CONF, "5")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "4")
    try:
        assert ("cerql's Java matcher" in cerql.explain(text, spark, t=spark.createDataFrame(rows))) == (jvm == "true")
        df = cerql.cer_sql(spark, text, t=spark.createDataFrame(rows))
        with pytest.raises(Exception, match="MATCH_RECOGNIZE_MATCH_TOO_LONG") as failure:
            df.collect()
        cause = task_error(failure.value)
        assert isinstance(cause, cerql.ExecutionError)
        assert cause.error_class == "MATCH_RECOGNIZE_MATCH_TOO_LONG"
        assert mr_lower.MAX_MATCH_ROWS_CONF in cause.hint and "sym='x'" in str(cause)
        spark.conf.set(mr_lower.MAX_MATCH_ROWS_CONF, "20")
        assert sorted(r["n"] for r in cerql.cer_sql(spark, text, t=spark.createDataFrame(rows)).collect()) == (
            sorted([*range(1, 21), 1, 2, 3]) if overlap else [3, 20])
        # a group of 3 000 rows whose matches are short runs under a limit of 40 rows
        many = pd.DataFrame({"sym": ["x"] * 3000, "ts": range(3000), "price": [float(i % 5) for i in range(3000)]})
        short = text.replace("PATTERN (A+) DEFINE A AS price > 0", "PATTERN (A+) DEFINE A AS price > PREV(price)")
        spark.conf.set(mr_lower.MAX_MATCH_ROWS_CONF, "40")
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "16")
        got = cerql.cer_sql(spark, short, t=spark.createDataFrame(many)).toPandas()
        if overlap:
            assert len(got) == 2400 and sorted(got["n"].value_counts().items()) == [(n, 600) for n in (1, 2, 3, 4)]
        else:
            assert len(got) == 600 and set(got["n"]) == {4}
    finally:
        spark.conf.unset(mr_lower.MAX_MATCH_ROWS_CONF)
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
        spark.conf.unset(JVM_CONF)


@pytest.mark.parametrize("batch_rows", [1, 4, 10_000])
def test_groups_cut_across_arrow_batches(spark, batch_rows):
    """The task reads its rows in Arrow batches and matches a PARTITION BY group once it is
    complete: a group spanning batches, batches holding several groups, NULL keys (pandas' NaN
    and None, both NULL on the way in) give cerql.run's answer whatever the batch size."""
    rng = np.random.default_rng(3)
    n = 80
    key = rng.choice([1.0, 2.0, float("nan"), None], n).astype(object)
    rows = pd.DataFrame({"id": np.arange(n), "k": key, "ts": rng.permutation(n),
                         "price": np.round(rng.uniform(0, 10, n), 1)})
    text = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts MEASURES MATCH_NUMBER() AS mno, "
            "count(*) AS n, FIRST(price) AS p0 PATTERN (A B+) DEFINE B AS price < PREV(price)) AS m")
    local = cerql.run(text, {"t": rows})
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_rows))
    try:
        on_spark = cerql.cer_sql(spark, text, t=spark.createDataFrame(rows).repartition(2)).toPandas()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert local["mno"].max() > 3 and local["k"].isna().any()  # several matches per group, a NULL group
    pd.testing.assert_frame_equal(_sorted(on_spark), _sorted(local), check_dtype=False)
