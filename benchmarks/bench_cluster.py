"""One query family on local[1], local[2] and a standalone cluster of one and of two one-core
workers, in one run: how cer_sql scales from one executor to two, beside a bare shuffle and sort.

Input: the V-shape MATCH_RECOGNIZE query of bench_match_recognize.py (family 1, ``PARTITION BY
sym``, ``AFTER MATCH SKIP PAST LAST ROW``) over its random walk of ``--rows`` rows in 100
symbols. Output: a table on stdout: per setup, the best of ``--repeat`` wall seconds of the base
(``repartition(sym).sortWithinPartitions(sym, ts)``) and of ``cer_sql``, both to the noop sink,
their ratio, and each one's speed-up over the one-executor run of its kind.

Each setup is a session of its own over the same rows (cached before timing, then one untimed
``cer_sql`` to start the Python workers and load the kernel). The standalone clusters are a
master and one or two workers of one core and 1 GB each (benchmarks/standalone.py), started and
stopped by this script; their executors run this interpreter and see this PYTHONPATH, so they
import the cerql the driver imports. The machine has two cores, shared: the load average is
printed before and after.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_cluster.py --rows 1000000 --repeat 3

A script, not a test: nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cerql  # noqa: E402
from bench_match_recognize import VSHAPE, random_walk  # noqa: E402
from standalone import standalone_cluster  # noqa: E402

QUERY = VSHAPE.format(skip="PAST LAST ROW", never="")
SETUPS = ("local[1]", "local[2]", "standalone, 1 worker", "standalone, 2 workers")


def noop(frame) -> None:
    frame.write.format("noop").mode("overwrite").save()


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


@contextlib.contextmanager
def master_for(setup: str):
    """The master URL of a setup: local ones as named, standalone ones started here."""
    if setup.startswith("local"):
        yield setup
        return
    with standalone_cluster(workers=int(setup.split(", ")[1][0])) as cluster:
        yield cluster.url


def measure(setup: str, df, repeat: int) -> dict:
    from pyspark.sql import SparkSession

    with master_for(setup) as master:
        spark = (SparkSession.builder.master(master).appName(f"cerql-bench-cluster {setup}")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.driver.memory", "2g").config("spark.sql.shuffle.partitions", "4")
                 .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
                 .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        try:
            t = spark.createDataFrame(df).repartition(4).cache()
            t.count()
            count = cerql.cer_sql(spark, QUERY, t=t).count()  # untimed: workers and kernel up
            rounds = {"base": [], "cer_sql": []}
            for _ in range(repeat):  # interleaved, so a burst of load hits both
                rounds["base"].append(best(lambda: noop(t.repartition("sym").sortWithinPartitions("sym", "ts")), 1))
                rounds["cer_sql"].append(best(lambda: noop(cerql.cer_sql(spark, QUERY, t=t)), 1))
        finally:
            spark.stop()
    return {"setup": setup, "count": count, "base": min(rounds["base"]), "cer_sql": min(rounds["cer_sql"])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    df = random_walk(args.rows)
    print(f"V-shape MATCH_RECOGNIZE, {args.rows:,} rows in 100 symbols, best of {args.repeat}; "
          f"load average before {os.getloadavg()[0]:.2f} (2 cores)")
    results = [measure(setup, df, args.repeat) for setup in SETUPS]
    one = {kind: {r["setup"].split(",")[0]: r[kind] for r in results
                  if r["setup"] in ("local[1]", "standalone, 1 worker")} for kind in ("base", "cer_sql")}
    print(f"| setup | matches | base s | cer_sql s | cer_sql / base | base speed-up | cer_sql speed-up |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        family = "local[1]" if r["setup"].startswith("local") else "standalone"
        print(f"| {r['setup']} | {r['count']:,} | {r['base']:.2f} | {r['cer_sql']:.2f} | "
              f"{r['cer_sql'] / r['base']:.2f} | x{one['base'][family] / r['base']:.2f} | "
              f"x{one['cer_sql'][family] / r['cer_sql']:.2f} |")
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
