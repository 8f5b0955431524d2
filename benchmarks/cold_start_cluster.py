"""An executor's first query with a packed environment (``cerql pack``), with and without the
warmed kernel cache in it, on a real standalone cluster; and the check that every surface works
there: ``cer_sql`` (CEQL), a MATCH_RECOGNIZE query and a SQL cell.

Input: two archives made by ``cerql pack`` (``--warm`` with the cache, ``--cold`` with
``--no-warm-cache``). Output: per archive, on stdout, the seconds of the session start, of the
first ``cer_sql`` (a fresh executor: it unpacks the archive, starts Python, loads or compiles
the kernel) and of the same query again, and the three surfaces' row counts against
``cerql.run`` on the same rows.

The cluster is a master and one one-core worker (benchmarks/standalone.py); each archive gets an
application of its own, so its executor is new and unpacks the archive afresh. The driver runs
on this interpreter: ``PYSPARK_PYTHON=./environment/bin/python`` is what executors run (Spark
records the driver's PYSPARK_PYTHON in every Python function), and because the driver runs a
SQL cell's analyze step itself with that same path, relative to its own working folder, the
driver runs in a folder whose ``environment`` links to its own virtualenv (docs/cluster.md).

    PYTHONPATH=. .venv/bin/python benchmarks/cold_start_cluster.py --warm warm.tar.gz --cold cold.tar.gz

A script, not a test: nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cerql  # noqa: E402
from bench_match_recognize import VSHAPE, random_walk  # noqa: E402
from standalone import standalone_cluster  # noqa: E402

CEQL = ("SELECT * FROM stock WHERE SELL AS s ; BUY+ AS b FILTER b.price > s.price "
        "PARTITION BY [name] ORDER BY ts WITHIN 5 EVENTS")
MR = VSHAPE.format(skip="PAST LAST ROW", never="")
CELL = "SELECT * FROM cerql(TABLE(stock), :q)"


def stock(rows: int) -> pd.DataFrame:
    """A small trade stream: 20 names, SELL/BUY, prices 0-100, ``ts`` one per row."""
    rng = np.random.default_rng(3)
    return pd.DataFrame({"name": rng.integers(0, 20, rows).astype(str), "type": rng.choice(["SELL", "BUY"], rows),
                         "price": rng.uniform(0, 100, rows).round(2), "ts": np.arange(rows, dtype=np.int64)})


def timed(fn):
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


def run_one(url: str, archive: Path, trades: pd.DataFrame, walk: pd.DataFrame) -> dict:
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf

    spark, start = timed(lambda: (
        SparkSession.builder.master(url).appName(f"cerql-cold-{archive.name}")
        .config("spark.archives", f"{archive}#environment")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2").getOrCreate()))
    spark.sparkContext.setLogLevel("ERROR")
    try:
        t = spark.createDataFrame(trades)
        first, first_s = timed(lambda: cerql.cer_sql(spark, CEQL, stock=t).count())
        again, again_s = timed(lambda: cerql.cer_sql(spark, CEQL, stock=t).count())

        def where(_):
            import sys as s

            import cerql as c
            return f"{s.executable} {c.__file__}"
        executor = spark.range(1).select(udf(where)("id")).first()[0]
        mr = cerql.cer_sql(spark, MR, t=spark.createDataFrame(walk)).count()
        cerql.register(spark)
        t.createOrReplaceTempView("stock")
        cell = spark.sql(CELL, args={"q": CEQL}).count()
    finally:
        spark.stop()
    return {"archive": archive.name, "start": start, "first": first_s, "again": again_s, "executor": executor,
            "ceql": (first, again), "mr": mr, "cell": cell}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm", type=Path, required=True, help="cerql pack's archive with the kernel cache")
    parser.add_argument("--cold", type=Path, required=True, help="cerql pack --no-warm-cache's archive")
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args(argv)
    trades, walk = stock(args.rows), random_walk(args.rows)
    expected = {"ceql": len(cerql.run(CEQL, {"stock": trades})), "mr": len(cerql.run(MR, {"t": walk}))}
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores); rows {args.rows:,}; "
          f"cerql.run: CEQL {expected['ceql']} matches, MATCH_RECOGNIZE {expected['mr']} rows")
    os.environ["PYSPARK_PYTHON"] = "./environment/bin/python"
    driver = Path(tempfile.mkdtemp(prefix="cerql-driver-"))
    (driver / "environment").symlink_to(sys.prefix)  # the analyze step's ./environment/bin/python
    os.chdir(driver)
    with standalone_cluster(workers=1) as cluster:
        for archive in (args.warm.resolve(), args.cold.resolve()):
            got = run_one(cluster.url, archive, trades, walk)
            ok = (got["ceql"] == (expected["ceql"],) * 2 and got["mr"] == expected["mr"]
                  and got["cell"] == expected["ceql"])
            print(f"{got['archive']}: session {got['start']:.1f} s, first cer_sql {got['first']:.1f} s, "
                  f"again {got['again']:.1f} s; CEQL {got['ceql'][0]}, MATCH_RECOGNIZE {got['mr']}, "
                  f"SQL cell {got['cell']}: {'same as cerql.run' if ok else 'DIFFERENT'}")
            print(f"  executor: {got['executor']}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
