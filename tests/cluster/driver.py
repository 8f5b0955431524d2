"""The Spark driver of the cluster tests, run as a process of its own by tests/cluster/test_cluster.py:
``python -m tests.cluster.driver MASTER BARE_PYTHON WORK_DIR``.

Why a process of its own: a JVM holds one SparkContext, and the test run's own JVM holds the
suite's local[2] session (tests/conftest.py) for the whole run; stopping it for the cluster and
starting it again would cost two session starts and break the Connect session on it. This
process starts its own JVM, talks to the standalone master, and prints what it saw as one JSON
line (prefixed with :data:`MARK`) that the tests check.

Two applications, one after the other (a process holds one SparkContext at a time), each
taking one of the worker's two cores (the Connect server takes the other): the first, whose
executors run the driver's interpreter, runs ``cer_sql`` on a CEQL and a MATCH_RECOGNIZE query,
a SQL cell and a stream; the second, whose ``PYSPARK_PYTHON`` is an interpreter without numpy
(``BARE_PYTHON``), tries a query and ``cerql.register``, then a query whose executors' Python
does not exist, which must fail with cerql's error before the query runs.

The data and queries are defined here (:data:`TRADES`, :data:`QUERIES`...), and the tests run
them through ``cerql.run`` for the expected rows; both sides go through :func:`encoded`.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pandas as pd

MARK = "CERQL-CLUSTER-RESULT "  # the prefix of the one line of results on stdout

CEQL = ("SELECT * FROM s WHERE SELL AS a ; BUY+ AS b ; SELL AS c FILTER a[price > 100] AND c[price < 50] "
        "PARTITION BY [name] ORDER BY ts, seq WITHIN 5 SECONDS")
MR = ("SELECT * FROM ticks MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES CLASSIFIER() AS cls, "
      "MATCH_NUMBER() AS mno ALL ROWS PER MATCH PATTERN (A B+) DEFINE B AS B.price > PREV(B.price))")
# matched in the executors' JVM (cerql/spark/mr_jvm.py): the jar reaches them by addJar
MR_JVM = ("SELECT * FROM ticks MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES FIRST(A.price) AS start, "
          "LAST(B.price) AS top, COUNT(*) AS n, MATCH_NUMBER() AS mno ONE ROW PER MATCH PATTERN (A B+) "
          "DEFINE B AS B.price > PREV(B.price))")


def trades() -> pd.DataFrame:
    """Trades of three names over a few minutes (tests/spark/test_streaming.py's generator)."""
    from tests.spark.test_streaming import trades as generate

    return generate(600, seed=7)


def ticks() -> pd.DataFrame:
    from tests.spark.test_match_recognize import TICKS

    return TICKS


def encoded(records: list[dict]) -> list[str]:
    """Rows as sorted JSON texts of their canonical values (match_id aside: tests/spark/compare.py),
    the same for Spark's rows and the local engine's."""
    from tests.spark.compare import canonical_rows

    return sorted(json.dumps(row, default=str) for row in canonical_rows(records).elements())


def session(master: str, name: str):
    from pyspark.sql import SparkSession

    from cerql.spark.streaming import ROCKSDB, STATE_STORE_CONF

    spark = (SparkSession.builder.master(master).appName(name)
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.cores.max", "1").config("spark.executor.memory", "512m")
             .config("spark.sql.shuffle.partitions", "1")
             .config("spark.sql.session.timeZone", "UTC").config(STATE_STORE_CONF, ROCKSDB)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def rows(df) -> list[str]:
    return encoded([r.asDict(recursive=True) for r in df.collect()])


def stream(spark, work: str) -> list[str]:
    """The CEQL query over a file stream of two micro-batches, its results written to Parquet:
    :func:`trades` with rows a day ahead, which move the watermark past them, then rows a day
    further, whose micro-batch fires the timers of that watermark (as tests/spark/test_streaming.py
    does with a file each); the results that end before the rows a day ahead."""
    import cerql
    from tests.spark.test_streaming import BASE, DAY, write

    frame = trades()
    ahead = [pd.concat([frame.iloc[:1].assign(type=t, ts=BASE + pd.Timedelta(days=days), seq=-days)
                        for t in ("BUY", "SELL")]) for days in (1, 2)]
    source, out = os.path.join(work, "in"), os.path.join(work, "out")
    write(pd.concat([frame, ahead[0]]), source, "part0")
    write(ahead[1], source, "part1")
    rows = spark.readStream.schema(spark.read.parquet(source).schema).option("maxFilesPerTrigger", 1)
    rows = rows.parquet(source).withWatermark("ts", "2 seconds")
    query = (cerql.cer_sql(spark, CEQL, s=rows).writeStream.format("parquet").option("path", out)
             .option("checkpointLocation", os.path.join(work, "checkpoint")).outputMode("append")
             .trigger(availableNow=True).start())
    query.awaitTermination()
    found = [r.asDict(recursive=True) for r in spark.read.parquet(out).collect()]
    return encoded([r for r in found if r["match_end"] < DAY])


def lap(started: float) -> float:
    """Seconds since ``started`` (the driver reports where its time goes)."""
    return round(time.monotonic() - started, 1)


def fit_application(master: str, work: str) -> dict:
    """The first application: executors on the driver's interpreter; every kind of query."""
    import cerql
    from cerql.spark import executors

    probes = []
    run_probe = executors.run_probe
    executors.run_probe = lambda spark: probes.append(1) or run_probe(spark)
    started = time.monotonic()
    spark = session(master, "cerql-cluster-fit")
    out = {"python_exec": spark.sparkContext.pythonExec, "seconds": {"session": lap(started)}}
    frame = spark.createDataFrame(trades())
    out["ceql"] = rows(cerql.cer_sql(spark, CEQL, s=frame))
    out["seconds"]["ceql"] = lap(started)
    out["mr"] = rows(cerql.cer_sql(spark, MR, ticks=spark.createDataFrame(ticks())))
    out["seconds"]["mr"] = lap(started)
    out["mr_jvm_explained"] = cerql.explain(MR_JVM, spark, ticks=spark.createDataFrame(ticks()))
    out["mr_jvm"] = rows(cerql.cer_sql(spark, MR_JVM, ticks=spark.createDataFrame(ticks())))
    out["seconds"]["mr_jvm"] = lap(started)
    cerql.register(spark)
    frame.createOrReplaceTempView("trades")
    out["cell"] = rows(spark.sql("SELECT * FROM cerql(TABLE(trades), :q)", args={"q": CEQL}))
    out["seconds"]["cell"] = lap(started)
    out["stream"] = stream(spark, work)
    out["seconds"]["stream"] = lap(started)
    out["probes"] = len(probes)
    executors.run_probe = run_probe
    spark.stop()
    return out


def unfit_application(master: str, python: str) -> dict:
    """The second application: its executors run ``python``, which lacks numpy; then
    ``./environment/bin/python``, which they do not have."""
    import cerql

    os.environ["PYSPARK_PYTHON"] = python  # read when the SparkContext starts
    started = time.monotonic()
    spark = session(master, "cerql-cluster-unfit")
    session_seconds = lap(started)
    tracker = spark.sparkContext.statusTracker()
    out = {"python_exec": spark.sparkContext.pythonExec, "session_seconds": session_seconds}
    frame = spark.createDataFrame(trades())
    def unpacked():  # an archive's interpreter that was not shipped: no such file on the executors
        spark.sparkContext.pythonExec = "./environment/bin/python"
        return cerql.cer_sql(spark, CEQL, s=frame)

    for step, call in (("cer_sql", lambda: cerql.cer_sql(spark, CEQL, s=frame)),
                       ("register", lambda: cerql.register(spark)), ("unpacked", unpacked)):
        jobs = set(tracker.getJobIdsForGroup(None))
        started = time.monotonic()
        try:
            call()
            out[step] = {"raised": None}
        except cerql.CeqlError as err:
            out[step] = {"raised": err.error_class, "message": err.message, "hint": err.hint}
        out[step]["seconds"] = lap(started)
        out[step]["jobs"] = len(set(tracker.getJobIdsForGroup(None)) - jobs)
    spark.stop()
    return out


def main(master: str, bare_python: str, work: str) -> None:
    result = {"fit": fit_application(master, work), "unfit": unfit_application(master, bare_python)}
    print(MARK + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
